// SPDX-License-Identifier: Apache-2.0
/*
 * A Read request's life on the loop thread:
 *   step: look every block up in the store; if the view's identity has no
 *         proof for this object version and any byte would come from the
 *         cache or from someone else's fill, prove it first (HEAD with
 *         If-Match using the view's own credentials); hand the misses to
 *         the fill scheduler and wait; once filled, step again (bounded
 *         rounds: a block evicted between fill and reply is looked up anew).
 *   reply: the location of every block (slot offset, length, generation).
 * A prefetch (no_wait) schedules fills and answers at once. An exact read
 * with a miss is handed to exactop.c (one ranged GET, answered inline).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/base/log.h"
#include "fetch/base/macro.h"
#include "fetch/cached/server_impl.h"

#define MAX_ROUNDS 4

struct readop {
	struct conn *c;
	uint64_t id;
	uint64_t view_id;
	uint64_t ino;
	uint64_t first, last;   /* block numbers */
	enum fill_kind kind;
	bool no_wait;
	bool exact;
	uint64_t offset, length; /* as asked, for exact reads */
	bool proven;
	unsigned rounds;
	struct s3_request head;
	char key[1100];
	char etag[300];
	struct fill_object obj;
};

static void op_end(struct readop *op)
{
	conn_unref(op->c);
	free(op);
}

static void op_fail(struct readop *op, int err, const char *msg)
{
	op->c->srv->c.read_errors++;
	conn_reply_error(op->c, op->id, err, msg);
	op_end(op);
}

static void reply_locs(struct readop *op, const struct blockread_loc *locs, const bool *have,
		       uint64_t n, uint32_t bs)
{
	Lith__Cache__Reply rep = LITH__CACHE__REPLY__INIT;
	Lith__Cache__ReadReply rr = LITH__CACHE__READ_REPLY__INIT;
	Lith__Cache__BlockLoc *bl = calloc(n, sizeof(*bl));
	Lith__Cache__BlockLoc **ptrs = calloc(n, sizeof(*ptrs));
	size_t k = 0;

	if (!bl || !ptrs) {
		free(bl);
		free(ptrs);
		op_fail(op, -ENOMEM, NULL);
		return;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (!have[i])
			continue;
		lith__cache__block_loc__init(&bl[k]);
		bl[k].object_offset = (op->first + i) * bs;
		bl[k].length = locs[i].len;
		bl[k].data_offset = locs[i].offset;
		bl[k].slot = locs[i].slot;
		bl[k].generation = locs[i].generation;
		ptrs[k] = &bl[k];
		k++;
	}
	rr.n_blocks = k;
	rr.blocks = ptrs;
	rep.id = op->id;
	rep.body_case = LITH__CACHE__REPLY__BODY_READ;
	rep.read = &rr;
	conn_reply(op->c, &rep, NULL, 0);
	free(bl);
	free(ptrs);
	op_end(op);
}

static void step(struct readop *op);

static void proved(struct evloop *loop, void *arg)
{
	struct readop *op = arg;
	struct server *srv = op->c->srv;
	int err = op->head.res.err;

	(void)loop;
	if (err < 0) {
		srv->c.proof_failures++;
		log_warn("access check failed", "key=%s err=%d msg=\"%s\"", op->key, -err,
			 op->head.res.errmsg);
		op_fail(op, err, op->head.res.errmsg);
		return;
	}
	tenancy_add(srv->cfg.tenancy, op->obj.identity, op->obj.endpoint, op->obj.bucket_name,
		    op->obj.key, op->obj.etag);
	op->proven = true;
	step(op);
}

static void on_head(struct s3_request *req)
{
	struct readop *op = req->ctx;

	while (evloop_post(op->c->srv->cfg.loop, proved, op) == -EAGAIN)
		;
}

static void prove(struct readop *op)
{
	int r;

	op->c->srv->c.proofs++;
	op->head = (struct s3_request){ .op = S3_OP_HEAD, .bucket = op->obj.bucket,
					.key = op->obj.key,
					.if_match = op->etag[0] ? op->etag : NULL,
					.done = on_head, .ctx = op };
	r = s3_submit(op->c->srv->cfg.engine, &op->head);
	if (r < 0)
		op_fail(op, r, "S3 engine busy");
}

static void filled(void *ctx, int err)
{
	struct readop *op = ctx;

	if (err < 0) {
		op_fail(op, err, err == -ESTALE ? "object changed in S3 since it was indexed"
						: "fetch from S3 failed");
		return;
	}
	if (++op->rounds >= MAX_ROUNDS) {
		op_fail(op, -EAGAIN, "blocks evicted before they could be served; cache too small");
		return;
	}
	step(op);
}

/* Looks every block up; returns the number of misses (listed in miss[]). */
static size_t lookup_all(struct readop *op, struct blockread_loc *locs, bool *have,
			 uint64_t *miss)
{
	struct blockstore *st = op->c->srv->cfg.store;
	size_t nm = 0;

	for (uint64_t b = op->first; b <= op->last; b++) {
		struct blockstore_key k;
		uint64_t i = b - op->first;
		have[i] = blockstore_key(op->obj.endpoint, op->obj.bucket_name, op->obj.key,
					 op->obj.etag, b, &k) == 0 &&
			  blockstore_lookup(st, &k, &locs[i]) == 0;
		if (!have[i])
			miss[nm++] = b;
	}
	return nm;
}

static void step_with(struct readop *op, struct view *v, struct blockread_loc *locs,
		      bool *have, uint64_t *miss)
{
	struct server *srv = op->c->srv;
	uint64_t n = op->last - op->first + 1;
	size_t nm = lookup_all(op, locs, have, miss);
	int r;

	if (!op->proven)
		op->proven = tenancy_has(srv->cfg.tenancy, op->obj.identity, op->obj.endpoint,
					 op->obj.bucket_name, op->obj.key, op->obj.etag);
	if (op->rounds == 0) {
		v->hits += n - nm;
		v->misses += nm;
	}
	if (nm && op->exact && op->rounds == 0 &&
	    exactop_start(op->c, op->id, op->view_id, &op->obj, op->offset, op->length)) {
		op_end(op);
		return;
	}
	if (!op->proven && nm < n) {
		prove(op);
		return;
	}
	r = fill_sched_ensure(srv->cfg.fills, &op->obj, miss, nm, op->kind, op->proven,
			      &v->stats, op->no_wait ? NULL : filled, op);
	if (r == -ENOKEY && !op->no_wait)
		prove(op);
	else if (r == 1)
		; /* filled() continues */
	else if (r < 0 && !op->no_wait)
		op_fail(op, r, "cannot schedule the fetch");
	else
		reply_locs(op, locs, have, n, blockstore_block_size(srv->cfg.store));
}

static void step(struct readop *op)
{
	struct view *v = views_find(op->c->srv->cfg.views, op->view_id);
	uint64_t n = op->last - op->first + 1;
	struct blockread_loc *locs = NULL;
	uint64_t *miss = NULL;
	bool *have = NULL;

	if (op->c->dead || !v || v->owner != op->c) {
		op_fail(op, -EBADF, "view released");
		return;
	}
	locs = calloc(n, sizeof(*locs));
	have = calloc(n, sizeof(*have));
	miss = calloc(n, sizeof(*miss));
	if (locs && have && miss)
		step_with(op, v, locs, have, miss);
	else
		op_fail(op, -ENOMEM, NULL);
	free(locs);
	free(have);
	free(miss);
}

static int op_init(struct readop *op, struct view *v, const Lith__Cache__Read *rd, char *msg,
		   size_t msglen)
{
	uint32_t bs = blockstore_block_size(op->c->srv->cfg.store);
	int r = view_object(v, rd->entry, op->key, sizeof(op->key), op->etag, sizeof(op->etag),
			    &op->obj);

	if (r < 0) {
		snprintf(msg, msglen, "entry %llu: %s", (unsigned long long)rd->entry,
			 strerror(-r));
		return r;
	}
	if (rd->length == 0 || rd->offset >= op->obj.size)
		return 1; /* nothing to read: empty answer */
	op->first = rd->offset / bs;
	op->last = (MIN(rd->offset + rd->length, op->obj.size) - 1) / bs;
	if (op->last - op->first + 1 > op->c->srv->cfg.max_read_blocks) {
		snprintf(msg, msglen, "read spans more than %u blocks",
			 op->c->srv->cfg.max_read_blocks);
		return -EINVAL;
	}
	op->kind = (unsigned)rd->kind < (unsigned)FILL_KIND__COUNT ? (enum fill_kind)rd->kind
								 : FILL_KIND_DEMAND;
	op->no_wait = rd->no_wait;
	op->exact = rd->exact && !rd->no_wait;
	op->offset = rd->offset;
	op->length = rd->length;
	return 0;
}

void readop_start(struct conn *c, const Lith__Cache__Request *req)
{
	const Lith__Cache__Read *rd = req->read;
	struct view *v = views_find(c->srv->cfg.views, rd->view);
	struct readop *op;
	char msg[160] = "";
	int r;

	c->srv->c.reads++;
	if (!v || v->owner != c) {
		conn_reply_error(c, req->id, EBADF, "no such view on this connection");
		return;
	}
	op = calloc(1, sizeof(*op));
	if (!op) {
		conn_reply_error(c, req->id, ENOMEM, NULL);
		return;
	}
	*op = (struct readop){ .c = c, .id = req->id, .view_id = rd->view, .ino = rd->entry };
	conn_ref(c);
	r = op_init(op, v, rd, msg, sizeof(msg));
	if (r < 0)
		op_fail(op, r, msg);
	else if (r > 0)
		reply_locs(op, NULL, NULL, 0, 0);
	else
		step(op);
}
