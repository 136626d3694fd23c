// SPDX-License-Identifier: Apache-2.0
/*
 * Block store on-disk format (see slotmeta.h): geometry, header and record
 * encode/decode. Pure functions; invariant: geometry(...).disk_bytes +
 * reserve_bytes <= cache_bytes for every accepted configuration.
 */
#include "fetch/cached/slotmeta.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <xxhash.h>

#include "fetch/base/macro.h"

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

static uint64_t round_page(uint64_t n)
{
	return (n + SLOTMETA_PAGE - 1) / SLOTMETA_PAGE * SLOTMETA_PAGE;
}

static void geometry_for(uint64_t n, uint32_t bs, struct slotmeta_geometry *g)
{
	g->block_size = bs;
	g->nslots = (uint32_t)n;
	g->data_bytes = n * bs;
	g->meta_bytes = round_page(SLOTMETA_HEADER_BYTES + n * SLOTMETA_RECORD_BYTES);
	g->gen_bytes = round_page(BLOCKREAD_GEN_HEADER_BYTES + n * 8);
	g->disk_bytes = g->data_bytes + g->meta_bytes + g->gen_bytes;
	g->reserve_bytes = SLOTMETA_FS_RESERVE_FIXED + n * SLOTMETA_FS_RESERVE_PER_SLOT;
}

static bool block_size_ok(uint32_t bs)
{
	return bs >= BLOCKSTORE_BLOCK_SIZE_MIN && bs <= BLOCKSTORE_BLOCK_SIZE_MAX &&
	       (bs & (bs - 1)) == 0;
}

int slotmeta_geometry(uint64_t cache_bytes, uint32_t block_size,
		      struct slotmeta_geometry *ret)
{
	uint64_t per_slot, fixed, n;
	struct slotmeta_geometry g;

	if (!block_size_ok(block_size))
		return -EINVAL;
	per_slot = (uint64_t)block_size + SLOTMETA_RECORD_BYTES + 8 +
		   SLOTMETA_FS_RESERVE_PER_SLOT;
	fixed = SLOTMETA_FS_RESERVE_FIXED + SLOTMETA_HEADER_BYTES + 2 * SLOTMETA_PAGE;
	if (cache_bytes <= fixed)
		return -EINVAL;
	/* An estimate from above, then step down past the page rounding. */
	n = MIN((cache_bytes - fixed) / per_slot + 2, (uint64_t)BLOCKSTORE_MAX_SLOTS + 1);
	for (geometry_for(n, block_size, &g); n > 0; geometry_for(--n, block_size, &g))
		if (g.disk_bytes + g.reserve_bytes <= cache_bytes)
			break;
	if (n < BLOCKSTORE_MIN_SLOTS || n > BLOCKSTORE_MAX_SLOTS)
		return -EINVAL;
	*ret = g;
	return 0;
}

void slotmeta_header_encode(const struct slotmeta_header *h,
			    uint8_t out[SLOTMETA_HEADER_USED])
{
	memset(out, 0, SLOTMETA_HEADER_USED);
	memcpy(out, SLOTMETA_MAGIC, 8);
	put32(out + 8, SLOTMETA_VERSION);
	put32(out + 12, SLOTMETA_HEADER_BYTES);
	put32(out + 16, h->block_size);
	put32(out + 20, h->record_bytes);
	put64(out + 24, h->nslots);
	put64(out + 32, h->data_bytes);
	put64(out + 40, h->store_id);
	put64(out + 56, XXH3_64bits(out, 56));
}

int slotmeta_header_decode(const uint8_t in[SLOTMETA_HEADER_USED],
			   struct slotmeta_header *ret)
{
	struct slotmeta_header h;

	if (memcmp(in, SLOTMETA_MAGIC, 8) != 0 || get64(in + 56) != XXH3_64bits(in, 56))
		return -EBADMSG;
	if (get32(in + 8) != SLOTMETA_VERSION || get32(in + 12) != SLOTMETA_HEADER_BYTES)
		return -EBADMSG;
	h.block_size = get32(in + 16);
	h.record_bytes = get32(in + 20);
	h.nslots = get64(in + 24);
	h.data_bytes = get64(in + 32);
	h.store_id = get64(in + 40);
	*ret = h;
	return 0;
}

uint64_t slotmeta_record_offset(uint32_t slot)
{
	return SLOTMETA_HEADER_BYTES + (uint64_t)slot * SLOTMETA_RECORD_BYTES;
}

void slotmeta_record_encode(const struct slotmeta_record *r, uint32_t slot,
			    uint64_t store_id, uint8_t out[SLOTMETA_RECORD_BYTES])
{
	memcpy(out, r->key.b, BLOCKSTORE_KEY_BYTES);
	put64(out + 32, r->checksum);
	put64(out + 40, r->generation);
	put32(out + 48, r->len);
	put32(out + 52, r->flags);
	put64(out + 56, XXH3_64bits_withSeed(out, 56, store_id ^ slot));
}

int slotmeta_record_decode(const uint8_t in[SLOTMETA_RECORD_BYTES], uint32_t slot,
			   uint64_t store_id, uint32_t block_size,
			   struct slotmeta_record *ret)
{
	struct slotmeta_record r;

	r.flags = get32(in + 52);
	if (r.flags == 0)
		return -ENOENT;
	if (get64(in + 56) != XXH3_64bits_withSeed(in, 56, store_id ^ slot))
		return -EBADMSG;
	memcpy(r.key.b, in, BLOCKSTORE_KEY_BYTES);
	r.checksum = get64(in + 32);
	r.generation = get64(in + 40);
	r.len = get32(in + 48);
	if (r.flags != SLOTMETA_FLAG_VALID || r.len > block_size || (r.generation & 1))
		return -EBADMSG;
	*ret = r;
	return 0;
}
