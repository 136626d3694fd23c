/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Building an index from ListObjectsV2.
 *
 * Three strategies, one index: whichever is used, the file is the same
 * (the tree builder takes full keys in any order).
 *
 * Hybrid (default): list the root prefix with delimiter '/' and fan out
 * over its common prefixes, but only until there is enough parallel work;
 * from then on every new common prefix is listed FLAT (no delimiter: its
 * whole subtree, page after page). The rule, applied to each delimited page
 * that yields common prefixes: when the outstanding work items (pending +
 * in flight + this listing's next page if truncated + the page's new
 * prefixes) reach `flat_at` (default concurrency / 2, at least 1), the new
 * prefixes are listed flat; below it they are listed with the delimiter.
 * Why: with that many items, at least half of the connections stay busy
 * with work already known, so splitting further buys at most 2x more
 * parallelism, while it costs one more LIST per directory (server CPU:
 * ~5 ms per LIST on RGW, which is what bounds a parallel listing on a
 * small server) and one more round trip per tree level. Flat pages are
 * full (1000 keys), delimited pages of small directories are not.
 * Cost: D' delimited LISTs for the directories above the cut, plus
 * ceil(keys under the prefix / 1000) per flat prefix; round trips about
 * (depth of the cut) + (pages of the largest flat subtree). Limitation: a
 * skewed tree whose keys sit under one flat prefix lists it serially.
 *
 * Pure fan-out (INDEX_STRATEGY_FANOUT, `--fanout-all`): every common prefix
 * is listed with the delimiter. A tree of D directories whose largest
 * directory has P pages takes about depth + P round trips, and D + (extra
 * pages) requests.
 *
 * Serial (INDEX_STRATEGY_SERIAL, `--serial`): the root prefix listed flat,
 * one request at a time: ceil(keys / 1000) requests and round trips.
 *
 * Bounds: a walk that splits work only over discovered common prefixes
 * needs one sequential round per level it descends with the delimiter,
 * plus the pages of its largest subtree listed flat, so no such strategy
 * beats serial by more than ceil(keys / 1000) / (that many rounds) (20,000
 * keys under train/part-NN/shard-NN/: 21 vs 3 rounds, at most 7x). And
 * the server lists every key whatever the strategy: on a small server the
 * CPU for that (plus a few ms per extra LIST) is a floor no amount of
 * concurrency removes (tests/bench/index_fanout.py measures both).
 *
 * In every strategy at most `concurrency` LIST requests are in flight and
 * the pages of one prefix follow their continuation tokens one after
 * another. Requests go through s3_submit; completions are handed from the
 * engine thread to the calling thread through a mutex/cond queue, and
 * everything else (the tree, the task queue) is touched by the calling
 * thread only. The caller's engine and bucket must outlive the call; the
 * engine should allow at least `concurrency` connections.
 *
 * Hostile listings are bounded: max_keys caps listed objects, listed
 * common prefixes and index entries (-E2BIG); a common prefix that does
 * not extend the prefix listed by one segment, any common prefix in a
 * listing without delimiter, a truncated page without a token, a token
 * that repeats, or 16 empty truncated pages in a row are -EPROTO. Keys
 * outside the listed prefix are skipped and counted (OUTSIDE_PREFIX).
 */
#ifndef LITH_INDEX_BUILD_H
#define LITH_INDEX_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fetch/index/tree.h"
#include "fetch/s3/s3.h"

#define INDEX_DEFAULT_CONCURRENCY 32u
#define INDEX_MAX_CONCURRENCY 1024u

enum index_strategy {
	INDEX_STRATEGY_HYBRID = 0,  /* fan out, then list flat (default) */
	INDEX_STRATEGY_FANOUT,      /* every prefix with the delimiter */
	INDEX_STRATEGY_SERIAL,      /* one flat walk, one request at a time */
};

struct index_build_config {
	struct s3_engine *engine;
	struct s3_bucket *bucket;
	const char *endpoint;   /* recorded in the header only; NULL: "" */
	const char *prefix;     /* NULL/"": whole bucket; "d" means "d/" */
	enum index_strategy strategy;
	unsigned concurrency;   /* 0: INDEX_DEFAULT_CONCURRENCY; serial uses 1 */
	unsigned flat_at;       /* hybrid: outstanding items from which new
				 * prefixes are listed flat; 0: concurrency / 2,
				 * at least 1 */
	unsigned page_keys;     /* max-keys per LIST; 0: server default (1000) */
	uint64_t max_keys;      /* 0: INDEX_DEFAULT_MAX_KEYS */
};

struct index_build_stats {
	double seconds;               /* first request to file renamed */
	uint64_t requests;            /* LIST requests answered */
	uint64_t retries;             /* attempts beyond the first, all requests */
	uint64_t prefixes;            /* common prefixes listed (fan-out) */
	uint64_t flat;                /* of which listed flat (hybrid) */
	unsigned max_inflight;        /* most LIST requests in flight at once */
	struct index_tree_counts counts;
};

/* Lists, builds and writes the index to path (atomically). -errno with a
 * one-line reason in err; *ret is filled on success only. */
int index_build(const struct index_build_config *cfg, const char *path,
		struct index_build_stats *ret, char *err, size_t errlen);

/* "hybrid", "fanout-all", "serial"; "?" for anything else. */
const char *index_strategy_name(enum index_strategy s);

/* "" stays ""; "a" and "a/" become "a/". -ENAMETOOLONG past INDEX_KEY_MAX. */
int index_prefix_normalize(const char *in, char *out, size_t cap);

#endif
