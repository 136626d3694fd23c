// SPDX-License-Identifier: Apache-2.0
/*
 * Rebuilds the block store's in-memory table from blocks.meta at open, so a
 * restarted daemon serves warm blocks without refetching.
 *
 * What is trusted: a record only if its own checksum (seeded with the slot
 * index and store id) matches, flags are known, len fits and the generation
 * is even. The data bytes are NOT read here (that would read the whole
 * cache at start): blockstore_lookup() verifies them on every lookup, so the
 * first lookup after open is the lazy check. Exception: two records naming
 * the same key (possible after an abort or a power loss) are resolved
 * eagerly by hashing, keeping a copy whose bytes verify. Corrupt and
 * duplicate records are cleared on disk and counted.
 *
 * Generations: a slot left odd (daemon died mid-fill) becomes even again by
 * moving forward; a record's generation raises the slot's generation if the
 * generation file lags (it never goes backward, so old locations stay stale).
 * Runs in blockstore_open(), before the store is shared: no lock needed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "fetch/base/fdio.h"
#include "fetch/base/macro.h"
#include "fetch/cached/blockstore_impl.h"
#include "fetch/cached/slotio.h"

#define LOAD_BATCH 1024u /* records per pread (64 KiB) */

static bool bytes_verify(struct blockstore *s, uint32_t i, uint32_t len, uint64_t csum)
{
	uint64_t got;

	return slotio_checksum(s->files.data_fd, blockstore_slot_offset(s, i), len, &got) == 0 &&
	       got == csum;
}

static void drop_record(struct blockstore *s, uint32_t i)
{
	slotio_clear_record(s->files.meta_fd, i); /* best effort: re-dropped next open */
	s->records_dropped++;
}

static void unload(struct blockstore *s, uint32_t i)
{
	s->used_bytes -= s->tab.slots[i].len;
	s->records_loaded--;
	slottab_remove(&s->tab, i);
	drop_record(s, i);
}

static void adopt(struct blockstore *s, uint32_t i, const struct slotmeta_record *r)
{
	uint32_t j = slottab_find(&s->tab, &r->key);
	struct slottab_slot *slot = &s->tab.slots[i];

	if (j != SLOTTAB_NONE) {
		const struct slottab_slot *other = &s->tab.slots[j];

		if (bytes_verify(s, j, other->len, other->checksum)) {
			drop_record(s, i);
			return;
		}
		unload(s, j);
	}
	slottab_insert(&s->tab, i, &r->key, SLOTTAB_VALID);
	slot->checksum = r->checksum;
	slot->len = r->len;
	s->used_bytes += r->len;
	s->records_loaded++;
}

static void load_one(struct blockstore *s, uint32_t i, const uint8_t *raw)
{
	struct slotmeta_record r;
	uint64_t g = atomic_load_explicit(&s->files.gens[i], memory_order_relaxed);
	int rc = slotmeta_record_decode(raw, i, s->files.store_id, s->files.geo.block_size, &r);

	g = (g + 1) & ~(uint64_t)1;
	if (rc == -EBADMSG)
		drop_record(s, i);
	if (rc == 0) {
		g = MAX(g, r.generation);
		adopt(s, i, &r);
	}
	atomic_store_explicit(&s->files.gens[i], g, memory_order_relaxed);
}

int blockload_rebuild(struct blockstore *s)
{
	_cleanup_free_ uint8_t *buf = malloc((size_t)LOAD_BATCH * SLOTMETA_RECORD_BYTES);
	uint32_t n = s->files.geo.nslots;

	if (!buf)
		return -ENOMEM;
	for (uint32_t first = 0; first < n; first += LOAD_BATCH) {
		uint32_t cnt = MIN(LOAD_BATCH, n - first);
		size_t want = (size_t)cnt * SLOTMETA_RECORD_BYTES;
		ssize_t got = fdio_pread_full(s->files.meta_fd, buf, want,
						slotmeta_record_offset(first));

		if (got < 0)
			return (int)got;
		if ((size_t)got != want)
			return -EIO;
		for (uint32_t k = 0; k < cnt; k++)
			load_one(s, first + k, buf + (size_t)k * SLOTMETA_RECORD_BYTES);
	}
	slottab_collect_free(&s->tab);
	return 0;
}
