/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by blockstore.c, blockload.c and blockwrite.c (not for
 * other modules):
 * the store object, the writer side of the generation protocol and the
 * hooks the streaming writer (blockwrite.c) uses.
 *
 * Locking: `lock` guards tab, used_bytes, evictions and every generation
 * change. Files and geometry are immutable between open and free. Counters
 * touched outside the lock (hits, misses, checksum failures) are atomics.
 */
#ifndef LITH_CACHED_BLOCKSTORE_IMPL_H
#define LITH_CACHED_BLOCKSTORE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "fetch/cached/blockstore.h"
#include "fetch/cached/slottab.h"
#include "fetch/cached/storefiles.h"

struct blockstore {
	pthread_mutex_t lock;
	struct slottab tab;
	struct storefiles files;
	uint64_t used_bytes;
	uint64_t evictions;
	uint64_t records_loaded, records_dropped;
	atomic_uint_fast64_t hits, misses, checksum_failures;
};

static inline uint64_t blockstore_slot_offset(const struct blockstore *s, uint32_t i)
{
	return (uint64_t)i * s->files.geo.block_size;
}

static inline uint64_t blockstore_gen(const struct blockstore *s, uint32_t i)
{
	return atomic_load_explicit(&s->files.gens[i], memory_order_acquire);
}

/* Writer side of the seqlock (lock held). Odd before the slot's bytes
 * change; the full fence keeps the data writes that follow after it. */
static inline void blockstore_gen_begin(struct blockstore *s, uint32_t i)
{
	uint64_t g = atomic_load_explicit(&s->files.gens[i], memory_order_relaxed);

	atomic_store_explicit(&s->files.gens[i], (g | 1u), memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
}

/* Next even value, after the new bytes are complete (or the slot is
 * abandoned): release orders the data writes before it. */
static inline void blockstore_gen_end(struct blockstore *s, uint32_t i)
{
	uint64_t g = atomic_load_explicit(&s->files.gens[i], memory_order_relaxed);

	atomic_store_explicit(&s->files.gens[i], (g | 1u) + 1, memory_order_release);
}

/* The pinned slot's key and (odd) generation; -EINVAL if not pinned
 * (blockstore.c). */
int blockstore_pinned_key(struct blockstore *s, uint32_t slot, struct blockstore_key *ret_key,
			  uint64_t *ret_gen);

/* Publishes a pinned slot whose bytes and record are on disk (blockstore.c). */
void blockstore_publish(struct blockstore *s, uint32_t slot, uint64_t checksum, uint32_t len);

/* Rebuilds the slot table from the metadata file (blockload.c). */
int blockload_rebuild(struct blockstore *s);

#endif
