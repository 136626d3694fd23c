/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The S3 client: an engine (one libcurl multi handle driven by its own
 * thread, a keep-alive connection pool, a bounded submission queue, retries
 * with backoff) and buckets (endpoint + region + addressing + credentials).
 * Requests are submitted asynchronously and complete through a callback on
 * the engine thread; blocking helpers wrap that for tools.
 *
 * Ownership: the engine owns its thread, curl handles and queues. A bucket
 * owns its credential cache and may be shared by any number of requests; it
 * must outlive them. A request is owned by the caller from submit until its
 * done callback has returned; GET bodies land in the caller's buffer or
 * go to its sink callback.
 *
 * Errors are -errno: ENOENT (404, NoSuchKey/NoSuchBucket), EACCES (401/403),
 * ESTALE (412, or an ETag other than the pinned one), ERANGE (416), EFBIG
 * (body larger than the buffer), EPROTO (a response that does not answer the
 * request), ETIMEDOUT / EIO (retries exhausted), EAGAIN (queue full),
 * ECANCELED (engine shut down). res.errmsg says more, for logs.
 */
#ifndef LITH_S3_S3_H
#define LITH_S3_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fetch/s3/creds.h"
#include "fetch/s3/s3xml.h"

/* ---- buckets -------------------------------------------------------- */

enum s3_addressing {
	S3_ADDR_AUTO,    /* virtual-hosted on AWS, path-style on custom endpoints */
	S3_ADDR_PATH,    /* https://host/bucket/key */
	S3_ADDR_VIRTUAL, /* https://bucket.host/key */
};

struct s3_bucket_config {
	const char *bucket;
	const char *endpoint;  /* "http://127.0.0.1:7480"; NULL → AWS for region */
	const char *region;    /* NULL → "us-east-1" */
	enum s3_addressing addressing;
	bool requester_pays;   /* sends x-amz-request-payer: requester */
	bool anonymous;        /* unsigned requests (public buckets) */
	const char *ca_file;   /* extra CA bundle for https endpoints, or NULL */
};

struct s3_bucket;

/* Validates the config (bucket name, endpoint URL) and takes ownership of
 * creds (may be NULL only when anonymous). -EINVAL with a message in err. */
int s3_bucket_new(const struct s3_bucket_config *cfg, struct s3_creds_cache *creds,
		  struct s3_bucket **ret, char *err, size_t errlen);
void s3_bucket_free(struct s3_bucket *b);
const char *s3_bucket_name(const struct s3_bucket *b);
/* Current signing region (may change after a region redirect). */
void s3_bucket_region(struct s3_bucket *b, char *out, size_t cap);

/* ---- engine --------------------------------------------------------- */

struct s3_request;

struct s3_engine_config {
	unsigned max_connections;    /* concurrent transfers / pooled connections (64) */
	unsigned max_queued;         /* submitted, not yet completed (4096) */
	unsigned max_attempts;       /* per request, first try included (8) */
	unsigned backoff_base_ms;    /* (50) */
	unsigned backoff_cap_ms;     /* (5000) */
	int retry_budget;            /* tokens, see retry.h (500) */
	unsigned connect_timeout_ms; /* (5000) */
	unsigned stall_timeout_s;    /* no byte for this long → retry (15) */
	/* Called on the engine thread when a request completes (after its own
	 * done callback), for metrics. May be NULL. */
	void (*report)(void *ctx, const struct s3_request *req);
	/* Called on the engine thread for every attempt that was sent (retries
	 * and redirects included: what the server's own log counts), with its
	 * HTTP status, 0 when none came back. May be NULL. */
	void (*attempt)(void *ctx, int op, unsigned http_status); /* op: enum s3_op */
	void *report_ctx;
};

struct s3_engine;

int s3_engine_new(const struct s3_engine_config *cfg, struct s3_engine **ret);
/* Fails every queued/in-flight request with -ECANCELED, joins the thread. */
void s3_engine_free(struct s3_engine *e);

/* ---- requests ------------------------------------------------------- */

enum s3_op { S3_OP_GET, S3_OP_HEAD, S3_OP_LIST, S3_OP__COUNT };
const char *s3_op_name(enum s3_op op);

#define S3_ETAG_MAX 128

struct s3_result {
	int err;             /* 0 or -errno */
	long http_status;    /* of the last attempt; 0 if no response */
	uint64_t bytes;      /* body bytes delivered to the caller */
	uint64_t object_size;/* from Content-Range / Content-Length (GET, HEAD) */
	int64_t mtime;       /* Last-Modified (GET, HEAD), unix seconds */
	double ttfb_s;       /* time to first byte of the successful attempt */
	double server_s;     /* request sent to first byte: the endpoint's own cost */
	double total_s;      /* submit to completion, retries included */
	unsigned retries;
	char etag[S3_ETAG_MAX];
	char errmsg[256];
};

struct s3_list_args {
	const char *prefix;          /* NULL or "" for none */
	const char *delimiter;
	const char *continuation_token;
	const char *start_after;
	unsigned max_keys;           /* 0 → server default (1000) */
};

struct s3_request {
	/* in */
	enum s3_op op;
	struct s3_bucket *bucket;
	const char *key;             /* GET, HEAD */
	uint64_t offset;             /* GET */
	uint64_t length;             /* GET: 0 = whole object (must fit in cap) */
	const char *if_match;        /* GET, HEAD: pinned ETag, or NULL */
	void *buf;                   /* GET: destination */
	size_t cap;
	/* GET, instead of buf/cap (length must be set): body bytes are handed
	 * to sink on the engine thread as they arrive, pos counting from 0
	 * within an attempt (a retried attempt starts again at 0). A negative
	 * return aborts the request with that error (not retried). */
	int (*sink)(struct s3_request *req, uint64_t pos, const void *data, size_t len);
	struct s3_list_args list;    /* LIST */
	void (*done)(struct s3_request *req);
	void *ctx;
	/* out, valid in done */
	struct s3_result res;
	struct s3_list_page page;    /* LIST; caller frees with s3_list_page_free */
	/* engine private */
	struct s3_xfer *xfer;
};

/* Queues req; its done callback runs on the engine thread exactly once,
 * unless this returns < 0 (-EAGAIN queue full, -EINVAL bad request,
 * -ECANCELED engine stopping). */
int s3_submit(struct s3_engine *e, struct s3_request *req);

/* ---- blocking helpers (any thread except the engine's) --------------- */

int s3_head(struct s3_engine *e, struct s3_bucket *b, const char *key,
	    struct s3_result *ret);
/* Reads [offset, offset+length) into buf (length 0: whole object, ≤ cap). */
int s3_get(struct s3_engine *e, struct s3_bucket *b, const char *key, uint64_t offset,
	   uint64_t length, const char *if_match, void *buf, size_t cap,
	   struct s3_result *ret);
int s3_list(struct s3_engine *e, struct s3_bucket *b, const struct s3_list_args *args,
	    struct s3_list_page *ret_page, struct s3_result *ret);
/* Runs req synchronously (req->done is overwritten). Returns req->res.err. */
int s3_run(struct s3_engine *e, struct s3_request *req);

#endif
