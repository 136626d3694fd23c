// SPDX-License-Identifier: Apache-2.0
/* Unit tests for mounter/remap: the same index file maps to itself; a
 * different index maps each inode by path, only when ETag and size agree. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fetch/index/index.h"
#include "fetch/index/tree.h"
#include "mounter/remap.h"

struct obj {
	const char *key;
	uint64_t size;
	const char *etag;
};

static char tmpdir[64];

static void write_index(const char *name, const struct obj *o, size_t n, char *path,
			size_t cap)
{
	struct index_meta meta = { .bucket = "b", .build_time = 1 };
	struct index_tree *t = NULL;

	snprintf(path, cap, "%s/%s", tmpdir, name);
	CHECK_INT(index_tree_new(&(struct index_tree_config){ .prefix = "" }, &t), 0);
	for (size_t i = 0; i < n; i++)
		CHECK_INT(index_tree_add(t, o[i].key, strlen(o[i].key), o[i].size, 1, o[i].etag), 0);
	CHECK_INT(index_tree_write(t, &meta, path), 0);
	index_tree_free(t);
}

static uint64_t ino_of(const struct index *idx, const char *path)
{
	uint64_t ino = INDEX_ROOT_INO;

	while (*path) {
		size_t n = strcspn(path, "/");
		CHECK_INT(index_lookup(idx, ino, path, n, &ino), 0);
		path += n + (path[n] == '/');
	}
	return ino;
}

static const struct obj mine_objs[] = {
	{ "a/1", 10, "e1" }, { "a/2", 20, "e2" }, { "b", 30, "e3" }, { "c/d/e", 40, "e4" },
};
static const struct obj their_objs[] = {
	{ "a/0", 5, "e0" },  { "a/1", 10, "e1" }, { "a/2", 20, "CHANGED" },
	{ "b", 31, "e3" },   { "c/d/e", 40, "e4" },
};

static void test_same_file_is_identity(const char *path, const struct index *mine,
				       const struct stat *st)
{
	struct remap *m = (struct remap *)1;
	uint64_t e = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK_INT(remap_new(mine, st, fd, &m), 0);
	CHECK(m == NULL);
	CHECK_INT(remap_entry(NULL, 7, &e), 0);
	CHECK_INT(e, 7);
	close(fd);
}

static void test_other_file_maps_by_path(const struct index *mine, const struct stat *st,
					 const char *their_path)
{
	struct index *theirs = NULL;
	struct remap *m = NULL;
	uint64_t e = 0;
	int fd = open(their_path, O_RDONLY | O_CLOEXEC);

	CHECK_INT(index_open(their_path, &theirs), 0);
	CHECK_INT(remap_new(mine, st, fd, &m), 0);
	close(fd); /* the remap keeps its own mapping */
	CHECK(m != NULL);
	CHECK(ino_of(mine, "a/1") != ino_of(theirs, "a/1")); /* "a/0" shifted them */
	for (int round = 0; round < 2; round++) {            /* computed, then cached */
		CHECK_INT(remap_entry(m, ino_of(mine, "a/1"), &e), 0);
		CHECK_INT(e, ino_of(theirs, "a/1"));
		CHECK_INT(remap_entry(m, ino_of(mine, "c/d/e"), &e), 0);
		CHECK_INT(e, ino_of(theirs, "c/d/e"));
		CHECK_INT(remap_entry(m, ino_of(mine, "a/2"), &e), -ESTALE); /* ETag */
		CHECK_INT(remap_entry(m, ino_of(mine, "b"), &e), -ESTALE);   /* size */
		CHECK_INT(remap_entry(m, ino_of(mine, "a"), &e), -ESTALE);   /* a directory */
		CHECK_INT(remap_entry(m, 1u << 30, &e), -ESTALE);            /* no such inode */
	}
	remap_free(m);
	index_close(theirs);
}

int main(void)
{
	char mine_path[128], their_path[128];
	struct index *mine = NULL;
	struct stat st;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lith-remap-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	write_index("mine.idx", mine_objs, 4, mine_path, sizeof(mine_path));
	write_index("theirs.idx", their_objs, 5, their_path, sizeof(their_path));
	CHECK_INT(index_open(mine_path, &mine), 0);
	CHECK_INT(stat(mine_path, &st), 0);
	test_same_file_is_identity(mine_path, mine, &st);
	test_other_file_maps_by_path(mine, &st, their_path);
	index_close(mine);
	unlink(mine_path);
	unlink(their_path);
	rmdir(tmpdir);
	return check_done();
}
