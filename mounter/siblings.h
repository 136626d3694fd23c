/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sibling readahead: a job that reads many small files in key order (a
 * sharded dataset, a Zarr store, a directory of images) pays one cold round
 * trip per file, one file at a time. When the first read of a small file
 * comes right after the first read of its previous sibling (the next name
 * in the same directory), the files after it are prefetched whole, up to
 * SIB_MAX_FILES files and SIB_MAX_BYTES ahead, each with its own single
 * GET, so the scan finds them cached. A read that is not the next sibling
 * stops the scan; nothing is prefetched for random opens.
 *
 * Pure planning over the index; the caller serialises calls on one state
 * and issues the prefetches.
 */
#ifndef LITH_MOUNTER_SIBLINGS_H
#define LITH_MOUNTER_SIBLINGS_H

#include <stddef.h>
#include <stdint.h>

#include "fetch/index/index.h"

#define SIB_MAX_FILES 32u
#define SIB_MAX_BYTES (32ull << 20)

struct sib_state {
	uint64_t last;     /* the small file read first most recently */
	uint64_t frontier; /* siblings below this were planned already */
};

/* Called on the first read of small file `ino` (size <= small_file).
 * Writes the siblings to prefetch whole to out[] (room for SIB_MAX_FILES)
 * and returns their number. */
size_t sib_plan(struct sib_state *s, const struct index *idx, uint64_t ino, uint64_t small_file,
		uint64_t *out);

#endif
