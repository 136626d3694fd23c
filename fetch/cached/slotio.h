/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Block store file I/O (internal to fetch/cached): full pread/pwrite loops,
 * the checksum of a slot's bytes on disk, and metadata record writes. Any
 * thread; no locks, no shared state.
 */
#ifndef LITH_CACHED_SLOTIO_H
#define LITH_CACHED_SLOTIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fetch/cached/slotmeta.h"

#define SLOTIO_CHUNK (64u << 10) /* heap buffer used by slotio_checksum */

/* All of buf, retrying EINTR and short writes. -EIO if nothing progresses. */
int slotio_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
/* Bytes read (< len only at end of file), or -errno. */
ssize_t slotio_pread_full(int fd, void *buf, size_t len, uint64_t off);

/* XXH3-64 of [off, off + len) of fd, read in SLOTIO_CHUNK pieces. -EIO if
 * the file is shorter, -ENOMEM, -errno from pread. */
int slotio_checksum(int fd, uint64_t off, uint32_t len, uint64_t *ret);

int slotio_write_record(int meta_fd, uint32_t slot, uint64_t store_id,
			const struct slotmeta_record *r);
/* Writes an empty (all-zero) record for slot. */
int slotio_clear_record(int meta_fd, uint32_t slot);

#endif
