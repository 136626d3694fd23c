// SPDX-License-Identifier: Apache-2.0
/* Per-view fill histograms and the first-byte floor (see fillstats.h). */
#include "fetch/cached/fillstats.h"

#include <stdlib.h>

#include "fetch/base/promtext.h"

/* 0.5 ms .. 10 s: dense around in-region round trips (5-30 ms), sparse
 * beyond a second, where the answer is "queueing" whatever the exact value. */
const double fill_seconds_bounds[FILL_HIST_N] = {
	0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05,
	0.075,  0.1,   0.15,  0.2,   0.3,   0.5,    1,    2.5,   5,    10,
};

const char *fill_kind_name(enum fill_kind k)
{
	static const char *const names[] = { "demand", "whole", "prefetch-range" };
	return k < FILL_KIND__COUNT ? names[k] : "unknown";
}

void fill_stats_observe(struct fill_stats *s, const struct fill_sample *x)
{
	struct fill_kind_stats *k;

	if (x->kind >= FILL_KIND__COUNT)
		return;
	k = &s->kind[x->kind];
	k->fills++;
	k->bytes += x->bytes;
	k->ttfb_sum += x->ttfb_s;
	k->seconds_sum += x->total_s;
	k->hist[prom_bucket(fill_seconds_bounds, FILL_HIST_N, x->fill_s)]++;
	k->hist_sum += x->fill_s;
	s->floor_ring[s->floor_pos] = (float)x->server_s;
	s->floor_pos = (s->floor_pos + 1) % FILL_FLOOR_WINDOW;
	if (s->floor_n < FILL_FLOOR_WINDOW)
		s->floor_n++;
}

void fill_stats_error(struct fill_stats *s, enum fill_kind kind)
{
	if (kind < FILL_KIND__COUNT)
		s->kind[kind].errors++;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

double fill_stats_floor(const struct fill_stats *s)
{
	float v[FILL_FLOOR_WINDOW];

	if (!s->floor_n)
		return -1;
	for (uint32_t i = 0; i < s->floor_n; i++)
		v[i] = s->floor_ring[i];
	qsort(v, s->floor_n, sizeof(v[0]), cmp_float);
	return v[(uint32_t)(FILL_FLOOR_QUANTILE * (s->floor_n - 1))];
}
