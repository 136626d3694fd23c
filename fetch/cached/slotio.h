/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Block store file I/O (internal to fetch/cached): the checksum of a slot's
 * bytes on disk and metadata record writes (full reads and writes are
 * fetch/base/fdio.h's). Any thread; no locks, no shared state.
 */
#ifndef LITH_CACHED_SLOTIO_H
#define LITH_CACHED_SLOTIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fetch/cached/slotmeta.h"

#define SLOTIO_CHUNK (64u << 10) /* heap buffer used by slotio_checksum */

/* XXH3-64 of [off, off + len) of fd, read in SLOTIO_CHUNK pieces. -EIO if
 * the file is shorter, -ENOMEM, -errno from pread. */
int slotio_checksum(int fd, uint64_t off, uint32_t len, uint64_t *ret);

int slotio_write_record(int meta_fd, uint32_t slot, uint64_t store_id,
			const struct slotmeta_record *r);
/* Writes an empty (all-zero) record for slot. */
int slotio_clear_record(int meta_fd, uint32_t slot);

#endif
