// SPDX-License-Identifier: Apache-2.0
/*
 * Judges a finished attempt (xfer_finish): transport errors, S3 error
 * bodies, region redirects, and for successes the checks that make partial
 * or foreign data impossible to return: Content-Range must match the range
 * asked for, the body length must match it, and a pinned ETag must be the
 * one served. Engine thread only.
 */
#include "fetch/s3/xfer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fetch/s3/bucket.h"
#include "fetch/s3/response.h"

static enum xfer_outcome fail(struct s3_xfer *x, int err, enum retry_class cls,
			      enum retry_class *ret_class, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static enum xfer_outcome fail(struct s3_xfer *x, int err, enum retry_class cls,
			      enum retry_class *ret_class, const char *fmt, ...)
{
	struct s3_result *res = &x->req->res;
	va_list ap;

	res->err = err;
	va_start(ap, fmt);
	vsnprintf(res->errmsg, sizeof(res->errmsg), fmt, ap);
	va_end(ap);
	*ret_class = cls;
	return cls == RETRY_NO ? XFER_DONE : XFER_RETRY;
}

static enum xfer_outcome judge_transport(struct s3_xfer *x, CURLcode code,
					 enum retry_class *cls)
{
	return fail(x, retry_errno_curl(code), retry_classify_curl(code), cls, "transport: %s",
		    x->curl_err[0] ? x->curl_err : curl_easy_strerror(code));
}

static bool try_redirect(struct s3_xfer *x, const struct s3_error_doc *doc)
{
	const char *region = x->region_hdr[0] ? x->region_hdr : doc->region;

	if (x->redirected || !region[0])
		return false;
	if (x->status != 301 && x->status != 307 && x->status != 400)
		return false;
	x->redirected = true;
	return s3_bucket_set_region(x->req->bucket, region);
}

/* What a user should do about an error S3 reported (HEAD responses carry
 * no body, so the status alone must speak). */
static const char *hint(long status, const char *code)
{
	static const struct { const char *code; const char *text; } tab[] = {
		{ "SignatureDoesNotMatch", "the secret access key is wrong" },
		{ "InvalidAccessKeyId", "the access key id is unknown to this endpoint" },
		{ "AccessDenied", "these credentials may not read this" },
		{ "NoSuchBucket", "the bucket does not exist" },
		{ "NoSuchKey", "the key does not exist" },
		{ "PreconditionFailed", "the object changed since it was pinned" },
		{ "ExpiredToken", "the session token has expired" },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strcmp(code, tab[i].code) == 0)
			return tab[i].text;
	switch (status) {
	case 403: return "access denied: wrong credentials or no permission";
	case 404: return "not found";
	case 412: return "the object changed since it was pinned";
	case 416: return "range not satisfiable";
	default: return status >= 500 ? "server error" : "request rejected";
	}
}

static enum xfer_outcome judge_error(struct s3_xfer *x, enum retry_class *cls)
{
	struct s3_error_doc doc = { 0 };
	const char *bucket = s3_bucket_name(x->req->bucket);

	if (x->body.len)
		s3xml_parse_error(x->body.p, x->body.len, &doc);
	if (try_redirect(x, &doc)) {
		*cls = RETRY_NO;
		return XFER_REDIRECT;
	}
	if (strcmp(doc.code, "ExpiredToken") == 0)
		s3_bucket_invalidate_credentials(x->req->bucket);
	if (x->status == 301 || x->status == 307)
		return fail(x, -EINVAL, RETRY_NO, cls,
			    "HTTP %ld %s: bucket %s is in region %s; set the region", x->status,
			    doc.code, bucket, x->region_hdr[0] ? x->region_hdr : doc.region);
	return fail(x, retry_errno_http(x->status, doc.code),
		    retry_classify_http(x->status, doc.code), cls, "HTTP %ld %s: %s (bucket %s)",
		    x->status, doc.code[0] ? doc.code : "-",
		    doc.message[0] ? doc.message : hint(x->status, doc.code), bucket);
}

static void fill_object_meta(struct s3_xfer *x, uint64_t size)
{
	struct s3_result *res = &x->req->res;

	res->object_size = size;
	response_etag_normalize(x->etag, strlen(x->etag), res->etag, sizeof(res->etag));
	if (x->last_modified[0])
		response_parse_http_date(x->last_modified, &res->mtime);
}

static enum xfer_outcome judge_get(struct s3_xfer *x, enum retry_class *cls)
{
	const struct s3_request *req = x->req;
	uint64_t expect, total;
	uint64_t clen = x->have_length ? x->content_length : x->received;

	if (response_check_range(req->offset, req->length, x->status, x->content_range[0] ?
				 x->content_range : NULL, clen, &expect, &total) < 0)
		return fail(x, -EPROTO, RETRY_NO, cls,
			    "HTTP %ld with Content-Range '%s' does not answer range %llu+%llu",
			    x->status, x->content_range, (unsigned long long)req->offset,
			    (unsigned long long)req->length);
	if (x->received != expect)
		return fail(x, -EIO, RETRY_YES, cls, "truncated body: %llu of %llu bytes",
			    (unsigned long long)x->received, (unsigned long long)expect);
	if (req->if_match && !response_etag_equal(req->if_match, x->etag))
		return fail(x, -ESTALE, RETRY_NO, cls, "object changed: ETag %s, pinned %s",
			    x->etag, req->if_match);
	x->req->res.bytes = x->received;
	fill_object_meta(x, total);
	return XFER_DONE;
}

static enum xfer_outcome judge_list(struct s3_xfer *x, enum retry_class *cls)
{
	char err[160];
	int r = s3xml_parse_list(x->body.p ? x->body.p : "", x->body.len, &x->req->page,
				 err, sizeof(err));

	if (r < 0)
		return fail(x, r, RETRY_NO, cls, "ListObjectsV2 response rejected: %s", err);
	x->req->res.bytes = x->body.len;
	return XFER_DONE;
}

enum xfer_outcome xfer_finish(struct s3_xfer *x, CURLcode code, enum retry_class *cls)
{
	struct s3_request *req = x->req;
	curl_off_t ttfb = 0, pre = 0;

	*cls = RETRY_NO;
	req->res.http_status = x->status;
	if (x->overflow)
		return fail(x, req->op == S3_OP_GET ? -EFBIG : -EBADMSG, RETRY_NO, cls,
			    "response body larger than %zu bytes",
			    req->op == S3_OP_GET ? (size_t)(req->sink ? req->length : req->cap)
						 : (size_t)S3XML_MAX_DOC);
	if (x->sink_err)
		return fail(x, x->sink_err, RETRY_NO, cls, "cannot store the body: %s",
			    strerror(-x->sink_err));
	if (code != CURLE_OK)
		return judge_transport(x, code, cls);
	if (x->status < 200 || x->status >= 300)
		return judge_error(x, cls);
	curl_easy_getinfo(x->easy, CURLINFO_STARTTRANSFER_TIME_T, &ttfb);
	curl_easy_getinfo(x->easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
	req->res.ttfb_s = (double)ttfb / 1e6;
	req->res.server_s = ttfb > pre ? (double)(ttfb - pre) / 1e6 : 0;
	req->res.err = 0;
	req->res.errmsg[0] = '\0';
	switch (req->op) {
	case S3_OP_GET:
		return judge_get(x, cls);
	case S3_OP_HEAD:
		if (!x->have_length)
			return fail(x, -EPROTO, RETRY_NO, cls, "HEAD without Content-Length");
		if (req->if_match && !response_etag_equal(req->if_match, x->etag))
			return fail(x, -ESTALE, RETRY_NO, cls, "object changed: ETag %s, pinned %s",
				    x->etag, req->if_match);
		fill_object_meta(x, x->content_length);
		return XFER_DONE;
	default:
		return judge_list(x, cls);
	}
}
