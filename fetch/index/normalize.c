// SPDX-License-Identifier: Apache-2.0
/*
 * Key normalisation (rules in normalize.h). Pure and thread-safe; the
 * verdict for a key depends on nothing but the key and the prefix.
 * Invariant: on success every component is 1..255 bytes, holds neither '/'
 * nor NUL, and is not "." or "..".
 */
#include "fetch/index/normalize.h"

#include <string.h>

static const char *const skip_names[INDEX_SKIP__COUNT] = {
	[INDEX_SKIP_NONE] = "none",
	[INDEX_SKIP_DOT_COMPONENT] = "dot_component",
	[INDEX_SKIP_EMPTY_COMPONENT] = "empty_component",
	[INDEX_SKIP_NAME_TOO_LONG] = "name_too_long",
	[INDEX_SKIP_KEY_TOO_LONG] = "key_too_long",
	[INDEX_SKIP_NUL_BYTE] = "nul_byte",
	[INDEX_SKIP_OUTSIDE_PREFIX] = "outside_prefix",
	[INDEX_SKIP_SHADOWED] = "shadowed",
	[INDEX_SKIP_MARKER_DATA] = "marker_data",
	[INDEX_SKIP_DUPLICATE] = "duplicate",
};

const char *index_skip_name(enum index_skip reason)
{
	if ((unsigned)reason >= INDEX_SKIP__COUNT)
		return "unknown";
	return skip_names[reason];
}

static enum index_skip check_component(const char *c, size_t len)
{
	if (len == 0)
		return INDEX_SKIP_EMPTY_COMPONENT;
	if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
		return INDEX_SKIP_DOT_COMPONENT;
	if (len > INDEX_NAME_MAX)
		return INDEX_SKIP_NAME_TOO_LONG;
	return INDEX_SKIP_NONE;
}

/* Splits key[start, end) at '/' into n->comp; first offence wins. */
static enum index_skip split(const char *key, size_t start, size_t end, struct index_norm *n)
{
	size_t pos = start;
	enum index_skip r;

	n->ncomp = 0;
	for (;;) {
		const char *slash = memchr(key + pos, '/', end - pos);
		size_t stop = slash ? (size_t)(slash - key) : end;

		r = check_component(key + pos, stop - pos);
		if (r != INDEX_SKIP_NONE)
			return r;
		/* cannot overflow: a 1024-byte key has at most 513 components */
		n->comp[n->ncomp++] = (struct index_component){ (uint16_t)pos,
								(uint16_t)(stop - pos) };
		if (!slash)
			return INDEX_SKIP_NONE;
		pos = stop + 1;
	}
}

enum index_skip index_normalize(const char *key, size_t key_len, const char *prefix,
				size_t plen, struct index_norm *ret)
{
	struct index_norm n = { 0 };
	size_t end = key_len;
	enum index_skip r;

	if (key_len > INDEX_KEY_MAX)
		return INDEX_SKIP_KEY_TOO_LONG;
	if (memchr(key, '\0', key_len))
		return INDEX_SKIP_NUL_BYTE;
	if (key_len < plen || memcmp(key, prefix, plen) != 0)
		return INDEX_SKIP_OUTSIDE_PREFIX;
	if (key_len == plen) {
		if (plen == 0) /* the empty key: no name at all */
			return INDEX_SKIP_EMPTY_COMPONENT;
		ret->marker = true; /* the prefix's own "dir/" marker */
		ret->ncomp = 0;
		return INDEX_SKIP_NONE;
	}
	if (key[end - 1] == '/') {
		n.marker = true;
		end--;
	}
	r = split(key, plen, end, &n);
	if (r != INDEX_SKIP_NONE)
		return r;
	ret->marker = n.marker;
	ret->ncomp = n.ncomp;
	memcpy(ret->comp, n.comp, n.ncomp * sizeof(n.comp[0]));
	return INDEX_SKIP_NONE;
}
