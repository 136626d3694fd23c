/* SPDX-License-Identifier: Apache-2.0 */
/*
 * On-disk format of the block store (internal to fetch/cached): geometry
 * (how many slots fit a byte budget), the metadata header and the per-slot
 * record, with explicit little-endian encoding and checksums. Pure functions,
 * no I/O; any thread.
 *
 * blocks.meta header (first 64 bytes of a 4096-byte page, rest zero):
 *   0  magic "LITHBLKS"     8  u32 version (1)     12 u32 header bytes (4096)
 *   16 u32 block size       20 u32 record bytes (64) 24 u64 nslots
 *   32 u64 data file bytes  40 u64 store id (random per creation)
 *   48 u64 0                56 u64 XXH3-64 of bytes [0, 56)
 * Record of slot i at 4096 + 64 * i:
 *   0  key[32]              32 u64 XXH3-64 of the slot's valid bytes
 *   40 u64 generation       48 u32 valid length     52 u32 flags (1 = valid)
 *   56 u64 XXH3-64 of bytes [0, 56) seeded with (store id ^ i): a torn,
 *      misplaced or foreign record never validates.
 * An all-zero record (flags 0) is an empty slot.
 */
#ifndef LITH_CACHED_SLOTMETA_H
#define LITH_CACHED_SLOTMETA_H

#include <stdint.h>

#include "fetch/cached/blockstore.h"

#define SLOTMETA_MAGIC "LITHBLKS"
#define SLOTMETA_VERSION 1u
#define SLOTMETA_PAGE 4096u
#define SLOTMETA_HEADER_BYTES 4096u
#define SLOTMETA_HEADER_USED 64u
#define SLOTMETA_RECORD_BYTES 64u
#define SLOTMETA_FLAG_VALID 1u
/* Filesystem overhead kept out of the budget: the directory and inodes,
 * plus extent-tree blocks (ext4/xfs may need ~24 bytes per slot once
 * writes have split preallocated extents). */
#define SLOTMETA_FS_RESERVE_FIXED (64u << 10)
#define SLOTMETA_FS_RESERVE_PER_SLOT 32u

struct slotmeta_geometry {
	uint32_t block_size;
	uint32_t nslots;
	uint64_t data_bytes;     /* nslots * block_size */
	uint64_t meta_bytes;     /* header + records, page-rounded */
	uint64_t gen_bytes;      /* gen header + gens, page-rounded */
	uint64_t disk_bytes;     /* sum of the three */
	uint64_t reserve_bytes;  /* filesystem overhead allowance */
};

struct slotmeta_header {
	uint32_t block_size;
	uint32_t record_bytes;
	uint64_t nslots;
	uint64_t data_bytes;
	uint64_t store_id;
};

struct slotmeta_record {
	struct blockstore_key key;
	uint64_t checksum;
	uint64_t generation;
	uint32_t len;
	uint32_t flags;
};

/* -EINVAL for a bad block size or a slot count out of bounds. */
int slotmeta_geometry(uint64_t cache_bytes, uint32_t block_size,
		      struct slotmeta_geometry *ret);

void slotmeta_header_encode(const struct slotmeta_header *h,
			    uint8_t out[SLOTMETA_HEADER_USED]);
/* -EBADMSG for bad magic, version, sizes or checksum. */
int slotmeta_header_decode(const uint8_t in[SLOTMETA_HEADER_USED],
			   struct slotmeta_header *ret);

uint64_t slotmeta_record_offset(uint32_t slot);
void slotmeta_record_encode(const struct slotmeta_record *r, uint32_t slot,
			    uint64_t store_id, uint8_t out[SLOTMETA_RECORD_BYTES]);
/* 0 for a valid record, -ENOENT for an empty one, -EBADMSG for a corrupt one
 * (bad checksum, unknown flags, len > block_size, odd generation). */
int slotmeta_record_decode(const uint8_t in[SLOTMETA_RECORD_BYTES], uint32_t slot,
			   uint64_t store_id, uint32_t block_size,
			   struct slotmeta_record *ret);

#endif
