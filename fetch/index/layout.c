// SPDX-License-Identifier: Apache-2.0
/*
 * The breadth-first layout of a finished tree: each directory's children
 * sorted by name (bytewise, shorter first on a tie) and placed contiguously,
 * directories numbered in the order they are reached. The result depends
 * only on the tree's contents, not on the order keys were added, which is
 * what makes inode numbers (position + 1) stable across builds. Also
 * computes each directory's mtime (newest below it) and the pool sizes.
 * Runs on the builder's thread; the tree is not modified.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/base/macro.h"
#include "fetch/index/tree_internal.h"

static int child_cmp(const void *a, const void *b, void *ctx)
{
	const struct index_tree *t = ctx;
	const struct tnode *x = &t->nodes[*(const uint32_t *)a];
	const struct tnode *y = &t->nodes[*(const uint32_t *)b];
	int c = memcmp(tnode_name(t, x), tnode_name(t, y), MIN(x->name_len, y->name_len));

	return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* kids[start[p], start[p + 1]) are p's children, sorted. */
static void group_children(const struct index_tree *t, uint32_t *start, uint32_t *kids)
{
	uint64_t n = t->nnodes;

	/* counts, then running ends, then filling back to front walks each
	 * start[p] down from p's end to p's first slot */
	memset(start, 0, (n + 1) * sizeof(*start));
	for (uint64_t i = 1; i < n; i++)
		start[t->nodes[i].parent]++;
	for (uint64_t i = 1; i <= n; i++)
		start[i] += start[i - 1];
	for (uint64_t i = n - 1; i >= 1; i--)
		kids[--start[t->nodes[i].parent]] = (uint32_t)i;
	for (uint64_t p = 0; p < n; p++)
		if (start[p + 1] - start[p] > 1)
			qsort_r(kids + start[p], start[p + 1] - start[p], sizeof(*kids), child_cmp,
				(void *)t);
}

static void breadth_first(const struct index_tree *t, const uint32_t *start,
			  const uint32_t *kids, struct index_layout *l)
{
	uint64_t tail = 1, rows = 0;

	l->order[0] = 0;
	for (uint64_t head = 0; head < tail; head++) {
		uint32_t node = l->order[head], nsub = 0;
		struct index_disk_dir *d;

		if (!(t->nodes[node].flags & INDEX_ENTRY_DIR))
			continue;
		l->row[node] = (uint32_t)rows;
		d = &l->dirs[rows++];
		d->entry = (uint32_t)head;
		d->first_child = (uint32_t)tail;
		d->nchildren = start[node + 1] - start[node];
		for (uint32_t k = start[node]; k < start[node + 1]; k++) {
			l->order[tail++] = kids[k];
			nsub += (t->nodes[kids[k]].flags & INDEX_ENTRY_DIR) != 0;
		}
		d->nsubdirs = nsub;
	}
}

/* Directory mtime: newest of its marker and everything below it. */
static void dir_mtimes(const struct index_tree *t, struct index_layout *l)
{
	for (uint64_t r = 0; r < l->ndirs; r++)
		l->dir_mtime[r] = t->nodes[l->order[l->dirs[r].entry]].mtime;
	for (uint64_t i = l->n - 1; i >= 1; i--) {
		const struct tnode *c = &t->nodes[l->order[i]];
		int64_t m = (c->flags & INDEX_ENTRY_DIR) ? l->dir_mtime[l->row[l->order[i]]]
							 : c->mtime;
		uint32_t p = l->row[c->parent];

		l->dir_mtime[p] = MAX(l->dir_mtime[p], m);
	}
}

static void pool_sizes(const struct index_tree *t, struct index_layout *l)
{
	for (uint64_t i = 0; i < l->n; i++) {
		const struct tnode *c = &t->nodes[i];
		l->name_bytes += c->name_len;
		if (c->flags & INDEX_ENTRY_ETAG_STR)
			l->etag_bytes += c->etag.str.len;
	}
}

int index_layout_build(const struct index_tree *t, struct index_layout *ret)
{
	struct index_layout l = { .n = t->nnodes, .ndirs = t->counts.dirs };
	_cleanup_free_ uint32_t *start = malloc((l.n + 1) * sizeof(*start));
	_cleanup_free_ uint32_t *kids = malloc(l.n * sizeof(*kids));

	l.order = malloc(l.n * sizeof(*l.order));
	l.row = malloc(l.n * sizeof(*l.row));
	l.dirs = calloc(l.ndirs, sizeof(*l.dirs));
	l.dir_mtime = malloc(l.ndirs * sizeof(*l.dir_mtime));
	if (!start || !kids || !l.order || !l.row || !l.dirs || !l.dir_mtime) {
		index_layout_free(&l);
		return -ENOMEM;
	}
	group_children(t, start, kids);
	breadth_first(t, start, kids, &l);
	dir_mtimes(t, &l);
	pool_sizes(t, &l);
	*ret = l;
	return 0;
}

void index_layout_free(struct index_layout *l)
{
	free(l->order);
	free(l->row);
	free(l->dirs);
	free(l->dir_mtime);
	*l = (struct index_layout){ 0 };
}
