// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the index tree, writer and reader: round trip of every
 * field, the conflict rules, lookup/readdir over thousands of keys, inode
 * stability across insertion orders, and hostile files: every single-byte
 * flip and every 97th truncation of a real index gives -EBADMSG; random
 * damage that is resealed with a valid checksum (so the structural checks
 * are what stands) either fails with -EBADMSG or yields an index every
 * accessor can walk without a fault (run under ASan).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fetch/index/checksum.h"
#include "fetch/index/format.h"
#include "fetch/index/index.h"
#include "fetch/index/tree.h"

static char tmpdir[64];

struct obj {
	const char *key;
	uint64_t size;
	int64_t mtime;
	const char *etag;
};

static const struct index_meta test_meta = {
	.endpoint = "http://127.0.0.1:7480", .bucket = "bkt", .build_time = 1700000000,
	.build_usec = 1234567, .list_requests = 42, .concurrency = 32,
};

static char *tmp_path(const char *name)
{
	static char buf[sizeof(tmpdir) + 1 + 256];

	snprintf(buf, sizeof(buf), "%s/%.255s", tmpdir, name);
	return buf;
}

static struct index_tree *new_tree(const char *prefix, uint64_t max)
{
	struct index_tree *t = NULL;

	CHECK_INT(index_tree_new(&(struct index_tree_config){ .prefix = prefix,
							      .max_entries = max }, &t), 0);
	return t;
}

static void add_all(struct index_tree *t, const struct obj *o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		CHECK(index_tree_add(t, o[i].key, strlen(o[i].key), o[i].size, o[i].mtime,
				     o[i].etag) >= 0);
}

static struct index *write_and_open(struct index_tree *t, const char *name)
{
	struct index *idx = NULL;

	CHECK_INT(index_tree_write(t, &test_meta, tmp_path(name)), 0);
	CHECK_INT(index_open(tmp_path(name), &idx), 0);
	return idx;
}

static int slurp(const char *path, uint8_t **ret, size_t *ret_len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *buf;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	buf = malloc((size_t)st.st_size + 8);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		close(fd);
		return -EIO;
	}
	close(fd);
	*ret = buf;
	*ret_len = (size_t)st.st_size;
	return 0;
}

/* Inode of a path ("a/b/c"), or a negative errno. */
static long long resolve(const struct index *idx, const char *path)
{
	uint64_t ino = INDEX_ROOT_INO;
	const char *p = path;

	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		int r = index_lookup(idx, ino, p, len, &ino);
		if (r < 0)
			return r;
		p += len + (slash != NULL);
	}
	return (long long)ino;
}

/* ---- round trip ------------------------------------------------------- */

static const struct obj round_objs[] = {
	{ "p/a/b/c.txt", 5, 1000, "5d41402abc4b2a76b9719d911017c592" },
	{ "p/a/b/big.bin", 1ull << 40, 2000, "0123456789abcdef0123456789abcdef-17" },
	{ "p/a/x", 0, 3000, "" },
	{ "p/top", 7, 500, "opaque-etag-from-a-gateway" },
	{ "p/upper", 8, 500, "5D41402ABC4B2A76B9719D911017C592" },
	{ "p/zero-parts", 9, 500, "5d41402abc4b2a76b9719d911017c592-0" },
	{ "p/many-parts", 10, 500, "5d41402abc4b2a76b9719d911017c592-65535" },
	{ "p/too-many-parts", 11, 500, "5d41402abc4b2a76b9719d911017c592-65536" },
	{ "p/empty/", 0, 4000, "d41d8cd98f00b204e9800998ecf8427e" },
	{ "p/", 0, 100, "" },
	{ "p/sp ace/+%?#&.txt", 3, 10, "x" },
	{ "p/ünï/cödé", 4, 20, "y" },
	{ "q/outside", 1, 1, "z" },
};

static void check_file(const struct index *idx, const struct obj *o)
{
	long long ino = resolve(idx, o->key + 2);
	struct index_attr at;
	char buf[2048];

	CHECK(ino > 0);
	if (ino <= 0)
		return;
	CHECK_INT(index_getattr(idx, (uint64_t)ino, &at), 0);
	CHECK(!at.is_dir);
	CHECK(at.size == o->size);
	CHECK_INT(at.mtime, o->mtime);
	CHECK_INT(index_etag(idx, (uint64_t)ino, buf, sizeof(buf)), (long long)strlen(o->etag));
	CHECK_STR(buf, o->etag);
	CHECK_INT(index_key(idx, (uint64_t)ino, buf, sizeof(buf)), (long long)strlen(o->key));
	CHECK_STR(buf, o->key);
	CHECK_INT(index_path(idx, (uint64_t)ino, buf, sizeof(buf)), (long long)strlen(o->key) - 2);
	CHECK_STR(buf, o->key + 2);
}

static void check_round_stats(const struct index *idx)
{
	struct index_stats st;

	index_get_stats(idx, &st);
	CHECK_INT(st.version, INDEX_FORMAT_VERSION);
	CHECK_INT(st.files, 10);
	CHECK_INT(st.dirs, 6); /* root a a/b empty "sp ace" ünï */
	CHECK(st.total_bytes == (1ull << 40) + 5 + 7 + 8 + 9 + 10 + 11 + 3 + 4);
	CHECK_INT(st.keys_listed, 13);
	CHECK_INT(st.markers, 2);
	CHECK_INT(st.skipped[0], 1);
	CHECK_INT(st.skipped[INDEX_SKIP_OUTSIDE_PREFIX], 1);
	CHECK_INT(st.build_time, 1700000000);
	CHECK_INT(st.build_usec, 1234567);
	CHECK_INT(st.list_requests, 42);
	CHECK_INT(st.concurrency, 32);
	CHECK(!st.serial);
	CHECK(st.endpoint_len == 21 && !memcmp(st.endpoint, "http://127.0.0.1:7480", 21));
	CHECK(st.bucket_len == 3 && !memcmp(st.bucket, "bkt", 3));
	CHECK(st.prefix_len == 2 && !memcmp(st.prefix, "p/", 2));
	CHECK_INT(st.samples, 1);
}

static void check_round_dirs(const struct index *idx)
{
	struct index_attr at;
	char buf[256];
	long long a = resolve(idx, "a"), empty = resolve(idx, "empty");
	uint64_t first;
	uint32_t count;

	CHECK_INT(index_getattr(idx, INDEX_ROOT_INO, &at), 0);
	CHECK(at.is_dir && at.parent == INDEX_ROOT_INO && at.nsubdirs == 4);
	CHECK_INT(at.mtime, 4000); /* newest below: the "empty/" marker */
	CHECK_INT(index_key(idx, INDEX_ROOT_INO, buf, sizeof(buf)), 2);
	CHECK_STR(buf, "p/");
	CHECK_INT(index_getattr(idx, (uint64_t)a, &at), 0);
	CHECK(at.is_dir && at.nchildren == 2 && at.nsubdirs == 1 && at.mtime == 3000);
	CHECK_INT(index_key(idx, (uint64_t)a, buf, sizeof(buf)), 4);
	CHECK_STR(buf, "p/a/");
	CHECK_INT(index_getattr(idx, (uint64_t)empty, &at), 0);
	CHECK(at.is_dir && at.nchildren == 0 && at.mtime == 4000);
	CHECK_INT(index_readdir(idx, (uint64_t)empty, &first, &count), 0);
	CHECK_INT(count, 0);
	CHECK_INT(index_etag(idx, (uint64_t)a, buf, sizeof(buf)), -EISDIR);
	CHECK_INT(index_readdir(idx, (uint64_t)resolve(idx, "top"), &first, &count), -ENOTDIR);
	CHECK_INT(resolve(idx, "top/x"), -ENOTDIR);
	CHECK_INT(resolve(idx, "nope"), -ENOENT);
	CHECK_INT(resolve(idx, "a/b/c.tx"), -ENOENT);
	CHECK_INT(resolve(idx, "a/b/c.txtx"), -ENOENT);
}

static void test_round_trip(void)
{
	struct index_tree *t = new_tree("p/", 0);
	struct index *idx;
	enum index_skip reason;
	const char *key;
	size_t len;
	char small[8];

	add_all(t, round_objs, sizeof(round_objs) / sizeof(round_objs[0]));
	idx = write_and_open(t, "round.idx");
	if (!idx)
		return;
	check_round_stats(idx);
	for (size_t i = 0; i < sizeof(round_objs) / sizeof(round_objs[0]); i++) {
		const struct obj *o = &round_objs[i];
		if (o->key[strlen(o->key) - 1] != '/' && o->key[0] == 'p')
			check_file(idx, o);
	}
	check_round_dirs(idx);
	CHECK_INT(index_sample(idx, 0, &reason, &key, &len), 0);
	CHECK(reason == INDEX_SKIP_OUTSIDE_PREFIX && len == 9 && !memcmp(key, "q/outside", 9));
	CHECK_INT(index_sample(idx, 1, &reason, &key, &len), -ENOENT);
	CHECK_INT(index_key(idx, (uint64_t)resolve(idx, "a/b/c.txt"), small, sizeof(small)),
		  -ENOSPC);
	CHECK_INT(index_etag(idx, (uint64_t)resolve(idx, "a/b/c.txt"), small, sizeof(small)),
		  -ENOSPC);
	CHECK_INT(index_getattr(idx, 0, &(struct index_attr){ 0 }), -ENOENT);
	CHECK_INT(index_getattr(idx, 1000, &(struct index_attr){ 0 }), -ENOENT);
	index_close(idx);
	index_tree_free(t);
}

/* ---- conflict rules --------------------------------------------------- */

static void check_conflicts(const struct obj *o, size_t n, const char *name)
{
	struct index_tree *t = new_tree("", 0);
	struct index *idx;
	struct index_stats st;
	struct index_attr at;
	enum index_skip reason;
	const char *key;
	size_t len;

	add_all(t, o, n);
	idx = write_and_open(t, name);
	if (!idx)
		return;
	index_get_stats(idx, &st);
	CHECK_INT(st.skipped[INDEX_SKIP_SHADOWED], 3);   /* x, x/y (twice listed: 1 dup) */
	CHECK_INT(st.skipped[INDEX_SKIP_MARKER_DATA], 1);
	CHECK_INT(st.skipped[INDEX_SKIP_DUPLICATE], 1);
	CHECK_INT(st.files, 3);                          /* x/y/z, m/f, dup */
	CHECK_INT(index_getattr(idx, (uint64_t)resolve(idx, "x"), &at), 0);
	CHECK(at.is_dir);
	CHECK_INT(index_getattr(idx, (uint64_t)resolve(idx, "x/y"), &at), 0);
	CHECK(at.is_dir);
	CHECK_INT(index_getattr(idx, (uint64_t)resolve(idx, "m"), &at), 0);
	CHECK(at.is_dir && at.nchildren == 1);
	CHECK_INT(index_getattr(idx, (uint64_t)resolve(idx, "dup"), &at), 0);
	CHECK(at.size == 20 && at.mtime == 9); /* newest copy kept */
	/* samples are the smallest keys per reason, in order */
	CHECK_INT(index_sample(idx, 0, &reason, &key, &len), 0);
	CHECK(reason == INDEX_SKIP_SHADOWED && len == 1 && key[0] == 'x');
	index_close(idx);
	index_tree_free(t);
}

static void test_conflicts(void)
{
	static const struct obj fwd[] = {
		{ "x", 1, 1, "" }, { "x/y", 2, 2, "" }, { "x/y/z", 3, 3, "" }, { "x/y", 2, 2, "" },
		{ "m/", 5, 4, "" }, { "m/f", 1, 1, "" }, { "dup", 10, 5, "a" },
		{ "dup", 20, 9, "b" },
	};
	static const struct obj rev[] = {
		{ "dup", 20, 9, "b" }, { "dup", 10, 5, "a" }, { "m/f", 1, 1, "" },
		{ "m/", 5, 4, "" }, { "x/y", 2, 2, "" }, { "x/y/z", 3, 3, "" },
		{ "x/y", 2, 2, "" }, { "x", 1, 1, "" },
	};

	check_conflicts(fwd, sizeof(fwd) / sizeof(fwd[0]), "conf1.idx");
	check_conflicts(rev, sizeof(rev) / sizeof(rev[0]), "conf2.idx");
}

static void test_samples_bounded(void)
{
	struct index_tree *t = new_tree("", 0);
	struct index_tree_counts c;
	struct index *idx;
	enum index_skip reason;
	const char *key;
	size_t len;
	char k[32];

	for (int i = 99; i >= 0; i--) {
		snprintf(k, sizeof(k), "a//%02d", i);
		CHECK_INT(index_tree_add(t, k, strlen(k), 1, 1, ""), INDEX_SKIP_EMPTY_COMPONENT);
	}
	index_tree_get_counts(t, &c);
	CHECK_INT(c.skipped[INDEX_SKIP_EMPTY_COMPONENT], 100);
	CHECK_INT(c.skipped[0], 100);
	idx = write_and_open(t, "samples.idx");
	if (idx) {
		struct index_stats st;
		index_get_stats(idx, &st);
		CHECK_INT(st.samples, INDEX_SAMPLES_PER_REASON);
		for (size_t i = 0; i < st.samples; i++) {
			snprintf(k, sizeof(k), "a//%02zu", i);
			CHECK_INT(index_sample(idx, i, &reason, &key, &len), 0);
			CHECK(len == strlen(k) && !memcmp(key, k, len));
		}
		index_close(idx);
	}
	index_tree_free(t);
}

static void test_limits(void)
{
	struct index_tree *t = new_tree("", 5);
	char big[INDEX_ETAG_MAX + 2];

	/* root + a + a/1 + a/2 + b: 5 entries; a/3 would be the 6th */
	CHECK_INT(index_tree_add(t, "a/1", 3, 1, 1, ""), 0);
	CHECK_INT(index_tree_add(t, "a/2", 3, 1, 1, ""), 0);
	CHECK_INT(index_tree_add(t, "b", 1, 1, 1, ""), 0);
	CHECK_INT(index_tree_add(t, "a/3", 3, 1, 1, ""), -E2BIG);
	index_tree_free(t);
	t = new_tree("", 3); /* listed keys, skipped ones included */
	CHECK_INT(index_tree_add(t, "//", 2, 1, 1, ""), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(index_tree_skip(t, INDEX_SKIP_OUTSIDE_PREFIX, "z", 1), 0);
	CHECK_INT(index_tree_add(t, "k", 1, 1, 1, ""), 0);
	CHECK_INT(index_tree_add(t, "l", 1, 1, 1, ""), -E2BIG);
	CHECK_INT(index_tree_skip(t, INDEX_SKIP_NONE, "z", 1), -EINVAL);
	memset(big, 'e', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(index_tree_add(t, "m", 1, 1, 1, big), -EINVAL);
	index_tree_free(t);
	t = NULL;
	CHECK_INT(index_tree_new(&(struct index_tree_config){ .prefix = "noslash" }, &t), -EINVAL);
	CHECK_INT(index_tree_new(&(struct index_tree_config){ .max_entries = 1ull << 40 }, &t),
		  -EINVAL);
	CHECK(t == NULL);
}

/* ---- many keys, lookup, readdir --------------------------------------- */

#define NDIRS 40
#define NFILES 100

static void many_key(char *buf, size_t cap, int d, int f)
{
	snprintf(buf, cap, "dir%03d/%s%04d.dat", d, (f % 3) ? "f" : "sub/g", f);
}

static void add_many(struct index_tree *t, const int *perm)
{
	char key[64];

	for (int i = 0; i < NDIRS * NFILES; i++) {
		int j = perm ? perm[i] : i;
		many_key(key, sizeof(key), j / NFILES, j % NFILES);
		CHECK_INT(index_tree_add(t, key, strlen(key), (uint64_t)j, j, ""), 0);
	}
}

static void check_readdir_sorted(const struct index *idx, uint64_t dir, uint32_t expect)
{
	uint64_t first;
	uint32_t count;
	const char *prev = NULL, *name;
	size_t prev_len = 0, len;
	uint64_t ino;

	CHECK_INT(index_readdir(idx, dir, &first, &count), 0);
	CHECK_INT(count, expect);
	for (uint32_t i = 0; i < count; i++) {
		CHECK_INT(index_name(idx, first + i, &name, &len), 0);
		if (prev) {
			int c = memcmp(prev, name, prev_len < len ? prev_len : len);
			CHECK(c < 0 || (c == 0 && prev_len < len));
		}
		CHECK_INT(index_lookup(idx, dir, name, len, &ino), 0);
		CHECK(ino == first + i);
		prev = name;
		prev_len = len;
	}
}

static void test_many(void)
{
	struct index_tree *t = new_tree("", 0);
	struct index *idx;
	struct index_attr at;
	char key[64], back[64];

	add_many(t, NULL);
	idx = write_and_open(t, "many.idx");
	if (!idx)
		return;
	check_readdir_sorted(idx, INDEX_ROOT_INO, NDIRS);
	for (int d = 0; d < NDIRS; d++) {
		snprintf(key, sizeof(key), "dir%03d", d);
		check_readdir_sorted(idx, (uint64_t)resolve(idx, key), NFILES * 2 / 3 + 1);
		snprintf(key, sizeof(key), "dir%03d/sub", d);
		check_readdir_sorted(idx, (uint64_t)resolve(idx, key), (NFILES + 2) / 3);
		for (int f = 0; f < NFILES; f++) {
			long long ino;
			many_key(key, sizeof(key), d, f);
			ino = resolve(idx, key);
			CHECK(ino > 0);
			CHECK_INT(index_getattr(idx, (uint64_t)ino, &at), 0);
			CHECK(!at.is_dir && at.size == (uint64_t)(d * NFILES + f));
			CHECK_INT(index_key(idx, (uint64_t)ino, back, sizeof(back)), (long long)strlen(key));
			CHECK_STR(back, key);
		}
	}
	CHECK_INT(resolve(idx, "dir040"), -ENOENT);
	CHECK_INT(resolve(idx, "dir000/f0000.dat"), -ENOENT); /* f%3==0 are under sub/ */
	index_close(idx);
	index_tree_free(t);
}

/* Same keys in three orders (and three hash keys) -> byte-identical files. */
static void test_inode_stability(void)
{
	static int perm[NDIRS * NFILES];
	uint8_t *a = NULL, *b = NULL, *c = NULL;
	size_t al = 0, bl = 0, cl = 0;
	unsigned seed = 12345;

	for (int i = 0; i < NDIRS * NFILES; i++)
		perm[i] = NDIRS * NFILES - 1 - i;
	for (int pass = 0; pass < 3; pass++) {
		struct index_tree *t = new_tree("", 0);
		char name[32];
		if (pass == 2)
			for (int i = NDIRS * NFILES - 1; i > 0; i--) {
				seed = seed * 1103515245u + 12345u;
				int j = (int)(seed % (unsigned)(i + 1)), tmp = perm[i];
				perm[i] = perm[j];
				perm[j] = tmp;
			}
		add_many(t, pass ? perm : NULL);
		snprintf(name, sizeof(name), "stable%d.idx", pass);
		CHECK_INT(index_tree_write(t, &test_meta, tmp_path(name)), 0);
		CHECK_INT(slurp(tmp_path(name), pass == 0 ? &a : pass == 1 ? &b : &c,
				pass == 0 ? &al : pass == 1 ? &bl : &cl), 0);
		index_tree_free(t);
	}
	CHECK(a && b && c && al == bl && bl == cl);
	if (a && b && c && al == bl && bl == cl) {
		CHECK(memcmp(a, b, al) == 0);
		CHECK(memcmp(a, c, al) == 0);
	}
	free(a);
	free(b);
	free(c);
}

/* ---- hostile files ---------------------------------------------------- */

static int open_buf(const uint8_t *buf, size_t len)
{
	struct index *idx = NULL;
	int r = index_open_mem(buf, len, &idx);

	index_close(idx);
	return r;
}

static void test_flips_and_truncation(const char *name, size_t stride)
{
	uint8_t *buf = NULL;
	size_t len = 0, bad = 0, tried = 0;

	CHECK_INT(slurp(tmp_path(name), &buf, &len), 0);
	if (!buf)
		return;
	CHECK_INT(open_buf(buf, len), 0);
	for (size_t off = 0; off < len; off += stride) {
		uint8_t keep = buf[off];
		for (int bit = 0; bit < 8; bit += 7) {
			buf[off] = keep ^ (uint8_t)(1u << bit);
			tried++;
			bad += open_buf(buf, len) == -EBADMSG;
		}
		buf[off] = keep;
	}
	CHECK(bad == tried);
	bad = tried = 0;
	for (size_t cut = 0; cut < len; cut += 97) {
		tried++;
		bad += open_buf(buf, cut) == -EBADMSG;
	}
	tried++;
	bad += open_buf(buf, len - 1) == -EBADMSG;
	CHECK(bad == tried);
	CHECK_INT(open_buf(buf, len), 0);
	free(buf);
}

/* Every accessor over every inode of an index that opened. */
static void walk_all(const struct index *idx)
{
	struct index_stats st;
	char buf[4096];

	index_get_stats(idx, &st);
	for (uint64_t ino = 0; ino <= st.entries + 1; ino++) {
		struct index_attr at;
		const char *name;
		size_t len;
		uint64_t first, child;
		uint32_t count;

		if (index_getattr(idx, ino, &at) < 0)
			continue;
		index_path(idx, ino, buf, sizeof(buf));
		index_key(idx, ino, buf, sizeof(buf));
		index_etag(idx, ino, buf, sizeof(buf));
		CHECK_INT(index_name(idx, ino, &name, &len), 0);
		if (index_readdir(idx, ino, &first, &count) < 0)
			continue;
		for (uint32_t i = 0; i < count; i++)
			if (index_name(idx, first + i, &name, &len) == 0)
				CHECK_INT(index_lookup(idx, ino, name, len, &child), 0);
	}
	for (size_t i = 0; i < st.samples; i++) {
		enum index_skip r;
		const char *k;
		size_t l;
		CHECK_INT(index_sample(idx, i, &r, &k, &l), 0);
	}
}

static void test_resealed_fuzz(const char *name, int rounds)
{
	uint8_t *orig = NULL, *buf;
	size_t len = 0, opened = 0;
	unsigned seed = 99;

	CHECK_INT(slurp(tmp_path(name), &orig, &len), 0);
	if (!orig)
		return;
	buf = malloc(len + 8);
	for (int round = 0; round < rounds; round++) {
		struct index *idx = NULL;
		int flips = 1 + round % 4, r;

		memcpy(buf, orig, len);
		for (int i = 0; i < flips; i++) {
			seed = seed * 1103515245u + 12345u;
			size_t off = INDEX_CHECKSUM_LEN + 24 + (seed >> 8) % (len - 56);
			seed = seed * 1103515245u + 12345u;
			buf[off] = (round % 3) ? (uint8_t)(seed >> 16) : buf[off] ^ (uint8_t)(1u << (seed % 8));
		}
		index_seal(buf, len);
		r = index_open_mem(buf, len, &idx);
		CHECK(r == 0 || r == -EBADMSG);
		if (r == 0) {
			opened++;
			walk_all(idx);
			index_close(idx);
		}
	}
	printf("resealed fuzz %s: %d rounds, %zu still valid and walked\n", name, rounds, opened);
	free(buf);
	free(orig);
}

/* Hand-made hostile values in specific fields, resealed. */
static void test_targeted(const char *name)
{
	uint8_t *orig = NULL, *buf;
	size_t len = 0;

	CHECK_INT(slurp(tmp_path(name), &orig, &len), 0);
	if (!orig)
		return;
	buf = malloc(len + 8);
#define MUTATE(type, off, expr)                                        \
	do {                                                           \
		memcpy(buf, orig, len);                                \
		type *p_ = (type *)(buf + (off));                      \
		(void)p_;                                              \
		expr;                                                  \
		index_seal(buf, len);                                  \
		CHECK_INT(open_buf(buf, len), -EBADMSG);               \
	} while (0)
	const struct index_disk_header *h = (const void *)orig;
	size_t e0 = h->entry_off, e1 = e0 + sizeof(struct index_disk_entry);
	size_t d0 = h->dir_off;
	size_t H = 0;
	MUTATE(struct index_disk_header, H, p_->entry_count = UINT64_MAX);
	MUTATE(struct index_disk_header, H, p_->entry_count = 1ull << 33);
	MUTATE(struct index_disk_header, H, p_->dir_count = 0);
	MUTATE(struct index_disk_header, H, p_->pool_size = UINT64_MAX - 3);
	MUTATE(struct index_disk_header, H, p_->name_bytes = p_->pool_size + 1);
	MUTATE(struct index_disk_header, H, p_->total_bytes++);
	MUTATE(struct index_disk_header, H, p_->version = 2);
	MUTATE(struct index_disk_header, H, p_->reserved[3] = 1);
	MUTATE(struct index_disk_header, H, p_->skipped[15] = 1);
	MUTATE(struct index_disk_header, H, p_->prefix.off = UINT64_MAX);
	MUTATE(struct index_disk_header, H, p_->sample_count = 1000);
	MUTATE(struct index_disk_entry, e1, p_->name_off = UINT64_MAX - 1);
	MUTATE(struct index_disk_entry, e1, p_->name_len = 0);
	MUTATE(struct index_disk_entry, e1, p_->parent = UINT32_MAX);
	MUTATE(struct index_disk_entry, e1, p_->flags = 0x80);
	MUTATE(struct index_disk_entry, e1, p_->size = UINT32_MAX; p_->flags = INDEX_ENTRY_DIR);
	MUTATE(struct index_disk_entry, e0, p_->flags = 0);
	MUTATE(struct index_disk_entry, e0, p_->name_len = 1);
	MUTATE(struct index_disk_dir, d0, p_->first_child = 0);
	MUTATE(struct index_disk_dir, d0, p_->nchildren = UINT32_MAX);
	MUTATE(struct index_disk_dir, d0, p_->nsubdirs++);
	MUTATE(struct index_disk_dir, d0, p_->entry = 5);
	/* swap the first two children of the root: unsorted */
	MUTATE(struct index_disk_entry, e1, {
		struct index_disk_entry tmp = p_[0];
		p_[0] = p_[1];
		p_[1] = tmp;
	});
	/* a name "." and a name with '/' */
	MUTATE(struct index_disk_entry, e1, {
		buf[h->pool_off + p_->name_off] = '/';
	});
#undef MUTATE
	free(buf);
	free(orig);
}

static void test_open_errors(void)
{
	struct index *idx = (struct index *)0x1;
	static uint64_t aligned[64];
	int fd;

	CHECK_INT(index_open(tmp_path("does-not-exist"), &idx), -ENOENT);
	CHECK_INT(index_open(tmpdir, &idx), -EBADMSG);
	fd = open(tmp_path("empty.idx"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(fd);
	CHECK_INT(index_open(tmp_path("empty.idx"), &idx), -EBADMSG);
	CHECK_INT(index_open_mem((const uint8_t *)aligned + 1, 100, &idx), -EINVAL);
	CHECK_INT(index_open_mem(aligned, sizeof(aligned), &idx), -EBADMSG);
	CHECK(idx == (struct index *)0x1); /* untouched on failure */
}

static void test_atomic_write(void)
{
	struct index_tree *t = new_tree("", 0);
	struct index *idx = NULL;
	struct dirent *de;
	DIR *d;
	int leftovers = 0;

	CHECK_INT(index_tree_add(t, "one", 3, 1, 1, ""), 0);
	CHECK_INT(index_tree_write(t, NULL, "/nonexistent-dir/x.idx"), -ENOENT);
	CHECK_INT(index_tree_write(t, NULL, tmp_path("replace.idx")), 0);
	CHECK_INT(index_tree_add(t, "two", 3, 1, 1, ""), 0);
	CHECK_INT(index_tree_write(t, NULL, tmp_path("replace.idx")), 0);
	CHECK_INT(index_open(tmp_path("replace.idx"), &idx), 0);
	if (idx) {
		struct index_stats st;
		index_get_stats(idx, &st);
		CHECK_INT(st.files, 2);
		CHECK_INT(st.endpoint_len, 0);
		index_close(idx);
	}
	d = opendir(tmpdir);
	while (d && (de = readdir(d)))
		leftovers += strstr(de->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	CHECK_INT(leftovers, 0);
	index_tree_free(t);
}

static void cleanup(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			unlink(tmp_path(de->d_name));
	if (d)
		closedir(d);
	rmdir(tmpdir);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lith-index-test-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	test_round_trip();
	test_conflicts();
	test_samples_bounded();
	test_limits();
	test_many();
	test_inode_stability();
	test_flips_and_truncation("round.idx", 1);     /* every byte */
	test_flips_and_truncation("many.idx", 61);     /* ~250 KB: a stride */
	test_resealed_fuzz("round.idx", 20000);
	test_resealed_fuzz("conf1.idx", 5000);
	test_targeted("round.idx");
	test_open_errors();
	test_atomic_write();
	cleanup();
	return check_done();
}
