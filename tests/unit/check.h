/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal unit-test harness: CHECK* record a failure with file:line and keep
 * going; check_done() prints "N passed, N failed" and returns the exit code.
 * Each test_*.c is one ctest executable.
 */
#ifndef LITH_TEST_CHECK_H
#define LITH_TEST_CHECK_H

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_pass, check_fail;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			check_pass++;                                          \
		} else {                                                       \
			check_fail++;                                          \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
		}                                                              \
	} while (0)

#define CHECK_INT(a, b)                                                              \
	do {                                                                         \
		long long _a = (long long)(a), _b = (long long)(b);                  \
		if (_a == _b) {                                                      \
			check_pass++;                                                \
		} else {                                                             \
			check_fail++;                                                \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n",  \
				__FILE__, __LINE__, #a, _a, #b, _b);                 \
		}                                                                    \
	} while (0)

#define CHECK_STR(a, b)                                                              \
	do {                                                                         \
		const char *_a = (a), *_b = (b);                                     \
		if (_a && _b && strcmp(_a, _b) == 0) {                               \
			check_pass++;                                                \
		} else {                                                             \
			check_fail++;                                                \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",    \
				__FILE__, __LINE__, #a, _a ? _a : "(null)",          \
				_b ? _b : "(null)");                                 \
		}                                                                    \
	} while (0)

/* Open descriptors of this process (tests compare it before and after, so a
 * leaked fd fails them). */
static inline int check_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static inline int check_done(void)
{
	printf("%d passed, %d failed\n", check_pass, check_fail);
	return check_fail ? 1 : 0;
}

#endif
