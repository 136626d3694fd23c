/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reader side of the block cache, used by processes other than the cache
 * daemon (the mounters). They hold two read-only fds passed once by the
 * daemon: the data file (fixed-size slots) and the generation file (one
 * 64-bit generation per slot, mmaped read-only). The daemon answers a block
 * request with a location; the reader preads the bytes itself.
 *
 * Seqlock protocol (the invariant that keeps recycled slots safe): a slot's
 * generation is even while its content is stable. The daemon makes it odd
 * before it overwrites the slot's bytes and publishes a larger even value
 * after the new content is complete, so generations only grow. A location
 * carries the even generation seen when the daemon verified the block.
 * blockread_pread() loads the generation, preads, issues an acquire fence and
 * loads it again: if either load differs from the location's generation the
 * bytes may belong to another block and -ESTALE is returned (ask the daemon
 * again). A successful read therefore never returns another block's bytes.
 * -ESTALE is conservative: the bytes may have been fine, the slot changed.
 *
 * Generation file layout (native byte order, shared memory on one host):
 *   [0, 64)            header: magic "LITHGENS", u32 version, u32 0,
 *                      u64 nslots, u64 store id, zero padding
 *   [64 + 8*i, +8)     generation of slot i (an _Atomic uint64_t)
 * The file is sized to a multiple of 4096 and never changes size while in
 * use: the daemon replaces the files (new inodes) rather than resizing them.
 *
 * Threads: a mapping is immutable after blockread_map_gens() and may be
 * shared by any number of threads; blockread_pread() is reentrant.
 * Ownership: the caller owns data_fd and gen_fd; the mapping holds no fd.
 */
#ifndef LITH_CACHED_BLOCKREAD_H
#define LITH_CACHED_BLOCKREAD_H

#include <stdint.h>
#include <sys/types.h>

#define BLOCKREAD_GEN_MAGIC "LITHGENS"
#define BLOCKREAD_GEN_VERSION 1u
#define BLOCKREAD_GEN_HEADER_BYTES 64u

/* Where a cached block is: everything a reader needs, nothing else. */
struct blockread_loc {
	uint32_t slot;        /* slot index */
	uint32_t len;         /* valid bytes in the slot (short for a last block) */
	uint64_t offset;      /* byte offset of the slot in the data file */
	uint64_t generation;  /* even generation the location is valid for */
};

struct blockread_gens; /* opaque read-only mapping of a generation file */

/* Maps the generation file read-only and checks its header against nslots.
 * -EINVAL for a bad fd/file/header, -errno from fstat/mmap; *ret untouched
 * on failure. The caller may close gen_fd afterwards. */
int blockread_map_gens(int gen_fd, uint32_t nslots, struct blockread_gens **ret);
/* Unmaps; accepts NULL. */
void blockread_unmap_gens(struct blockread_gens *gens);

/* Reads up to len bytes at offset off within the block into buf. Returns the
 * number of bytes read (min(len, loc->len - off); 0 when off >= loc->len),
 * -ESTALE when the slot was recycled before or during the read (buf contents
 * are then undefined), -EINVAL for a location that cannot be valid, -EIO for
 * a short read, or -errno from pread. */
ssize_t blockread_pread(int data_fd, const struct blockread_gens *gens,
			const struct blockread_loc *loc, void *buf, uint64_t off,
			size_t len);

/* 0 if the location is still current, -ESTALE if not, -EINVAL if malformed.
 * A cheap check for callers that keep locations; it does not replace the
 * re-check inside blockread_pread(). */
int blockread_check(const struct blockread_gens *gens, const struct blockread_loc *loc);

#endif
