// SPDX-License-Identifier: Apache-2.0
/*
 * Block store benchmark (not a test): what verifying a block's checksum on
 * every lookup costs, side by side with what a reader pays to read the block.
 * Usage: bench_blockstore [DIR] (default /tmp). 1 MiB blocks, page cache warm.
 * Prints µs per MiB for: XXH3 over memory, a verified lookup (pread chunks +
 * XXH3), a reader's blockread_pread of the whole block, and a commit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "fetch/base/clock.h"
#include "fetch/cached/blockread.h"
#include "fetch/cached/blockstore.h"

#define BS (1u << 20)
#define NBLK 64u
#define ROUNDS 20u

static struct blockstore_key key_of(uint32_t i)
{
	struct blockstore_key k;

	blockstore_key("http://bench", "bucket", "object", "etag", i, &k);
	return k;
}

static double per_mib_us(uint64_t t0, uint64_t n)
{
	return (double)(clock_mono_ns() - t0) / 1e3 / (double)n;
}

static double bench_commit(struct blockstore *s, const uint8_t *buf)
{
	uint64_t t0 = clock_mono_ns();

	for (uint32_t i = 0; i < NBLK; i++) {
		struct blockstore_key k = key_of(i);
		uint32_t slot;

		if (blockstore_reserve(s, &k, &slot) < 0 || blockstore_commit(s, slot, buf, BS) < 0)
			return -1;
	}
	return per_mib_us(t0, NBLK);
}

static double bench_lookup(struct blockstore *s)
{
	uint64_t t0 = clock_mono_ns();
	struct blockread_loc loc;

	for (uint32_t r = 0; r < ROUNDS; r++)
		for (uint32_t i = 0; i < NBLK; i++) {
			struct blockstore_key k = key_of(i);
			if (blockstore_lookup(s, &k, &loc) < 0)
				return -1;
		}
	return per_mib_us(t0, (uint64_t)ROUNDS * NBLK);
}

static double bench_read(struct blockstore *s, const struct blockread_gens *g, uint8_t *buf)
{
	struct blockread_loc locs[NBLK];
	uint64_t t0;

	for (uint32_t i = 0; i < NBLK; i++) {
		struct blockstore_key k = key_of(i);
		if (blockstore_lookup(s, &k, &locs[i]) < 0)
			return -1;
	}
	t0 = clock_mono_ns();
	for (uint32_t r = 0; r < ROUNDS; r++)
		for (uint32_t i = 0; i < NBLK; i++)
			if (blockread_pread(blockstore_data_fd(s), g, &locs[i], buf, 0, BS) != BS)
				return -1;
	return per_mib_us(t0, (uint64_t)ROUNDS * NBLK);
}

static double bench_xxh3(const uint8_t *buf)
{
	volatile uint64_t sink = 0;
	uint64_t t0 = clock_mono_ns();

	for (uint32_t r = 0; r < ROUNDS * NBLK; r++)
		sink += XXH3_64bits(buf, BS);
	(void)sink;
	return per_mib_us(t0, (uint64_t)ROUNDS * NBLK);
}

int main(int argc, char **argv)
{
	char dir[256];
	struct blockstore_config cfg = { .dir = dir, .cache_bytes = (NBLK + 8) * (uint64_t)BS };
	struct blockstore *s = NULL;
	struct blockread_gens *g = NULL;
	uint8_t *buf = malloc(BS), *out = malloc(BS);
	double commit, lookup, rd, xxh;

	snprintf(dir, sizeof(dir), "%s/lith-bench-bs.%d", argc > 1 ? argv[1] : "/tmp", getpid());
	for (uint32_t i = 0; i < BS; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	if (blockstore_open(&cfg, &s) < 0 ||
	    blockread_map_gens(blockstore_gen_fd(s), blockstore_nslots(s), &g) < 0) {
		fprintf(stderr, "cannot open a store in %s\n", dir);
		return 1;
	}
	commit = bench_commit(s, buf);
	bench_lookup(s); /* warm */
	lookup = bench_lookup(s);
	rd = bench_read(s, g, out);
	xxh = bench_xxh3(buf);
	printf("per 1 MiB block: XXH3 in memory %.1f us (%.1f GB/s); verified lookup %.1f us; "
	       "reader blockread_pread %.1f us; commit %.1f us\n",
	       xxh, 1.048576e6 / xxh / 1e3, lookup, rd, commit);
	printf("ratio verified lookup / reader read: %.2f\n", lookup / rd);
	blockread_unmap_gens(g);
	blockstore_free(s);
	for (const char *f = "blocks.data\0blocks.meta\0blocks.gen\0"; *f; f += strlen(f) + 1) {
		char p[300];
		snprintf(p, sizeof(p), "%s/%s", dir, f);
		unlink(p);
	}
	rmdir(dir);
	free(buf);
	free(out);
	return 0;
}
