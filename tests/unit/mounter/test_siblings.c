// SPDX-License-Identifier: Apache-2.0
/* Unit tests for sibling readahead: a key-order scan of small files
 * prefetches the files after it, bounded; random opens prefetch nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fetch/index/index.h"
#include "fetch/index/tree.h"
#include "mounter/siblings.h"

#define SMALL (4u << 20)

static struct index *make_index(char *path)
{
	struct index_meta meta = { .bucket = "b", .build_time = 1 };
	struct index_tree *t = NULL;
	struct index *idx = NULL;
	char key[64];

	CHECK_INT(index_tree_new(&(struct index_tree_config){ .prefix = "" }, &t), 0);
	for (int i = 0; i < 100; i++) { /* d/f000 .. d/f099: 16 KiB, f050 is big */
		snprintf(key, sizeof(key), "d/f%03d", i);
		CHECK_INT(index_tree_add(t, key, strlen(key), i == 50 ? 64u << 20 : 16384, 1,
					 "0123456789abcdef0123456789abcdef"), 0);
	}
	CHECK_INT(index_tree_add(t, "d/f020x/inner", 13, 5, 1, "e"), 0); /* a subdirectory */
	CHECK_INT(index_tree_add(t, "e/g000", 6, 10, 1, "e"), 0);
	CHECK_INT(index_tree_write(t, &meta, path), 0);
	index_tree_free(t);
	CHECK_INT(index_open(path, &idx), 0);
	return idx;
}

static uint64_t ino_of(const struct index *idx, const char *dir, const char *name)
{
	uint64_t d, f;

	CHECK_INT(index_lookup(idx, INDEX_ROOT_INO, dir, strlen(dir), &d), 0);
	CHECK_INT(index_lookup(idx, d, name, strlen(name), &f), 0);
	return f;
}

static void test_scan_prefetches_ahead_bounded(struct index *idx)
{
	struct sib_state s = { 0 };
	uint64_t out[SIB_MAX_FILES], f0 = ino_of(idx, "d", "f000");
	size_t total = 0, n;

	CHECK_INT(sib_plan(&s, idx, f0, SMALL, out), 0);         /* one read: no scan yet */
	n = sib_plan(&s, idx, f0 + 1, SMALL, out);               /* f001: a scan */
	CHECK_INT(n, SIB_MAX_FILES - 1);                         /* f002.. but not the dir */
	CHECK_INT(out[0], f0 + 2);
	for (size_t i = 0; i < n; i++) {
		struct index_attr a;
		CHECK_INT(index_getattr(idx, out[i], &a), 0);
		CHECK(!a.is_dir && a.size == 16384);
	}
	total = n;
	/* each next read exposes one more sibling; nothing is planned twice */
	for (uint64_t ino = f0 + 2; ino < f0 + 40; ino++) {
		n = sib_plan(&s, idx, ino, SMALL, out);
		CHECK(n <= 1);
		if (n)
			CHECK(out[0] > ino + SIB_MAX_FILES - 2);
		total += n;
	}
	CHECK(total < 80);
}

static void test_random_opens_prefetch_nothing(struct index *idx)
{
	struct sib_state s = { 0 };
	uint64_t out[SIB_MAX_FILES], f0 = ino_of(idx, "d", "f000");
	uint64_t order[] = { 70, 10, 30, 31 - 2, 90, 5 };

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		CHECK_INT(sib_plan(&s, idx, f0 + order[i] + 1, SMALL, out), 0);
	/* the last file of a directory has no siblings after it */
	CHECK_INT(sib_plan(&s, idx, ino_of(idx, "d", "f098"), SMALL, out), 0);
	CHECK_INT(sib_plan(&s, idx, ino_of(idx, "d", "f099"), SMALL, out), 0);
	/* a scan does not run into the next directory */
	CHECK_INT(sib_plan(&s, idx, ino_of(idx, "e", "g000"), SMALL, out), 0);
}

static void test_big_files_are_skipped(struct index *idx)
{
	struct sib_state s = { 0 };
	uint64_t out[SIB_MAX_FILES];
	uint64_t f45 = ino_of(idx, "d", "f045"), f50 = ino_of(idx, "d", "f050");

	sib_plan(&s, idx, f45, SMALL, out);
	size_t n = sib_plan(&s, idx, f45 + 1, SMALL, out);
	for (size_t i = 0; i < n; i++)
		CHECK(out[i] != f50);
	CHECK(n > 0);
}

int main(void)
{
	char dir[] = "/tmp/lith-sib-XXXXXX", path[128];
	struct index *idx;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/index", dir);
	idx = make_index(path);
	test_scan_prefetches_ahead_bounded(idx);
	test_random_opens_prefetch_nothing(idx);
	test_big_files_are_skipped(idx);
	index_close(idx);
	unlink(path);
	rmdir(dir);
	return check_done();
}
