/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-view fill accounting behind lith_fill_seconds and
 * lith_ttfb_floor_seconds. Two different clocks, on purpose:
 *  - fill seconds: from the moment a fill is made (queued in lith) to its
 *    first byte: everything a reader waiting on a fault pays, including
 *    lith's own queueing, connection waits and the endpoint;
 *  - the floor: a low quantile (FILL_FLOOR_QUANTILE) over the last
 *    FILL_FLOOR_WINDOW fills of the endpoint's own time, request sent to
 *    first byte, which no queue in lith can inflate.
 * A gap between the two is therefore lith's concurrency or the link; a
 * demand median near the floor is the round trip itself.
 * Owned by the view; updated on the daemon's loop thread only.
 */
#ifndef LITH_CACHED_FILLSTATS_H
#define LITH_CACHED_FILLSTATS_H

#include <stdint.h>

enum fill_kind { FILL_KIND_DEMAND, FILL_KIND_WHOLE, FILL_KIND_PREFETCH_RANGE, FILL_KIND__COUNT };
const char *fill_kind_name(enum fill_kind k);

#define FILL_HIST_N 21
extern const double fill_seconds_bounds[FILL_HIST_N];
#define FILL_FLOOR_WINDOW 128
#define FILL_FLOOR_QUANTILE 0.10

struct fill_kind_stats {
	uint64_t fills, bytes, errors;
	double ttfb_sum, seconds_sum;
	uint64_t hist[FILL_HIST_N + 1]; /* fill seconds; [FILL_HIST_N] = overflow */
	double hist_sum;
};

struct fill_stats {
	struct fill_kind_stats kind[FILL_KIND__COUNT];
	float floor_ring[FILL_FLOOR_WINDOW];
	uint32_t floor_n, floor_pos;
};

struct fill_sample {
	enum fill_kind kind;
	uint64_t bytes;
	double fill_s;   /* made to first byte */
	double server_s; /* request sent to first byte */
	double total_s;  /* made to last byte */
	double ttfb_s;   /* the S3 engine's time to first byte */
};

void fill_stats_observe(struct fill_stats *s, const struct fill_sample *x);
void fill_stats_error(struct fill_stats *s, enum fill_kind kind);
/* The floor in seconds; -1 before any fill. */
double fill_stats_floor(const struct fill_stats *s);

#endif
