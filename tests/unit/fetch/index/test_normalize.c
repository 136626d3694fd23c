// SPDX-License-Identifier: Apache-2.0
/* Unit tests for fetch/index/normalize.c: every rule, every reason. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fetch/index/normalize.h"

static enum index_skip norm(const char *key, const char *prefix, struct index_norm *n)
{
	return index_normalize(key, strlen(key), prefix, strlen(prefix), n);
}

/* Joins the components with '|' for easy comparison. */
static const char *comps(const char *key, const struct index_norm *n)
{
	static char buf[4096];
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n->ncomp; i++) {
		if (i)
			buf[at++] = '|';
		memcpy(buf + at, key + n->comp[i].off, n->comp[i].len);
		at += n->comp[i].len;
	}
	buf[at] = '\0';
	return buf;
}

static void test_plain(void)
{
	struct index_norm n;

	CHECK_INT(norm("a", "", &n), INDEX_SKIP_NONE);
	CHECK_STR(comps("a", &n), "a");
	CHECK(!n.marker);
	CHECK_INT(norm("a/b/c.txt", "", &n), INDEX_SKIP_NONE);
	CHECK_INT(n.ncomp, 3);
	CHECK_STR(comps("a/b/c.txt", &n), "a|b|c.txt");
	CHECK_INT(norm("data/x/y", "data/", &n), INDEX_SKIP_NONE);
	CHECK_STR(comps("data/x/y", &n), "x|y");
	/* bytes other than '/' and NUL are names: spaces, + % ? # &, UTF-8,
	 * invalid UTF-8, control characters, dots that are not "." or ".." */
	const char *odd[] = { "sp ace", "+%?#&", "ünï/cödé", "\xff\xfe", "tab\there",
			      "nl\nx", "...", ".hidden", "..x", "x..", " ", "~" };
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		CHECK_INT(norm(odd[i], "", &n), INDEX_SKIP_NONE);
	CHECK_INT(norm("ünï/cödé", "", &n), INDEX_SKIP_NONE);
	CHECK_STR(comps("ünï/cödé", &n), "ünï|cödé");
}

static void test_markers(void)
{
	struct index_norm n;

	CHECK_INT(norm("d/", "", &n), INDEX_SKIP_NONE);
	CHECK(n.marker);
	CHECK_STR(comps("d/", &n), "d");
	CHECK_INT(norm("a/b/", "", &n), INDEX_SKIP_NONE);
	CHECK(n.marker);
	CHECK_STR(comps("a/b/", &n), "a|b");
	/* the prefix's own marker is the root */
	CHECK_INT(norm("p/", "p/", &n), INDEX_SKIP_NONE);
	CHECK(n.marker);
	CHECK_INT(n.ncomp, 0);
	/* "/" and "p//" are empty names, not the root */
	CHECK_INT(norm("/", "", &n), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(norm("p//", "p/", &n), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(norm("a//", "", &n), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(norm("./", "", &n), INDEX_SKIP_DOT_COMPONENT);
}

static void test_bad_components(void)
{
	struct index_norm n = { .ncomp = 77 };

	CHECK_INT(norm("a//b", "", &n), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(norm("/a", "", &n), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(norm("//", "", &n), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(norm("", "", &n), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(norm(".", "", &n), INDEX_SKIP_DOT_COMPONENT);
	CHECK_INT(norm("..", "", &n), INDEX_SKIP_DOT_COMPONENT);
	CHECK_INT(norm("a/./b", "", &n), INDEX_SKIP_DOT_COMPONENT);
	CHECK_INT(norm("a/../b", "", &n), INDEX_SKIP_DOT_COMPONENT);
	CHECK_INT(norm("a/..", "", &n), INDEX_SKIP_DOT_COMPONENT);
	CHECK_INT(norm("p/../x", "p/", &n), INDEX_SKIP_DOT_COMPONENT);
	/* first offence wins, left to right */
	CHECK_INT(norm("./a//b", "", &n), INDEX_SKIP_DOT_COMPONENT);
	CHECK_INT(norm("a//./b", "", &n), INDEX_SKIP_EMPTY_COMPONENT);
	CHECK_INT(n.ncomp, 77); /* untouched on a skip */
}

static void test_lengths(void)
{
	struct index_norm n;
	char key[1200];

	memset(key, 'x', 255);
	key[255] = '\0';
	CHECK_INT(norm(key, "", &n), INDEX_SKIP_NONE); /* 255: NAME_MAX exactly */
	memset(key, 'x', 256);
	key[256] = '\0';
	CHECK_INT(norm(key, "", &n), INDEX_SKIP_NAME_TOO_LONG);
	memcpy(key, "dir/", 4);
	memset(key + 4, 'y', 300);
	key[304] = '\0';
	CHECK_INT(norm(key, "", &n), INDEX_SKIP_NAME_TOO_LONG);
	/* 1024 bytes is fine, 1025 is not */
	for (int i = 0; i < 1024; i++)
		key[i] = (i % 2) ? '/' : 'a';
	key[1024] = '\0';
	CHECK_INT(norm(key, "", &n), INDEX_SKIP_NONE);
	CHECK(n.marker);
	CHECK_INT(n.ncomp, 512);
	key[1023] = 'b';
	CHECK_INT(norm(key, "", &n), INDEX_SKIP_NONE);
	CHECK_INT(n.ncomp, 512);
	key[1024] = 'c';
	key[1025] = '\0';
	CHECK_INT(norm(key, "", &n), INDEX_SKIP_KEY_TOO_LONG);
}

static void test_nul_and_prefix(void)
{
	struct index_norm n;

	CHECK_INT(index_normalize("a\0b", 3, "", 0, &n), INDEX_SKIP_NUL_BYTE);
	CHECK_INT(index_normalize("a/b\0", 4, "", 0, &n), INDEX_SKIP_NUL_BYTE);
	CHECK_INT(norm("other/x", "data/", &n), INDEX_SKIP_OUTSIDE_PREFIX);
	CHECK_INT(norm("dat", "data/", &n), INDEX_SKIP_OUTSIDE_PREFIX);
	CHECK_INT(norm("data", "data/", &n), INDEX_SKIP_OUTSIDE_PREFIX);
}

static void test_names(void)
{
	CHECK_STR(index_skip_name(INDEX_SKIP_NONE), "none");
	CHECK_STR(index_skip_name(INDEX_SKIP_SHADOWED), "shadowed");
	CHECK_STR(index_skip_name(INDEX_SKIP_DUPLICATE), "duplicate");
	CHECK_STR(index_skip_name(INDEX_SKIP__COUNT), "unknown");
	CHECK_STR(index_skip_name((enum index_skip)-1), "unknown");
	for (int r = 0; r < INDEX_SKIP__COUNT; r++)
		CHECK(strcmp(index_skip_name((enum index_skip)r), "unknown") != 0);
}

int main(void)
{
	test_plain();
	test_markers();
	test_bad_components();
	test_lengths();
	test_nul_and_prefix();
	test_names();
	return check_done();
}
