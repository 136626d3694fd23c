// SPDX-License-Identifier: Apache-2.0
/*
 * Fill scheduler (see fill.h). Data structures, all on the loop thread:
 *  - `flights`: hash of block key → the fill fetching it (single flight);
 *  - two FIFO queues of fills not yet started (demand, prefetch);
 *  - `all`: every live fill, so a view's stats pointer can be forgotten;
 *  - a waiter per blocking ensure() call, counting fills still pending.
 * A fill pins a slot per block when it starts (blockstore writers); its
 * GET runs on the S3 engine thread, whose body callback writes each byte
 * straight into its block's slot (and hashes it): no fill buffer, no copy.
 * The completion is posted back to the loop, where the blocks are committed
 * (published only if the GET delivered exactly the expected bytes, else
 * their slots are freed), flights are removed, waiters are released and
 * more fills are dispatched. When every slot is pinned a fill waits in its
 * queue for a running one to end.
 */
#include "fetch/cached/fill.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/base/clock.h"
#include "fetch/base/macro.h"

#define FLIGHT_BUCKETS 4096u
#define ENSURE_MAX_BLOCKS 1024u

struct waiter {
	fill_done_fn done;
	void *ctx;
	unsigned pending;
	int err;
};

struct wref {
	struct waiter *w;
	struct wref *next;
};

struct fill;

struct flight {
	struct blockstore_key key;
	struct fill *fill;
	struct blockstore_writer *w; /* while started; NULL: block already cached */
	struct flight *next;
};

struct fill {
	struct fill_sched *s;
	struct s3_request req;
	struct fill_object obj;  /* strings point into strs */
	char *strs;
	uint64_t first;          /* first block number */
	uint32_t nblocks;
	enum fill_kind kind;     /* why it was made: labels the metrics */
	bool urgent;             /* someone waits: dispatch from the demand queue */
	bool started;
	struct fill_stats *stats;
	uint64_t made_ns;        /* queued: fill seconds count from here */
	uint64_t start_ns;       /* dispatched to the S3 engine */
	struct wref *waiters;
	struct fill *qprev, *qnext;  /* queue links */
	struct fill *aprev, *anext;  /* `all` links */
	struct flight flights[];     /* one per block */
};

struct queue {
	struct fill *head, *tail;
	unsigned count;
};

struct fill_sched {
	struct fill_sched_config cfg;
	struct blockstore *store;
	struct s3_engine *engine;
	struct evloop *loop;
	uint32_t block_size;
	struct flight *flights[FLIGHT_BUCKETS];
	struct queue demand, prefetch;
	struct fill *all;
	unsigned gets;
	unsigned waiters;
	uint64_t inflight_bytes;
	fill_proof_fn proof;
	void *proof_ctx;
	struct fill_sched_counters c;
};

/* ---- small containers ---------------------------------------------- */

static unsigned flight_bucket(const struct blockstore_key *k)
{
	uint32_t h;

	memcpy(&h, k->b, sizeof(h)); /* the key is a SHA-256: already uniform */
	return h % FLIGHT_BUCKETS;
}

static struct flight *flight_find(struct fill_sched *s, const struct blockstore_key *k)
{
	for (struct flight *f = s->flights[flight_bucket(k)]; f; f = f->next)
		if (memcmp(f->key.b, k->b, sizeof(k->b)) == 0)
			return f;
	return NULL;
}

static void flight_remove(struct fill_sched *s, struct flight *fl)
{
	struct flight **pp = &s->flights[flight_bucket(&fl->key)];

	while (*pp && *pp != fl)
		pp = &(*pp)->next;
	if (*pp)
		*pp = fl->next;
}

static void queue_push(struct queue *q, struct fill *f)
{
	f->qnext = NULL;
	f->qprev = q->tail;
	if (q->tail)
		q->tail->qnext = f;
	else
		q->head = f;
	q->tail = f;
	q->count++;
}

static void queue_remove(struct queue *q, struct fill *f)
{
	if (f->qprev)
		f->qprev->qnext = f->qnext;
	else
		q->head = f->qnext;
	if (f->qnext)
		f->qnext->qprev = f->qprev;
	else
		q->tail = f->qprev;
	f->qprev = f->qnext = NULL;
	q->count--;
}

/* ---- fills ---------------------------------------------------------- */

static int copy_object(struct fill *f, const struct fill_object *o)
{
	size_t le = strlen(o->endpoint) + 1, lb = strlen(o->bucket_name) + 1;
	size_t lk = strlen(o->key) + 1, lt = strlen(o->etag) + 1;
	char *p = malloc(le + lb + lk + lt);

	if (!p)
		return -ENOMEM;
	f->strs = p;
	f->obj = *o;
	f->obj.endpoint = memcpy(p, o->endpoint, le);
	f->obj.bucket_name = memcpy(p += le, o->bucket_name, lb);
	f->obj.key = memcpy(p += lb, o->key, lk);
	f->obj.etag = memcpy(p += lk, o->etag, lt);
	if (o->hold)
		o->hold(o->owner, +1);
	return 0;
}

/* Ends the pins of blocks not committed (a failed or cancelled fill). */
static void abort_writers(struct fill *f)
{
	for (uint32_t i = 0; i < f->nblocks; i++) {
		blockstore_writer_abort(f->flights[i].w);
		f->flights[i].w = NULL;
	}
}

static void fill_free(struct fill *f)
{
	struct wref *r, *next;

	for (r = f->waiters; r; r = next) {
		next = r->next;
		free(r);
	}
	abort_writers(f);
	if (f->obj.hold && f->strs)
		f->obj.hold(f->obj.owner, -1);
	free(f->strs);
	free(f);
}

static struct fill *fill_new(struct fill_sched *s, const struct fill_object *o,
			     uint64_t first, uint32_t n, enum fill_kind kind,
			     struct fill_stats *stats)
{
	struct fill *f = calloc(1, sizeof(*f) + n * sizeof(struct flight));

	if (!f || copy_object(f, o) < 0) {
		free(f);
		return NULL;
	}
	f->s = s;
	f->first = first;
	f->nblocks = n;
	f->kind = kind;
	f->urgent = kind == FILL_KIND_DEMAND;
	f->stats = stats;
	f->made_ns = clock_mono_ns();
	for (uint32_t i = 0; i < n; i++) {
		f->flights[i].fill = f;
		if (blockstore_key(o->endpoint, o->bucket_name, o->key, o->etag, first + i,
				   &f->flights[i].key) < 0) {
			fill_free(f);
			return NULL;
		}
	}
	return f;
}

static void fill_register(struct fill_sched *s, struct fill *f)
{
	for (uint32_t i = 0; i < f->nblocks; i++) {
		struct flight *fl = &f->flights[i];
		unsigned b = flight_bucket(&fl->key);
		fl->next = s->flights[b];
		s->flights[b] = fl;
	}
	f->anext = s->all;
	if (s->all)
		s->all->aprev = f;
	s->all = f;
	queue_push(f->urgent ? &s->demand : &s->prefetch, f);
}

static void fill_unregister(struct fill_sched *s, struct fill *f)
{
	for (uint32_t i = 0; i < f->nblocks; i++)
		flight_remove(s, &f->flights[i]);
	if (f->aprev)
		f->aprev->anext = f->anext;
	else
		s->all = f->anext;
	if (f->anext)
		f->anext->aprev = f->aprev;
}

static int fill_add_waiter(struct fill *f, struct waiter *w)
{
	struct wref *r = malloc(sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->w = w;
	r->next = f->waiters;
	f->waiters = r;
	w->pending++;
	return 0;
}

/* A demand joining a queued prefetch makes the whole fill urgent. */
static void fill_promote(struct fill_sched *s, struct fill *f)
{
	if (f->started || f->urgent)
		return;
	queue_remove(&s->prefetch, f);
	f->urgent = true;
	queue_push(&s->demand, f);
}

/* ---- dispatch and completion --------------------------------------- */

static uint64_t fill_bytes(const struct fill_sched *s, const struct fill *f)
{
	uint64_t off = f->first * s->block_size;
	uint64_t len = (uint64_t)f->nblocks * s->block_size;

	return MIN(len, f->obj.size - off);
}

static void dispatch(struct fill_sched *s);

static void account(struct fill *f, int err)
{
	double queued_s = (double)(f->start_ns - f->made_ns) / 1e9;
	struct fill_sample x = {
		.kind = f->kind,
		.bytes = f->req.res.bytes,
		.fill_s = queued_s + f->req.res.ttfb_s,
		.server_s = f->req.res.server_s,
		.total_s = (double)(clock_mono_ns() - f->made_ns) / 1e9,
		.ttfb_s = f->req.res.ttfb_s,
	};

	if (!f->stats)
		return;
	if (err < 0)
		fill_stats_error(f->stats, f->kind);
	else
		fill_stats_observe(f->stats, &x);
}

/* Publishes every block the GET wrote in full (a writer checks the byte
 * count: a short block is freed, never published). */
static int commit_blocks(struct fill_sched *s, struct fill *f)
{
	int err = 0;

	for (uint32_t i = 0; i < f->nblocks; i++) {
		uint64_t off = (uint64_t)i * s->block_size;
		uint32_t len = (uint32_t)MIN((uint64_t)s->block_size, f->req.res.bytes - off);
		struct blockstore_writer *w = f->flights[i].w;
		int r = w ? blockstore_writer_commit(w, len) : 0;

		f->flights[i].w = NULL;
		if (r < 0 && !err)
			err = r;
	}
	return err;
}

static void release_waiters(struct fill_sched *s, struct fill *f, int err)
{
	for (struct wref *r = f->waiters; r; r = r->next) {
		struct waiter *w = r->w;
		if (err < 0 && !w->err)
			w->err = err;
		if (--w->pending == 0) {
			s->waiters--;
			w->done(w->ctx, w->err);
			free(w);
		}
	}
}

static void fill_complete(struct evloop *loop, void *arg)
{
	struct fill *f = arg;
	struct fill_sched *s = f->s;
	int err = f->req.res.err;

	(void)loop;
	s->gets--;
	s->inflight_bytes -= fill_bytes(s, f);
	account(f, err);
	if (err == 0 && f->req.res.bytes != fill_bytes(s, f))
		err = -EIO;
	if (err == 0) {
		s->c.get_bytes += f->req.res.bytes;
		err = commit_blocks(s, f);
		if (s->proof)
			s->proof(s->proof_ctx, f->obj.identity, &f->obj);
	} else {
		s->c.get_errors++;
		abort_writers(f);
	}
	fill_unregister(s, f);
	release_waiters(s, f, err);
	fill_free(f);
	dispatch(s);
}

/* Engine thread: hand the result to the loop thread. */
static void on_get_done(struct s3_request *req)
{
	struct fill *f = req->ctx;

	while (evloop_post(f->s->loop, fill_complete, f) == -EAGAIN)
		; /* the post queue is sized above the GET cap: cannot stay full */
}

/* Engine thread: body bytes at pos of the fill's range go straight into
 * their blocks' slots. Blocks already cached (no writer) are skipped. */
static int on_get_body(struct s3_request *req, uint64_t pos, const void *data, size_t len)
{
	struct fill *f = req->ctx;
	uint32_t bs = f->s->block_size;
	const char *p = data;

	while (len > 0) {
		uint64_t i = pos / bs;
		uint32_t off = (uint32_t)(pos % bs);
		size_t n = MIN(len, (size_t)(bs - off));
		int r = i < f->nblocks && f->flights[i].w
				? blockstore_writer_put(f->flights[i].w, off, p, n)
				: (i < f->nblocks ? 0 : -EIO);

		if (r < 0)
			return r;
		pos += n;
		p += n;
		len -= n;
	}
	return 0;
}

/* Pins a slot per block. -EBUSY (nothing pinned) when every slot is. */
static int reserve_blocks(struct fill_sched *s, struct fill *f)
{
	for (uint32_t i = 0; i < f->nblocks; i++) {
		uint32_t slot;
		int r = blockstore_reserve(s->store, &f->flights[i].key, &slot);

		if (r == 0)
			r = blockstore_writer_new(s->store, slot, &f->flights[i].w);
		else if (r == -EEXIST || r == -EALREADY)
			r = 0; /* cached meanwhile (or filled by another store user) */
		if (r < 0) {
			abort_writers(f);
			return r;
		}
	}
	return 0;
}

static int fill_start(struct fill_sched *s, struct fill *f)
{
	uint64_t len = fill_bytes(s, f);
	int r = reserve_blocks(s, f);

	if (r < 0)
		return r;
	f->req = (struct s3_request){
		.op = S3_OP_GET, .bucket = f->obj.bucket, .key = f->obj.key,
		.offset = f->first * s->block_size, .length = len,
		.if_match = f->obj.etag[0] ? f->obj.etag : NULL,
		.sink = on_get_body, .done = on_get_done, .ctx = f,
	};
	f->started = true;
	f->start_ns = clock_mono_ns();
	return s3_submit(s->engine, &f->req);
}

static struct fill *next_fill(struct fill_sched *s)
{
	struct fill *f = s->demand.head ? s->demand.head : s->prefetch.head;

	if (!f || s->gets >= s->cfg.max_gets)
		return NULL;
	/* The budget bounds bytes in flight, but one fill always may run. */
	if (s->gets && s->inflight_bytes + fill_bytes(s, f) > s->cfg.budget_bytes)
		return NULL;
	queue_remove(f->urgent ? &s->demand : &s->prefetch, f);
	return f;
}

/* Every slot pinned: wait (at the head of its queue) for a running fill
 * to end, unless none runs. */
static bool requeue_busy(struct fill_sched *s, struct fill *f, int r)
{
	struct queue *q = f->urgent ? &s->demand : &s->prefetch;

	if (r != -EBUSY || s->gets == 0)
		return false;
	f->qprev = NULL;
	f->qnext = q->head;
	if (q->head)
		q->head->qprev = f;
	else
		q->tail = f;
	q->head = f;
	q->count++;
	return true;
}

static void dispatch(struct fill_sched *s)
{
	struct fill *f;

	while ((f = next_fill(s))) {
		int r = fill_start(s, f);
		if (requeue_busy(s, f, r))
			return;
		if (r < 0) {
			f->req.res.err = r;
			s->gets++;
			s->inflight_bytes += fill_bytes(s, f);
			fill_complete(s->loop, f);
			continue;
		}
		s->gets++;
		s->c.gets++;
		s->inflight_bytes += fill_bytes(s, f);
	}
}

/* ---- ensure --------------------------------------------------------- */

static int check_blocks(const struct fill_sched *s, const struct fill_object *o,
			const uint64_t *blocks, size_t n)
{
	uint64_t nblocks = (o->size + s->block_size - 1) / s->block_size;

	if (n > ENSURE_MAX_BLOCKS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (blocks[i] >= nblocks || (i && blocks[i] <= blocks[i - 1]))
			return -EINVAL;
	return 0;
}

/* Joins in-flight fills; -ENOKEY if one belongs to an unproven identity. */
static int join_flights(struct fill_sched *s, const struct fill_object *o,
			const uint64_t *blocks, size_t n, bool proven, struct fill **joined)
{
	for (size_t i = 0; i < n; i++) {
		struct blockstore_key k;
		struct flight *fl;
		int r = blockstore_key(o->endpoint, o->bucket_name, o->key, o->etag, blocks[i], &k);

		if (r < 0)
			return r;
		fl = flight_find(s, &k);
		joined[i] = fl ? fl->fill : NULL;
		if (fl && !proven && fl->fill->obj.identity != o->identity)
			return -ENOKEY;
	}
	return 0;
}

static int add_wait(struct fill *f, struct waiter *w)
{
	struct wref *r;

	if (!w)
		return 0;
	for (r = f->waiters; r; r = r->next)
		if (r->w == w)
			return 0; /* one fill can serve several blocks of a read */
	return fill_add_waiter(f, w);
}

/* Creates fills for runs of consecutive blocks that nobody fetches yet. */
static int make_fills(struct fill_sched *s, const struct fill_object *o, const uint64_t *blocks,
		      size_t n, struct fill **joined, enum fill_kind kind,
		      struct fill_stats *stats, struct waiter *w)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;
		struct fill *f;

		if (joined[i]) {
			if (w)
				fill_promote(s, joined[i]);
			s->c.joined++;
			if (add_wait(joined[i], w) < 0)
				return -ENOMEM;
			i++;
			continue;
		}
		while (j + 1 < n && !joined[j + 1] && blocks[j + 1] == blocks[j] + 1 &&
		       j + 1 - i < s->cfg.max_coalesce_blocks)
			j++;
		if (!w && s->prefetch.count >= s->cfg.max_prefetch_queue) {
			s->c.prefetch_dropped += j - i + 1;
			i = j + 1;
			continue;
		}
		f = fill_new(s, o, blocks[i], (uint32_t)(j - i + 1), kind, stats);
		if (!f)
			return -ENOMEM;
		if (w)
			f->urgent = true;
		fill_register(s, f);
		if (add_wait(f, w) < 0)
			return -ENOMEM;
		i = j + 1;
	}
	return 0;
}

int fill_sched_ensure(struct fill_sched *s, const struct fill_object *obj,
		      const uint64_t *blocks, size_t n, enum fill_kind kind, bool proven,
		      struct fill_stats *stats, fill_done_fn done, void *ctx)
{
	_cleanup_free_ struct fill **joined = NULL;
	struct waiter *w = NULL;
	int r = check_blocks(s, obj, blocks, n);

	if (r < 0 || n == 0)
		return r;
	joined = calloc(n, sizeof(*joined));
	if (!joined)
		return -ENOMEM;
	r = join_flights(s, obj, blocks, n, proven, joined);
	if (r < 0)
		return r;
	if (done) {
		if (s->waiters >= s->cfg.max_waiters)
			return -EAGAIN;
		w = calloc(1, sizeof(*w));
		if (!w)
			return -ENOMEM;
		*w = (struct waiter){ .done = done, .ctx = ctx };
		s->waiters++;
	}
	r = make_fills(s, obj, blocks, n, joined, kind, stats, w);
	dispatch(s);
	if (!w)
		return r < 0 ? r : 0;
	if (w->pending == 0) { /* nothing to wait for after all (or failure) */
		s->waiters--;
		free(w);
		return r < 0 ? r : 0;
	}
	if (r < 0)
		w->err = r; /* waits for what it joined, then reports the error */
	return 1;
}

/* ---- lifecycle ------------------------------------------------------ */

int fill_sched_new(const struct fill_sched_config *cfg, struct blockstore *store,
		   struct s3_engine *engine, struct evloop *loop, struct fill_sched **ret)
{
	struct fill_sched *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	if (!s->cfg.max_coalesce_blocks)
		s->cfg.max_coalesce_blocks = 8;
	if (!s->cfg.max_gets)
		s->cfg.max_gets = 64;
	if (!s->cfg.budget_bytes)
		s->cfg.budget_bytes = 256ull << 20;
	if (!s->cfg.max_prefetch_queue)
		s->cfg.max_prefetch_queue = 1024;
	if (!s->cfg.max_waiters)
		s->cfg.max_waiters = 65536;
	s->store = store;
	s->engine = engine;
	s->loop = loop;
	s->block_size = blockstore_block_size(store);
	*ret = s;
	return 0;
}

void fill_sched_free(struct fill_sched *s)
{
	if (!s)
		return;
	while (s->all) {
		struct fill *f = s->all;
		fill_unregister(s, f);
		release_waiters(s, f, -ECANCELED);
		fill_free(f);
	}
	free(s);
}

void fill_sched_on_proof(struct fill_sched *s, fill_proof_fn fn, void *ctx)
{
	s->proof = fn;
	s->proof_ctx = ctx;
}

void fill_sched_forget_stats(struct fill_sched *s, struct fill_stats *stats)
{
	for (struct fill *f = s->all; f; f = f->anext)
		if (f->stats == stats)
			f->stats = NULL;
}

void fill_sched_counters(const struct fill_sched *s, struct fill_sched_counters *ret)
{
	*ret = s->c;
	ret->inflight_bytes = s->inflight_bytes;
	ret->inflight_fills = s->gets;
	ret->budget_bytes = s->cfg.budget_bytes;
	ret->queued_demand = s->demand.count;
	ret->queued_prefetch = s->prefetch.count;
}
