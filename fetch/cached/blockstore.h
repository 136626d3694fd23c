/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The block store: the node's on-disk block cache, owned by `lith cached`.
 * A block is a fixed-size piece of an S3 object keyed by (endpoint, bucket,
 * key, ETag, block number), hashed into a 32-byte key. Blocks live in slots
 * of one preallocated data file; a metadata file records what each slot
 * holds; a generation file lets readers in other processes detect a slot
 * that was recycled under them (see blockread.h).
 *
 * Files in cfg->dir (the store owns the directory; nothing else belongs in it):
 *   blocks.data   nslots * block_size bytes, slot i at offset i * block_size
 *   blocks.meta   4096-byte header + one 64-byte record per slot (little endian)
 *   blocks.gen    64-byte header + one u64 generation per slot (blockread.h)
 * All three are preallocated at creation (fallocate), never grow, and their
 * allocated and apparent sizes plus a filesystem-overhead reserve stay within
 * cfg->cache_bytes. Different geometry, a bad header or missing/mis-sized
 * files at open reset the store (new empty files, new inodes).
 *
 * Integrity: every block carries an XXH3-64 checksum of its valid bytes.
 * blockstore_lookup() verifies it on EVERY lookup (pread + hash outside the
 * lock), so corruption is caught at the next lookup at the latest, including
 * the first lookup after a restart (records are trusted lazily at open, the
 * bytes are checked then). Cost on the 2-core dev VM, page cache warm: XXH3
 * 0.065 ms per MiB in memory (16 GB/s) and pread + XXH3 of 1 MiB 0.12-0.13
 * ms when idle, against 0.04-0.05 ms for a reader's own 1 MiB pread; with
 * the VM loaded, blockstore_lookup() took 0.23-0.33 ms per MiB. FUSE spends
 * ~0.25-0.3 ms per MiB at its 3.4-4 GB/s ceiling, on other cores. Cheap
 * enough to do always, and the only policy that also catches disk corruption
 * behind an evicted page cache (tests/bench/bench_blockstore measures it).
 * A mismatch frees the slot and reports a miss (-ENOENT): the caller
 * refetches.
 *
 * Fill protocol: blockstore_reserve() hands out a slot pinned for the caller
 * (evicting with CLOCK if needed, never a pinned slot); the caller fetches the
 * bytes, then blockstore_commit() or blockstore_abort(). Either ends the pin.
 * A fetch that writes straight into the slot uses a blockstore_writer
 * between reserve and commit instead (see below).
 *
 * Threads: every function except open/free is thread-safe (one mutex, held
 * only for table updates; I/O and hashing run outside it). blockstore_free()
 * requires that no other call is running. Do not use a store in a fork()ed
 * child; children use blockread.h with the fds.
 * Processes: one store per directory (flock on the directory: -EBUSY). The
 * lock belongs to the open directory fd, which a fork()ed child inherits
 * (exec drops it: every fd is O_CLOEXEC).
 * Memory: ~70 bytes per slot (1 TiB of 1 MiB blocks: ~70 MiB), bounded by
 * BLOCKSTORE_MAX_SLOTS.
 */
#ifndef LITH_CACHED_BLOCKSTORE_H
#define LITH_CACHED_BLOCKSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "fetch/cached/blockread.h"

#define BLOCKSTORE_KEY_BYTES 32
#define BLOCKSTORE_BLOCK_SIZE_DEFAULT (1u << 20)
#define BLOCKSTORE_BLOCK_SIZE_MIN (64u << 10)
#define BLOCKSTORE_BLOCK_SIZE_MAX (16u << 20)
#define BLOCKSTORE_MIN_SLOTS 8u          /* fewer → -EINVAL */
#define BLOCKSTORE_MAX_SLOTS (1u << 24)  /* more → -EINVAL (raise the block size) */
#define BLOCKSTORE_FIELD_MAX 4096u       /* max bytes per key field */

struct blockstore; /* opaque */

struct blockstore_key {
	uint8_t b[BLOCKSTORE_KEY_BYTES];
};

struct blockstore_config {
	const char *dir;       /* created (0700) if missing; the store owns it */
	uint64_t cache_bytes;  /* hard cap on everything the store puts on disk */
	uint32_t block_size;   /* power of two in [MIN, MAX]; 0 → 1 MiB */
};

struct blockstore_stats {
	uint64_t capacity_bytes;    /* nslots * block_size */
	uint64_t disk_bytes;        /* apparent size of the three files */
	uint64_t used_bytes;        /* valid bytes of cached blocks */
	uint64_t slots_used;        /* slots holding a block */
	uint64_t slots_filling;     /* slots pinned by a fill */
	uint64_t slots_total;
	uint64_t hits, misses;      /* blockstore_lookup() results */
	uint64_t evictions;         /* valid blocks recycled by reserve */
	uint64_t checksum_failures; /* blocks dropped because their bytes were bad */
	uint64_t records_loaded;    /* blocks recovered from disk at open */
	uint64_t records_dropped;   /* corrupt or duplicate records at open */
	const char *reset_reason;   /* why open discarded the old files, or NULL */
};

/* SHA-256 over a domain tag and the length-prefixed fields, so ("ab","c")
 * and ("a","bc") differ and blocks of different objects cannot be made to
 * collide. -EINVAL for NULL or fields longer than BLOCKSTORE_FIELD_MAX;
 * -ENOMEM from OpenSSL. *ret untouched on failure. */
int blockstore_key(const char *endpoint, const char *bucket, const char *key,
		   const char *etag, uint64_t block_no, struct blockstore_key *ret);

/* Number of slots a configuration yields: -EINVAL for a bad block size, too
 * few slots (< BLOCKSTORE_MIN_SLOTS) or too many (> BLOCKSTORE_MAX_SLOTS). */
int blockstore_plan(uint64_t cache_bytes, uint32_t block_size, uint32_t *ret_nslots);

/* Opens (or creates, or resets) the store in cfg->dir. -EINVAL for a bad
 * config, -EBUSY if another store holds the directory, -ENOSPC if the disk
 * cannot hold the preallocated files, other -errno from the filesystem. */
int blockstore_open(const struct blockstore_config *cfg, struct blockstore **ret);
/* Closes everything; accepts NULL. Slots still pinned stay odd on disk and
 * are cleaned up by the next open. */
void blockstore_free(struct blockstore *s);

/* Pins a slot for filling `key`. 0 and *ret_slot on success; -EEXIST if the
 * block is cached, -EALREADY if a fill for it is in flight, -EBUSY if every
 * slot is pinned. The key is not visible to lookups until commit. */
int blockstore_reserve(struct blockstore *s, const struct blockstore_key *key,
		       uint32_t *ret_slot);
/* Writes len (<= block size) bytes, checksum and record, then publishes the
 * block. Ends the pin whatever the result: on failure the slot is freed.
 * -EINVAL (slot not pinned, or bad len/data), -errno from pwrite. */
int blockstore_commit(struct blockstore *s, uint32_t slot, const void *data, size_t len);
/* Ends the pin without publishing. -EINVAL if the slot is not pinned. */
int blockstore_abort(struct blockstore *s, uint32_t slot);

/* Streaming fill of a pinned slot (blockwrite.c), for fetches that write a
 * response body straight into the slot as it arrives instead of buffering
 * it: the bytes go to the slot's place in the data file, the checksum is
 * computed as they pass, and commit publishes the block only if exactly the
 * expected number of bytes were written. A commit with fewer or more bytes
 * (a truncated or failed GET) frees the slot: wrong bytes are never
 * published. blockstore_commit() is this with one put.
 *  - writer_new: takes over the pin of `slot` (reserved by the caller) and
 *    clears the slot's old record before any byte changes. On failure the
 *    pin is ended. -EINVAL (not pinned), -ENOMEM, -errno from pwrite.
 *  - writer_put: writes len bytes at off within the block. off must be the
 *    number of bytes written so far, or 0 to start again (a retried GET):
 *    -EINVAL otherwise or past the block size; -errno from pwrite. Any
 *    thread, one at a time per writer (the slot is pinned: nobody else
 *    touches its bytes).
 *  - writer_commit: 0 and the block published when exactly expect_len bytes
 *    were written; else the slot is freed and -EIO returned. Frees w.
 *  - writer_abort: ends the pin without publishing; frees w (NULL ok). */
struct blockstore_writer;
int blockstore_writer_new(struct blockstore *s, uint32_t slot,
			  struct blockstore_writer **ret);
int blockstore_writer_put(struct blockstore_writer *w, uint32_t off, const void *data,
			  size_t len);
int blockstore_writer_commit(struct blockstore_writer *w, uint32_t expect_len);
void blockstore_writer_abort(struct blockstore_writer *w);

/* Finds and verifies a block. 0 and *ret_loc on a hit; -ENOENT on a miss
 * (absent, being filled, recycled during verification, or bad checksum: the
 * slot is then freed). *ret_loc untouched on failure. */
int blockstore_lookup(struct blockstore *s, const struct blockstore_key *key,
		      struct blockread_loc *ret_loc);

/* Read-only fds for passing to readers (SCM_RIGHTS). Owned by the store,
 * valid until blockstore_free(); do not close them. */
int blockstore_data_fd(const struct blockstore *s);
int blockstore_gen_fd(const struct blockstore *s);
uint32_t blockstore_nslots(const struct blockstore *s);
uint32_t blockstore_block_size(const struct blockstore *s);

void blockstore_get_stats(struct blockstore *s, struct blockstore_stats *ret);

#endif
