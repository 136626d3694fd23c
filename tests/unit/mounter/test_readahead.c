// SPDX-License-Identifier: Apache-2.0
/* Unit tests for mounter/readahead: fill kinds, the prefetch frontier, the
 * window's growth and reset, small files, reordered reads. */
#include <stdint.h>

#include "check.h"
#include "mounter/readahead.h"

#define MIB (1ull << 20)

static struct ra_config cfg(void)
{
	/* small windows keep the arithmetic below readable */
	struct ra_config c = { .small_file = 4 * MIB, .min_window = 1 * MIB,
			       .max_window = 64 * MIB };

	ra_config_normalize(&c);
	return c;
}

static void test_defaults(void)
{
	struct ra_config c = { .min_window = 8 * MIB, .max_window = 2 * MIB };

	ra_config_normalize(&c);
	CHECK_INT(c.min_window, 8 * MIB);
	CHECK_INT(c.max_window, 8 * MIB); /* never below the minimum */
	CHECK_INT(c.slack, 2 * MIB);
	CHECK_INT(c.align, 1 * MIB);
	CHECK_INT(c.small_file, 0); /* 0 stays "never" */
	c = (struct ra_config){ 0 };
	ra_config_normalize(&c);
	CHECK_INT(c.min_window, 8 * MIB);
	CHECK_INT(c.max_window, 256 * MIB);
}

static void test_small_file_whole_once(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;

	ra_init(&s, &c);
	ra_plan_read(&s, &c, 3 * MIB, 1 * MIB, 128 * 1024, &p);
	CHECK_INT(p.kind, FILL_KIND_WHOLE);
	CHECK_INT(p.pf_off, 0);
	CHECK_INT(p.pf_len, 3 * MIB);
	CHECK_INT(p.pf_kind, FILL_KIND_WHOLE);
	ra_plan_read(&s, &c, 3 * MIB, 0, 128 * 1024, &p);
	CHECK_INT(p.kind, FILL_KIND_WHOLE);
	CHECK_INT(p.pf_len, 0); /* asked once */
	ra_init(&s, &c);
	ra_plan_read(&s, &c, 4 * MIB, 0, 4096, &p); /* the limit is inclusive */
	CHECK_INT(p.pf_len, 4 * MIB);
	ra_init(&s, &c);
	ra_plan_read(&s, &c, 0, 0, 4096, &p); /* empty file: nothing to fetch */
	CHECK_INT(p.pf_len, 0);
}

/* Reads a file sequentially in 1 MiB steps; returns the prefetched end. */
static uint64_t stream(struct ra_state *s, const struct ra_config *c, uint64_t size,
		       uint64_t from, uint64_t to, unsigned *demand)
{
	struct ra_plan p;
	uint64_t end = 0;

	for (uint64_t off = from; off < to; off += MIB) {
		ra_plan_read(s, c, size, off, MIB, &p);
		*demand += p.kind == FILL_KIND_DEMAND;
		if (p.pf_len) {
			CHECK(p.pf_off >= off + MIB);  /* always ahead of the reader */
			CHECK(p.pf_off + p.pf_len <= size);
			CHECK(p.pf_off >= end);        /* never the same range twice */
			end = p.pf_off + p.pf_len;
		}
	}
	return end;
}

static void test_sequential_stream(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;
	unsigned demand = 0;

	ra_init(&s, &c);
	ra_plan_read(&s, &c, 100 * MIB, 0, MIB, &p);
	CHECK_INT(p.kind, FILL_KIND_DEMAND); /* nothing predicted the first read */
	CHECK_INT(p.pf_off, MIB);
	CHECK_INT(p.pf_len, MIB);
	CHECK_INT(p.pf_kind, FILL_KIND_WHOLE);
	/* a reader that never waits keeps the window small but stays covered */
	stream(&s, &c, 100 * MIB, MIB, 50 * MIB, &demand);
	CHECK_INT(demand, 0);
	CHECK(s.window <= 2 * MIB);
	CHECK(s.ahead > s.pos && s.ahead <= s.pos + s.window + MIB);
}

static void test_window_grows_on_stalls_and_resets_on_seek(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;
	unsigned demand = 0;

	ra_init(&s, &c);
	ra_plan_read(&s, &c, 1024 * MIB, 0, MIB, &p);
	for (int i = 0; i < 10; i++)
		ra_note_stall(&s, &c, 0);
	CHECK_INT(s.window, 64 * MIB); /* capped at max_window */
	stream(&s, &c, 1024 * MIB, MIB, 200 * MIB, &demand);
	CHECK(s.ahead >= 200 * MIB + 32 * MIB);
	/* a seek: demand, no prefetch, window back to the minimum */
	ra_plan_read(&s, &c, 1024 * MIB, 700 * MIB, MIB, &p);
	CHECK_INT(p.kind, FILL_KIND_DEMAND);
	CHECK_INT(p.pf_len, 0);
	CHECK_INT(s.window, 1 * MIB);
	CHECK_INT(s.seeks, 1);
	/* a stall after a seek does not widen a stream that is not running */
	ra_note_stall(&s, &c, 700 * MIB);
	CHECK_INT(s.window, 1 * MIB);
	CHECK(p.exact); /* a fault: just its bytes */
	/* the next reads continue: after RA_SEQ_RUN of them a new stream
	 * starts prefetching */
	for (uint64_t off = 701 * MIB; off < 700 * MIB + RA_SEQ_RUN * MIB; off += MIB) {
		ra_plan_read(&s, &c, 1024 * MIB, off, MIB, &p);
		CHECK_INT(p.pf_len, 0);
		CHECK(p.exact);
	}
	ra_plan_read(&s, &c, 1024 * MIB, 700 * MIB + RA_SEQ_RUN * MIB, MIB, &p);
	CHECK_INT(p.pf_off, 701 * MIB + RA_SEQ_RUN * MIB);
	CHECK_INT(p.pf_len, MIB);
	CHECK(!p.exact);
}

static void test_ascending_reads_with_gaps_are_not_a_stream(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;

	/* a selective reader: 64 KiB pieces in ascending order, ~1 MiB apart,
	 * and now and then two pieces close together */
	ra_init(&s, &c);
	ra_plan_read(&s, &c, 2048 * MIB, 5 * MIB, 65536, &p);
	for (uint64_t off = 6 * MIB; off < 1000 * MIB; off += MIB + 4 * 65536) {
		ra_plan_read(&s, &c, 2048 * MIB, off, 65536, &p);
		CHECK_INT(p.pf_len, 0);
		CHECK(p.exact);
		ra_plan_read(&s, &c, 2048 * MIB, off + 65536 + 65536, 65536, &p); /* one gap */
		CHECK_INT(p.pf_len, 0);
		CHECK(p.exact);
	}
	CHECK_INT(s.prefetches, 0);
}

static void test_catching_up_grows(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;

	ra_init(&s, &c);
	ra_plan_read(&s, &c, 100 * MIB, 0, MIB, &p);       /* prefetch [1, 2) */
	ra_plan_read(&s, &c, 100 * MIB, 2 * MIB, MIB, &p); /* beyond the frontier */
	CHECK_INT(p.kind, FILL_KIND_DEMAND);
	CHECK_INT(s.window, 2 * MIB);
}

static void test_reordered_reads_stay_in_stream(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;

	ra_init(&s, &c);
	for (int i = 0; i < 6; i++)
		ra_note_stall(&s, &c, 0);
	ra_plan_read(&s, &c, 100 * MIB, 0, MIB, &p);
	ra_plan_read(&s, &c, 100 * MIB, 2 * MIB, MIB, &p);
	ra_plan_read(&s, &c, 100 * MIB, 1 * MIB, MIB, &p); /* arrived late */
	CHECK_INT(s.seeks, 0);
	CHECK_INT(p.kind, FILL_KIND_WHOLE);
	CHECK_INT(s.pos, 3 * MIB);
}

static void test_small_jumps_ahead_end_a_stream(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;
	unsigned demand = 0;

	ra_init(&s, &c);
	stream(&s, &c, 100 * MIB, 0, 10 * MIB, &demand);
	CHECK(s.streaming);
	/* a kernel readahead chunk that overtook the one before it: same stream */
	ra_plan_read(&s, &c, 100 * MIB, 11 * MIB, MIB, &p);
	CHECK_INT(s.seeks, 0);
	/* a 64 KiB read 1.5 MiB further: the application skips data */
	ra_plan_read(&s, &c, 100 * MIB, 12 * MIB + MIB / 2, 65536, &p);
	CHECK_INT(s.seeks, 1);
	CHECK(!s.streaming);
	CHECK(p.exact);
	CHECK_INT(p.pf_len, 0);
}

static void test_random_reads_are_demand(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;
	uint64_t offs[] = { 50, 10, 90, 30, 70 };

	ra_init(&s, &c);
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		ra_plan_read(&s, &c, 100 * MIB, offs[i] * MIB, 4096, &p);
		CHECK_INT(p.kind, FILL_KIND_DEMAND);
		CHECK_INT(p.pf_len, 0);
		CHECK(p.exact);
	}
	CHECK_INT(s.prefetches, 0);
}

static void test_end_of_file(void)
{
	struct ra_config c = cfg();
	struct ra_state s;
	struct ra_plan p;
	uint64_t size = 5 * MIB + 3;

	ra_init(&s, &c);
	ra_plan_read(&s, &c, size, 0, MIB, &p);
	for (int i = 0; i < 6; i++)
		ra_note_stall(&s, &c, 0);
	ra_plan_read(&s, &c, size, MIB, MIB, &p);
	CHECK_INT(p.pf_off + p.pf_len, size); /* clamped to the object */
	ra_plan_read(&s, &c, size, 2 * MIB, MIB, &p);
	CHECK_INT(p.pf_len, 0);
	ra_plan_read(&s, &c, size, size, MIB, &p); /* at EOF */
	CHECK_INT(p.pf_len, 0);
}

int main(void)
{
	test_defaults();
	test_small_file_whole_once();
	test_sequential_stream();
	test_window_grows_on_stalls_and_resets_on_seek();
	test_catching_up_grows();
	test_reordered_reads_stay_in_stream();
	test_random_reads_are_demand();
	test_ascending_reads_with_gaps_are_not_a_stream();
	test_small_jumps_ahead_end_a_stream();
	test_end_of_file();
	return check_done();
}
