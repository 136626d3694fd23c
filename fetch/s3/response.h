/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of S3 GET/HEAD responses, as pure functions: Content-Range
 * parsing, checking that a ranged response carries exactly the bytes asked
 * for, ETag pinning, header value extraction. A response that fails these
 * checks is never returned as success.
 */
#ifndef LITH_S3_RESPONSE_H
#define LITH_S3_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct content_range {
	uint64_t first;
	uint64_t last;   /* inclusive */
	uint64_t total;  /* UINT64_MAX when the server sent '*' */
};

/* Parses "bytes A-B/T" (or a total of "*"). -EINVAL on anything else. */
int response_parse_content_range(const char *v, struct content_range *ret);

/* Given a request for [offset, offset+length) (length 0 = whole object) and
 * the response status, Content-Range (may be NULL) and Content-Length,
 * computes how many body bytes must arrive and the object's total size.
 * -EPROTO when the response does not answer the request. */
int response_check_range(uint64_t offset, uint64_t length, long status,
			 const char *content_range, uint64_t content_length,
			 uint64_t *ret_expect, uint64_t *ret_total);

/* Strips surrounding quotes and a weak "W/" prefix; writes at most cap-1
 * bytes. */
void response_etag_normalize(const char *v, size_t n, char *out, size_t cap);
/* True when the two ETags are equal once normalized. */
bool response_etag_equal(const char *a, const char *b);

/* If the header line "Name: value\r\n" has the given name (case-insensitive),
 * copies the trimmed value into out (truncated to cap-1) and returns true. */
bool response_header_value(const char *line, size_t n, const char *name,
			   char *out, size_t cap);

/* Parses an HTTP date (RFC 7231 IMF-fixdate) into unix seconds. */
int response_parse_http_date(const char *v, int64_t *ret);

#endif
