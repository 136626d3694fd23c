/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parallel ranged read of one object: `concurrency` GETs of `part_size`
 * bytes in flight, each pinned to the object's ETag, delivered in order to
 * a sink (a file descriptor, or nowhere for benchmarks). Used by
 * `lith s3 get` and `lith s3 bench`.
 */
#ifndef LITH_TOOLS_TRANSFER_H
#define LITH_TOOLS_TRANSFER_H

#include <stdint.h>

#include "fetch/s3/s3.h"

struct transfer_spec {
	const char *key;
	const char *etag;       /* pinned; NULL = not pinned */
	uint64_t first;         /* byte range [first, last] */
	uint64_t last;
	uint64_t part_size;
	unsigned concurrency;
	int out_fd;             /* -1 = discard */
};

struct transfer_stats {
	uint64_t bytes;
	unsigned requests;
	unsigned retries;
	double seconds;
	double ttfb_sum_s;
};

/* Returns 0 or the first request's -errno (message printed to stderr). */
int transfer_run(struct s3_engine *e, struct s3_bucket *b, const struct transfer_spec *spec,
		 struct transfer_stats *ret);

#endif
