// SPDX-License-Identifier: Apache-2.0
/*
 * One attempt of an S3 request: builds the URL, the signed headers and the
 * curl easy handle (xfer_prepare), collects the response (header and body
 * callbacks, bounded) and judges it (xfer_finish): success only when the
 * status, Content-Range, length and pinned ETag all say the caller got
 * exactly the bytes it asked for. Engine thread only.
 */
#include "fetch/s3/xfer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fetch/base/macro.h"
#include "fetch/base/parse.h"
#include "fetch/s3/bucket.h"
#include "fetch/s3/response.h"
#include "fetch/s3/sigv4.h"

#define BUFFER_SIZE (512 * 1024)

static void reset_attempt(struct s3_xfer *x)
{
	x->received = 0;
	x->overflow = false;
	x->sink_err = 0;
	x->status = 0;
	x->have_length = false;
	x->content_length = 0;
	x->content_range[0] = x->etag[0] = x->region_hdr[0] = x->last_modified[0] = '\0';
	x->curl_err[0] = '\0';
	strbuf_reset(&x->body);
}

static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
	struct s3_xfer *x = ud;
	size_t len = size * n;
	char num[32];

	if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
		const char *sp = memchr(line, ' ', len);
		reset_attempt(x);
		x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		return len;
	}
	if (response_header_value(line, len, "content-length", num, sizeof(num)))
		x->have_length = parse_u64(num, &x->content_length) == 0;
	response_header_value(line, len, "etag", x->etag, sizeof(x->etag));
	response_header_value(line, len, "content-range", x->content_range,
			      sizeof(x->content_range));
	response_header_value(line, len, "x-amz-bucket-region", x->region_hdr,
			      sizeof(x->region_hdr));
	response_header_value(line, len, "last-modified", x->last_modified,
			      sizeof(x->last_modified));
	return len;
}

static bool status_ok(long s) { return s >= 200 && s < 300; }

/* A GET's body: into the caller's buffer, or handed to its sink. */
static size_t get_body(struct s3_xfer *x, const char *data, size_t len)
{
	struct s3_request *req = x->req;
	uint64_t cap = req->sink ? req->length : req->cap;
	int r;

	if (len > cap - x->received) {
		x->overflow = true;
		return 0; /* aborts the transfer */
	}
	if (req->sink) {
		r = req->sink(req, x->received, data, len);
		if (r < 0) {
			x->sink_err = r;
			return 0;
		}
	} else {
		memcpy((char *)req->buf + x->received, data, len);
	}
	x->received += len;
	return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct s3_xfer *x = ud;
	struct s3_request *req = x->req;
	size_t len = size * n;

	if (req->op == S3_OP_GET && status_ok(x->status))
		return get_body(x, data, len);
	if (strbuf_append(&x->body, data, len) < 0) {
		if (req->op == S3_OP_LIST && status_ok(x->status)) {
			x->overflow = true;
			return 0;
		}
		/* An error body only feeds a message: keep what fits. */
	}
	return len;
}

static int build_path(struct s3_xfer *x, const struct s3_bucket_target *t, struct strbuf *raw)
{
	const struct s3_request *req = x->req;
	int r;

	if (req->op == S3_OP_LIST)
		return strbuf_appends(raw, t->path_prefix[0] ? t->path_prefix : "/");
	r = strbuf_appends(raw, t->path_prefix);
	if (r == 0)
		r = strbuf_appendf(raw, "/%s", req->key);
	return r;
}

static size_t list_params(const struct s3_request *req, struct sigv4_param *q, char *maxkeys)
{
	const struct s3_list_args *a = &req->list;
	size_t n = 0;

	q[n++] = (struct sigv4_param){ "list-type", "2" };
	q[n++] = (struct sigv4_param){ "encoding-type", "url" };
	if (a->prefix && *a->prefix)
		q[n++] = (struct sigv4_param){ "prefix", a->prefix };
	if (a->delimiter && *a->delimiter)
		q[n++] = (struct sigv4_param){ "delimiter", a->delimiter };
	if (a->continuation_token && *a->continuation_token)
		q[n++] = (struct sigv4_param){ "continuation-token", a->continuation_token };
	if (a->start_after && *a->start_after)
		q[n++] = (struct sigv4_param){ "start-after", a->start_after };
	if (a->max_keys) {
		snprintf(maxkeys, 16, "%u", a->max_keys);
		q[n++] = (struct sigv4_param){ "max-keys", maxkeys };
	}
	return n;
}

struct signed_headers {
	struct sigv4_header h[8];
	size_t n;
	char date[17];
	char range[64];
	char if_match[S3_ETAG_MAX + 4];
	struct s3_credentials creds;
};

static void collect_headers(struct s3_xfer *x, const struct s3_bucket_target *t,
			    struct signed_headers *sh)
{
	const struct s3_request *req = x->req;
	struct s3_bucket *b = req->bucket;

	sigv4_format_date((long long)time(NULL), sh->date);
	sh->h[sh->n++] = (struct sigv4_header){ "host", t->host };
	sh->h[sh->n++] = (struct sigv4_header){ "x-amz-content-sha256", SIGV4_EMPTY_SHA256 };
	sh->h[sh->n++] = (struct sigv4_header){ "x-amz-date", sh->date };
	if (sh->creds.session_token)
		sh->h[sh->n++] = (struct sigv4_header){ "x-amz-security-token",
							sh->creds.session_token };
	if (s3_bucket_requester_pays(b))
		sh->h[sh->n++] = (struct sigv4_header){ "x-amz-request-payer", "requester" };
	if (req->op == S3_OP_GET && req->length) {
		snprintf(sh->range, sizeof(sh->range), "bytes=%llu-%llu",
			 (unsigned long long)req->offset,
			 (unsigned long long)(req->offset + req->length - 1));
		sh->h[sh->n++] = (struct sigv4_header){ "range", sh->range };
	}
	if (req->op != S3_OP_LIST && req->if_match) {
		char norm[S3_ETAG_MAX];
		response_etag_normalize(req->if_match, strlen(req->if_match), norm, sizeof(norm));
		snprintf(sh->if_match, sizeof(sh->if_match), "\"%s\"", norm);
		sh->h[sh->n++] = (struct sigv4_header){ "if-match", sh->if_match };
	}
}

static int add_header(struct curl_slist **list, const char *name, const char *value)
{
	char line[4608];
	struct curl_slist *nl;

	if ((size_t)snprintf(line, sizeof(line), "%s: %s", name, value) >= sizeof(line))
		return -E2BIG;
	nl = curl_slist_append(*list, line);
	if (!nl)
		return -ENOMEM;
	*list = nl;
	return 0;
}

static int sign_and_attach(struct s3_xfer *x, const struct s3_bucket_target *t,
			   struct signed_headers *sh, const char *raw_path,
			   const struct sigv4_param *q, size_t nq)
{
	struct strbuf auth;
	int r = 0;

	/* curl writes Host itself from the URL; the rest we add. */
	for (size_t i = 1; i < sh->n && r == 0; i++)
		r = add_header(&x->headers, sh->h[i].name, sh->h[i].value);
	if (r < 0 || s3_bucket_anonymous(x->req->bucket))
		return r;
	struct sigv4_input in = {
		.method = x->req->op == S3_OP_HEAD ? "HEAD" : "GET",
		.path = raw_path, .query = q, .nquery = nq,
		.headers = sh->h, .nheaders = sh->n,
		.payload_hash = SIGV4_EMPTY_SHA256, .amz_date = sh->date,
		.region = t->region, .service = "s3",
		.access_key = sh->creds.access_key, .secret_key = sh->creds.secret_key,
	};
	strbuf_init(&auth, 8192);
	r = sigv4_authorization(&in, &auth);
	if (r == 0)
		r = add_header(&x->headers, "authorization", auth.p);
	explicit_bzero(auth.p, auth.len);
	strbuf_free(&auth);
	return r;
}

static int build_url(struct s3_xfer *x, const struct s3_bucket_target *t, const char *raw_path,
		     const struct sigv4_param *q, size_t nq)
{
	struct strbuf url;
	int r;

	strbuf_init(&url, 16384);
	r = strbuf_appendf(&url, "%s://%s", t->scheme, t->host);
	if (r == 0)
		r = sigv4_uri_encode(raw_path, strlen(raw_path), true, &url);
	if (r == 0 && nq) {
		r = strbuf_appends(&url, "?");
		if (r == 0)
			r = sigv4_canonical_query(q, nq, &url);
	}
	if (r < 0) {
		strbuf_free(&url);
		return r;
	}
	free(x->url);
	x->url = strbuf_steal(&url);
	return x->url ? 0 : -ENOMEM;
}

static int setup_easy(struct s3_xfer *x)
{
	CURL *c = curl_easy_init();
	const char *ca = s3_bucket_ca_file(x->req->bucket);

	if (!c)
		return -ENOMEM;
	x->easy = c;
	curl_easy_setopt(c, CURLOPT_URL, x->url);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* keys may hold "." and ".." */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, x->headers);
	curl_easy_setopt(c, CURLOPT_NOBODY, x->req->op == S3_OP_HEAD ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(c, CURLOPT_PRIVATE, x);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, x->curl_err);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c, CURLOPT_BUFFERSIZE, (long)BUFFER_SIZE);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)x->connect_timeout_ms);
	/* A stalled response (no byte for stall_timeout_s) fails and is retried. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)x->stall_timeout_s);
	if (ca)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	return 0;
}

int xfer_prepare(struct s3_xfer *x)
{
	struct s3_bucket_target t;
	struct signed_headers sh = { 0 };
	struct sigv4_param q[8];
	char maxkeys[16];
	struct strbuf raw;
	size_t nq = 0;
	int r;

	reset_attempt(x);
	s3_bucket_target(x->req->bucket, &t);
	if (x->req->op == S3_OP_LIST)
		nq = list_params(x->req, q, maxkeys);
	if (!s3_bucket_anonymous(x->req->bucket)) {
		r = s3_bucket_credentials(x->req->bucket, &sh.creds);
		if (r < 0)
			return r;
	}
	strbuf_init(&raw, 8192);
	r = build_path(x, &t, &raw);
	collect_headers(x, &t, &sh);
	if (r == 0)
		r = build_url(x, &t, raw.p, q, nq);
	if (r == 0)
		r = sign_and_attach(x, &t, &sh, raw.p, q, nq);
	if (r == 0)
		r = setup_easy(x);
	strbuf_free(&raw);
	s3_credentials_clear(&sh.creds);
	return r;
}

void xfer_release(struct s3_xfer *x)
{
	if (x->easy)
		curl_easy_cleanup(x->easy);
	x->easy = NULL;
	curl_slist_free_all(x->headers);
	x->headers = NULL;
}
