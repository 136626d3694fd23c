// SPDX-License-Identifier: Apache-2.0
/* Unit tests for fetch/s3/retry: classification, errno mapping, backoff, budget. */
#include <curl/curl.h>
#include <errno.h>

#include "check.h"
#include "fetch/s3/retry.h"

static void test_classify(void)
{
	CHECK_INT(retry_classify_http(500, "InternalError"), RETRY_YES);
	CHECK_INT(retry_classify_http(503, "SlowDown"), RETRY_YES);
	CHECK_INT(retry_classify_http(400, "RequestTimeout"), RETRY_TIMEOUT);
	CHECK_INT(retry_classify_http(403, "SignatureDoesNotMatch"), RETRY_NO);
	CHECK_INT(retry_classify_http(404, "NoSuchKey"), RETRY_NO);
	CHECK_INT(retry_classify_http(412, "PreconditionFailed"), RETRY_NO);
	CHECK_INT(retry_classify_curl(CURLE_RECV_ERROR), RETRY_YES);
	CHECK_INT(retry_classify_curl(CURLE_PARTIAL_FILE), RETRY_YES);
	CHECK_INT(retry_classify_curl(CURLE_OPERATION_TIMEDOUT), RETRY_TIMEOUT);
	CHECK_INT(retry_classify_curl(CURLE_URL_MALFORMAT), RETRY_NO);
	CHECK_INT(retry_classify_curl(CURLE_PEER_FAILED_VERIFICATION), RETRY_NO);
}

static void test_errno(void)
{
	CHECK_INT(retry_errno_http(404, "NoSuchKey"), -ENOENT);
	CHECK_INT(retry_errno_http(404, "NoSuchBucket"), -ENOENT);
	CHECK_INT(retry_errno_http(403, "AccessDenied"), -EACCES);
	CHECK_INT(retry_errno_http(403, "SignatureDoesNotMatch"), -EACCES);
	CHECK_INT(retry_errno_http(412, "PreconditionFailed"), -ESTALE);
	CHECK_INT(retry_errno_http(416, "InvalidRange"), -ERANGE);
	CHECK_INT(retry_errno_http(503, "SlowDown"), -EIO);
	CHECK_INT(retry_errno_curl(CURLE_OPERATION_TIMEDOUT), -ETIMEDOUT);
	CHECK_INT(retry_errno_curl(CURLE_RECV_ERROR), -EIO);
	CHECK_INT(retry_errno_curl(CURLE_COULDNT_CONNECT), -ECONNREFUSED);
}

static void test_backoff(void)
{
	/* Full jitter: the ceiling doubles per attempt and stops at the cap. */
	CHECK_INT(retry_backoff_ms(1, 50, 5000, 0.999999), 49);
	CHECK_INT(retry_backoff_ms(2, 50, 5000, 0.999999), 99);
	CHECK_INT(retry_backoff_ms(4, 50, 5000, 0.5), 200);
	CHECK_INT(retry_backoff_ms(30, 50, 5000, 0.5), 2500);
	CHECK_INT(retry_backoff_ms(3, 50, 5000, 0.0), 0);
	CHECK_INT(retry_backoff_ms(3, 50, 5000, 1.5), 0); /* out-of-range rnd */
}

static void test_budget(void)
{
	struct retry_budget b;
	int taken = 0;

	retry_budget_init(&b, 20);
	while (retry_budget_take(&b, RETRY_YES))
		taken++;
	CHECK_INT(taken, 4); /* 20 tokens / 5 per retry */
	CHECK(!retry_budget_take(&b, RETRY_YES));
	for (int i = 0; i < 10; i++)
		retry_budget_success(&b);
	CHECK(retry_budget_take(&b, RETRY_TIMEOUT)); /* 10 tokens buy one timeout retry */
	CHECK(!retry_budget_take(&b, RETRY_YES));
	for (int i = 0; i < 100; i++)
		retry_budget_success(&b);
	CHECK_INT(atomic_load(&b.tokens), 20); /* capped at max */
}

int main(void)
{
	test_classify();
	test_errno();
	test_backoff();
	test_budget();
	return check_done();
}
