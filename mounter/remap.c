// SPDX-License-Identifier: Apache-2.0
/*
 * Inode translation after the daemon changed its index (see remap.h). The
 * table holds one slot per inode: 0 unknown, REMAP_GONE changed or gone,
 * else the daemon's entry. Slots are written once with the same value by
 * whichever thread computes them first.
 */
#include "mounter/remap.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fetch/index/normalize.h"

#define REMAP_GONE UINT64_MAX
#define PATH_CAP (INDEX_KEY_MAX + 2)
#define ETAG_CAP (INDEX_ETAG_MAX + 1)

struct remap {
	const struct index *mine;
	struct index *theirs;
	uint64_t n;                 /* slots: entries + 1 */
	_Atomic uint64_t *slot;
};

int remap_new(const struct index *mine, const struct stat *mine_st, int theirs_fd,
	      struct remap **ret)
{
	struct index_stats st;
	struct stat ts;
	struct remap *m;
	int r;

	if (fstat(theirs_fd, &ts) < 0)
		return -errno;
	if (ts.st_dev == mine_st->st_dev && ts.st_ino == mine_st->st_ino) {
		*ret = NULL; /* index files are replaced, never rewritten */
		return 0;
	}
	index_get_stats(mine, &st);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->mine = mine;
	m->n = st.entries + 1;
	m->slot = calloc(m->n, sizeof(*m->slot));
	r = m->slot ? index_open_fd(theirs_fd, &m->theirs) : -ENOMEM;
	if (r < 0) {
		remap_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

void remap_free(struct remap *m)
{
	if (!m)
		return;
	index_close(m->theirs);
	free(m->slot);
	free(m);
}

/* Walks path's components from the root of idx. */
static int walk(const struct index *idx, const char *path, uint64_t *ret)
{
	uint64_t ino = INDEX_ROOT_INO;

	while (*path) {
		size_t n = strcspn(path, "/");
		int r = index_lookup(idx, ino, path, n, &ino);
		if (r < 0)
			return r;
		path += n;
		path += *path == '/';
	}
	*ret = ino;
	return 0;
}

static bool same_object(const struct index *a, uint64_t ia, const struct index *b, uint64_t ib)
{
	char ea[ETAG_CAP], eb[ETAG_CAP];
	struct index_attr xa, xb;

	if (index_getattr(a, ia, &xa) < 0 || index_getattr(b, ib, &xb) < 0)
		return false;
	if (xa.is_dir || xb.is_dir || xa.size != xb.size)
		return false;
	return index_etag(a, ia, ea, sizeof(ea)) >= 0 && index_etag(b, ib, eb, sizeof(eb)) >= 0 &&
	       strcmp(ea, eb) == 0;
}

static uint64_t translate(struct remap *m, uint64_t ino)
{
	char path[PATH_CAP];
	uint64_t there;

	if (index_path(m->mine, ino, path, sizeof(path)) < 0)
		return REMAP_GONE;
	if (walk(m->theirs, path, &there) < 0)
		return REMAP_GONE;
	return same_object(m->mine, ino, m->theirs, there) ? there : REMAP_GONE;
}

int remap_entry(struct remap *m, uint64_t ino, uint64_t *ret)
{
	uint64_t v;

	if (!m) {
		*ret = ino;
		return 0;
	}
	if (ino >= m->n)
		return -ESTALE;
	v = atomic_load_explicit(&m->slot[ino], memory_order_relaxed);
	if (!v) {
		v = translate(m, ino);
		atomic_store_explicit(&m->slot[ino], v, memory_order_relaxed);
	}
	if (v == REMAP_GONE)
		return -ESTALE;
	*ret = v;
	return 0;
}
