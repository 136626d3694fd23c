/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counts of the daemon's S3 requests by operation and HTTP status, fed by
 * the S3 engine's report hook (engine thread) and read by GetStats (loop
 * thread): relaxed atomics, no lock. Statuses outside the fixed table are
 * counted as 999 ("other").
 */
#ifndef LITH_CACHED_S3STATS_H
#define LITH_CACHED_S3STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "fetch/s3/s3.h"

#define S3STATS_NSTATUS 14

struct s3stats {
	atomic_uint_fast64_t count[S3_OP__COUNT][S3STATS_NSTATUS];
	atomic_uint_fast64_t retries;
	atomic_uint_fast64_t get_bytes;   /* GET bodies received: fills and exact reads */
};

extern const uint16_t s3stats_status[S3STATS_NSTATUS];

/* The engine's hooks (ctx: struct s3stats *): report counts retries,
 * attempt counts every request sent, by op and status, as the server's log
 * does. Status 999 stands for any status not in the table. */
void s3stats_report(void *ctx, const struct s3_request *req);
void s3stats_attempt(void *ctx, int op, unsigned http_status);

#endif
