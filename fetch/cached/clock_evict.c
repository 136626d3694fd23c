// SPDX-License-Identifier: Apache-2.0
/*
 * Eviction for the block store: CLOCK (second chance).
 *
 * Why CLOCK: a hit only sets one bit in the slot entry. There is no list to
 * relink on the hot path (LRU/2Q/ARC move entries on every hit), no per-slot
 * pointers beyond the bit, and nothing about recency needs persisting: after
 * a restart every block starts unreferenced, which is what we want. The hand
 * walks the slot array in order, so eviction is amortised O(1) and close to
 * LRU for the demand/readahead mixes we serve. New blocks start with the bit
 * clear: a prefetched block nobody reads is the first to go, while a block
 * read once after its fill has survived a whole rotation. Scans larger than
 * the cache flush it under any recency policy; the scheduler (not the store)
 * is the place to keep one-pass streams from prefetching too far ahead.
 *
 * Invariant: a FILLING slot is never picked (pinned). Bounded: at most two
 * full rotations (one to clear bits, one to find a clear one). Called with
 * the store mutex held.
 */
#include "fetch/cached/slottab.h"

uint32_t clock_evict_pick(struct slottab *t)
{
	uint64_t steps = 2ull * t->nslots;

	if (t->nvalid == 0)
		return SLOTTAB_NONE;
	while (steps-- > 0) {
		uint32_t i = t->hand;
		struct slottab_slot *s = &t->slots[i];

		t->hand = i + 1 == t->nslots ? 0 : i + 1;
		if (s->state != SLOTTAB_VALID)
			continue;
		if (!s->ref)
			return i;
		s->ref = 0;
	}
	return SLOTTAB_NONE; /* unreachable while nvalid > 0 */
}
