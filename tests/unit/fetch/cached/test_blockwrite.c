// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the block store's streaming writer (blockwrite.c), the path
 * fills use to write a GET body straight into a pinned slot: a body written
 * in pieces commits and verifies; a truncated or overlong body never
 * commits (the slot is freed, the old block is gone, readers holding the
 * old location get -ESTALE, nothing comes back after a reopen); a retried
 * attempt (offset 0 again) commits only the new bytes; gaps and writes past
 * the block are refused.
 */
#include <errno.h>
#include <stdlib.h>

#include "bstest.h"
#include "check.h"
#include "fetch/base/macro.h"
#include "fetch/cached/blockread.h"
#include "fetch/cached/blockstore.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define BS (64 * KIB)

static const char *tmp_base = "/dev/shm";

static struct blockstore *open_store(const char *dir)
{
	struct blockstore_config cfg = { .dir = dir, .cache_bytes = 2 * MIB, .block_size = BS };
	struct blockstore *s = NULL;

	CHECK_INT(blockstore_open(&cfg, &s), 0);
	return s;
}

static struct blockstore_writer *start(struct blockstore *s, uint64_t id)
{
	struct blockstore_key k = bstest_key(id);
	struct blockstore_writer *w = NULL;
	uint32_t slot;

	CHECK_INT(blockstore_reserve(s, &k, &slot), 0);
	CHECK_INT(blockstore_writer_new(s, slot, &w), 0);
	return w;
}

/* Writes block id's bytes [from, to) in pieces of `piece` bytes. */
static int put_range(struct blockstore_writer *w, uint64_t id, uint32_t from, uint32_t to,
		     uint32_t piece)
{
	static uint8_t buf[BS];
	int r = 0;

	bstest_fill(id, buf, 0, BS);
	for (uint32_t off = from; off < to && r == 0; off += piece)
		r = blockstore_writer_put(w, off, buf + off, MIN(piece, to - off));
	return r;
}

/* 0 if id is served with the right bytes, else the lookup/read error. */
static int served(struct blockstore *s, uint64_t id, uint32_t len)
{
	struct blockstore_key k = bstest_key(id);
	struct blockread_gens *g = NULL;
	struct blockread_loc loc;
	static uint8_t buf[BS];
	int r = blockstore_lookup(s, &k, &loc);

	if (r == 0)
		r = blockread_map_gens(blockstore_gen_fd(s), blockstore_nslots(s), &g);
	if (r == 0) {
		ssize_t n = blockread_pread(blockstore_data_fd(s), g, &loc, buf, 0, BS);
		r = n < 0 ? (int)n : 0;
		if (r == 0 && (n != len || bstest_verify(id, buf, 0, len) >= 0))
			r = -EBADMSG;
	}
	blockread_unmap_gens(g);
	return r;
}

static uint64_t filling(struct blockstore *s)
{
	struct blockstore_stats st;

	blockstore_get_stats(s, &st);
	return st.slots_filling;
}

static void test_pieces(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir);
	struct blockstore_writer *w = start(s, 1);

	CHECK_INT(served(s, 1, BS), -ENOENT); /* invisible while written */
	CHECK_INT(put_range(w, 1, 0, BS, 16 * KIB + 3), 0);
	CHECK_INT(served(s, 1, BS), -ENOENT);
	CHECK_INT(blockstore_writer_commit(w, BS), 0);
	CHECK_INT(served(s, 1, BS), 0); /* checksum verified by the lookup */
	w = start(s, 2);                /* a short last block */
	CHECK_INT(put_range(w, 2, 0, 1000, 300), 0);
	CHECK_INT(blockstore_writer_commit(w, 1000), 0);
	CHECK_INT(served(s, 2, 1000), 0);
	CHECK_INT(filling(s), 0);
	blockstore_free(s);
	s = open_store(dir); /* records survive a reopen */
	CHECK_INT(served(s, 1, BS), 0);
	CHECK_INT(served(s, 2, 1000), 0);
	blockstore_free(s);
	bstest_rmtree(dir);
}

static void test_truncated(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir);
	struct blockstore_writer *w = start(s, 3);

	CHECK_INT(put_range(w, 3, 0, BS - 1, 8 * KIB), 0); /* one byte short */
	CHECK_INT(blockstore_writer_commit(w, BS), -EIO);
	CHECK_INT(served(s, 3, BS), -ENOENT);
	CHECK_INT(filling(s), 0);
	w = start(s, 4); /* overlong for what was asked */
	CHECK_INT(put_range(w, 4, 0, BS, 8 * KIB), 0);
	CHECK_INT(blockstore_writer_commit(w, BS - 100), -EIO);
	CHECK_INT(served(s, 4, BS), -ENOENT);
	w = start(s, 5); /* nothing at all */
	CHECK_INT(blockstore_writer_commit(w, BS), -EIO);
	CHECK_INT(served(s, 5, BS), -ENOENT);
	blockstore_writer_abort(NULL);
	w = start(s, 6);
	CHECK_INT(put_range(w, 6, 0, BS, BS), 0);
	blockstore_writer_abort(w); /* a cancelled fill */
	CHECK_INT(served(s, 6, BS), -ENOENT);
	CHECK_INT(filling(s), 0);
	blockstore_free(s);
	s = open_store(dir); /* and nothing comes back after a reopen */
	for (uint64_t id = 3; id <= 6; id++)
		CHECK_INT(served(s, id, BS), -ENOENT);
	blockstore_free(s);
	bstest_rmtree(dir);
}

/* A recycled slot whose new fill is truncated: the old block is gone, a
 * reader holding its location gets -ESTALE, the new one is not served. */
static void test_recycled(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir);
	uint32_t n = blockstore_nslots(s);
	struct blockread_gens *g = NULL;
	struct blockread_loc old;
	struct blockstore_key k0 = bstest_key(100);
	struct blockstore_writer **w = calloc(n, sizeof(*w));
	uint8_t buf[64];

	for (uint64_t id = 100; id < 100 + n; id++)
		CHECK_INT(bstest_put(s, id), 0);
	CHECK_INT(blockstore_lookup(s, &k0, &old), 0);
	CHECK_INT(blockread_map_gens(blockstore_gen_fd(s), n, &g), 0);
	for (uint32_t i = 0; i < n; i++) { /* pin every slot: each evicts a block */
		w[i] = start(s, 100 + n + i);
		CHECK_INT(put_range(w[i], 100 + n + i, 0, 4 * KIB, 4 * KIB), 0);
	}
	for (uint32_t i = 0; i < n; i++) /* every GET truncated */
		CHECK_INT(blockstore_writer_commit(w[i], bstest_len(100 + n + i, BS)), -EIO);
	free(w);
	CHECK_INT(blockread_pread(blockstore_data_fd(s), g, &old, buf, 0, sizeof(buf)), -ESTALE);
	for (uint64_t id = 100; id < 100 + 2 * n; id++)
		CHECK_INT(served(s, id, bstest_len(id, BS)), -ENOENT);
	CHECK_INT(filling(s), 0);
	blockread_unmap_gens(g);
	blockstore_free(s);
	bstest_rmtree(dir);
}

static void test_restart_and_misuse(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir);
	struct blockstore_writer *w = start(s, 7);
	static uint8_t junk[BS];
	uint32_t slot = blockstore_nslots(s) - 1;

	memset(junk, 0xee, sizeof(junk));
	CHECK_INT(blockstore_writer_put(w, 0, junk, 20 * KIB), 0); /* a first attempt */
	CHECK_INT(blockstore_writer_put(w, 20 * KIB + 1, junk, 10), -EINVAL); /* a gap */
	CHECK_INT(blockstore_writer_put(w, 10, junk, 10), -EINVAL);  /* going back */
	CHECK_INT(blockstore_writer_put(w, 20 * KIB, junk, BS), -EINVAL); /* past the block */
	CHECK_INT(blockstore_writer_put(w, 20 * KIB, NULL, 10), -EINVAL);
	CHECK_INT(put_range(w, 7, 0, BS, 24 * KIB), 0); /* the retry from 0 */
	CHECK_INT(blockstore_writer_commit(w, BS), 0);
	CHECK_INT(served(s, 7, BS), 0); /* the checksum covers only the retry */
	CHECK_INT(blockstore_writer_new(s, slot, &w), -EINVAL); /* slot not pinned */
	blockstore_free(s);
	bstest_rmtree(dir);
}

int main(void)
{
	test_pieces();
	test_truncated();
	test_recycled();
	test_restart_and_misuse();
	return check_done();
}
