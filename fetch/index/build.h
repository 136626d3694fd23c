/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Building an index from ListObjectsV2.
 *
 * Fan-out (default): list the root prefix with delimiter '/'; every
 * CommonPrefix becomes a task of its own; at most `concurrency` LIST
 * requests are in flight; the pages of one prefix follow their
 * continuation tokens one after another. A tree of D directories whose
 * largest directory has P pages takes about depth + P round trips instead
 * of ceil(keys / 1000), and D + (extra pages) requests.
 * Serial (--serial): one walk without delimiter, page after page:
 * ceil(keys / 1000) requests, one at a time. Both give the same index.
 *
 * Requests go through s3_submit; completions are handed from the engine
 * thread to the calling thread through a mutex/cond queue, and everything
 * else (the tree, the task queue) is touched by the calling thread only.
 * The caller's engine and bucket must outlive the call; the engine should
 * allow at least `concurrency` connections.
 *
 * Hostile listings are bounded: max_keys caps listed objects, listed
 * common prefixes and index entries (-E2BIG); a common prefix that does
 * not extend the prefix listed, a truncated page without a token, a token
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

struct index_build_config {
	struct s3_engine *engine;
	struct s3_bucket *bucket;
	const char *endpoint;   /* recorded in the header only; NULL: "" */
	const char *prefix;     /* NULL/"": whole bucket; "d" means "d/" */
	bool serial;
	unsigned concurrency;   /* 0: INDEX_DEFAULT_CONCURRENCY; serial uses 1 */
	unsigned page_keys;     /* max-keys per LIST; 0: server default (1000) */
	uint64_t max_keys;      /* 0: INDEX_DEFAULT_MAX_KEYS */
};

struct index_build_stats {
	double seconds;               /* first request to file renamed */
	uint64_t requests;            /* LIST requests answered */
	uint64_t retries;             /* attempts beyond the first, all requests */
	uint64_t prefixes;            /* common prefixes listed (fan-out) */
	unsigned max_inflight;        /* most LIST requests in flight at once */
	struct index_tree_counts counts;
};

/* Lists, builds and writes the index to path (atomically). -errno with a
 * one-line reason in err; *ret is filled on success only. */
int index_build(const struct index_build_config *cfg, const char *path,
		struct index_build_stats *ret, char *err, size_t errlen);

/* "" stays ""; "a" and "a/" become "a/". -ENAMETOOLONG past INDEX_KEY_MAX. */
int index_prefix_normalize(const char *in, char *out, size_t cap);

#endif
