// SPDX-License-Identifier: Apache-2.0
/* Sibling readahead for small files read in key order (see siblings.h). */
#include "mounter/siblings.h"

#include <stdbool.h>

#include "fetch/base/macro.h"

/* Is ino the next name after s->last in the same directory? */
static bool continues_scan(const struct sib_state *s, uint64_t ino, uint64_t first)
{
	return s->last && s->last + 1 == ino && s->last >= first;
}

size_t sib_plan(struct sib_state *s, const struct index *idx, uint64_t ino, uint64_t small_file,
		uint64_t *out)
{
	struct index_attr a;
	uint64_t first, end, bytes = 0;
	uint32_t count;
	size_t n = 0;
	bool scan;

	if (index_getattr(idx, ino, &a) < 0 || index_readdir(idx, a.parent, &first, &count) < 0)
		return 0;
	scan = continues_scan(s, ino, first);
	s->last = ino;
	if (!scan) {
		s->frontier = ino + 1;
		return 0;
	}
	end = MIN(first + count, ino + 1 + SIB_MAX_FILES);
	for (uint64_t j = MAX(s->frontier, ino + 1); j < end; j++) {
		struct index_attr b;
		if (index_getattr(idx, j, &b) < 0 || b.is_dir || !b.size || b.size > small_file)
			continue;
		if (bytes + b.size > SIB_MAX_BYTES)
			break;
		bytes += b.size;
		out[n++] = j;
		s->frontier = j + 1;
	}
	if (!n)
		s->frontier = MAX(s->frontier, end);
	return n;
}
