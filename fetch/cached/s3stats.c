// SPDX-License-Identifier: Apache-2.0
/* S3 request counters (see s3stats.h). */
#include "fetch/cached/s3stats.h"

const uint16_t s3stats_status[S3STATS_NSTATUS] = {
	0, 200, 206, 301, 307, 400, 403, 404, 412, 416, 500, 503, 504, 999,
};

void s3stats_report(void *ctx, const struct s3_request *req)
{
	struct s3stats *s = ctx;

	atomic_fetch_add_explicit(&s->retries, req->res.retries, memory_order_relaxed);
	if (req->op == S3_OP_GET && req->res.err == 0)
		atomic_fetch_add_explicit(&s->get_bytes, req->res.bytes, memory_order_relaxed);
}

void s3stats_attempt(void *ctx, int op, unsigned http_status)
{
	struct s3stats *s = ctx;
	unsigned i = S3STATS_NSTATUS - 1;

	for (unsigned k = 0; k < S3STATS_NSTATUS - 1; k++)
		if (s3stats_status[k] == http_status)
			i = k;
	if (op >= 0 && op < S3_OP__COUNT)
		atomic_fetch_add_explicit(&s->count[op][i], 1, memory_order_relaxed);
}
