/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounded parsers for the two S3 XML documents lith reads: the
 * ListObjectsV2 result and the error body. Built on expat; hostile input
 * (DOCTYPE/entities, deep nesting, oversized documents or fields, truncated
 * XML, wrong root element) is rejected with -EBADMSG and a message, never a
 * crash and never a partial result. Pure functions, thread-safe.
 */
#ifndef LITH_S3_S3XML_H
#define LITH_S3_S3XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S3XML_MAX_DOC (64u << 20)    /* bytes of XML accepted */
#define S3XML_MAX_DEPTH 16
#define S3XML_MAX_KEY 1024           /* bytes of a decoded key, S3's own limit */
#define S3XML_MAX_ETAG 256
#define S3XML_MAX_TOKEN 4096
#define S3XML_MAX_ENTRIES 100000     /* objects + common prefixes in one page */

struct s3_object {
	char *key;        /* decoded (encoding-type=url undone), NUL-terminated */
	size_t key_len;   /* keys may not contain NUL; rejected if they do */
	uint64_t size;
	int64_t mtime;    /* unix seconds from LastModified */
	char *etag;       /* without surrounding quotes; "" if absent */
};

struct s3_list_page {
	struct s3_object *objects;
	size_t nobjects;
	char **prefixes;  /* CommonPrefixes, decoded */
	size_t nprefixes;
	bool truncated;
	char *next_token; /* NextContinuationToken or NULL */
	char *prefix;     /* echoed Prefix or NULL; informational only: RGW
			   * echoes it unencoded, so it is decoded only when
			   * it is a valid encoding */
};

void s3_list_page_free(struct s3_list_page *p);
/* On success fills *ret (caller frees with s3_list_page_free). On failure
 * returns -EBADMSG (or -ENOMEM) and writes a short reason into err. */
int s3xml_parse_list(const char *xml, size_t len, struct s3_list_page *ret,
		     char *err, size_t errlen);

struct s3_error_doc {
	char code[64];       /* "NoSuchKey", "SlowDown", ... ("" if absent) */
	char message[256];
	char region[64];     /* from <Region> when S3 tells us the bucket's region */
	char request_id[128];
};
/* Parses an <Error> body. Oversized fields are truncated, not rejected. */
int s3xml_parse_error(const char *xml, size_t len, struct s3_error_doc *ret);

/* Undoes encoding-type=url in place: %XX escapes (either hex case), and '+'
 * as space. AWS S3 sends a space as '+', Ceph RGW as "%20"; both send a
 * literal '+' as "%2B" and '%' as "%25" (RGW checked live, see s3xml.c), so
 * this one rule decodes both. "%00" decodes to a NUL byte: use the returned
 * length, not strlen. Returns the decoded length, or -EINVAL on a bad escape
 * ('%' not followed by two hex digits), in which case s is left untouched. */
int s3xml_url_decode(char *s);

#endif
