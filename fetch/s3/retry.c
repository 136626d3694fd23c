// SPDX-License-Identifier: Apache-2.0
/*
 * Retry classification, error mapping, backoff and budget (see retry.h).
 * The only place that turns HTTP statuses and curl codes into -errno.
 */
#include "fetch/s3/retry.h"

#include <curl/curl.h>
#include <errno.h>
#include <string.h>

static bool is_throttle_code(const char *c)
{
	static const char *const codes[] = {
		"SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable",
		"Throttling", "ThrottlingException", "RequestLimitExceeded",
		"TooManyRequestsException", "RequestThrottled", "ExpiredToken",
	};
	for (size_t i = 0; c && i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(c, codes[i]) == 0)
			return true;
	return false;
}

enum retry_class retry_classify_http(long status, const char *s3_code)
{
	if (status >= 200 && status < 300)
		return RETRY_NO;
	if (status == 500 || status == 502 || status == 503 || status == 504 ||
	    status == 429)
		return RETRY_YES;
	if (is_throttle_code(s3_code))
		return strcmp(s3_code, "RequestTimeout") == 0 ? RETRY_TIMEOUT : RETRY_YES;
	return RETRY_NO;
}

enum retry_class retry_classify_curl(int code)
{
	switch (code) {
	case CURLE_OPERATION_TIMEDOUT:
		return RETRY_TIMEOUT;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_WEIRD_SERVER_REPLY:
		return RETRY_YES;
	default:
		return RETRY_NO;
	}
}

int retry_errno_http(long status, const char *s3_code)
{
	if (status >= 200 && status < 300)
		return 0;
	if (s3_code && (strcmp(s3_code, "NoSuchBucket") == 0 ||
			strcmp(s3_code, "NoSuchKey") == 0))
		return -ENOENT;
	switch (status) {
	case 301: case 307: case 400:
		return -EINVAL;
	case 401: case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 412:
		return -ESTALE;
	case 416:
		return -ERANGE;
	case 408: case 504:
		return -ETIMEDOUT;
	default:
		return -EIO;
	}
}

int retry_errno_curl(int code)
{
	switch (code) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_URL_MALFORMAT:
		return -EINVAL;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
		return -EPROTO;
	default:
		return -EIO;
	}
}

uint32_t retry_backoff_ms(unsigned attempt, uint32_t base_ms, uint32_t cap_ms, double rnd)
{
	uint64_t ceiling = base_ms;

	for (unsigned i = 1; i < attempt && ceiling < cap_ms; i++)
		ceiling *= 2;
	if (ceiling > cap_ms)
		ceiling = cap_ms;
	if (rnd < 0 || rnd >= 1)
		rnd = 0;
	return (uint32_t)((double)ceiling * rnd);
}

void retry_budget_init(struct retry_budget *b, int max)
{
	atomic_init(&b->tokens, max);
	b->max = max;
}

bool retry_budget_take(struct retry_budget *b, enum retry_class cls)
{
	int cost = cls == RETRY_TIMEOUT ? RETRY_TIMEOUT_COST : RETRY_COST;
	int cur = atomic_load(&b->tokens);

	while (cur >= cost)
		if (atomic_compare_exchange_weak(&b->tokens, &cur, cur - cost))
			return true;
	return false;
}

void retry_budget_success(struct retry_budget *b)
{
	int cur = atomic_load(&b->tokens);

	while (cur < b->max)
		if (atomic_compare_exchange_weak(&b->tokens, &cur, cur + 1))
			return;
}
