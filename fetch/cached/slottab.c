// SPDX-License-Identifier: Apache-2.0
/*
 * Slot table: hash index and free stack (see slottab.h). Keys are SHA-256
 * outputs, so their first bytes are already uniform: the bucket is the first
 * 8 bytes masked, and an outsider cannot aim keys at one chain without
 * breaking SHA-256. Caller holds the store mutex; no I/O.
 */
#include "fetch/cached/slottab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t bucket_of(const struct slottab *t, const struct blockstore_key *key)
{
	uint64_t h;

	memcpy(&h, key->b, sizeof(h));
	return (uint32_t)(h & t->bucket_mask);
}

int slottab_init(struct slottab *t, uint32_t nslots)
{
	uint32_t nb = 1;

	while (nb < nslots)
		nb <<= 1;
	*t = (struct slottab){ .nslots = nslots, .bucket_mask = nb - 1 };
	t->slots = calloc(nslots, sizeof(*t->slots));
	t->buckets = malloc((size_t)nb * sizeof(*t->buckets));
	t->free = malloc((size_t)nslots * sizeof(*t->free));
	if (!t->slots || !t->buckets || !t->free) {
		slottab_fini(t);
		return -ENOMEM;
	}
	memset(t->buckets, 0xff, (size_t)nb * sizeof(*t->buckets));
	return 0;
}

void slottab_fini(struct slottab *t)
{
	free(t->slots);
	free(t->buckets);
	free(t->free);
	*t = (struct slottab){ 0 };
}

void slottab_collect_free(struct slottab *t)
{
	t->nfree = 0;
	/* Highest first, so pops hand out low slot numbers first. */
	for (uint32_t i = t->nslots; i-- > 0;)
		if (t->slots[i].state == SLOTTAB_FREE)
			t->free[t->nfree++] = i;
}

uint32_t slottab_find(const struct slottab *t, const struct blockstore_key *key)
{
	uint32_t i = t->buckets[bucket_of(t, key)];

	while (i != SLOTTAB_NONE && memcmp(t->slots[i].key.b, key->b, sizeof(key->b)) != 0)
		i = t->slots[i].next;
	return i;
}

void slottab_insert(struct slottab *t, uint32_t i, const struct blockstore_key *key,
		    enum slottab_state st)
{
	struct slottab_slot *s = &t->slots[i];
	uint32_t b = bucket_of(t, key);

	s->key = *key;
	s->state = (uint8_t)st;
	s->ref = 0;
	s->next = t->buckets[b];
	t->buckets[b] = i;
	if (st == SLOTTAB_VALID)
		t->nvalid++;
	else
		t->nfilling++;
}

void slottab_remove(struct slottab *t, uint32_t i)
{
	struct slottab_slot *s = &t->slots[i];
	uint32_t *pp = &t->buckets[bucket_of(t, &s->key)];

	while (*pp != i && *pp != SLOTTAB_NONE)
		pp = &t->slots[*pp].next;
	if (*pp == i)
		*pp = s->next;
	if (s->state == SLOTTAB_VALID)
		t->nvalid--;
	else if (s->state == SLOTTAB_FILLING)
		t->nfilling--;
	*s = (struct slottab_slot){ .next = SLOTTAB_NONE };
}

void slottab_set_valid(struct slottab *t, uint32_t i, uint64_t checksum, uint32_t len)
{
	struct slottab_slot *s = &t->slots[i];

	s->checksum = checksum;
	s->len = len;
	s->ref = 0;
	if (s->state == SLOTTAB_FILLING) {
		t->nfilling--;
		t->nvalid++;
	}
	s->state = SLOTTAB_VALID;
}

void slottab_push_free(struct slottab *t, uint32_t i)
{
	if (t->nfree < t->nslots)
		t->free[t->nfree++] = i;
}

uint32_t slottab_pop_free(struct slottab *t)
{
	return t->nfree ? t->free[--t->nfree] : SLOTTAB_NONE;
}
