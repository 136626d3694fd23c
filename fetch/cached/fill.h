/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fill scheduler: makes ranges of blocks present in the block store,
 * fetching each missing block from S3 exactly once node-wide.
 *  - Single flight: a block being filled is in the in-flight table; anyone
 *    else who needs it joins that fill instead of fetching it again.
 *  - Coalescing: adjacent missing blocks of one request become one ranged
 *    GET of at most max_coalesce_blocks blocks.
 *  - Priority: demand fills are dispatched before prefetches; a demand that
 *    joins a queued prefetch promotes it. Dispatch is bounded by an in-flight
 *    byte budget and a GET count; at least one fill always runs, so a fill
 *    larger than the budget cannot starve. The prefetch queue is bounded:
 *    beyond it new prefetches are dropped (counted).
 *  - Pinning: every GET carries If-Match with the object's indexed ETag.
 *  - Zero copy into the cache: a started fill holds one pinned slot per
 *    block and the GET body is written straight into them; a block is
 *    published only when the GET delivered exactly its bytes.
 * Threads: everything runs on the daemon's loop thread except the GET body
 * writes (S3 engine thread, into the fill's pinned slots only); S3
 * completions are posted back to the loop. Callbacks run on the loop
 * thread.
 */
#ifndef LITH_CACHED_FILL_H
#define LITH_CACHED_FILL_H

#include <stdbool.h>
#include <stdint.h>

#include "fetch/base/evloop.h"
#include "fetch/cached/blockstore.h"
#include "fetch/cached/fillstats.h"
#include "fetch/s3/s3.h"


/* One object version, as a view sees it. Strings are copied by the
 * scheduler when it needs them beyond the call. */
struct fill_object {
	struct s3_bucket *bucket; /* fetches use this view's credentials */
	const char *endpoint;     /* block key fields */
	const char *bucket_name;
	const char *key;
	const char *etag;
	uint64_t size;
	uint64_t identity;        /* who asks (tenancy); fills remember it */
	/* Keeps `bucket` alive while a fill uses it: hold(owner, +1) when a
	 * fill is made, hold(owner, -1) when it ends. May be NULL. */
	void (*hold)(void *owner, int delta);
	void *owner;
};

struct fill_sched_config {
	uint32_t max_coalesce_blocks; /* 8 (8 MiB of 1 MiB blocks) */
	uint64_t budget_bytes;        /* in-flight bytes */
	unsigned max_gets;            /* GETs in flight */
	unsigned max_prefetch_queue;  /* queued prefetch fills */
	unsigned max_waiters;         /* reads waiting at once (bounded memory) */
};

struct fill_sched;

int fill_sched_new(const struct fill_sched_config *cfg, struct blockstore *store,
		   struct s3_engine *engine, struct evloop *loop, struct fill_sched **ret);
/* Fails every waiting read with -ECANCELED; in-flight GETs must have been
 * cancelled by freeing the engine first. */
void fill_sched_free(struct fill_sched *s);

typedef void (*fill_done_fn)(void *ctx, int err);

/* Makes the given blocks of obj present. `blocks` are block numbers in
 * ascending order that the caller just found missing in the store. Blocks
 * already in flight are joined, the rest are fetched, adjacent ones
 * coalesced into one GET each.
 * Returns 0 when nothing needs waiting for (prefetch, or n == 0), 1 when
 * done(ctx, err) will be called exactly once later, or -errno:
 * -ENOKEY when a block is being fetched for another identity and `proven`
 * is false (prove access, then call again with proven = true), -EAGAIN when
 * too many reads wait, -EINVAL for a bad block list.
 * A prefetch (done == NULL) never waits and may be dropped when the
 * prefetch queue is full. stats (may be NULL) is charged for fills this
 * call starts. */
int fill_sched_ensure(struct fill_sched *s, const struct fill_object *obj,
		      const uint64_t *blocks, size_t n, enum fill_kind kind, bool proven,
		      struct fill_stats *stats, fill_done_fn done, void *ctx);

/* Called when a fill proved (identity, object) readable: tenancy hook. */
typedef void (*fill_proof_fn)(void *ctx, uint64_t identity, const struct fill_object *obj);
void fill_sched_on_proof(struct fill_sched *s, fill_proof_fn fn, void *ctx);

/* Forget a stats pointer before its owner is freed (fills keep running). */
void fill_sched_forget_stats(struct fill_sched *s, struct fill_stats *stats);

struct fill_sched_counters {
	uint64_t gets, get_bytes, get_errors;
	uint64_t joined;           /* block requests that joined an in-flight fill */
	uint64_t prefetch_dropped;
	uint64_t inflight_bytes, queued_demand, queued_prefetch;
	uint64_t inflight_fills, budget_bytes;
};
void fill_sched_counters(const struct fill_sched *s, struct fill_sched_counters *ret);

#endif
