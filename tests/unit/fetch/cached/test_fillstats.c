// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the fill histograms and the first-byte floor. */
#include "check.h"
#include "fetch/cached/fillstats.h"

static void test_floor_is_a_low_quantile_of_a_window(void)
{
	struct fill_stats s = { 0 };
	struct fill_sample x = { .kind = FILL_KIND_DEMAND, .bytes = 4096 };

	CHECK(fill_stats_floor(&s) < 0); /* no fill yet */
	/* 100 fills at 20..119 ms of endpoint time: the floor is the 10th
	 * percentile, not the minimum, so one lucky response does not set it */
	for (int i = 0; i < 100; i++) {
		x.server_s = (20 + i) / 1000.0;
		x.fill_s = x.server_s + 0.5; /* queueing never moves the floor */
		fill_stats_observe(&s, &x);
	}
	CHECK(fill_stats_floor(&s) > 0.0289 && fill_stats_floor(&s) < 0.0291);
	/* the window forgets: 128 later fills at 5 ms set a new floor */
	for (int i = 0; i < FILL_FLOOR_WINDOW; i++) {
		x.server_s = 0.005;
		fill_stats_observe(&s, &x);
	}
	CHECK(fill_stats_floor(&s) > 0.0049 && fill_stats_floor(&s) < 0.0051);
}

static void test_histogram_by_kind(void)
{
	struct fill_stats s = { 0 };
	struct fill_sample a = { .kind = FILL_KIND_WHOLE, .bytes = 8 << 20, .fill_s = 0.02 };
	struct fill_sample b = { .kind = FILL_KIND_DEMAND, .bytes = 1 << 20, .fill_s = 42.0 };
	uint64_t n = 0;

	fill_stats_observe(&s, &a);
	fill_stats_observe(&s, &b);
	fill_stats_error(&s, FILL_KIND_PREFETCH_RANGE);
	fill_stats_error(&s, FILL_KIND__COUNT); /* ignored */
	CHECK_INT(s.kind[FILL_KIND_WHOLE].fills, 1);
	CHECK_INT(s.kind[FILL_KIND_WHOLE].bytes, 8 << 20);
	CHECK_INT(s.kind[FILL_KIND_WHOLE].hist[8], 1); /* le 0.02 is bucket 8 */
	CHECK(fill_seconds_bounds[8] == 0.02);
	CHECK_INT(s.kind[FILL_KIND_DEMAND].hist[FILL_HIST_N], 1); /* above 10 s */
	CHECK_INT(s.kind[FILL_KIND_PREFETCH_RANGE].errors, 1);
	for (int i = 0; i <= FILL_HIST_N; i++)
		n += s.kind[FILL_KIND_PREFETCH_RANGE].hist[i];
	CHECK_INT(n, 0); /* errors are not fills */
	CHECK_STR(fill_kind_name(FILL_KIND_PREFETCH_RANGE), "prefetch-range");
}

int main(void)
{
	test_floor_is_a_low_quantile_of_a_window();
	test_histogram_by_kind();
	return check_done();
}
