// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for fetch/base/yamlcfg: a good config through every getter,
 * hostile inputs (aliases, billion laughs, deep nesting, huge files, too
 * many or too long keys, tags, sequences, several documents, NUL bytes),
 * bad values reported with line:column, and unknown keys with suggestions.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fetch/base/clock.h"
#include "fetch/base/yamlcfg.h"


/* Open descriptors, to catch leaks (the DIR's own fd counts both times). */
static char err[1024];

static int load(const char *text, struct yamlcfg **ret)
{
	err[0] = '\0';
	return yamlcfg_load_buf(text, strlen(text), "t.yaml", ret, err, sizeof(err));
}

/* Loading must fail with r, and the message must contain want. */
#define CHECK_REJECT(text, r, want)                                         \
	do {                                                                \
		struct yamlcfg *_c = (struct yamlcfg *)0x1;                 \
		CHECK_INT(load(text, &_c), r);                              \
		CHECK(_c == (struct yamlcfg *)0x1);                         \
		if (!strstr(err, want))                                     \
			fprintf(stderr, "  message: %s (want %s)\n", err, want); \
		CHECK(strstr(err, want) != NULL);                           \
	} while (0)

static const char good[] =
	"# lith cached config\n"
	"socket: /run/lith/cached.sock\n"
	"cache_size: 10G\n"
	"s3:\n"
	"  max_connections: 64\n"
	"  region: \"us-east-1\"\n"
	"  retry: {max: 5, base_delay: 50}\n"
	"verbose: yes\n"
	"empty:\n"
	"quoted: 'a: b # not a comment'\n";

static void test_good(void)
{
	struct yamlcfg *c = NULL;
	const char *s = NULL, *k = NULL, *v = NULL;
	uint64_t u = 0;
	bool b = false;
	unsigned line = 0;

	CHECK_INT(load(good, &c), 0);
	CHECK_INT(yamlcfg_count(c), 9);
	CHECK_STR(yamlcfg_get(c, "socket"), "/run/lith/cached.sock");
	CHECK_STR(yamlcfg_get(c, "s3.region"), "us-east-1");
	CHECK_STR(yamlcfg_get(c, "s3.retry.base_delay"), "50");
	CHECK_STR(yamlcfg_get(c, "empty"), "");
	CHECK_STR(yamlcfg_get(c, "quoted"), "a: b # not a comment");
	CHECK(yamlcfg_get(c, "s3") == NULL);
	CHECK(yamlcfg_get(c, "nope") == NULL);
	CHECK_INT(yamlcfg_get_size(c, "cache_size", 0, UINT64_MAX, &u, err, sizeof(err)), 0);
	CHECK(u == 10ull << 30);
	CHECK_INT(yamlcfg_get_u64(c, "s3.max_connections", 1, 1024, &u, err, sizeof(err)), 0);
	CHECK_INT(u, 64);
	CHECK_INT(yamlcfg_get_bool(c, "verbose", &b, err, sizeof(err)), 0);
	CHECK(b);
	CHECK_INT(yamlcfg_get_string(c, "s3.region", &s, err, sizeof(err)), 0);
	CHECK_STR(s, "us-east-1");
	CHECK_INT(yamlcfg_at(c, 2, &k, &v, &line), 0);
	CHECK_STR(k, "s3.max_connections");
	CHECK_INT(line, 5);
	CHECK_INT(yamlcfg_at(c, 9, &k, &v, &line), -ENOENT);
	/* Absent: -ENOENT, default kept, message untouched. */
	u = 7;
	strcpy(err, "untouched");
	CHECK_INT(yamlcfg_get_u64(c, "absent", 0, 10, &u, err, sizeof(err)), -ENOENT);
	CHECK_INT(u, 7);
	CHECK_STR(err, "untouched");
	yamlcfg_free(c);
	yamlcfg_free(NULL);
}

static void test_empty_docs(void)
{
	struct yamlcfg *c = NULL;

	CHECK_INT(yamlcfg_load_buf(NULL, 0, NULL, &c, err, sizeof(err)), 0);
	CHECK_INT(yamlcfg_count(c), 0);
	yamlcfg_free(c);
	c = NULL;
	CHECK_INT(load("", &c), 0);
	CHECK_INT(yamlcfg_count(c), 0);
	yamlcfg_free(c);
	c = NULL;
	CHECK_INT(load("# only a comment\n---\n", &c), 0);
	CHECK_INT(yamlcfg_count(c), 0);
	yamlcfg_free(c);
	c = NULL;
	CHECK_INT(load("a: {}\n", &c), 0);
	CHECK_INT(yamlcfg_count(c), 0);
	yamlcfg_free(c);
}

static void test_bad_values(void)
{
	struct yamlcfg *c = NULL;
	uint64_t u = 3;
	bool b = true;

	CHECK_INT(load("s3:\n  max_connections: 64x\n  slots: 0\nverbose: maybe\n"
		       "cache_size: 99999999999T\n", &c), 0);
	CHECK_INT(yamlcfg_get_u64(c, "s3.max_connections", 1, 1024, &u, err, sizeof(err)),
		  -EINVAL);
	CHECK_STR(err, "t.yaml:2:20: s3.max_connections: \"64x\" is not an unsigned integer");
	CHECK_INT(u, 3);
	CHECK_INT(yamlcfg_get_u64(c, "s3.slots", 1, 1024, &u, err, sizeof(err)), -ERANGE);
	CHECK_STR(err, "t.yaml:3:10: s3.slots: 0 is outside [1, 1024]");
	CHECK_INT(yamlcfg_get_bool(c, "verbose", &b, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "t.yaml:4:10: verbose: \"maybe\" is not a boolean") != NULL);
	CHECK(b);
	CHECK_INT(yamlcfg_get_size(c, "cache_size", 0, UINT64_MAX, &u, err, sizeof(err)),
		  -ERANGE);
	CHECK(strstr(err, "t.yaml:5:13: cache_size: \"99999999999T\" is out of range") != NULL);
	CHECK_INT(u, 3);
	yamlcfg_free(c);
}

static void test_unknown_keys(void)
{
	static const char *const known[] = { "socket", "cache_size", "s3.max_connections",
					     "s3.region", "labels.*" };
	struct yamlcfg *c = NULL;

	CHECK_INT(load("socket: /s\ns3:\n  max_conections: 8\nlabels:\n  team: ml\n"
		       "labels_x: 1\ncompletely_different: 2\n", &c), 0);
	CHECK_INT(yamlcfg_unknown(c, known, 5, err, sizeof(err)), 3);
	CHECK(strstr(err, "t.yaml:3:3: unknown key \"s3.max_conections\" (did you mean "
		      "\"s3.max_connections\"?)") != NULL);
	CHECK(strstr(err, "t.yaml:6:1: unknown key \"labels_x\"") != NULL);
	CHECK(strstr(err, "completely_different\"; ") == NULL); /* no hint, last */
	CHECK(strstr(err, "labels.team") == NULL);
	char tiny[16];
	CHECK_INT(yamlcfg_unknown(c, known, 5, tiny, sizeof(tiny)), 3); /* truncates safely */
	CHECK_INT(strlen(tiny), 15);
	yamlcfg_free(c);
	c = NULL;
	CHECK_INT(load("socket: /s\n", &c), 0);
	CHECK_INT(yamlcfg_unknown(c, known, 5, err, sizeof(err)), 0);
	yamlcfg_free(c);
}

static void test_hostile_constructs(void)
{
	CHECK_REJECT("a: &x 1\nb: *x\n", -EINVAL, "t.yaml:1:4: anchors are not supported");
	CHECK_REJECT("a: *x\n", -EINVAL, "t.yaml:1:4:");
	CHECK_REJECT("base: &b {x: 1}\nother: *b\n", -EINVAL, "anchors are not supported");
	CHECK_REJECT("a: !!python/object:os.system 1\n", -EINVAL, "tags are not supported");
	CHECK_REJECT("%TAG ! tag:x.org,2000:\n---\na: 1\n", -EINVAL, "%TAG");
	CHECK_REJECT("a: [1, 2]\n", -EINVAL, "t.yaml:1:4: sequences are not supported");
	CHECK_REJECT("a:\n  - 1\n", -EINVAL, "t.yaml:2:3: sequences are not supported");
	CHECK_REJECT("- a\n- b\n", -EINVAL, "sequences are not supported");
	CHECK_REJECT("just a scalar\n", -EINVAL, "t.yaml:1:1: top level must be a mapping");
	CHECK_REJECT("a: 1\n---\nb: 2\n", -EINVAL, "t.yaml:2:1: more than one document");
	CHECK_REJECT("a: 1\nb: 2\na: 3\n", -EINVAL, "t.yaml:3:4: duplicate key \"a\"");
	CHECK_REJECT("s3:\n  x: 1\ns3:\n  x: 2\n", -EINVAL, "duplicate key \"s3.x\"");
	CHECK_REJECT("s3: 1\ns3:\n  x: 2\n", -EINVAL, "t.yaml:3:6: key is both a value and a mapping: \"s3.x\"");
	CHECK_REJECT("s3:\n  x: 2\ns3: 1\n", -EINVAL, "key is both a value and a mapping: \"s3\"");
	CHECK_REJECT("? {a: 1}\n: 2\n", -EINVAL, "keys must be scalars");
	CHECK_REJECT("a.b: 1\n", -EINVAL, "key may only contain");
	CHECK_REJECT("\"\": 1\n", -EINVAL, "empty key");
	CHECK_REJECT("a: \"x\\0y\"\n", -EINVAL, "NUL byte in value of key \"a\"");
	CHECK_REJECT("a: {b: 1\n", -EINVAL, "t.yaml:2:1:");
	CHECK_REJECT("a: \"unterminated\n", -EINVAL, "t.yaml:2:1: found unexpected end of stream");
	CHECK_REJECT("a: 1\n b: 2\n", -EINVAL, "t.yaml:");
	CHECK_REJECT("a:\n  b:\n    c:\n      d:\n        e: 1\n", -EINVAL,
		     "t.yaml:5:9: nesting deeper than 4 under \"a.b.c.d\"");
}

static void test_billion_laughs(void)
{
	static const char lol[] =
		"a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
		"b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
		"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
		"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
		"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
		"h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
		"i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
	static const char lol_map[] = "a: &a {x: 1}\nb: &b {p: *a, q: *a}\nc: {p: *b, q: *b}\n";

	CHECK_REJECT(lol, -EINVAL, "t.yaml:1:4: anchors are not supported");
	CHECK_REJECT(lol_map, -EINVAL, "t.yaml:1:4: anchors are not supported");
}

static char *repeat(const char *unit, size_t times, const char *tail)
{
	size_t ul = strlen(unit), tl = strlen(tail);
	char *p = malloc(ul * times + tl + 1);

	for (size_t i = 0; i < times; i++)
		memcpy(p + i * ul, unit, ul);
	memcpy(p + ul * times, tail, tl + 1);
	return p;
}

static void test_deep_nesting(void)
{
	uint64_t t0 = clock_mono_ns();
	char *flow = repeat("{a: ", 100000, "1");
	char *seq = repeat("[", 200000, "");
	char *block = malloc(64 * 1024);
	size_t off = 0;

	CHECK_REJECT(flow, -EINVAL, "nesting deeper than 4 under \"a.a.a.a\"");
	CHECK_REJECT(seq, -EINVAL, "t.yaml:1:1: sequences are not supported");
	for (int d = 0; d < 100; d++)
		off += (size_t)sprintf(block + off, "%*sk:\n", 2 * d, "");
	CHECK_REJECT(block, -EINVAL, "nesting deeper than 4");
	CHECK(clock_mono_ns() - t0 < 2000000000ull); /* rejected early, not parsed through */
	free(flow);
	free(seq);
	free(block);
}

static void test_limits(void)
{
	struct yamlcfg *c = NULL;
	char *big, *p;
	size_t off = 0;

	big = malloc(YAMLCFG_MAX_FILE + 2);
	memset(big, '#', YAMLCFG_MAX_FILE + 1);
	big[YAMLCFG_MAX_FILE + 1] = '\0';
	CHECK_INT(yamlcfg_load_buf(big, YAMLCFG_MAX_FILE + 1, "t.yaml", &c, err, sizeof(err)),
		  -EFBIG);
	CHECK(strstr(err, "larger than 1048576 bytes") != NULL);
	big[YAMLCFG_MAX_FILE - 1] = '\n';
	CHECK_INT(yamlcfg_load_buf(big, YAMLCFG_MAX_FILE, "t.yaml", &c, err, sizeof(err)), 0);
	yamlcfg_free(c);
	c = NULL;
	for (unsigned i = 0; i <= YAMLCFG_MAX_KEYS; i++)
		off += (size_t)sprintf(big + off, "k%u: %u\n", i, i);
	CHECK_REJECT(big, -E2BIG, "t.yaml:1025:");
	p = repeat("k", YAMLCFG_MAX_KEY_LEN + 1, ": 1\n");
	CHECK_REJECT(p, -ENAMETOOLONG, "t.yaml:1:1: key too long");
	free(p);
	p = repeat("v", YAMLCFG_MAX_VALUE_LEN + 4, "\n");
	memcpy(p, "a: ", 3);
	CHECK_REJECT(p, -EMSGSIZE, "value too long for key \"a\"");
	free(p);
	free(big);
}

static void test_files(void)
{
	char dir[] = "/tmp/lith-yamlcfg-XXXXXX", path[256];
	struct yamlcfg *c = NULL;
	int fd;

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/lith.yaml", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(write(fd, good, strlen(good)) == (ssize_t)strlen(good));
	close(fd);
	CHECK_INT(yamlcfg_load_file(path, &c, err, sizeof(err)), 0);
	CHECK_INT(yamlcfg_count(c), 9);
	yamlcfg_free(c);
	c = NULL;
	/* 2 MiB file: refused before reading it. */
	CHECK(truncate(path, 2 << 20) == 0);
	CHECK_INT(yamlcfg_load_file(path, &c, err, sizeof(err)), -EFBIG);
	CHECK(strstr(err, "lith.yaml: larger than") != NULL);
	unlink(path);
	CHECK_INT(yamlcfg_load_file(path, &c, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "No such file") != NULL);
	CHECK_INT(yamlcfg_load_file(dir, &c, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "not a regular file") != NULL);
	CHECK(c == NULL);
	rmdir(dir);
}

int main(void)
{
	int fds0 = check_count_fds();

	test_good();
	test_empty_docs();
	test_bad_values();
	test_unknown_keys();
	test_hostile_constructs();
	test_billion_laughs();
	test_deep_nesting();
	test_limits();
	test_files();
	CHECK_INT(check_count_fds(), fds0); /* nothing leaked */
	return check_done();
}
