/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inode translation across a cache daemon restart. The filesystem serves
 * the index it loaded at mount time for its whole life (inode numbers must
 * not change under the kernel), but reads name objects by entry number in
 * the daemon's index of the view. After a reconnect the daemon may hold a
 * different index file (rebuilt, refreshed): then every inode is mapped to
 * the daemon's entry with the same path, and only if that entry has the
 * same ETag and size; otherwise the object changed and reads fail with
 * -ESTALE. Never a wrong byte: an entry number is used only after this
 * check.
 *
 * Cost: one 8-byte slot per inode, allocated when the daemon's index
 * differs (rare: a rebuild while the daemon was away).
 * Threads: remap_entry may be called from any number of threads; the table
 * is filled lazily with atomic stores (idempotent results).
 * Ownership: a remap keeps its own mapping of the daemon's index; `mine`
 * is borrowed and must outlive it.
 */
#ifndef LITH_MOUNTER_REMAP_H
#define LITH_MOUNTER_REMAP_H

#include <stdint.h>
#include <sys/stat.h>

#include "fetch/index/index.h"

struct remap;

/* mine_st: fstat of the file `mine` was opened from. theirs_fd: the index
 * the daemon returned (borrowed, not kept). *ret = NULL means identity
 * (the same file: entries are the inodes). */
int remap_new(const struct index *mine, const struct stat *mine_st, int theirs_fd,
	      struct remap **ret);
void remap_free(struct remap *m);
/* The daemon's entry for ino (m NULL: ino itself). -ESTALE when the object
 * is gone or changed in the daemon's index. */
int remap_entry(struct remap *m, uint64_t ino, uint64_t *ret);

#endif
