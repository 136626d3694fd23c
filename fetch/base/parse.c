// SPDX-License-Identifier: Apache-2.0
/* Strict number/size/bool parsers (see parse.h). */
#include "fetch/base/parse.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

static int parse_digits(const char **sp, uint64_t *ret)
{
	const char *s = *sp;
	uint64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*sp = s;
	*ret = v;
	return 0;
}

int parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_digits(&s, &v);
	if (r < 0)
		return r;
	if (*s)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int suffix_shift(const char *s, unsigned *shift)
{
	static const struct { const char *name; unsigned shift; } tab[] = {
		{ "", 0 },    { "B", 0 },    { "K", 10 },  { "KiB", 10 }, { "KB", 10 },
		{ "M", 20 },  { "MiB", 20 }, { "MB", 20 }, { "G", 30 },   { "GiB", 30 },
		{ "GB", 30 }, { "T", 40 },   { "TiB", 40 }, { "TB", 40 },
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strcasecmp(s, tab[i].name) == 0) {
			*shift = tab[i].shift;
			return 0;
		}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *ret)
{
	uint64_t v;
	unsigned shift;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_digits(&s, &v);
	if (r < 0)
		return r;
	r = suffix_shift(s, &shift);
	if (r < 0)
		return r;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = v << shift;
	return 0;
}

int parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

int parse_range(const char *s, uint64_t *ret_first, uint64_t *ret_last)
{
	uint64_t a, b;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_digits(&s, &a);
	if (r < 0)
		return r;
	if (*s++ != '-')
		return -EINVAL;
	r = parse_digits(&s, &b);
	if (r < 0)
		return r;
	if (*s || b < a)
		return -EINVAL;
	*ret_first = a;
	*ret_last = b;
	return 0;
}
