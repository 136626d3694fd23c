/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The on-disk layout of a namespace index file, version 1. Shared by the
 * writer (tree.c/writer.c) and the reader (reader.c); nothing else should
 * need it except tests that corrupt files on purpose.
 *
 * One file, little-endian, every section 8-byte aligned, laid out back to
 * back in this order and nothing else (the reader insists on it):
 *
 *   header   struct index_disk_header             (INDEX_HEADER_SIZE bytes)
 *   entries  struct index_disk_entry[entry_count]  48 bytes each
 *   dirs     struct index_disk_dir[dir_count]      16 bytes each
 *   samples  struct index_disk_sample[sample_count] 16 bytes each
 *   pool     bytes[pool_size], padded to 8:        names of the entries in
 *            entry order ([0, name_bytes)), then non-MD5 ETags, sample keys
 *            and the source strings
 *
 * Entries are in breadth-first order of the tree with each directory's
 * children contiguous and sorted by name (bytewise, shorter first on a
 * common prefix): entry 0 is the root, a directory's children are
 * entries [first_child, first_child + nchildren) of its dirs row, the rows'
 * child ranges tile [1, entry_count) in row order, and a directory's
 * children always come after the directory itself. The inode of entry i is
 * i + 1, so the layout alone fixes every inode: two builds of the same
 * listing give the same entries, dirs and names byte for byte.
 *
 * checksum is SHA-256 over the whole file with the checksum field zeroed.
 */
#ifndef LITH_INDEX_FORMAT_H
#define LITH_INDEX_FORMAT_H

#include <stdint.h>

#include "fetch/index/normalize.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the index format is little-endian and read in place: port the reader first"
#endif

#define INDEX_MAGIC "LITHIDX\0"
#define INDEX_FORMAT_VERSION 1u
#define INDEX_SKIP_SLOTS 16        /* on-disk skip counters (enum index_skip) */

/* Entry flags */
#define INDEX_ENTRY_DIR 0x01u
#define INDEX_ENTRY_ETAG_MD5 0x02u /* etag.md5 holds 16 raw bytes (+ parts) */
#define INDEX_ENTRY_ETAG_STR 0x04u /* etag.str refers to the pool */
#define INDEX_ENTRY_FLAGS (INDEX_ENTRY_DIR | INDEX_ENTRY_ETAG_MD5 | INDEX_ENTRY_ETAG_STR)

/* Header build flags */
#define INDEX_BUILD_SERIAL 0x01u

/* A byte string in the pool. */
struct index_disk_ref {
	uint64_t off;
	uint32_t len;
	uint32_t zero;
};

struct index_disk_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint64_t file_size;
	uint8_t checksum[32];
	/* sections */
	uint64_t entry_off, entry_count;
	uint64_t dir_off, dir_count;
	uint64_t sample_off, sample_count;
	uint64_t pool_off, pool_size;
	uint64_t name_bytes;          /* names occupy pool [0, name_bytes) */
	/* content */
	uint64_t nfiles, ndirs;       /* ndirs includes the root */
	uint64_t total_bytes;         /* sum of file sizes */
	uint64_t keys_listed;         /* objects the listing returned */
	uint64_t markers;             /* "dir/" markers turned into directories */
	uint64_t skipped[INDEX_SKIP_SLOTS];
	/* provenance */
	int64_t build_time;           /* unix seconds when the build started */
	uint64_t build_usec;          /* build duration */
	uint64_t list_requests;       /* LIST requests answered, retries excluded */
	uint32_t build_flags;         /* INDEX_BUILD_* */
	uint32_t concurrency;         /* LIST requests in flight at most */
	struct index_disk_ref endpoint, bucket, prefix;
	uint8_t reserved[72];         /* zero */
};

struct index_disk_entry {
	uint64_t size;        /* file: object size; directory: its dirs row */
	int64_t mtime;        /* file: LastModified; directory: newest below it */
	uint64_t name_off;    /* into the pool, < name_bytes */
	uint32_t parent;      /* dirs row of the parent directory (root: 0) */
	uint8_t name_len;     /* 1..255; 0 only for the root */
	uint8_t flags;        /* INDEX_ENTRY_* */
	uint16_t etag_parts;  /* ETAG_MD5: multipart "-N" suffix, 0 = none */
	union {
		uint8_t md5[16];
		struct index_disk_ref str;
	} etag;
};

struct index_disk_dir {
	uint32_t entry;       /* the directory's own entry */
	uint32_t first_child; /* entry index */
	uint32_t nchildren;
	uint32_t nsubdirs;
};

struct index_disk_sample {
	uint32_t reason;      /* enum index_skip */
	uint32_t len;
	uint64_t off;         /* the full key, in the pool */
};

#define INDEX_HEADER_SIZE 448u
_Static_assert(sizeof(struct index_disk_header) == INDEX_HEADER_SIZE, "header layout");
_Static_assert(sizeof(struct index_disk_entry) == 48, "entry layout");
_Static_assert(sizeof(struct index_disk_dir) == 16, "dir layout");
_Static_assert(sizeof(struct index_disk_sample) == 16, "sample layout");

#endif
