// SPDX-License-Identifier: Apache-2.0
/*
 * Exact reads (Read.exact): a random reader's fault on a range with a
 * missing block is answered with one ranged GET of just the bytes asked
 * (at most EXACT_MAX), made with the view's own credentials and If-Match
 * the indexed ETag, returned inline and not cached. A 4 KiB fault then
 * moves 4 KiB instead of a whole block, and its latency is one round trip
 * with nothing to write; the price is that two pods faulting on the same
 * page both fetch it (the kernel's page cache still serves a pod's own
 * rereads). Bounded: past EXACT_INFLIGHT_MAX in flight, faults go the
 * block way. Accounted as demand fills of the view.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/base/clock.h"
#include "fetch/base/macro.h"
#include "fetch/cached/server_impl.h"

#define EXACT_MAX (1u << 20)
#define EXACT_INFLIGHT_MAX 128u

struct exactop {
	struct conn *c;
	uint64_t id, view_id;
	uint64_t made_ns;
	struct fill_object obj;     /* strings point into key/etag/names below */
	struct s3_request req;
	char key[1100], etag[300], endpoint[600], bucket[70];
	char buf[];
};

static void account(struct exactop *op, struct view *v)
{
	struct fill_sample x = {
		.kind = FILL_KIND_DEMAND,
		.bytes = op->req.res.bytes,
		.fill_s = op->req.res.ttfb_s,
		.server_s = op->req.res.server_s,
		.total_s = (double)(clock_mono_ns() - op->made_ns) / 1e9,
		.ttfb_s = op->req.res.ttfb_s,
	};

	if (op->req.res.err < 0)
		fill_stats_error(&v->stats, FILL_KIND_DEMAND);
	else
		fill_stats_observe(&v->stats, &x);
}

static void reply(struct exactop *op)
{
	Lith__Cache__Reply rep = LITH__CACHE__REPLY__INIT;
	Lith__Cache__ReadReply rr = LITH__CACHE__READ_REPLY__INIT;
	int err = op->req.res.err;

	if (err < 0) {
		op->c->srv->c.read_errors++;
		conn_reply_error(op->c, op->id, -err, err == -ESTALE
				 ? "object changed in S3 since it was indexed" : op->req.res.errmsg);
		return;
	}
	rr.data.data = (uint8_t *)op->buf;
	rr.data.len = op->req.res.bytes;
	rep.id = op->id;
	rep.body_case = LITH__CACHE__REPLY__BODY_READ;
	rep.read = &rr;
	conn_reply(op->c, &rep, NULL, 0);
}

static void finish(struct evloop *loop, void *arg)
{
	struct exactop *op = arg;
	struct server *srv = op->c->srv;
	struct view *v = views_find(srv->cfg.views, op->view_id);

	(void)loop;
	if (v)
		account(op, v);
	if (op->req.res.err == 0) /* its own credentials read this version */
		tenancy_add(srv->cfg.tenancy, op->obj.identity, op->obj.endpoint,
			    op->obj.bucket_name, op->obj.key, op->obj.etag);
	reply(op);
	srv->exact_inflight--;
	if (op->obj.hold)
		op->obj.hold(op->obj.owner, -1);
	conn_unref(op->c);
	free(op);
}

static void on_done(struct s3_request *req)
{
	struct exactop *op = req->ctx;

	while (evloop_post(op->c->srv->cfg.loop, finish, op) == -EAGAIN)
		;
}

static bool copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

int exactop_start(struct conn *c, uint64_t id, uint64_t view_id, const struct fill_object *obj,
		  uint64_t off, uint64_t len)
{
	struct server *srv = c->srv;
	struct exactop *op;

	len = off < obj->size ? MIN(len, obj->size - off) : 0;
	if (!len || len > EXACT_MAX || srv->exact_inflight >= EXACT_INFLIGHT_MAX)
		return 0;
	op = calloc(1, sizeof(*op) + len);
	if (!op)
		return 0;
	*op = (struct exactop){ .c = c, .id = id, .view_id = view_id,
				.made_ns = clock_mono_ns(), .obj = *obj };
	if (!copy_str(op->key, sizeof(op->key), obj->key) ||
	    !copy_str(op->etag, sizeof(op->etag), obj->etag) ||
	    !copy_str(op->endpoint, sizeof(op->endpoint), obj->endpoint) ||
	    !copy_str(op->bucket, sizeof(op->bucket), obj->bucket_name)) {
		free(op);
		return 0;
	}
	op->obj.key = op->key;
	op->obj.etag = op->etag;
	op->obj.endpoint = op->endpoint;
	op->obj.bucket_name = op->bucket;
	op->req = (struct s3_request){ .op = S3_OP_GET, .bucket = obj->bucket, .key = op->key,
				       .offset = off, .length = len,
				       .if_match = op->etag[0] ? op->etag : NULL,
				       .buf = op->buf, .cap = len, .done = on_done, .ctx = op };
	if (obj->hold) /* keeps the view's credentials alive until finish() */
		obj->hold(obj->owner, +1);
	if (s3_submit(srv->cfg.engine, &op->req) < 0) {
		if (obj->hold)
			obj->hold(obj->owner, -1);
		free(op);
		return 0; /* engine busy: the block way queues instead */
	}
	srv->exact_inflight++;
	conn_ref(c);
	return 1;
}
