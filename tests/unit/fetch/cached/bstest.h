/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for the block store tests: temp dirs, deterministic block content
 * (a pure function of the block id, so any process can verify bytes), keys,
 * and du-style accounting of a directory. Header only, test code only.
 */
#ifndef LITH_TEST_BSTEST_H
#define LITH_TEST_BSTEST_H

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/cached/blockstore.h"

static inline char *bstest_mkdtemp(const char *base)
{
	char *p = NULL;

	if (asprintf(&p, "%s/lith-bs-XXXXXX", base) < 0)
		return NULL;
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

static inline int bstest_rm_one(const char *path, const struct stat *st, int flag,
				struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static inline void bstest_rmtree(char *dir)
{
	if (dir)
		nftw(dir, bstest_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

static inline uint64_t bstest_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Valid length of block `id`: every third block is a short last block. */
static inline uint32_t bstest_len(uint64_t id, uint32_t bs)
{
	return id % 3 == 1 ? 1 + (uint32_t)(bstest_mix(id) % (bs - 1)) : bs;
}

/* Byte i of block id: 8 bytes of mix(id, i / 8). */
static inline uint8_t bstest_byte(uint64_t id, uint64_t i)
{
	return (uint8_t)(bstest_mix(id * 0x100000001b3ull ^ (i >> 3)) >> ((i & 7) * 8));
}

static inline void bstest_fill(uint64_t id, uint8_t *buf, uint64_t from, size_t len)
{
	size_t k = 0;

	while (k < len && ((from + k) & 7))
		buf[k] = bstest_byte(id, from + k), k++;
	for (; k + 8 <= len; k += 8) { /* whole words: one mix each */
		uint64_t w = htole64(bstest_mix(id * 0x100000001b3ull ^ ((from + k) >> 3)));
		memcpy(buf + k, &w, 8);
	}
	for (; k < len; k++)
		buf[k] = bstest_byte(id, from + k);
}

/* Offset of the first wrong byte, or -1 when buf is block id's [from, +len). */
static inline long bstest_verify(uint64_t id, const uint8_t *buf, uint64_t from, size_t len)
{
	uint8_t want[4096];

	for (size_t k = 0; k < len; k += sizeof(want)) {
		size_t n = len - k < sizeof(want) ? len - k : sizeof(want);

		bstest_fill(id, want, from + k, n);
		if (memcmp(want, buf + k, n) != 0)
			for (size_t j = 0; j < n; j++)
				if (want[j] != buf[k + j])
					return (long)(k + j);
	}
	return -1;
}

static inline struct blockstore_key bstest_key(uint64_t id)
{
	struct blockstore_key k = { { 0 } };
	char name[64];

	snprintf(name, sizeof(name), "dataset/part-%05llu.bin", (unsigned long long)(id / 4));
	if (blockstore_key("http://127.0.0.1:7480", "bucket", name, "\"0123abcd\"", id % 4, &k) < 0)
		abort();
	return k;
}

/* Reserve + commit the deterministic content of block id. */
static inline int bstest_put(struct blockstore *s, uint64_t id)
{
	uint32_t bs = blockstore_block_size(s), len = bstest_len(id, bs), slot;
	struct blockstore_key k = bstest_key(id);
	uint8_t *buf = malloc(bs);
	int r;

	if (!buf)
		return -ENOMEM;
	bstest_fill(id, buf, 0, len);
	r = blockstore_reserve(s, &k, &slot);
	if (r == 0)
		r = blockstore_commit(s, slot, buf, len);
	free(buf);
	return r;
}

struct bstest_du {
	uint64_t allocated; /* sum of st_blocks * 512, the directory included */
	uint64_t apparent;  /* sum of st_size of the entries */
	int entries;
};

static inline struct bstest_du bstest_du(const char *dir)
{
	struct bstest_du du = { 0 };
	struct stat st;
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return du;
	if (fstat(dirfd(d), &st) == 0)
		du.allocated += (uint64_t)st.st_blocks * 512;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		du.allocated += (uint64_t)st.st_blocks * 512;
		du.apparent += (uint64_t)st.st_size;
		du.entries++;
	}
	closedir(d);
	return du;
}

static inline char *bstest_path(const char *dir, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

/* Overwrites one byte of a file (xor 0xff) through its own fd. */
static inline int bstest_flip(const char *dir, const char *name, uint64_t off)
{
	char *p = bstest_path(dir, name);
	int fd = open(p, O_RDWR | O_CLOEXEC), r = -1;
	uint8_t b;

	free(p);
	if (fd < 0)
		return -1;
	if (pread(fd, &b, 1, (off_t)off) == 1) {
		b ^= 0xff;
		r = pwrite(fd, &b, 1, (off_t)off) == 1 ? 0 : -1;
	}
	close(fd);
	return r;
}

#endif
