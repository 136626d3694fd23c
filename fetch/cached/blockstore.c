// SPDX-License-Identifier: Apache-2.0
/*
 * Block store API (see blockstore.h): open/free, the fill protocol, verified
 * lookups, stats. Runs in any daemon thread.
 *
 * Slot life cycle (all transitions under the mutex, I/O outside it):
 *   FREE/VALID --reserve--> FILLING   gen made odd; a VALID victim leaves
 *                                     the index first (CLOCK, never FILLING)
 *   FILLING --commit--> VALID         outside the lock (blockwrite.c):
 *                                     clear the record, pwrite data (hashed
 *                                     as written), pwrite record (with the
 *                                     data checksum); then publish, gen even
 *   FILLING --abort--> FREE           gen even (larger)
 *   VALID --bad checksum--> FREE      record cleared, gen even (larger)
 * Crash safety follows from the order data → record and from verifying
 * every block at lookup: a record can describe bytes that were never fully
 * written (crash, power loss), but such a block fails its checksum at its
 * first lookup and is dropped, never served.
 *
 * Lookup verifies outside the lock with the same seqlock rule the readers
 * use: if the slot's generation moved while we hashed, the slot was
 * recycled; that is a miss, not a checksum failure.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "fetch/base/macro.h"
#include "fetch/cached/blockstore_impl.h"
#include "fetch/cached/slotio.h"

int blockstore_plan(uint64_t cache_bytes, uint32_t block_size, uint32_t *ret_nslots)
{
	struct slotmeta_geometry g;
	int r;

	if (!ret_nslots)
		return -EINVAL;
	r = slotmeta_geometry(cache_bytes, block_size ? block_size : BLOCKSTORE_BLOCK_SIZE_DEFAULT,
			      &g);
	if (r < 0)
		return r;
	*ret_nslots = g.nslots;
	return 0;
}

static int open_files(struct blockstore *s, const struct blockstore_config *cfg)
{
	uint32_t bs = cfg->block_size ? cfg->block_size : BLOCKSTORE_BLOCK_SIZE_DEFAULT;
	struct slotmeta_geometry geo;
	int r = slotmeta_geometry(cfg->cache_bytes, bs, &geo);

	if (r < 0)
		return r;
	r = storefiles_open(&s->files, cfg->dir, &geo);
	if (r < 0)
		return r;
	r = slottab_init(&s->tab, geo.nslots);
	return r < 0 ? r : blockload_rebuild(s);
}

int blockstore_open(const struct blockstore_config *cfg, struct blockstore **ret)
{
	struct blockstore *s;
	int r;

	if (!cfg || !cfg->dir || !cfg->dir[0] || !ret)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->files = (struct storefiles){ .dir_fd = -1, .data_fd = -1, .meta_fd = -1,
					.gen_fd = -1, .data_ro_fd = -1, .gen_ro_fd = -1 };
	r = -pthread_mutex_init(&s->lock, NULL);
	if (r < 0) {
		free(s);
		return r;
	}
	r = open_files(s, cfg);
	if (r < 0) {
		blockstore_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void blockstore_free(struct blockstore *s)
{
	if (!s)
		return;
	slottab_fini(&s->tab);
	storefiles_close(&s->files);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* ---- fill protocol ------------------------------------------------------ */

static int reserve_locked(struct blockstore *s, const struct blockstore_key *key,
			  uint32_t *ret_slot)
{
	uint32_t i = slottab_find(&s->tab, key);

	if (i != SLOTTAB_NONE)
		return s->tab.slots[i].state == SLOTTAB_VALID ? -EEXIST : -EALREADY;
	i = slottab_pop_free(&s->tab);
	if (i == SLOTTAB_NONE) {
		i = clock_evict_pick(&s->tab);
		if (i == SLOTTAB_NONE)
			return -EBUSY;
		s->used_bytes -= s->tab.slots[i].len;
		s->evictions++;
		slottab_remove(&s->tab, i);
	}
	slottab_insert(&s->tab, i, key, SLOTTAB_FILLING);
	blockstore_gen_begin(s, i);
	*ret_slot = i;
	return 0;
}

int blockstore_reserve(struct blockstore *s, const struct blockstore_key *key,
		       uint32_t *ret_slot)
{
	uint32_t i = SLOTTAB_NONE;
	int r;

	if (!s || !key || !ret_slot)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	r = reserve_locked(s, key, &i);
	pthread_mutex_unlock(&s->lock);
	if (r == 0)
		*ret_slot = i;
	return r;
}

static bool pinned_locked(const struct blockstore *s, uint32_t slot)
{
	return slot < s->tab.nslots && s->tab.slots[slot].state == SLOTTAB_FILLING;
}

int blockstore_abort(struct blockstore *s, uint32_t slot)
{
	int r = -EINVAL;

	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if (pinned_locked(s, slot)) {
		slottab_remove(&s->tab, slot);
		slottab_push_free(&s->tab, slot);
		blockstore_gen_end(s, slot);
		r = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int blockstore_pinned_key(struct blockstore *s, uint32_t slot, struct blockstore_key *ret_key,
			  uint64_t *ret_gen)
{
	int r = -EINVAL;

	pthread_mutex_lock(&s->lock);
	if (pinned_locked(s, slot)) {
		*ret_key = s->tab.slots[slot].key;
		*ret_gen = atomic_load_explicit(&s->files.gens[slot], memory_order_relaxed);
		r = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

void blockstore_publish(struct blockstore *s, uint32_t slot, uint64_t checksum, uint32_t len)
{
	pthread_mutex_lock(&s->lock);
	slottab_set_valid(&s->tab, slot, checksum, len);
	s->used_bytes += len;
	blockstore_gen_end(s, slot);
	pthread_mutex_unlock(&s->lock);
}

int blockstore_commit(struct blockstore *s, uint32_t slot, const void *data, size_t len)
{
	struct blockstore_writer *w = NULL;
	int r;

	if (!s)
		return -EINVAL;
	if ((!data && len) || len > s->files.geo.block_size) {
		blockstore_abort(s, slot);
		return -EINVAL;
	}
	r = blockstore_writer_new(s, slot, &w);
	if (r < 0)
		return r;
	r = blockstore_writer_put(w, 0, data, len);
	if (r < 0) {
		blockstore_writer_abort(w);
		return r;
	}
	return blockstore_writer_commit(w, (uint32_t)len);
}

/* ---- lookups ------------------------------------------------------------ */

/* Frees a slot whose bytes failed verification, unless it changed since. */
static void drop_bad(struct blockstore *s, uint32_t i, uint64_t gen)
{
	pthread_mutex_lock(&s->lock);
	if (s->tab.slots[i].state == SLOTTAB_VALID && blockstore_gen(s, i) == gen) {
		s->used_bytes -= s->tab.slots[i].len;
		slottab_remove(&s->tab, i);
		/* Under the lock (rare path): no fill can write this record yet. */
		slotio_clear_record(s->files.meta_fd, i);
		slottab_push_free(&s->tab, i);
		blockstore_gen_end(s, i);
		atomic_fetch_add(&s->checksum_failures, 1);
	}
	pthread_mutex_unlock(&s->lock);
}

static bool find_valid(struct blockstore *s, const struct blockstore_key *key,
		       uint32_t *ret_slot, struct slottab_slot *ret_snap, uint64_t *ret_gen)
{
	uint32_t i;
	bool found = false;

	pthread_mutex_lock(&s->lock);
	i = slottab_find(&s->tab, key);
	if (i != SLOTTAB_NONE && s->tab.slots[i].state == SLOTTAB_VALID) {
		s->tab.slots[i].ref = 1;
		*ret_snap = s->tab.slots[i];
		*ret_gen = blockstore_gen(s, i);
		*ret_slot = i;
		found = true;
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

static int miss(struct blockstore *s)
{
	atomic_fetch_add(&s->misses, 1);
	return -ENOENT;
}

int blockstore_lookup(struct blockstore *s, const struct blockstore_key *key,
		      struct blockread_loc *ret_loc)
{
	struct slottab_slot snap;
	uint64_t gen, got = 0;
	uint32_t i;
	int r;

	if (!s || !key || !ret_loc)
		return -EINVAL;
	if (!find_valid(s, key, &i, &snap, &gen))
		return miss(s);
	r = slotio_checksum(s->files.data_fd, blockstore_slot_offset(s, i), snap.len, &got);
	if (r == -ENOMEM)
		return r;
	atomic_thread_fence(memory_order_acquire);
	if (blockstore_gen(s, i) != gen)
		return miss(s); /* recycled while we hashed: the block is gone */
	if (r < 0 || got != snap.checksum) {
		drop_bad(s, i, gen);
		return miss(s);
	}
	atomic_fetch_add(&s->hits, 1);
	*ret_loc = (struct blockread_loc){ .slot = i, .len = snap.len,
					   .offset = blockstore_slot_offset(s, i),
					   .generation = gen };
	return 0;
}

/* ---- accessors ---------------------------------------------------------- */

int blockstore_data_fd(const struct blockstore *s)
{
	return s ? s->files.data_ro_fd : -EBADF;
}

int blockstore_gen_fd(const struct blockstore *s)
{
	return s ? s->files.gen_ro_fd : -EBADF;
}

uint32_t blockstore_nslots(const struct blockstore *s)
{
	return s ? s->files.geo.nslots : 0;
}

uint32_t blockstore_block_size(const struct blockstore *s)
{
	return s ? s->files.geo.block_size : 0;
}

void blockstore_get_stats(struct blockstore *s, struct blockstore_stats *ret)
{
	const struct slotmeta_geometry *g;

	if (!s || !ret)
		return;
	g = &s->files.geo;
	pthread_mutex_lock(&s->lock);
	*ret = (struct blockstore_stats){
		.capacity_bytes = g->data_bytes,
		.disk_bytes = g->disk_bytes,
		.used_bytes = s->used_bytes,
		.slots_used = s->tab.nvalid,
		.slots_filling = s->tab.nfilling,
		.slots_total = g->nslots,
		.hits = atomic_load(&s->hits),
		.misses = atomic_load(&s->misses),
		.evictions = s->evictions,
		.checksum_failures = atomic_load(&s->checksum_failures),
		.records_loaded = s->records_loaded,
		.records_dropped = s->records_dropped,
		.reset_reason = s->files.reset_reason,
	};
	pthread_mutex_unlock(&s->lock);
}
