/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AWS Signature Version 4 for S3, computed with OpenSSL (SHA-256, HMAC).
 * Pure functions: no clock, no I/O; the caller supplies the timestamp.
 * S3 rules: the path is URI-encoded once (no double encoding, no path
 * normalisation), '/' kept; query names/values are encoded and sorted.
 * Thread-safe.
 */
#ifndef LITH_S3_SIGV4_H
#define LITH_S3_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

#include "fetch/base/strbuf.h"

/* A query parameter, raw (not encoded). value may be "" but not NULL. */
struct sigv4_param {
	const char *name;
	const char *value;
};

/* A header to sign. Names in any case; values are trimmed and inner runs of
 * spaces collapsed as the spec says. */
struct sigv4_header {
	const char *name;
	const char *value;
};

struct sigv4_input {
	const char *method;                 /* "GET" */
	const char *path;                   /* raw, starts with '/', e.g. "/bucket/a b" */
	const struct sigv4_param *query;
	size_t nquery;
	const struct sigv4_header *headers; /* must include host and x-amz-date */
	size_t nheaders;
	const char *payload_hash;           /* hex SHA-256 or "UNSIGNED-PAYLOAD" */
	const char *amz_date;               /* "YYYYMMDDTHHMMSSZ" */
	const char *region;
	const char *service;                /* "s3" */
	const char *access_key;
	const char *secret_key;
};

#define SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Percent-encodes per RFC 3986 unreserved set (A-Z a-z 0-9 - _ . ~); keeps
 * '/' when keep_slash. Appends to out. */
int sigv4_uri_encode(const char *s, size_t n, bool keep_slash, struct strbuf *out);
/* Sorted, encoded "a=1&b=2" (also what goes on the wire). */
int sigv4_canonical_query(const struct sigv4_param *q, size_t n, struct strbuf *out);
int sigv4_canonical_request(const struct sigv4_input *in, struct strbuf *out);
int sigv4_string_to_sign(const struct sigv4_input *in, struct strbuf *out);
/* The full Authorization header value:
 * "AWS4-HMAC-SHA256 Credential=AK/date/region/s3/aws4_request, SignedHeaders=..., Signature=hex" */
int sigv4_authorization(const struct sigv4_input *in, struct strbuf *out);
void sigv4_sha256_hex(const void *data, size_t n, char out[65]);
/* Formats t (UTC, seconds since the epoch) as "YYYYMMDDTHHMMSSZ". */
void sigv4_format_date(long long t, char out[17]);

#endif
