// SPDX-License-Identifier: Apache-2.0
/* Unit tests for fetch/s3/response: Content-Range checks and ETag pinning. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "fetch/s3/response.h"

static void test_content_range(void)
{
	struct content_range cr;

	CHECK_INT(response_parse_content_range("bytes 0-9/100", &cr), 0);
	CHECK_INT(cr.first, 0);
	CHECK_INT(cr.last, 9);
	CHECK_INT(cr.total, 100);
	CHECK_INT(response_parse_content_range("bytes 5-5/*", &cr), 0);
	CHECK(cr.total == UINT64_MAX);
	CHECK_INT(response_parse_content_range("bytes 9-0/100", &cr), -EINVAL);
	CHECK_INT(response_parse_content_range("bytes 0-100/100", &cr), -EINVAL);
	CHECK_INT(response_parse_content_range("bytes 0-9/100x", &cr), -EINVAL);
	CHECK_INT(response_parse_content_range("items 0-9/100", &cr), -EINVAL);
	CHECK_INT(response_parse_content_range("bytes */100", &cr), -EINVAL);
	CHECK_INT(response_parse_content_range("bytes 0-99999999999999999999/1", &cr), -EINVAL);
}

static void test_check_range(void)
{
	uint64_t expect = 0, total = 0;

	/* exact range */
	CHECK_INT(response_check_range(10, 10, 206, "bytes 10-19/100", 10, &expect, &total), 0);
	CHECK_INT(expect, 10);
	CHECK_INT(total, 100);
	/* a range past EOF is cut at EOF */
	CHECK_INT(response_check_range(90, 20, 206, "bytes 90-99/100", 10, &expect, &total), 0);
	CHECK_INT(expect, 10);
	/* the server answered another range */
	CHECK_INT(response_check_range(10, 10, 206, "bytes 0-9/100", 10, &expect, &total),
		  -EPROTO);
	/* Content-Length disagrees with Content-Range */
	CHECK_INT(response_check_range(10, 10, 206, "bytes 10-19/100", 9, &expect, &total),
		  -EPROTO);
	/* missing Content-Range on 206 */
	CHECK_INT(response_check_range(10, 10, 206, NULL, 10, &expect, &total), -EPROTO);
	/* full body for a sub-range that does not start at 0 */
	CHECK_INT(response_check_range(10, 10, 200, NULL, 100, &expect, &total), -EPROTO);
	/* full body larger than a range from 0 */
	CHECK_INT(response_check_range(0, 10, 200, NULL, 100, &expect, &total), -EPROTO);
	/* full body that is the whole (small) object */
	CHECK_INT(response_check_range(0, 10, 200, NULL, 7, &expect, &total), 0);
	CHECK_INT(expect, 7);
	/* whole-object GET */
	CHECK_INT(response_check_range(0, 0, 200, NULL, 1234, &expect, &total), 0);
	CHECK_INT(total, 1234);
	CHECK_INT(response_check_range(0, 0, 304, NULL, 0, &expect, &total), -EPROTO);
}

static void test_etag(void)
{
	char out[64];

	response_etag_normalize("\"abc\"", 5, out, sizeof(out));
	CHECK_STR(out, "abc");
	response_etag_normalize(" W/\"abc-2\" ", 11, out, sizeof(out));
	CHECK_STR(out, "abc-2");
	CHECK(response_etag_equal("\"abc\"", "abc"));
	CHECK(!response_etag_equal("\"abc\"", "abd"));
	response_etag_normalize("\"0123456789\"", 12, out, 5);
	CHECK_STR(out, "0123");
}

static void test_headers(void)
{
	char v[16];
	int64_t t = 0;
	const char *line = "Content-Range:  bytes 0-1/2 \r\n";

	CHECK(response_header_value(line, strlen(line), "content-range", v, sizeof(v)));
	CHECK_STR(v, "bytes 0-1/2");
	CHECK(!response_header_value(line, strlen(line), "content-length", v, sizeof(v)));
	CHECK(!response_header_value("ETagX: 1\r\n", 10, "etag", v, sizeof(v)));
	CHECK_INT(response_parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT", &t), 0);
	CHECK_INT(t, 1445412480);
	CHECK_INT(response_parse_http_date("yesterday", &t), -EINVAL);
}

int main(void)
{
	test_content_range();
	test_check_range();
	test_etag();
	test_headers();
	return check_done();
}
