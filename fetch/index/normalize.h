/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Key normalisation: which S3 keys can become paths in the index tree, and
 * how. A pure function of (key, prefix): no state, thread-safe, so every
 * builder and every listing order reaches the same verdict for a key.
 *
 * Rules (the key is taken relative to the index prefix, which is "" or ends
 * with '/'):
 *   - any byte except '/' and NUL may appear in a name (S3 keys are UTF-8,
 *     Linux names are bytes; invalid UTF-8, spaces, '+%?#&', control
 *     characters are all kept verbatim);
 *   - a key longer than 1024 bytes                    -> KEY_TOO_LONG
 *   - a key containing a NUL byte                      -> NUL_BYTE
 *   - a key that does not start with the prefix        -> OUTSIDE_PREFIX
 *   - a component "." or ".."                          -> DOT_COMPONENT
 *   - an empty component ("a//b", "/a", "a//")         -> EMPTY_COMPONENT
 *   - a component longer than 255 bytes                -> NAME_TOO_LONG
 *     (components are checked left to right; the first offence names the
 *     reason, so a key is counted once);
 *   - a key ending in '/' is a directory marker: it makes the directory
 *     exist (an empty one if nothing lies below it) and is never a file;
 *     the key equal to the prefix is the root's own marker.
 * Conflicts between keys (an object "a" next to keys "a/..."; the same key
 * listed twice; a marker with data) are decided by the tree, see tree.h.
 */
#ifndef LITH_INDEX_NORMALIZE_H
#define LITH_INDEX_NORMALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INDEX_KEY_MAX 1024      /* bytes: S3's own limit */
#define INDEX_NAME_MAX 255      /* bytes per path component: NAME_MAX */
#define INDEX_MAX_DEPTH 513     /* components of a 1024-byte key, at most */
#define INDEX_SAMPLES_PER_REASON 8 /* skipped keys kept per reason, for logs */
#define INDEX_ETAG_MAX 1023     /* longest ETag an index keeps, in bytes */

/* Why a listed key is not a file or directory in the index. 0 is "kept";
 * the values are stable: they are slots of the on-disk skip counters. */
enum index_skip {
	INDEX_SKIP_NONE = 0,
	INDEX_SKIP_DOT_COMPONENT = 1,
	INDEX_SKIP_EMPTY_COMPONENT = 2,
	INDEX_SKIP_NAME_TOO_LONG = 3,
	INDEX_SKIP_KEY_TOO_LONG = 4,
	INDEX_SKIP_NUL_BYTE = 5,
	INDEX_SKIP_OUTSIDE_PREFIX = 6,
	INDEX_SKIP_SHADOWED = 7,     /* object "a" hidden by directory "a/" */
	INDEX_SKIP_MARKER_DATA = 8,  /* non-empty "d/" object: d kept, bytes not */
	INDEX_SKIP_DUPLICATE = 9,    /* the listing returned the same key again */
	INDEX_SKIP__COUNT
};

/* "dot_component", ...; "none" for 0, "unknown" out of range. */
const char *index_skip_name(enum index_skip reason);

struct index_component {
	uint16_t off;   /* into the key */
	uint16_t len;   /* 1..INDEX_NAME_MAX */
};

struct index_norm {
	bool marker;              /* key ends in '/': a directory, never a file */
	uint16_t ncomp;           /* 0: the prefix itself (root marker) */
	struct index_component comp[INDEX_MAX_DEPTH];
};

/* Splits key (key_len bytes, may contain NUL) below prefix (plen bytes).
 * Returns INDEX_SKIP_NONE and fills *ret, or the skip reason (> 0) with
 * *ret untouched. */
enum index_skip index_normalize(const char *key, size_t key_len, const char *prefix,
				size_t plen, struct index_norm *ret);

#endif
