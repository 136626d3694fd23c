// SPDX-License-Identifier: Apache-2.0
/*
 * The ListObjectsV2 index builder (design in build.h).
 *
 * Threads: the calling thread owns the tree, the stack of pending work and
 * every counter; the engine thread only runs on_done, which pushes the
 * finished task onto `done` under `lock` and signals. Invariants: a work
 * item is either pending, or owned by exactly one in-flight task; inflight
 * counts submitted tasks whose done has not been handled; the build never
 * returns while inflight > 0 (the engine still holds their requests).
 * Memory: pending work is one small item per unlisted prefix (bounded by
 * max_keys), and at most `concurrency` pages exist at once.
 * A work item is delimited (its page yields objects and common prefixes one
 * level down) or flat (no delimiter: objects any depth below its prefix,
 * never a common prefix); the hybrid rule choosing between them for new
 * prefixes is in want_flat() (why: build.h).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fetch/base/clock.h"
#include "fetch/base/macro.h"
#include "fetch/index/build.h"

#define MAX_EMPTY_PAGES 16
#define EAGAIN_BACKOFF_NS 10000000L

/* A prefix still to list, and where its listing stands. */
struct work {
	struct work *next;
	char *token;          /* continuation token, NULL for the first page */
	unsigned empty_pages; /* consecutive truncated pages with nothing in them */
	bool flat;            /* listed without delimiter */
	char prefix[];
};

struct task {
	struct s3_request req;
	struct builder *b;
	struct work *w;
	struct task *next;
};

struct builder {
	const struct index_build_config *cfg;
	struct index_tree *tree;
	unsigned limit;
	unsigned flat_at;     /* hybrid threshold; UINT_MAX: never flat */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct task *done;    /* under lock */
	struct work *pending; /* stack; calling thread only */
	uint64_t npending;
	unsigned inflight;
	uint64_t requests, retries, prefixes, flat;
	unsigned max_inflight;
	int err;
	char *errbuf;
	size_t errlen;
};

static int fail(struct builder *b, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct builder *b, int r, const char *fmt, ...)
{
	va_list ap;

	if (b->err)
		return r;
	b->err = r;
	va_start(ap, fmt);
	vsnprintf(b->errbuf, b->errlen, fmt, ap);
	va_end(ap);
	return r;
}

static void work_free(struct work *w)
{
	if (w) {
		free(w->token);
		free(w);
	}
}

static void push_pending(struct builder *b, struct work *w)
{
	w->next = b->pending;
	b->pending = w;
	b->npending++;
}

static struct work *pop_pending(struct builder *b)
{
	struct work *w = b->pending;

	b->pending = w->next;
	w->next = NULL;
	b->npending--;
	return w;
}

static int push_work(struct builder *b, const char *prefix, bool flat)
{
	size_t len = strlen(prefix);
	struct work *w = calloc(1, sizeof(*w) + len + 1);

	if (!w)
		return fail(b, -ENOMEM, "out of memory");
	memcpy(w->prefix, prefix, len + 1);
	w->flat = flat;
	push_pending(b, w);
	return 0;
}

/* ---- engine thread ----------------------------------------------------- */

static void on_done(struct s3_request *req)
{
	struct task *t = req->ctx;
	struct builder *b = t->b;

	pthread_mutex_lock(&b->lock);
	t->next = b->done;
	b->done = t;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

/* ---- submitting -------------------------------------------------------- */

static int submit(struct builder *b, struct work *w)
{
	struct task *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	t->b = b;
	t->w = w;
	t->req = (struct s3_request){
		.op = S3_OP_LIST, .bucket = b->cfg->bucket, .done = on_done, .ctx = t,
		.list = { .prefix = w->prefix, .delimiter = w->flat ? NULL : "/",
			  .continuation_token = w->token, .max_keys = b->cfg->page_keys },
	};
	r = s3_submit(b->cfg->engine, &t->req);
	if (r < 0)
		free(t);
	return r;
}

/* Submits pending work up to the limit. Returns false when the engine's
 * queue is full (-EAGAIN) and nothing of ours is in flight to wait for. */
static bool submit_pending(struct builder *b)
{
	while (!b->err && b->pending && b->inflight < b->limit) {
		struct work *w = b->pending;
		int r = submit(b, w);

		if (r == -EAGAIN)
			return b->inflight > 0;
		if (r < 0) {
			fail(b, r, "cannot submit LIST of '%s': %s", w->prefix, strerror(-r));
			return true;
		}
		pop_pending(b);
		b->inflight++;
		b->max_inflight = MAX(b->max_inflight, b->inflight);
	}
	return true;
}

static struct task *wait_done(struct builder *b)
{
	struct task *list;

	pthread_mutex_lock(&b->lock);
	while (!b->done)
		pthread_cond_wait(&b->cond, &b->lock);
	list = b->done;
	b->done = NULL;
	pthread_mutex_unlock(&b->lock);
	return list;
}

/* ---- handling a page --------------------------------------------------- */

static bool has_prefix(const char *s, size_t len, const char *prefix, size_t plen)
{
	return len >= plen && memcmp(s, prefix, plen) == 0;
}

static int take_objects(struct builder *b, const struct work *w, const struct s3_list_page *pg)
{
	size_t plen = strlen(w->prefix);

	for (size_t i = 0; i < pg->nobjects; i++) {
		const struct s3_object *o = &pg->objects[i];
		int r = has_prefix(o->key, o->key_len, w->prefix, plen)
			? index_tree_add(b->tree, o->key, o->key_len, o->size, o->mtime, o->etag)
			: index_tree_skip(b->tree, INDEX_SKIP_OUTSIDE_PREFIX, o->key, o->key_len);

		if (r == -E2BIG)
			return fail(b, r, "the listing has more than %llu keys or entries (max keys)",
				    (unsigned long long)b->cfg->max_keys);
		if (r < 0)
			return fail(b, r, "key '%s': %s", o->key, strerror(-r));
	}
	return 0;
}

/* A common prefix must be the listed prefix plus one segment and '/'. */
static int take_prefix(struct builder *b, const struct work *w, const char *cp, bool flat)
{
	size_t plen = strlen(w->prefix), len = strlen(cp);

	if (len <= plen || !has_prefix(cp, len, w->prefix, plen) || cp[len - 1] != '/' ||
	    memchr(cp + plen, '/', len - plen - 1))
		return fail(b, -EPROTO, "the server returned common prefix '%s' listing '%s'", cp,
			    w->prefix);
	if (++b->prefixes > b->cfg->max_keys)
		return fail(b, -E2BIG, "the listing has more than %llu prefixes (max keys)",
			    (unsigned long long)b->cfg->max_keys);
	b->flat += flat;
	return push_work(b, cp, flat);
}

/* The hybrid rule (build.h): list a delimited page's new prefixes flat once
 * the outstanding work, them included, reaches flat_at. */
static bool want_flat(const struct builder *b, const struct s3_list_page *pg)
{
	uint64_t outstanding = b->npending + b->inflight + pg->nprefixes + !!pg->truncated;

	return b->flat_at != UINT_MAX && outstanding >= b->flat_at;
}

static int take_prefixes(struct builder *b, const struct work *w, const struct s3_list_page *pg)
{
	bool flat;
	int r = 0;

	if (w->flat && pg->nprefixes)
		return fail(b, -EPROTO, "the server returned common prefix '%s' listing '%s' "
			    "without delimiter", pg->prefixes[0], w->prefix);
	flat = want_flat(b, pg);
	for (size_t i = 0; r == 0 && i < pg->nprefixes; i++)
		r = take_prefix(b, w, pg->prefixes[i], flat);
	return r;
}

/* Returns 1 when w has more pages, 0 when it is done, < 0 on error. */
static int next_page(struct builder *b, struct work *w, const struct s3_list_page *pg)
{
	char *token;

	if (!pg->truncated)
		return 0;
	if (!pg->next_token || !*pg->next_token || (w->token && !strcmp(w->token, pg->next_token)))
		return fail(b, -EPROTO, "listing '%s': truncated page with a missing or repeated "
			    "continuation token", w->prefix);
	w->empty_pages = pg->nobjects || pg->nprefixes ? 0 : w->empty_pages + 1;
	if (w->empty_pages >= MAX_EMPTY_PAGES)
		return fail(b, -EPROTO, "listing '%s': %d empty truncated pages in a row",
			    w->prefix, MAX_EMPTY_PAGES);
	token = strdup(pg->next_token);
	if (!token)
		return fail(b, -ENOMEM, "out of memory");
	free(w->token);
	w->token = token;
	return 1;
}

static int take_page(struct builder *b, struct work *w, const struct s3_list_page *pg)
{
	int r = take_objects(b, w, pg);

	if (r == 0)
		r = take_prefixes(b, w, pg);
	return r < 0 ? r : next_page(b, w, pg);
}

static void handle(struct builder *b, struct task *t)
{
	struct work *w = t->w;
	const struct s3_result *res = &t->req.res;
	int r = -ECANCELED;

	b->inflight--;
	b->requests++;
	b->retries += res->retries;
	if (res->err)
		fail(b, res->err, "LIST '%s': %s", w->prefix,
		     res->errmsg[0] ? res->errmsg : strerror(-res->err));
	else if (!b->err)
		r = take_page(b, w, &t->req.page);
	s3_list_page_free(&t->req.page);
	free(t);
	if (r == 1)
		push_pending(b, w);
	else
		work_free(w);
}

/* ---- the walk ---------------------------------------------------------- */

static void run(struct builder *b)
{
	static const struct timespec backoff = { 0, EAGAIN_BACKOFF_NS };

	while (b->inflight || (b->pending && !b->err)) {
		if (!submit_pending(b)) {
			nanosleep(&backoff, NULL); /* engine full of other users' work */
			continue;
		}
		if (!b->inflight)
			continue;
		for (struct task *t = wait_done(b), *next; t; t = next) {
			next = t->next;
			handle(b, t);
		}
	}
	while (b->pending)
		work_free(pop_pending(b));
}

const char *index_strategy_name(enum index_strategy s)
{
	switch (s) {
	case INDEX_STRATEGY_HYBRID: return "hybrid";
	case INDEX_STRATEGY_FANOUT: return "fanout-all";
	case INDEX_STRATEGY_SERIAL: return "serial";
	}
	return "?";
}

int index_prefix_normalize(const char *in, char *out, size_t cap)
{
	size_t len = in ? strlen(in) : 0;
	bool slash = len && in[len - 1] != '/';

	if (len + slash > INDEX_KEY_MAX || len + slash >= cap)
		return -ENAMETOOLONG;
	memcpy(out, in ? in : "", len);
	if (slash)
		out[len++] = '/';
	out[len] = '\0';
	return 0;
}

static int write_index(struct builder *b, int64_t started, uint64_t t0, const char *path)
{
	struct index_meta meta = {
		.endpoint = b->cfg->endpoint, .bucket = s3_bucket_name(b->cfg->bucket),
		.build_time = started, .build_usec = (clock_mono_ns() - t0) / 1000,
		.list_requests = b->requests, .concurrency = b->limit,
		.serial = b->cfg->strategy == INDEX_STRATEGY_SERIAL,
	};
	int r = index_tree_write(b->tree, &meta, path);

	if (r < 0)
		return fail(b, r, "writing %s: %s", path, strerror(-r));
	return 0;
}

static int walk(struct builder *b, const char *prefix, const char *path)
{
	int64_t started = (int64_t)time(NULL);
	uint64_t t0 = clock_mono_ns();
	int r = push_work(b, prefix, b->cfg->strategy == INDEX_STRATEGY_SERIAL);

	if (r < 0)
		return r;
	run(b);
	if (b->err)
		return b->err;
	return write_index(b, started, t0, path);
}

static int check_config(const struct index_build_config *cfg, char *err, size_t errlen)
{
	if (!cfg->engine || !cfg->bucket) {
		snprintf(err, errlen, "no S3 engine or bucket");
		return -EINVAL;
	}
	if ((unsigned)cfg->strategy > INDEX_STRATEGY_SERIAL) {
		snprintf(err, errlen, "unknown index build strategy %d", (int)cfg->strategy);
		return -EINVAL;
	}
	if (cfg->concurrency > INDEX_MAX_CONCURRENCY || cfg->max_keys > INDEX_MAX_ENTRIES_LIMIT) {
		snprintf(err, errlen, "concurrency above %u or max keys above %llu",
			 INDEX_MAX_CONCURRENCY, (unsigned long long)INDEX_MAX_ENTRIES_LIMIT);
		return -EINVAL;
	}
	return 0;
}

static int setup(struct builder *b, struct index_build_config *c, char *prefix, size_t cap)
{
	int r = check_config(c, b->errbuf, b->errlen);

	if (r < 0)
		return r;
	if (index_prefix_normalize(c->prefix, prefix, cap) < 0) {
		snprintf(b->errbuf, b->errlen, "prefix longer than %d bytes", INDEX_KEY_MAX);
		return -ENAMETOOLONG;
	}
	c->max_keys = c->max_keys ? c->max_keys : INDEX_DEFAULT_MAX_KEYS;
	b->limit = c->strategy == INDEX_STRATEGY_SERIAL ? 1
		   : c->concurrency ? c->concurrency : INDEX_DEFAULT_CONCURRENCY;
	b->flat_at = c->strategy != INDEX_STRATEGY_HYBRID ? UINT_MAX
		     : c->flat_at ? c->flat_at : MAX(1u, b->limit / 2);
	r = index_tree_new(&(struct index_tree_config){ .prefix = prefix,
							 .max_entries = c->max_keys }, &b->tree);
	if (r < 0)
		snprintf(b->errbuf, b->errlen, "cannot start the index: %s", strerror(-r));
	return r;
}

int index_build(const struct index_build_config *cfg, const char *path,
		struct index_build_stats *ret, char *err, size_t errlen)
{
	struct index_build_config c = *cfg;
	char prefix[INDEX_KEY_MAX + 1];
	struct builder b = { .cfg = &c, .errbuf = err, .errlen = errlen };
	uint64_t t0 = clock_mono_ns();
	int r = setup(&b, &c, prefix, sizeof(prefix));

	if (r < 0)
		return r;
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	r = walk(&b, prefix, path);
	if (r == 0) {
		*ret = (struct index_build_stats){
			.seconds = (double)(clock_mono_ns() - t0) / 1e9, .requests = b.requests,
			.retries = b.retries, .prefixes = b.prefixes, .flat = b.flat,
			.max_inflight = b.max_inflight,
		};
		index_tree_get_counts(b.tree, &ret->counts);
	}
	pthread_cond_destroy(&b.cond);
	pthread_mutex_destroy(&b.lock);
	index_tree_free(b.tree);
	return r;
}
