// SPDX-License-Identifier: Apache-2.0
/*
 * Building the in-memory tree from listed keys (rules in tree.h and
 * normalize.h). Nodes live in one growable array (node 0 is the root),
 * names and string ETags in one growable arena, and an open-addressing hash
 * of (parent, name) -> node finds a directory's child in O(1) while keys
 * arrive in any order. Invariants: a name is unique within its directory;
 * counts always describe the nodes as they are; samples per reason are the
 * smallest keys seen, sorted. Owned and used by one thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "fetch/base/clock.h"
#include "fetch/base/macro.h"
#include "fetch/index/tree_internal.h"

#define INITIAL_SLOTS 1024u

/* ---- SipHash-1-3 of (parent, name) ------------------------------------ */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                               \
	do {                                                                   \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);      \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                         \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                         \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);      \
	} while (0)

static uint64_t name_hash(const struct index_tree *t, uint32_t parent, const char *p,
			  size_t len)
{
	uint64_t k0 = t->sipkey[0] ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ull);
	uint64_t k1 = t->sipkey[1];
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	uint64_t w, last = (uint64_t)len << 56;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		v3 ^= w;
		SIPROUND;
		v0 ^= w;
	}
	for (size_t j = 0; i + j < len; j++)
		last |= (uint64_t)(uint8_t)p[i + j] << (8 * j);
	v3 ^= last;
	SIPROUND;
	v0 ^= last;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- storage ----------------------------------------------------------- */

static int arena_put(struct index_tree *t, const char *p, size_t len, uint64_t *ret_off)
{
	if (t->arena_len + len > t->arena_cap) {
		uint64_t cap = MAX(t->arena_cap * 2, t->arena_len + len + 4096);
		char *a = realloc(t->arena, cap);
		if (!a)
			return -ENOMEM;
		t->arena = a;
		t->arena_cap = cap;
	}
	memcpy(t->arena + t->arena_len, p, len);
	*ret_off = t->arena_len;
	t->arena_len += len;
	return 0;
}

static bool node_is(const struct index_tree *t, uint32_t id, uint32_t parent, const char *name,
		    size_t len)
{
	const struct tnode *n = &t->nodes[id];

	return n->parent == parent && n->name_len == len &&
	       memcmp(tnode_name(t, n), name, len) == 0;
}

/* Slot holding (parent, name), or the empty slot where it would go. */
static uint64_t find_slot(const struct index_tree *t, uint32_t parent, const char *name,
			  size_t len)
{
	uint64_t mask = t->nslots - 1, i = name_hash(t, parent, name, len) & mask;

	while (t->slots[i] && !node_is(t, t->slots[i] - 1, parent, name, len))
		i = (i + 1) & mask;
	return i;
}

static int grow_slots(struct index_tree *t)
{
	uint64_t old_n = t->nslots;
	uint32_t *old = t->slots;

	t->nslots = old_n ? old_n * 2 : INITIAL_SLOTS;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		t->nslots = old_n;
		return -ENOMEM;
	}
	for (uint64_t i = 1; i < t->nnodes; i++) {
		const struct tnode *n = &t->nodes[i];
		t->slots[find_slot(t, n->parent, tnode_name(t, n), n->name_len)] = (uint32_t)i + 1;
	}
	free(old);
	return 0;
}

/* Makes room for one more node: array, hash load <= 0.7, entry limit. */
static int reserve_node(struct index_tree *t)
{
	if (t->nnodes >= t->max_entries)
		return -E2BIG;
	if (t->nnodes == t->cap_nodes) {
		uint64_t cap = t->cap_nodes ? t->cap_nodes * 2 : 1024;
		struct tnode *n = reallocarray(t->nodes, cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->nodes = n;
		t->cap_nodes = cap;
	}
	if ((t->nnodes + 1) * 10 > t->nslots * 7)
		return grow_slots(t);
	return 0;
}

static int new_node(struct index_tree *t, uint32_t parent, const char *name, size_t len,
		    uint8_t flags, uint32_t *ret_id)
{
	struct tnode n = { .parent = parent, .name_len = (uint8_t)len, .flags = flags };
	int r = reserve_node(t);

	if (r < 0)
		return r;
	r = arena_put(t, name, len, &n.name_off);
	if (r < 0)
		return r;
	t->nodes[t->nnodes] = n;
	t->slots[find_slot(t, parent, name, len)] = (uint32_t)t->nnodes + 1;
	*ret_id = (uint32_t)t->nnodes++;
	t->counts.entries = t->nnodes;
	if (flags & INDEX_ENTRY_DIR)
		t->counts.dirs++;
	return 0;
}

/* ---- samples and counts ------------------------------------------------ */

static int key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, MIN(al, bl));

	return c ? c : (al > bl) - (al < bl);
}

/* Keeps the INDEX_SAMPLES_PER_REASON smallest keys, sorted, no repeats. */
static void keep_sample(struct index_tree *t, enum index_skip reason, const char *key,
			size_t len)
{
	struct sample *s = t->samples[reason];
	unsigned n = t->nsamples[reason], at = 0;
	char *copy;

	len = MIN(len, (size_t)INDEX_KEY_MAX);
	while (at < n && key_cmp(s[at].key, s[at].len, key, len) < 0)
		at++;
	if (at == INDEX_SAMPLES_PER_REASON || (at < n && !key_cmp(s[at].key, s[at].len, key, len)))
		return;
	copy = malloc(len ? len : 1);
	if (!copy)
		return; /* a sample is best effort; the count is not */
	memcpy(copy, key, len);
	if (n == INDEX_SAMPLES_PER_REASON)
		free(s[--n].key);
	memmove(&s[at + 1], &s[at], (n - at) * sizeof(*s));
	s[at] = (struct sample){ copy, (uint32_t)len };
	t->nsamples[reason] = (uint8_t)(n + 1);
}

static void count_skip(struct index_tree *t, enum index_skip reason, const char *key, size_t len)
{
	t->counts.skipped[reason]++;
	t->counts.skipped[0]++;
	keep_sample(t, reason, key, len);
}

/* prefix + path of node id into buf (INDEX_KEY_MAX + 1 bytes). Every node
 * lies on the path of a key that was at most INDEX_KEY_MAX bytes, so the
 * result fits. */
static size_t node_key(const struct index_tree *t, uint32_t id, char *buf)
{
	size_t len = t->plen, at;

	for (uint32_t j = id; j != 0; j = t->nodes[j].parent)
		len += t->nodes[j].name_len + (j != id);
	memcpy(buf, t->prefix, t->plen);
	at = len;
	for (uint32_t j = id; j != 0; j = t->nodes[j].parent) {
		if (j != id)
			buf[--at] = '/';
		at -= t->nodes[j].name_len;
		memcpy(buf + at, tnode_name(t, &t->nodes[j]), t->nodes[j].name_len);
	}
	buf[len] = '\0';
	return len;
}

/* ---- ETags ------------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "<32 lowercase hex>" or "<32 lowercase hex>-N", N in 1..65535 with no
 * leading zero: exactly the strings format_md5 in reader.c reproduces. */
static bool parse_md5(const char *s, size_t len, uint8_t md5[16], uint16_t *parts)
{
	unsigned long v = 0;

	if (len < 32 || (len > 32 && (len < 34 || len > 38 || s[32] != '-' || s[33] == '0')))
		return false;
	for (int i = 0; i < 32; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		md5[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	for (size_t i = 33; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > UINT16_MAX)
		return false;
	*parts = (uint16_t)v;
	return true;
}

static int set_etag(struct index_tree *t, struct tnode *n, const char *etag)
{
	size_t len = etag ? strlen(etag) : 0;
	uint8_t md5[16];
	uint16_t parts = 0;

	n->flags &= (uint8_t)~(INDEX_ENTRY_ETAG_MD5 | INDEX_ENTRY_ETAG_STR);
	n->etag_parts = 0;
	memset(&n->etag, 0, sizeof(n->etag));
	if (len == 0)
		return 0;
	if (parse_md5(etag, len, md5, &parts)) {
		n->flags |= INDEX_ENTRY_ETAG_MD5;
		n->etag_parts = parts;
		memcpy(n->etag.md5, md5, sizeof(md5));
		return 0;
	}
	n->flags |= INDEX_ENTRY_ETAG_STR;
	n->etag.str.len = (uint32_t)len;
	return arena_put(t, etag, len, &n->etag.str.off);
}

/* The node's ETag as text, for comparing duplicates. */
static void etag_text(const struct index_tree *t, const struct tnode *n, char *buf, size_t cap)
{
	if (n->flags & INDEX_ENTRY_ETAG_STR) {
		size_t len = MIN((size_t)n->etag.str.len, cap - 1);
		memcpy(buf, t->arena + n->etag.str.off, len);
		buf[len] = '\0';
		return;
	}
	buf[0] = '\0';
	for (int i = 0; (n->flags & INDEX_ENTRY_ETAG_MD5) && i < 16; i++)
		snprintf(buf + 2 * i, cap - 2 * (size_t)i, "%02x", n->etag.md5[i]);
}

/* ---- insertion --------------------------------------------------------- */

/* The directory `name` in parent; an object of that name becomes a
 * directory and is counted as shadowed. */
static int ensure_dir(struct index_tree *t, uint32_t parent, const char *name, size_t len,
		      uint32_t *ret_id)
{
	uint64_t slot = find_slot(t, parent, name, len);
	struct tnode *n;
	char key[INDEX_KEY_MAX + 1];

	if (!t->slots[slot])
		return new_node(t, parent, name, len, INDEX_ENTRY_DIR, ret_id);
	*ret_id = t->slots[slot] - 1;
	n = &t->nodes[*ret_id];
	if (n->flags & INDEX_ENTRY_DIR)
		return 0;
	count_skip(t, INDEX_SKIP_SHADOWED, key, node_key(t, *ret_id, key));
	t->counts.files--;
	t->counts.total_bytes -= n->size;
	t->counts.dirs++;
	n->flags = INDEX_ENTRY_DIR;
	n->size = 0;
	n->mtime = 0;
	n->etag_parts = 0;
	memset(&n->etag, 0, sizeof(n->etag));
	return 0;
}

static bool newer(const struct index_tree *t, const struct tnode *old, uint64_t size,
		  int64_t mtime, const char *etag)
{
	char have[INDEX_ETAG_MAX + 1];

	if (mtime != old->mtime)
		return mtime > old->mtime;
	if (size != old->size)
		return size > old->size;
	etag_text(t, old, have, sizeof(have));
	return strcmp(etag ? etag : "", have) > 0;
}

static int set_file(struct index_tree *t, uint32_t id, uint64_t size, int64_t mtime,
		    const char *etag)
{
	struct tnode *n = &t->nodes[id];

	t->counts.total_bytes -= n->size;
	n->size = size;
	n->mtime = mtime;
	t->counts.total_bytes += size;
	return set_etag(t, n, etag);
}

static int add_file(struct index_tree *t, uint32_t parent, const char *key, size_t key_len,
		    const struct index_component *c, uint64_t size, int64_t mtime,
		    const char *etag)
{
	uint64_t slot = find_slot(t, parent, key + c->off, c->len);
	uint32_t id;
	int r;

	if (t->slots[slot]) {
		id = t->slots[slot] - 1;
		if (t->nodes[id].flags & INDEX_ENTRY_DIR) {
			count_skip(t, INDEX_SKIP_SHADOWED, key, key_len);
			return INDEX_SKIP_SHADOWED;
		}
		count_skip(t, INDEX_SKIP_DUPLICATE, key, key_len);
		if (newer(t, &t->nodes[id], size, mtime, etag)) {
			r = set_file(t, id, size, mtime, etag);
			if (r < 0)
				return r;
		}
		return INDEX_SKIP_DUPLICATE;
	}
	r = new_node(t, parent, key + c->off, c->len, 0, &id);
	if (r < 0)
		return r;
	t->counts.files++;
	return set_file(t, id, size, mtime, etag);
}

static int add_marker(struct index_tree *t, uint32_t dir, const char *key, size_t key_len,
		      uint64_t size, int64_t mtime)
{
	if (size > 0) {
		count_skip(t, INDEX_SKIP_MARKER_DATA, key, key_len);
		return INDEX_SKIP_MARKER_DATA;
	}
	t->counts.markers++;
	t->nodes[dir].mtime = MAX(t->nodes[dir].mtime, mtime);
	return 0;
}

static int take_listed(struct index_tree *t)
{
	if (t->counts.keys_listed >= t->max_entries)
		return -E2BIG;
	t->counts.keys_listed++;
	return 0;
}

int index_tree_add(struct index_tree *t, const char *key, size_t key_len, uint64_t size,
		   int64_t mtime, const char *etag)
{
	struct index_norm n;
	uint32_t dir = 0;
	unsigned ndirs;
	int r;

	if (etag && strlen(etag) > INDEX_ETAG_MAX)
		return -EINVAL;
	r = take_listed(t);
	if (r < 0)
		return r;
	r = (int)index_normalize(key, key_len, t->prefix, t->plen, &n);
	if (r != INDEX_SKIP_NONE) {
		count_skip(t, (enum index_skip)r, key, key_len);
		return r;
	}
	ndirs = n.marker ? n.ncomp : n.ncomp - 1u;
	for (unsigned i = 0; i < ndirs; i++) {
		r = ensure_dir(t, dir, key + n.comp[i].off, n.comp[i].len, &dir);
		if (r < 0)
			return r;
	}
	if (n.marker)
		return add_marker(t, dir, key, key_len, size, mtime);
	return add_file(t, dir, key, key_len, &n.comp[ndirs], size, mtime, etag);
}

int index_tree_skip(struct index_tree *t, enum index_skip reason, const char *key,
		    size_t key_len)
{
	int r;

	if (reason <= INDEX_SKIP_NONE || reason >= INDEX_SKIP__COUNT)
		return -EINVAL;
	r = take_listed(t);
	if (r < 0)
		return r;
	count_skip(t, reason, key, key_len);
	return 0;
}

void index_tree_get_counts(const struct index_tree *t, struct index_tree_counts *ret)
{
	*ret = t->counts;
}

/* ---- lifetime ---------------------------------------------------------- */

static int init_tree(struct index_tree *t, const struct index_tree_config *cfg)
{
	const char *prefix = cfg->prefix ? cfg->prefix : "";

	t->plen = strlen(prefix);
	if (t->plen > INDEX_KEY_MAX || (t->plen && prefix[t->plen - 1] != '/'))
		return -EINVAL;
	t->max_entries = cfg->max_entries ? cfg->max_entries : INDEX_DEFAULT_MAX_KEYS;
	if (t->max_entries > INDEX_MAX_ENTRIES_LIMIT)
		return -EINVAL;
	t->prefix = strdup(prefix);
	if (!t->prefix)
		return -ENOMEM;
	if (getrandom(t->sipkey, sizeof(t->sipkey), 0) != sizeof(t->sipkey)) {
		t->sipkey[0] = clock_mono_ns();
		t->sipkey[1] = (uint64_t)(uintptr_t)t;
	}
	if (reserve_node(t) < 0)
		return -ENOMEM;
	t->nodes[0] = (struct tnode){ .flags = INDEX_ENTRY_DIR };
	t->nnodes = 1;
	t->counts.entries = 1;
	t->counts.dirs = 1;
	return 0;
}

int index_tree_new(const struct index_tree_config *cfg, struct index_tree **ret)
{
	struct index_tree *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	r = init_tree(t, cfg);
	if (r < 0) {
		index_tree_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

void index_tree_free(struct index_tree *t)
{
	if (!t)
		return;
	for (int r = 0; r < INDEX_SKIP__COUNT; r++)
		for (unsigned i = 0; i < t->nsamples[r]; i++)
			free(t->samples[r][i].key);
	free(t->prefix);
	free(t->nodes);
	free(t->arena);
	free(t->slots);
	free(t);
}
