// SPDX-License-Identifier: Apache-2.0
/* Unit tests for fetch/base: strict parsers and the bounded buffer. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "fetch/base/parse.h"
#include "fetch/base/strbuf.h"

static void test_parse_size(void)
{
	uint64_t v = 7;

	CHECK_INT(parse_size("4096", &v), 0);
	CHECK_INT(v, 4096);
	CHECK_INT(parse_size("8M", &v), 0);
	CHECK_INT(v, 8 << 20);
	CHECK_INT(parse_size("1GiB", &v), 0);
	CHECK_INT(v, 1 << 30);
	CHECK_INT(parse_size("2kb", &v), 0);
	CHECK_INT(v, 2048);
	v = 7;
	CHECK_INT(parse_size("-1", &v), -EINVAL);
	CHECK_INT(parse_size("12Q", &v), -EINVAL);
	CHECK_INT(parse_size("", &v), -EINVAL);
	CHECK_INT(parse_size(" 1", &v), -EINVAL);
	CHECK_INT(parse_size("99999999999999999999", &v), -ERANGE);
	CHECK_INT(parse_size("17179869184G", &v), -ERANGE);
	CHECK_INT(v, 7); /* untouched on failure */
}

static void test_parse_misc(void)
{
	uint64_t a = 0, b = 0;
	bool t = false;

	CHECK_INT(parse_u64("18446744073709551615", &a), 0);
	CHECK(a == UINT64_MAX);
	CHECK_INT(parse_u64("18446744073709551616", &a), -ERANGE);
	CHECK_INT(parse_u64("12x", &a), -EINVAL);
	CHECK_INT(parse_bool("Yes", &t), 0);
	CHECK(t);
	CHECK_INT(parse_bool("off", &t), 0);
	CHECK(!t);
	CHECK_INT(parse_bool("maybe", &t), -EINVAL);
	CHECK_INT(parse_range("0-9", &a, &b), 0);
	CHECK_INT(a, 0);
	CHECK_INT(b, 9);
	CHECK_INT(parse_range("9-0", &a, &b), -EINVAL);
	CHECK_INT(parse_range("5-", &a, &b), -EINVAL);
	CHECK_INT(parse_range("-5", &a, &b), -EINVAL);
}

static void test_strbuf(void)
{
	struct strbuf b;
	char *p;

	strbuf_init(&b, 10);
	CHECK_INT(strbuf_appends(&b, "hello"), 0);
	CHECK_INT(strbuf_appendf(&b, "%d", 1234), 0);
	CHECK_STR(b.p, "hello1234");
	CHECK_INT(strbuf_appends(&b, "xy"), -E2BIG); /* 11 > max */
	CHECK_STR(b.p, "hello1234");                /* unchanged */
	CHECK_INT(strbuf_appends(&b, "x"), 0);
	CHECK_INT(b.len, 10);
	p = strbuf_steal(&b);
	CHECK_STR(p, "hello1234x");
	CHECK_INT(b.len, 0);
	free(p);
	strbuf_free(&b);
}

int main(void)
{
	test_parse_size();
	test_parse_misc();
	test_strbuf();
	return check_done();
}
