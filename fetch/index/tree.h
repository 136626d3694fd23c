/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The index under construction: an in-memory tree fed one listed key at a
 * time (in any order), then written out as an index file (format.h).
 *
 * Conflict rules, on top of the per-key rules of normalize.h, chosen so the
 * result depends only on the set of listed keys, never on their order:
 *   - a name that is a directory (because some key lies below it, or a
 *     "name/" marker exists) is a directory; an object with that exact name
 *     is skipped and counted as SHADOWED, whichever came first;
 *   - a zero-byte "dir/" marker only makes the directory exist; a marker
 *     with data makes the directory exist and is counted as MARKER_DATA;
 *   - a key listed twice (a server bug) is counted as DUPLICATE; the copy
 *     with the newest mtime, then the largest size, then the greatest ETag
 *     is kept;
 *   - skipped keys keep a sample: the INDEX_SAMPLES_PER_REASON bytewise
 *     smallest per reason, so samples too are order-independent.
 * A directory's mtime is the newest mtime of anything below it (its marker
 * included); an empty directory without a marker has mtime 0.
 *
 * Limits: at most max_entries listed keys and at most max_entries index
 * entries (files + directories); beyond either, -E2BIG. Memory is O(entries
 * + name bytes): ~60 bytes per entry plus its name while building, and the
 * writer needs ~20 more bytes per entry. Names are hashed with SipHash and
 * a random key, so a hostile listing cannot force hash collisions.
 *
 * Not thread-safe: one builder thread owns a tree.
 */
#ifndef LITH_INDEX_TREE_H
#define LITH_INDEX_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fetch/index/normalize.h"

#define INDEX_DEFAULT_MAX_KEYS 50000000ull
#define INDEX_MAX_ENTRIES_LIMIT (1ull << 31)

struct index_tree;

struct index_tree_config {
	const char *prefix;     /* "" or ending with '/'; copied */
	uint64_t max_entries;   /* 0: INDEX_DEFAULT_MAX_KEYS; at most INDEX_MAX_ENTRIES_LIMIT */
};

struct index_tree_counts {
	uint64_t entries, files, dirs, total_bytes;
	uint64_t keys_listed, markers;
	uint64_t skipped[INDEX_SKIP__COUNT]; /* [0] is the total */
};

/* Where the index came from; stored in the header. */
struct index_meta {
	const char *endpoint;     /* NULL: "" */
	const char *bucket;       /* NULL: "" */
	int64_t build_time;       /* unix seconds */
	uint64_t build_usec;
	uint64_t list_requests;
	uint32_t concurrency;
	bool serial;
};

/* -EINVAL: prefix not "" and not ending in '/', or too long; limit too big. */
int index_tree_new(const struct index_tree_config *cfg, struct index_tree **ret);
void index_tree_free(struct index_tree *t);

/* Adds one listed object. etag: as listed, without quotes ("" or NULL for
 * none). Returns INDEX_SKIP_NONE when the key is in the tree, the reason
 * (> 0) when it was skipped and counted, -E2BIG past a limit, -EINVAL for
 * an ETag longer than INDEX_ETAG_MAX, -ENOMEM. */
int index_tree_add(struct index_tree *t, const char *key, size_t key_len, uint64_t size,
		   int64_t mtime, const char *etag);
/* Counts a listed key the caller rejected itself (e.g. a key outside the
 * prefix it listed); it counts as listed too. */
int index_tree_skip(struct index_tree *t, enum index_skip reason, const char *key,
		    size_t key_len);

void index_tree_get_counts(const struct index_tree *t, struct index_tree_counts *ret);

/* Writes the index atomically: a temporary file in path's directory,
 * fsync, rename over path, fsync of the directory. The tree is not
 * changed. -errno on failure, with no file left behind. */
int index_tree_write(const struct index_tree *t, const struct index_meta *meta,
		     const char *path);

#endif
