/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Retry policy for S3 requests, as pure functions plus one small shared
 * budget. What is retried: HTTP 500/502/503/504, S3 throttling codes
 * (SlowDown, RequestTimeout, ...), connection resets, timeouts, truncated
 * bodies. What is not: every other 4xx. Delays are "full jitter"
 * exponential backoff: uniform in [0, min(cap, base * 2^attempt)].
 * The budget bounds retries node-wide (a storm of failures cannot multiply
 * load): every retry spends tokens, every success refunds one; when empty,
 * failures are final. Thread-safe (atomic).
 */
#ifndef LITH_S3_RETRY_H
#define LITH_S3_RETRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum retry_class {
	RETRY_NO,        /* final: report the error */
	RETRY_YES,       /* transient: back off and retry */
	RETRY_TIMEOUT,   /* transient timeout: costs more budget */
};

/* Classify an HTTP response (status, S3 error code or ""). */
enum retry_class retry_classify_http(long status, const char *s3_code);
/* Classify a transport failure (a CURLcode value). */
enum retry_class retry_classify_curl(int curl_code);

/* Error mapping (the edge from HTTP/S3 to -errno). */
int retry_errno_http(long status, const char *s3_code);
int retry_errno_curl(int curl_code);

/* Delay before retry number `attempt` (1 = first retry), in milliseconds.
 * rnd is a uniform random number in [0, 1). */
uint32_t retry_backoff_ms(unsigned attempt, uint32_t base_ms, uint32_t cap_ms, double rnd);

struct retry_budget {
	atomic_int tokens;
	int max;
};

#define RETRY_COST 5
#define RETRY_TIMEOUT_COST 10

void retry_budget_init(struct retry_budget *b, int max);
/* Takes the cost for one retry; false when the budget is exhausted. */
bool retry_budget_take(struct retry_budget *b, enum retry_class cls);
/* A request succeeded: refund one token (up to max). */
void retry_budget_success(struct retry_budget *b);

#endif
