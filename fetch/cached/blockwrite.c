// SPDX-License-Identifier: Apache-2.0
/*
 * Streaming fill of one pinned slot (see blockstore.h, "Streaming fill"):
 * the block's bytes are pwritten into the slot as they arrive and hashed
 * on the way (XXH3, incremental), so a fetch needs no buffer of its own and
 * the bytes are hashed while still hot in the CPU cache.
 *
 * Invariants: the slot stays pinned (FILLING, generation odd) from
 * writer_new to commit/abort, so no lookup or reader can see its bytes
 * while they change; the old record is cleared before the first byte
 * changes and the new record is written only after the last one, with the
 * checksum of exactly the bytes written; a writer whose byte count is not
 * the expected length never publishes (commit frees the slot instead).
 * Threads: put runs on any one thread at a time (the S3 engine thread for
 * fills); new/commit/abort take the store's mutex only for the table.
 */
#include <errno.h>
#include <stdlib.h>
#include <xxhash.h>

#include "fetch/base/fdio.h"
#include "fetch/cached/blockstore_impl.h"
#include "fetch/cached/slotio.h"

struct blockstore_writer {
	struct blockstore *s;
	uint32_t slot;
	uint32_t len;         /* bytes written so far */
	uint64_t gen;         /* odd generation while pinned */
	struct blockstore_key key;
	XXH3_state_t *st;
};

static void writer_free(struct blockstore_writer *w)
{
	XXH3_freeState(w->st);
	free(w);
}

int blockstore_writer_new(struct blockstore *s, uint32_t slot,
			  struct blockstore_writer **ret)
{
	struct blockstore_writer *w = calloc(1, sizeof(*w));
	int r = w ? 0 : -ENOMEM;

	if (r == 0)
		r = blockstore_pinned_key(s, slot, &w->key, &w->gen);
	if (r == 0 && !(w->st = XXH3_createState()))
		r = -ENOMEM;
	if (r == 0 && XXH3_64bits_reset(w->st) != XXH_OK)
		r = -EIO;
	if (r == 0) /* old record gone before the bytes change */
		r = slotio_clear_record(s->files.meta_fd, slot);
	if (r < 0) {
		blockstore_abort(s, slot);
		if (w)
			writer_free(w);
		return r;
	}
	w->s = s;
	w->slot = slot;
	*ret = w;
	return 0;
}

int blockstore_writer_put(struct blockstore_writer *w, uint32_t off, const void *data,
			  size_t len)
{
	uint32_t bs = w->s->files.geo.block_size;
	int r;

	if (off == 0 && w->len) { /* starting again: forget what was hashed */
		if (XXH3_64bits_reset(w->st) != XXH_OK)
			return -EIO;
		w->len = 0;
	}
	if (off != w->len || len > bs - off || (!data && len))
		return -EINVAL;
	if (len == 0)
		return 0;
	r = fdio_pwrite_all(w->s->files.data_fd, data, len,
			       blockstore_slot_offset(w->s, w->slot) + off);
	if (r == 0 && XXH3_64bits_update(w->st, data, len) != XXH_OK)
		r = -EIO;
	if (r == 0)
		w->len += (uint32_t)len;
	return r;
}

int blockstore_writer_commit(struct blockstore_writer *w, uint32_t expect_len)
{
	struct slotmeta_record rec = { .flags = SLOTMETA_FLAG_VALID, .key = w->key };
	struct blockstore *s = w->s;
	int r = -EIO;

	if (w->len == expect_len) {
		rec.len = w->len;
		rec.checksum = XXH3_64bits_digest(w->st);
		rec.generation = (w->gen | 1u) + 1; /* what blockstore_gen_end() publishes */
		r = slotio_write_record(s->files.meta_fd, w->slot, s->files.store_id, &rec);
	}
	if (r < 0)
		blockstore_abort(s, w->slot);
	else
		blockstore_publish(s, w->slot, rec.checksum, rec.len);
	writer_free(w);
	return r;
}

void blockstore_writer_abort(struct blockstore_writer *w)
{
	if (!w)
		return;
	blockstore_abort(w->s, w->slot);
	writer_free(w);
}
