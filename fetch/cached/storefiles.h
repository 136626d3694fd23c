/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The block store's files (internal to fetch/cached): locks the directory,
 * attaches to existing blocks.{data,meta,gen} when their geometry and
 * headers match, otherwise replaces them with new preallocated files, maps
 * the generation array read-write, and opens the read-only fds for readers.
 *
 * Invariant: the data and generation files are never resized or rewritten
 * in place by a reset. A reset unlinks and creates new inodes, so a reader
 * still holding old fds keeps reading old, never-again-written bytes whose
 * generations never change: its reads stay consistent (the old inodes' space
 * is freed when the last such reader closes them). Runs in the opening
 * thread only.
 */
#ifndef LITH_CACHED_STOREFILES_H
#define LITH_CACHED_STOREFILES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fetch/cached/slotmeta.h"

#define STOREFILES_DATA "blocks.data"
#define STOREFILES_META "blocks.meta"
#define STOREFILES_GEN "blocks.gen"

struct storefiles {
	int dir_fd;                  /* flock(LOCK_EX) held while open */
	int data_fd, meta_fd, gen_fd; /* O_RDWR, daemon only */
	int data_ro_fd, gen_ro_fd;   /* O_RDONLY, for passing to readers */
	_Atomic uint64_t *gens;      /* nslots generations inside gen_map */
	void *gen_map;
	size_t gen_map_len;
	struct slotmeta_geometry geo;
	uint64_t store_id;
	const char *reset_reason;    /* static string, or NULL */
};

/* Fills f (all fds -1 on failure). -EBUSY if the directory is locked by
 * another open store, -ENOSPC if preallocation fails, -errno otherwise. */
int storefiles_open(struct storefiles *f, const char *dir,
		    const struct slotmeta_geometry *geo);
void storefiles_close(struct storefiles *f);

#endif
