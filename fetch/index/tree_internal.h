/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private to fetch/index: the in-memory tree's representation, shared by
 * tree.c (insertion), layout.c (breadth-first order) and writer.c (the
 * file). Node 0 is the root; a node's parent always exists before it.
 */
#ifndef LITH_INDEX_TREE_INTERNAL_H
#define LITH_INDEX_TREE_INTERNAL_H

#include <stdint.h>

#include "fetch/index/format.h"
#include "fetch/index/tree.h"

struct tnode {
	uint64_t size;        /* files */
	int64_t mtime;
	uint64_t name_off;    /* into the arena */
	uint32_t parent;      /* node id */
	uint8_t name_len;
	uint8_t flags;        /* INDEX_ENTRY_* */
	uint16_t etag_parts;
	union {
		uint8_t md5[16];
		struct {
			uint64_t off; /* into the arena */
			uint32_t len;
		} str;
	} etag;
};

struct sample {
	char *key;
	uint32_t len;
};

struct index_tree {
	char *prefix;
	size_t plen;
	uint64_t max_entries;
	struct tnode *nodes;
	uint64_t nnodes, cap_nodes;
	char *arena;          /* names and non-MD5 ETags */
	uint64_t arena_len, arena_cap;
	uint32_t *slots;      /* hash of (parent, name) -> node id + 1; 0 empty */
	uint64_t nslots;      /* power of two */
	uint64_t sipkey[2];
	struct index_tree_counts counts;
	struct sample samples[INDEX_SKIP__COUNT][INDEX_SAMPLES_PER_REASON];
	uint8_t nsamples[INDEX_SKIP__COUNT];
};

static inline const char *tnode_name(const struct index_tree *t, const struct tnode *n)
{
	return t->arena + n->name_off;
}

/* The breadth-first layout of a finished tree (layout.c). */
struct index_layout {
	uint32_t *order;             /* position -> node id */
	uint32_t *row;               /* node id -> dirs row (directories only) */
	struct index_disk_dir *dirs; /* by row, entry/first_child are positions */
	uint64_t n, ndirs;
	uint64_t name_bytes;         /* sum of name lengths */
	uint64_t etag_bytes;         /* sum of string ETag lengths */
	int64_t *dir_mtime;          /* by row: newest mtime below */
};

int index_layout_build(const struct index_tree *t, struct index_layout *ret);
void index_layout_free(struct index_layout *l);

#endif
