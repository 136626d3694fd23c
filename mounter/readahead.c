// SPDX-License-Identifier: Apache-2.0
/*
 * Sequential detection and the readahead window (see readahead.h). Pure
 * functions over one handle's state; the caller holds the handle's lock.
 */
#include "mounter/readahead.h"

#include "fetch/base/macro.h"

#define MIB (1ull << 20)

void ra_config_normalize(struct ra_config *c)
{
	if (!c->min_window)
		c->min_window = 8 * MIB;   /* one coalesced GET */
	if (!c->max_window)
		c->max_window = 256 * MIB;
	if (c->max_window < c->min_window)
		c->max_window = c->min_window;
	if (!c->slack)
		c->slack = 2 * MIB;
	if (!c->align)
		c->align = 1 * MIB;
}

void ra_init(struct ra_state *s, const struct ra_config *c)
{
	*s = (struct ra_state){ .window = c->min_window };
}

/* Does a read of len bytes at off continue the current stream? Behind
 * the furthest read by up to a window: a late one. Ahead of it: by
 * RA_SEQ_GAP, or, in a stream that prefetches, by `slack` for a read as
 * large as the kernel's readahead chunks (async readahead arriving out of
 * order); a small read far ahead is an application skipping data. */
static bool in_stream(const struct ra_state *s, const struct ra_config *c, uint64_t off,
		      uint64_t len)
{
	uint64_t back = s->window + c->slack;
	uint64_t lo = s->pos > back ? s->pos - back : 0;
	bool big = s->streaming && len >= RA_KERNEL_CHUNK;

	if (!s->started)
		return off == 0;
	return off >= lo && off <= s->pos + (big ? c->slack : RA_SEQ_GAP);
}

static void grow(struct ra_state *s, const struct ra_config *c)
{
	s->window = MIN(s->window * 2, c->max_window);
}

static uint64_t align_up(uint64_t v, uint64_t a, uint64_t limit)
{
	uint64_t r = v % a ? v + (a - v % a) : v;

	return r < v || r > limit ? limit : r; /* r < v: overflow */
}

static void plan_small(struct ra_state *s, uint64_t size, uint64_t end, struct ra_plan *ret)
{
	ret->kind = FILL_KIND_WHOLE;
	if (!s->whole && size) {
		ret->pf_off = 0;
		ret->pf_len = size;
		s->prefetches++;
	}
	s->whole = true;
	s->started = true;
	s->pos = MAX(s->pos, end);
}

static void plan_seek(struct ra_state *s, const struct ra_config *c, uint64_t end)
{
	s->seeks += s->started;
	s->started = true;
	s->streaming = false;
	s->run = 0;
	s->window = c->min_window;
	s->pos = s->ahead = end;
}

/* Moves the prefetch frontier when less than half a window is left. */
static void plan_ahead(struct ra_state *s, const struct ra_config *c, uint64_t size,
		       struct ra_plan *ret)
{
	uint64_t target = align_up(s->pos + s->window, c->align, size);

	if (s->ahead < s->pos)
		s->ahead = s->pos;
	if (s->ahead >= size || s->ahead - s->pos >= s->window / 2 || target <= s->ahead)
		return;
	ret->pf_off = s->ahead;
	ret->pf_len = target - s->ahead;
	s->ahead = target;
	s->streaming = true;
	s->prefetches++;
}

void ra_plan_read(struct ra_state *s, const struct ra_config *c, uint64_t size, uint64_t off,
		  uint64_t len, struct ra_plan *ret)
{
	uint64_t end = off < size ? MIN(off + len, size) : off;
	bool covered;

	*ret = (struct ra_plan){ .kind = FILL_KIND_DEMAND, .pf_kind = FILL_KIND_WHOLE };
	if (c->small_file && size <= c->small_file) {
		plan_small(s, size, end, ret);
		return;
	}
	if (!in_stream(s, c, off, len)) {
		plan_seek(s, c, end);
		ret->exact = true;
		return;
	}
	covered = s->streaming && end <= s->ahead;
	if (s->streaming && !covered)
		grow(s, c); /* the reader caught up with the frontier */
	ret->kind = covered ? FILL_KIND_WHOLE : FILL_KIND_DEMAND;
	if (!s->started)
		s->run = RA_SEQ_RUN; /* a read from offset 0 starts a stream at once */
	else if (s->run < RA_SEQ_RUN)
		s->run++;
	ret->exact = !s->streaming && s->run < RA_SEQ_RUN;
	s->started = true;
	s->pos = MAX(s->pos, end);
	if (!ret->exact)
		plan_ahead(s, c, size, ret);
}

void ra_note_stall(struct ra_state *s, const struct ra_config *c, uint64_t off)
{
	if (s->streaming && in_stream(s, c, off, UINT64_MAX))
		grow(s, c);
}
