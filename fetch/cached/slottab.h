/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-memory slot table of the block store (internal to fetch/cached): one
 * entry per slot, a chained hash index key → slot over the FILLING and VALID
 * slots, a stack of FREE slots and the CLOCK hand (clock_evict.c).
 *
 * Invariants: a key is in the index at most once; a slot is in exactly one
 * of {free stack, index}; nvalid + nfilling + nfree == nslots. No locking
 * here: the block store calls everything with its mutex held.
 */
#ifndef LITH_CACHED_SLOTTAB_H
#define LITH_CACHED_SLOTTAB_H

#include <stdint.h>

#include "fetch/cached/blockstore.h"

#define SLOTTAB_NONE UINT32_MAX

enum slottab_state {
	SLOTTAB_FREE = 0,
	SLOTTAB_FILLING, /* pinned by a fill: never evicted, never served */
	SLOTTAB_VALID,
};

struct slottab_slot {
	struct blockstore_key key;
	uint64_t checksum;  /* XXH3-64 of the valid bytes */
	uint32_t len;       /* valid bytes */
	uint32_t next;      /* hash chain */
	uint8_t state;      /* enum slottab_state */
	uint8_t ref;        /* CLOCK reference bit */
};

struct slottab {
	struct slottab_slot *slots;
	uint32_t nslots;
	uint32_t *buckets;  /* chain heads; SLOTTAB_NONE when empty */
	uint32_t bucket_mask;
	uint32_t *free;     /* stack of FREE slot indexes */
	uint32_t nfree;
	uint32_t nvalid, nfilling;
	uint32_t hand;      /* CLOCK hand */
};

/* All slots FREE but not yet on the free stack (see slottab_collect_free). */
int slottab_init(struct slottab *t, uint32_t nslots);
void slottab_fini(struct slottab *t);
/* Rebuilds the free stack from the slot states (after loading). */
void slottab_collect_free(struct slottab *t);

uint32_t slottab_find(const struct slottab *t, const struct blockstore_key *key);
/* Links slot i (FREE, off the free stack) into the index in state st. */
void slottab_insert(struct slottab *t, uint32_t i, const struct blockstore_key *key,
		    enum slottab_state st);
/* Unlinks slot i from the index and makes it FREE (not pushed). */
void slottab_remove(struct slottab *t, uint32_t i);
/* FILLING → VALID with the committed checksum and length. */
void slottab_set_valid(struct slottab *t, uint32_t i, uint64_t checksum, uint32_t len);
void slottab_push_free(struct slottab *t, uint32_t i);
uint32_t slottab_pop_free(struct slottab *t);

/* CLOCK: a VALID slot whose reference bit is clear, clearing bits on the
 * way; never a FILLING slot. SLOTTAB_NONE if no slot is VALID. */
uint32_t clock_evict_pick(struct slottab *t);

#endif
