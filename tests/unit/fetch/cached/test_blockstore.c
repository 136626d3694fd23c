// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for fetch/cached/blockstore + blockread: keys, config limits,
 * round trip, short blocks, the fill protocol, CLOCK under a 4× workload with
 * the on-disk total checked against the cap, restart persistence, data and
 * metadata corruption, and the generation check for recycled slots. The
 * concurrent hammer lives in test_blockstore_hammer.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "bstest.h"
#include "check.h"
#include "fetch/base/clock.h"
#include "fetch/base/macro.h"
#include "fetch/cached/blockread.h"
#include "fetch/cached/blockstore.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

static const char *tmp_base = "/dev/shm";

static struct blockstore *open_store(const char *dir, uint64_t cap, uint32_t bs)
{
	struct blockstore_config cfg = { .dir = dir, .cache_bytes = cap, .block_size = bs };
	struct blockstore *s = NULL;
	int r = blockstore_open(&cfg, &s);

	CHECK_INT(r, 0);
	return s;
}

/* Reads block id through the reader API with the store's own fds. */
static int read_back(struct blockstore *s, uint64_t id)
{
	struct blockstore_key k = bstest_key(id);
	struct blockread_gens *g = NULL;
	struct blockread_loc loc;
	uint32_t bs = blockstore_block_size(s);
	uint8_t *buf = malloc(bs);
	int r = blockstore_lookup(s, &k, &loc);

	if (r == 0)
		r = blockread_map_gens(blockstore_gen_fd(s), blockstore_nslots(s), &g);
	if (r == 0) {
		ssize_t n = blockread_pread(blockstore_data_fd(s), g, &loc, buf, 0, bs);
		r = n < 0 ? (int)n : 0;
		if (r == 0 && (n != bstest_len(id, bs) || loc.len != n ||
			       bstest_verify(id, buf, 0, (size_t)n) >= 0))
			r = -EBADMSG;
	}
	blockread_unmap_gens(g);
	free(buf);
	return r;
}

static void test_key(void)
{
	struct blockstore_key a, b, c, sentinel;
	char *longkey = malloc(BLOCKSTORE_FIELD_MAX + 2);

	CHECK_INT(blockstore_key("e", "ab", "c", "t", 0, &a), 0);
	CHECK_INT(blockstore_key("e", "a", "bc", "t", 0, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) != 0);
	CHECK_INT(blockstore_key("e", "ab", "c", "t", 0, &c), 0);
	CHECK(memcmp(&a, &c, sizeof(a)) == 0); /* deterministic */
	CHECK_INT(blockstore_key("ea", "b", "c", "t", 0, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) != 0);
	CHECK_INT(blockstore_key("e", "ab", "ct", "", 0, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) != 0);
	CHECK_INT(blockstore_key("e", "ab", "c", "t", 1, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) != 0);
	CHECK_INT(blockstore_key("e", "ab", "c", "u", 0, &b), 0); /* other ETag */
	CHECK(memcmp(&a, &b, sizeof(a)) != 0);

	memset(&sentinel, 0x5a, sizeof(sentinel));
	c = sentinel;
	CHECK_INT(blockstore_key(NULL, "b", "k", "t", 0, &c), -EINVAL);
	CHECK_INT(blockstore_key("e", "b", "k", "t", 0, NULL), -EINVAL);
	memset(longkey, 'k', BLOCKSTORE_FIELD_MAX + 1);
	longkey[BLOCKSTORE_FIELD_MAX + 1] = '\0';
	CHECK_INT(blockstore_key("e", "b", longkey, "t", 0, &c), -EINVAL);
	CHECK(memcmp(&c, &sentinel, sizeof(c)) == 0); /* untouched on failure */
	longkey[BLOCKSTORE_FIELD_MAX] = '\0';
	CHECK_INT(blockstore_key("e", "b", longkey, "t", 0, &c), 0);
	free(longkey);
}

static void test_config(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore_config cfg = { .dir = dir, .cache_bytes = 64 * MIB };
	struct blockstore *s = (struct blockstore *)&cfg; /* sentinel */
	uint32_t n = 77;

	CHECK_INT(blockstore_plan(64 * MIB, 0, &n), 0);
	CHECK(n >= 60 && n < 64); /* 1 MiB default, minus metadata */
	CHECK_INT(blockstore_plan(9 * MIB, 1 * MIB, &n), 0);
	CHECK_INT(n, 8); /* smallest accepted */
	n = 77;
	CHECK_INT(blockstore_plan(8 * MIB, 1 * MIB, &n), -EINVAL); /* 7 slots */
	CHECK_INT(n, 77);
	CHECK_INT(blockstore_plan(64 * MIB, 100000, &n), -EINVAL);   /* not 2^k */
	CHECK_INT(blockstore_plan(64 * MIB, 32 * KIB, &n), -EINVAL); /* < 64 KiB */
	CHECK_INT(blockstore_plan(1ull << 40, 32 * MIB, &n), -EINVAL); /* > 16 MiB */
	CHECK_INT(blockstore_plan(1ull << 45, 1 * MIB, &n), -EINVAL); /* > 2^24 slots */
	CHECK_INT(blockstore_plan(1ull << 44, 1 * MIB, &n), 0);
	CHECK_INT(blockstore_plan(0, 0, &n), -EINVAL);

	cfg.cache_bytes = 4 * MIB;
	CHECK_INT(blockstore_open(&cfg, &s), -EINVAL);
	CHECK(s == (struct blockstore *)&cfg);
	CHECK_INT(bstest_du(dir).entries, 0); /* nothing created */
	cfg.cache_bytes = 64 * MIB;
	cfg.block_size = 3 * 64 * KIB;
	CHECK_INT(blockstore_open(&cfg, &s), -EINVAL);
	cfg.dir = NULL;
	cfg.block_size = 0;
	CHECK_INT(blockstore_open(&cfg, &s), -EINVAL);
	CHECK(s == (struct blockstore *)&cfg);
	bstest_rmtree(dir);
}

static void test_roundtrip(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir, 4 * MIB, 64 * KIB), *s2 = NULL;
	struct blockstore_config cfg = { .dir = dir, .cache_bytes = 4 * MIB, .block_size = 64 * KIB };
	struct blockstore_key k0 = bstest_key(0), k1 = bstest_key(1);
	struct blockread_loc loc, sentinel = { 9, 9, 9, 9 };
	struct blockread_gens *g = NULL;
	struct blockstore_stats st;
	uint8_t buf[64 * KIB];
	uint32_t slot = 999;

	CHECK_INT(blockstore_open(&cfg, &s2), -EBUSY); /* one store per directory */
	CHECK_INT(blockstore_block_size(s), 64 * KIB);
	loc = sentinel;
	CHECK_INT(blockstore_lookup(s, &k0, &loc), -ENOENT);
	CHECK(memcmp(&loc, &sentinel, sizeof(loc)) == 0);
	CHECK_INT(bstest_put(s, 0), 0); /* full block */
	CHECK_INT(bstest_put(s, 1), 0); /* short block */
	CHECK(bstest_len(1, 64 * KIB) < 64 * KIB);
	CHECK_INT(read_back(s, 0), 0);
	CHECK_INT(read_back(s, 1), 0);

	CHECK_INT(blockstore_lookup(s, &k1, &loc), 0);
	CHECK_INT(loc.len, bstest_len(1, 64 * KIB));
	CHECK_INT(loc.offset, (uint64_t)loc.slot * 64 * KIB);
	CHECK_INT(loc.generation % 2, 0);
	CHECK_INT(blockread_map_gens(blockstore_gen_fd(s), blockstore_nslots(s), &g), 0);
	/* Partial reads, reads past the valid length. */
	CHECK_INT(blockread_pread(blockstore_data_fd(s), g, &loc, buf, 100, 50), 50);
	CHECK_INT(bstest_verify(1, buf, 100, 50), -1);
	CHECK_INT(blockread_pread(blockstore_data_fd(s), g, &loc, buf, loc.len - 10, 4096), 10);
	CHECK_INT(bstest_verify(1, buf, loc.len - 10, 10), -1);
	CHECK_INT(blockread_pread(blockstore_data_fd(s), g, &loc, buf, loc.len, 4096), 0);
	CHECK_INT(blockread_check(g, &loc), 0);
	loc.slot = blockstore_nslots(s);
	CHECK_INT(blockread_pread(blockstore_data_fd(s), g, &loc, buf, 0, 10), -EINVAL);
	loc.slot = 0;
	loc.generation = 1;
	CHECK_INT(blockread_pread(blockstore_data_fd(s), g, &loc, buf, 0, 10), -EINVAL);
	blockread_unmap_gens(g);
	g = NULL;
	CHECK_INT(blockread_map_gens(blockstore_gen_fd(s), blockstore_nslots(s) + 1, &g), -EINVAL);
	CHECK(g == NULL);
	CHECK_INT(blockread_map_gens(blockstore_data_fd(s), blockstore_nslots(s), &g), -EINVAL);

	/* Fill protocol states. */
	CHECK_INT(blockstore_reserve(s, &k0, &slot), -EEXIST);
	CHECK_INT(slot, 999);
	struct blockstore_key k2 = bstest_key(2);
	CHECK_INT(blockstore_reserve(s, &k2, &slot), 0);
	uint32_t other = 0;
	CHECK_INT(blockstore_reserve(s, &k2, &other), -EALREADY);
	CHECK_INT(blockstore_lookup(s, &k2, &loc), -ENOENT); /* not visible while filling */
	CHECK_INT(blockstore_abort(s, slot), 0);
	CHECK_INT(blockstore_abort(s, slot), -EINVAL);
	CHECK_INT(blockstore_commit(s, slot, buf, 10), -EINVAL); /* not pinned any more */
	CHECK_INT(blockstore_lookup(s, &k2, &loc), -ENOENT);
	CHECK_INT(blockstore_reserve(s, &k2, &slot), 0);
	CHECK_INT(blockstore_commit(s, slot, buf, 64 * KIB + 1), -EINVAL); /* ends the pin */
	CHECK_INT(blockstore_reserve(s, &k2, &slot), 0);
	CHECK_INT(blockstore_commit(s, slot, NULL, 0), 0); /* an empty block is legal */
	CHECK_INT(blockstore_lookup(s, &k2, &loc), 0);
	CHECK_INT(loc.len, 0);

	blockstore_get_stats(s, &st);
	CHECK_INT(st.slots_used, 3);
	CHECK_INT(st.slots_filling, 0);
	CHECK_INT(st.used_bytes, 64 * KIB + bstest_len(1, 64 * KIB));
	CHECK_INT(st.capacity_bytes, st.slots_total * 64 * KIB);
	CHECK(st.disk_bytes <= 4 * MIB);
	CHECK_INT(st.hits, 4);
	CHECK(st.misses >= 3);
	CHECK_INT(st.evictions, 0);
	CHECK(st.reset_reason == NULL);
	blockstore_free(s);
	blockstore_free(NULL);
	bstest_rmtree(dir);
}

/* Pinned slots are never evicted; all pinned → -EBUSY. */
static void test_pins(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir, 2 * MIB, 64 * KIB);
	uint32_t n = blockstore_nslots(s), slots[3], tmp;
	struct blockstore_key k;
	uint8_t buf[64 * KIB];
	int busy = 0, bad = 0;

	for (uint32_t i = 0; i < n; i++) {
		k = bstest_key(1000 + i);
		if (blockstore_reserve(s, &k, &tmp) < 0)
			bad++;
	}
	CHECK_INT(bad, 0);
	k = bstest_key(5000);
	CHECK_INT(blockstore_reserve(s, &k, &tmp), -EBUSY);
	for (uint32_t i = 0; i < n; i++)
		blockstore_abort(s, i);

	for (int i = 0; i < 3; i++) {
		k = bstest_key(7000 + (uint64_t)i);
		CHECK_INT(blockstore_reserve(s, &k, &slots[i]), 0);
	}
	for (uint64_t id = 0; id < 10ull * n; id++)
		if (bstest_put(s, id) == -EBUSY)
			busy++;
	CHECK_INT(busy, 0);
	for (int i = 0; i < 3; i++) {
		bstest_fill(7000 + (uint64_t)i, buf, 0, bstest_len(7000 + (uint64_t)i, 64 * KIB));
		CHECK_INT(blockstore_commit(s, slots[i], buf, bstest_len(7000 + (uint64_t)i, 64 * KIB)),
			  0);
		CHECK_INT(read_back(s, 7000 + (uint64_t)i), 0);
	}
	blockstore_free(s);
	bstest_rmtree(dir);
}

/* 4× the cache through it: total on disk never above the cap, recent blocks
 * and a hot block stay, evictions happen. On the real disk (/tmp). */
static void cap_workload(uint64_t cap, uint32_t bs)
{
	char *dir = bstest_mkdtemp("/tmp");
	struct blockstore *s = open_store(dir, cap, bs);
	uint64_t nblocks = 4 * cap / bs, hot = 999999, over = 0, maxalloc = 0;
	struct blockstore_stats st;
	struct bstest_du du;
	int hot_miss = 0, put_fail = 0;

	CHECK_INT(bstest_put(s, hot), 0);
	for (uint64_t id = 0; id < nblocks; id++) {
		struct blockread_loc loc;
		struct blockstore_key hk = bstest_key(hot);

		if (bstest_put(s, id) < 0)
			put_fail++;
		if (blockstore_lookup(s, &hk, &loc) < 0)
			hot_miss++;
		du = bstest_du(dir);
		maxalloc = MAX(maxalloc, du.allocated);
		if (du.allocated > cap || du.apparent > cap)
			over++;
	}
	CHECK_INT(put_fail, 0);
	CHECK_INT(over, 0);
	CHECK_INT(hot_miss, 0); /* CLOCK keeps a block referenced between fills */
	blockstore_get_stats(s, &st);
	CHECK(st.evictions >= nblocks - st.slots_total);
	CHECK_INT(st.slots_used, st.slots_total);
	CHECK(st.disk_bytes <= cap);
	/* The most recent blocks are still there (CLOCK evicts the oldest unreferenced). */
	for (uint64_t id = nblocks - st.slots_total / 2; id < nblocks; id++)
		CHECK_INT(read_back(s, id), 0);
	printf("cap %llu bs %u: %llu slots, max allocated %llu (%.2f%% of cap), apparent %llu\n",
	       (unsigned long long)cap, bs, (unsigned long long)st.slots_total,
	       (unsigned long long)maxalloc, 100.0 * (double)maxalloc / (double)cap,
	       (unsigned long long)du.apparent);
	blockstore_free(s);
	bstest_rmtree(dir);
}

static void test_cap(void)
{
	cap_workload(8 * MIB, 64 * KIB);
	cap_workload(24 * MIB, 1 * MIB);
	cap_workload(20 * MIB + 12345, 256 * KIB); /* an odd cap */
}

static void test_restart(void)
{
	char *dir = bstest_mkdtemp("/tmp");
	struct blockstore *s = open_store(dir, 4 * MIB, 64 * KIB);
	struct blockstore_key k3 = bstest_key(3);
	struct blockread_gens *g = NULL;
	struct blockread_loc loc3;
	struct blockstore_stats st;
	uint8_t buf[64 * KIB];
	uint32_t n = blockstore_nslots(s), slot;
	int old_data_fd, bad = 0;

	for (uint64_t id = 0; id < 20; id++)
		CHECK_INT(bstest_put(s, id), 0);
	/* A reader process that survives the restart keeps its fds and loc. */
	CHECK_INT(blockstore_lookup(s, &k3, &loc3), 0);
	old_data_fd = dup(blockstore_data_fd(s));
	CHECK_INT(blockread_map_gens(blockstore_gen_fd(s), n, &g), 0);
	/* A fill in flight when the daemon stops. */
	struct blockstore_key kf = bstest_key(500);
	CHECK_INT(blockstore_reserve(s, &kf, &slot), 0);
	blockstore_free(s);

	s = open_store(dir, 4 * MIB, 64 * KIB);
	blockstore_get_stats(s, &st);
	CHECK(st.reset_reason == NULL);
	CHECK_INT(st.records_loaded, 20);
	CHECK_INT(st.records_dropped, 0);
	CHECK_INT(st.slots_used, 20);
	for (uint64_t id = 0; id < 20; id++)
		if (read_back(s, id) != 0)
			bad++;
	CHECK_INT(bad, 0);
	CHECK_INT(blockstore_lookup(s, &kf, &loc3), -ENOENT);
	/* Its slot was fresh (gen 0), odd while filling, even and larger now. */
	CHECK_INT(blockread_check(g, &(struct blockread_loc){ .slot = slot, .generation = 2 }), 0);

	/* The old reader still reads right bytes, then sees the slot recycled. */
	CHECK_INT(blockstore_lookup(s, &k3, &loc3), 0);
	CHECK_INT(blockread_pread(old_data_fd, g, &loc3, buf, 0, sizeof(buf)), loc3.len);
	CHECK_INT(bstest_verify(3, buf, 0, loc3.len), -1);
	for (uint64_t id = 100; id < 100 + 2ull * n; id++)
		bstest_put(s, id);
	CHECK_INT(blockread_pread(old_data_fd, g, &loc3, buf, 0, sizeof(buf)), -ESTALE);
	blockread_unmap_gens(g);
	close(old_data_fd);
	blockstore_free(s);
	bstest_rmtree(dir);
}

static void test_corrupt_data(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir, 4 * MIB, 64 * KIB);
	struct blockstore_key k0 = bstest_key(0), k1 = bstest_key(1), k4 = bstest_key(4);
	struct blockstore_stats st;
	struct blockread_loc loc, loc1;

	for (uint64_t id = 0; id < 6; id++)
		CHECK_INT(bstest_put(s, id), 0);
	/* Corrupted while the daemon runs: caught at the next lookup. */
	CHECK_INT(blockstore_lookup(s, &k0, &loc), 0);
	CHECK_INT(bstest_flip(dir, "blocks.data", loc.offset + 100), 0);
	CHECK_INT(blockstore_lookup(s, &k0, &loc), -ENOENT);
	blockstore_get_stats(s, &st);
	CHECK_INT(st.checksum_failures, 1);
	CHECK_INT(st.slots_used, 5);
	CHECK_INT(blockstore_lookup(s, &k0, &loc), -ENOENT); /* stays a miss, counted once */
	blockstore_get_stats(s, &st);
	CHECK_INT(st.checksum_failures, 1);
	CHECK_INT(bstest_put(s, 0), 0); /* refill */
	CHECK_INT(read_back(s, 0), 0);

	/* Bytes past a short block's valid length are not covered. */
	CHECK_INT(blockstore_lookup(s, &k1, &loc1), 0);
	CHECK_INT(bstest_flip(dir, "blocks.data", loc1.offset + loc1.len), 0);
	CHECK_INT(read_back(s, 1), 0);

	/* Corrupted while the daemon is down: caught at the first lookup. */
	CHECK_INT(blockstore_lookup(s, &k4, &loc), 0);
	blockstore_free(s);
	CHECK_INT(bstest_flip(dir, "blocks.data", loc.offset + loc.len - 1), 0);
	s = open_store(dir, 4 * MIB, 64 * KIB);
	CHECK_INT(blockstore_lookup(s, &k4, &loc), -ENOENT);
	blockstore_get_stats(s, &st);
	CHECK_INT(st.checksum_failures, 1);
	CHECK_INT(st.slots_used, 5);
	blockstore_free(s);
	/* ...and its record is gone for good. */
	s = open_store(dir, 4 * MIB, 64 * KIB);
	blockstore_get_stats(s, &st);
	CHECK_INT(st.records_loaded, 5);
	CHECK_INT(bstest_put(s, 4), 0);
	CHECK_INT(read_back(s, 4), 0);
	blockstore_free(s);
	bstest_rmtree(dir);
}

/* Fills 6 blocks, closes, lets damage() hurt the files, reopens: returns the
 * reopened store's stats; the store is then checked to work. */
static struct blockstore_stats reopen_after(const char *dir, uint64_t cap, uint32_t bs,
					    void (*damage)(const char *dir))
{
	struct blockstore *s = open_store(dir, 4 * MIB, 64 * KIB);
	struct blockstore_stats st = { 0 };

	for (uint64_t id = 0; id < 6; id++)
		bstest_put(s, id);
	blockstore_free(s);
	damage(dir);
	s = open_store(dir, cap, bs);
	if (!s)
		return st;
	blockstore_get_stats(s, &st);
	CHECK_INT(bstest_put(s, 42), 0);
	CHECK_INT(read_back(s, 42), 0);
	blockstore_free(s);
	/* Whatever happened, the next open attaches cleanly. */
	s = open_store(dir, cap, bs);
	if (s) {
		struct blockstore_stats st2;
		blockstore_get_stats(s, &st2);
		CHECK(st2.reset_reason == NULL);
		CHECK_INT(read_back(s, 42), 0);
		blockstore_free(s);
	}
	return st;
}

static void truncate_file(const char *dir, const char *name, off_t len)
{
	char *p = bstest_path(dir, name);
	CHECK_INT(truncate(p, len), 0);
	free(p);
}

static void unlink_file(const char *dir, const char *name)
{
	char *p = bstest_path(dir, name);
	CHECK_INT(unlink(p), 0);
	free(p);
}

static void dmg_none(const char *dir) { (void)dir; }
static void dmg_meta_trunc(const char *dir) { truncate_file(dir, "blocks.meta", 100); }
static void dmg_meta_empty(const char *dir) { truncate_file(dir, "blocks.meta", 0); }
static void dmg_meta_short(const char *dir) { truncate_file(dir, "blocks.meta", 4096 + 64 * 3); }
static void dmg_header(const char *dir) { bstest_flip(dir, "blocks.meta", 17); }
static void dmg_record(const char *dir) { bstest_flip(dir, "blocks.meta", 4096 + 64 * 2 + 40); }
static void dmg_data_trunc(const char *dir) { truncate_file(dir, "blocks.data", 64 * KIB); }
static void dmg_gen_gone(const char *dir) { unlink_file(dir, "blocks.gen"); }
static void dmg_data_gone(const char *dir) { unlink_file(dir, "blocks.data"); }
static void dmg_gen_header(const char *dir) { bstest_flip(dir, "blocks.gen", 30); }

static void dmg_meta_garbage(const char *dir)
{
	char *p = bstest_path(dir, "blocks.meta");
	struct stat st;
	int fd = open(p, O_RDWR);
	uint8_t *junk;

	free(p);
	if (fd < 0 || fstat(fd, &st) < 0)
		abort();
	junk = malloc((size_t)st.st_size);
	for (off_t i = 0; i < st.st_size; i++)
		junk[i] = (uint8_t)bstest_mix((uint64_t)i);
	CHECK_INT(pwrite(fd, junk, (size_t)st.st_size, 0), st.st_size);
	free(junk);
	close(fd);
}

static void test_corrupt_meta(void)
{
	static const struct {
		const char *name;
		void (*damage)(const char *dir);
		bool reset;
	} cases[] = {
		{ "meta truncated", dmg_meta_trunc, true },
		{ "meta empty", dmg_meta_empty, true },
		{ "meta records cut", dmg_meta_short, true },
		{ "meta header byte", dmg_header, true },
		{ "meta garbage", dmg_meta_garbage, true },
		{ "data truncated", dmg_data_trunc, true },
		{ "gen file gone", dmg_gen_gone, true },
		{ "data file gone", dmg_data_gone, true },
		{ "gen header byte", dmg_gen_header, true },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *dir = bstest_mkdtemp(tmp_base);
		struct blockstore_stats st = reopen_after(dir, 4 * MIB, 64 * KIB, cases[i].damage);

		if (!st.reset_reason || st.slots_used != 0)
			fprintf(stderr, "case %s: reset_reason=%s used=%llu\n", cases[i].name,
				st.reset_reason ? st.reset_reason : "(none)",
				(unsigned long long)st.slots_used);
		CHECK(st.reset_reason != NULL);
		CHECK_INT(st.slots_used, 0);
		bstest_rmtree(dir);
	}

	/* One bad record: only that block is dropped. */
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore_stats st = reopen_after(dir, 4 * MIB, 64 * KIB, dmg_record);
	CHECK(st.reset_reason == NULL);
	CHECK_INT(st.records_dropped, 1);
	CHECK_INT(st.records_loaded, 5);
	bstest_rmtree(dir);

	/* Different block size or cache size: reset, never a crash. */
	dir = bstest_mkdtemp(tmp_base);
	st = reopen_after(dir, 4 * MIB, 128 * KIB, dmg_none);
	CHECK(st.reset_reason != NULL && strstr(st.reset_reason, "geometry"));
	CHECK_INT(st.slots_used, 0);
	bstest_rmtree(dir);
	dir = bstest_mkdtemp(tmp_base);
	st = reopen_after(dir, 6 * MIB, 64 * KIB, dmg_none);
	CHECK(st.reset_reason != NULL);
	CHECK_INT(st.slots_used, 0);
	bstest_rmtree(dir);
}

/* Duplicate records for one key (a block evicted by a fill that was then
 * aborted keeps its record; refilled elsewhere, two records name it): the
 * copy whose bytes verify wins. bad_old: damage the older copy's bytes. */
static void duplicate_records(bool bad_old)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir, 2 * MIB, 64 * KIB);
	uint32_t n = blockstore_nslots(s), pinned[64], npinned = 0;
	struct blockstore_key k0 = bstest_key(0);
	struct blockread_loc old, loc;
	struct blockstore_stats st;

	for (uint64_t id = 0; id < n; id++)
		CHECK_INT(bstest_put(s, id), 0);
	CHECK_INT(blockstore_lookup(s, &k0, &old), 0);
	do { /* evict until block 0's slot is taken, keeping the others pinned */
		struct blockstore_key k = bstest_key(9000 + npinned);
		CHECK_INT(blockstore_reserve(s, &k, &pinned[npinned]), 0);
	} while (pinned[npinned++] != old.slot && npinned < ARRAY_SIZE(pinned));
	for (uint32_t i = npinned; i-- > 0;) /* block 0's slot freed first, popped last */
		CHECK_INT(blockstore_abort(s, pinned[i]), 0);
	CHECK_INT(blockstore_lookup(s, &k0, &loc), -ENOENT);
	CHECK_INT(bstest_put(s, 0), 0);
	CHECK_INT(blockstore_lookup(s, &k0, &loc), 0);
	CHECK(loc.slot != old.slot);
	blockstore_free(s);
	if (bad_old)
		CHECK_INT(bstest_flip(dir, "blocks.data", old.offset + 7), 0);

	s = open_store(dir, 2 * MIB, 64 * KIB);
	blockstore_get_stats(s, &st);
	CHECK_INT(st.records_dropped, 1);
	/* Blocks evicted by the aborted fills are back; block 0's refill
	 * overwrote one of them. */
	CHECK_INT(st.records_loaded, n - 1);
	CHECK_INT(read_back(s, 0), 0);
	blockstore_get_stats(s, &st);
	CHECK_INT(st.checksum_failures, 0);
	blockstore_free(s);
	bstest_rmtree(dir);
}

static void test_duplicate_records(void)
{
	duplicate_records(false);
	duplicate_records(true);
}

/* A recycled slot is detected by readers holding an old location. */
static void test_stale(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir, 2 * MIB, 64 * KIB);
	uint32_t n = blockstore_nslots(s), slot;
	struct blockstore_key k0 = bstest_key(0), kx = bstest_key(777);
	struct blockread_gens *g = NULL;
	struct blockread_loc loc;
	uint8_t buf[64];
	int dfd = blockstore_data_fd(s);

	CHECK_INT(blockread_map_gens(blockstore_gen_fd(s), n, &g), 0);
	for (uint64_t id = 0; id < n; id++)
		CHECK_INT(bstest_put(s, id), 0);
	CHECK_INT(blockstore_lookup(s, &k0, &loc), 0);
	CHECK_INT(blockread_pread(dfd, g, &loc, buf, 0, sizeof(buf)), sizeof(buf));
	/* Keep everything else referenced so CLOCK picks block 0's slot. */
	for (uint64_t id = 1; id < n; id++) {
		struct blockstore_key k = bstest_key(id);
		struct blockread_loc l;
		blockstore_lookup(s, &k, &l);
	}
	/* Every bit is set: CLOCK clears them all and comes back to slot 0. */
	CHECK_INT(blockstore_reserve(s, &kx, &slot), 0);
	CHECK_INT(blockread_check(g, &loc), -ESTALE);
	if (slot == loc.slot) {
		CHECK_INT(blockread_pread(dfd, g, &loc, buf, 0, sizeof(buf)), -ESTALE); /* odd */
		uint8_t blk[64 * KIB];
		bstest_fill(777, blk, 0, sizeof(blk));
		CHECK_INT(blockstore_commit(s, slot, blk, sizeof(blk)), 0);
		CHECK_INT(blockread_pread(dfd, g, &loc, buf, 0, sizeof(buf)), -ESTALE); /* moved on */
		struct blockread_loc lx;
		CHECK_INT(blockstore_lookup(s, &kx, &lx), 0);
		CHECK_INT(lx.slot, loc.slot);
		CHECK(lx.generation > loc.generation);
	} else {
		CHECK(!"block 0's slot was not the one recycled");
	}
	blockread_unmap_gens(g);
	blockstore_free(s);
	bstest_rmtree(dir);
}

/* SIGKILL a process that keeps filling (and sometimes aborting) at a random
 * moment, 25 times; after each crash the store must reopen and every block
 * it still has must be exactly right. Page-cache order survives a process
 * crash, so the clear-record → data → record order leaves no bad record:
 * no checksum failures either. */
static void test_crash(void)
{
	char *dir = bstest_mkdtemp("/tmp");
	uint64_t seed = 12345;
	int bad = 0, failures = 0, total_hits = 0;

	for (int round = 0; round < 25; round++) {
		pid_t pid = fork();

		if (pid == 0) {
			struct blockstore *s = open_store(dir, 2 * MIB, 64 * KIB);
			uint64_t x = seed + (uint64_t)round;

			for (;;) {
				uint64_t id = (x = bstest_mix(x)) % 200;
				if (bstest_put(s, id) == -EEXIST) {
					struct blockstore_key k = bstest_key(id + 1000);
					uint32_t slot;
					if (blockstore_reserve(s, &k, &slot) == 0)
						blockstore_abort(s, slot);
				}
			}
		}
		nanosleep(&(struct timespec){ 0, (long)(2 + bstest_mix(seed + (uint64_t)round) % 40) *
						      1000000L }, NULL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);

		struct blockstore *s = open_store(dir, 2 * MIB, 64 * KIB);
		struct blockstore_stats st;
		if (!s)
			break;
		for (uint64_t id = 0; id < 200; id++) {
			int r = read_back(s, id);
			if (r == 0)
				total_hits++;
			else if (r != -ENOENT)
				bad++;
		}
		blockstore_get_stats(s, &st);
		failures += (int)st.checksum_failures;
		blockstore_free(s);
	}
	CHECK_INT(bad, 0);
	CHECK_INT(failures, 0);
	CHECK(total_hits > 0);
	bstest_rmtree(dir);
}

/* ---- the reader's re-check, pinned down with a signal --------------------
 * A timer interrupts the reader every few microseconds; the handler plays
 * the daemon and recycles the slot (gen odd, pwrite other bytes, gen even),
 * all async-signal-safe. When the signal lands between blockread_pread()'s
 * first generation load and its pread, the pread returns the new bytes and
 * only the re-check after the read can notice: a missing or misordered
 * re-check shows up as wrong bytes here. Version v of the slot (gen 2v from
 * the test's start) holds bstest content of id 50000 + v % 2. */
#define RACE_BYTES 256u

static struct {
	_Atomic uint64_t *gen;
	int data_fd;
	uint64_t offset, base_gen;
	uint8_t content[2][RACE_BYTES];
	uint64_t recycles;
} race;

static void race_tick(int sig)
{
	uint64_t g = atomic_load(race.gen), v = (g - race.base_gen) / 2 + 1;
	int saved = errno;

	(void)sig;
	atomic_store(race.gen, g + 1);
	atomic_thread_fence(memory_order_seq_cst);
	if (pwrite(race.data_fd, race.content[v % 2], RACE_BYTES, (off_t)race.offset) < 0)
		abort();
	atomic_store_explicit(race.gen, g + 2, memory_order_release);
	race.recycles++;
	errno = saved;
}

static void *race_map_gens(const char *dir, size_t *len)
{
	char *p = bstest_path(dir, "blocks.gen");
	int fd = open(p, O_RDWR | O_CLOEXEC);
	struct stat st;
	void *m;

	free(p);
	if (fd < 0 || fstat(fd, &st) < 0)
		abort();
	*len = (size_t)st.st_size;
	m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

static void race_run(struct blockstore *s, const struct blockread_gens *g,
		     struct blockread_loc loc, uint64_t *ok, uint64_t *stale, uint64_t *wrong)
{
	struct itimerval it = { { 0, 40 }, { 0, 40 } };
	uint64_t end = clock_mono_ns() + 1000000000ull, rng = 1;
	uint8_t buf[64];

	signal(SIGALRM, race_tick);
	setitimer(ITIMER_REAL, &it, NULL);
	while (clock_mono_ns() < end) {
		uint64_t off = (rng = bstest_mix(rng)) % (RACE_BYTES - sizeof(buf));
		uint64_t v = (loc.generation - race.base_gen) / 2;
		ssize_t n = blockread_pread(blockstore_data_fd(s), g, &loc, buf, off, sizeof(buf));

		if (n == -ESTALE) {
			(*stale)++;
			loc.generation = atomic_load(race.gen) & ~(uint64_t)1;
			continue;
		}
		if (n != sizeof(buf) || memcmp(buf, race.content[v % 2] + off, sizeof(buf)) != 0)
			(*wrong)++;
		else
			(*ok)++;
	}
	setitimer(ITIMER_REAL, &(struct itimerval){ 0 }, NULL);
	signal(SIGALRM, SIG_DFL);
}

static void test_reader_race(void)
{
	char *dir = bstest_mkdtemp(tmp_base);
	struct blockstore *s = open_store(dir, 2 * MIB, 64 * KIB);
	struct blockstore_key k = bstest_key(3);
	struct blockread_gens *g = NULL;
	struct blockread_loc loc;
	uint64_t ok = 0, stale = 0, wrong = 0;
	char *p = bstest_path(dir, "blocks.data");
	size_t maplen;
	void *map;

	CHECK_INT(bstest_put(s, 3), 0);
	CHECK_INT(blockstore_lookup(s, &k, &loc), 0);
	CHECK_INT(blockread_map_gens(blockstore_gen_fd(s), blockstore_nslots(s), &g), 0);
	map = race_map_gens(dir, &maplen);
	race.gen = (_Atomic uint64_t *)((char *)map + BLOCKREAD_GEN_HEADER_BYTES) + loc.slot;
	race.data_fd = open(p, O_RDWR | O_CLOEXEC);
	race.offset = loc.offset;
	race.base_gen = loc.generation;
	bstest_fill(50000, race.content[0], 0, RACE_BYTES);
	bstest_fill(50001, race.content[1], 0, RACE_BYTES);
	CHECK_INT(pwrite(race.data_fd, race.content[0], RACE_BYTES, (off_t)loc.offset), RACE_BYTES);

	race_run(s, g, loc, &ok, &stale, &wrong);
	printf("reader race: %llu recycles by signal, %llu good reads, %llu stale, %llu wrong\n",
	       (unsigned long long)race.recycles, (unsigned long long)ok,
	       (unsigned long long)stale, (unsigned long long)wrong);
	CHECK_INT(wrong, 0);
	CHECK(stale > 0);
	CHECK(ok > 0);
	munmap(map, maplen);
	close(race.data_fd);
	free(p);
	blockread_unmap_gens(g);
	blockstore_free(s); /* the store's view of that slot is now wrong: drop it */
	bstest_rmtree(dir);
}

int main(void)
{
	test_key();
	test_config();
	test_roundtrip();
	test_pins();
	test_cap();
	test_restart();
	test_corrupt_data();
	test_corrupt_meta();
	test_duplicate_records();
	test_stale();
	test_crash();
	test_reader_race();
	return check_done();
}
