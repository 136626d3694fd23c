// SPDX-License-Identifier: Apache-2.0
/* Response validation helpers (see response.h). Pure, thread-safe. */
#include "fetch/s3/response.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <time.h>


static int parse_num(const char **sp, uint64_t *ret)
{
	const char *s = *sp;
	uint64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*sp = s;
	*ret = v;
	return 0;
}

int response_parse_content_range(const char *v, struct content_range *ret)
{
	struct content_range cr;

	if (!v || strncasecmp(v, "bytes ", 6) != 0)
		return -EINVAL;
	v += 6;
	if (parse_num(&v, &cr.first) < 0 || *v++ != '-' || parse_num(&v, &cr.last) < 0 ||
	    *v++ != '/')
		return -EINVAL;
	if (v[0] == '*' && v[1] == '\0')
		cr.total = UINT64_MAX;
	else if (parse_num(&v, &cr.total) < 0 || *v != '\0')
		return -EINVAL;
	if (cr.last < cr.first || (cr.total != UINT64_MAX && cr.last >= cr.total))
		return -EINVAL;
	*ret = cr;
	return 0;
}

static int check_partial(uint64_t offset, uint64_t length, const char *content_range,
			 uint64_t content_length, uint64_t *ret_expect, uint64_t *ret_total)
{
	struct content_range cr;
	uint64_t want_last;

	if (response_parse_content_range(content_range, &cr) < 0 || cr.total == UINT64_MAX)
		return -EPROTO;
	want_last = length ? offset + length - 1 : cr.total - 1;
	if (want_last >= cr.total)
		want_last = cr.total - 1; /* a range past EOF is cut at EOF */
	if (cr.first != offset || cr.last != want_last)
		return -EPROTO;
	if (content_length != cr.last - cr.first + 1)
		return -EPROTO;
	*ret_expect = content_length;
	*ret_total = cr.total;
	return 0;
}

int response_check_range(uint64_t offset, uint64_t length, long status,
			 const char *content_range, uint64_t content_length,
			 uint64_t *ret_expect, uint64_t *ret_total)
{
	if (status == 206)
		return check_partial(offset, length, content_range, content_length,
				     ret_expect, ret_total);
	if (status != 200)
		return -EPROTO;
	/* A full body answers the request only if it starts where we asked
	 * and the request did not ask for a proper sub-range of it. */
	if (offset != 0 || (length && content_length > length))
		return -EPROTO;
	*ret_expect = content_length;
	*ret_total = content_length;
	return 0;
}

void response_etag_normalize(const char *v, size_t n, char *out, size_t cap)
{
	size_t len;

	while (n && isspace((unsigned char)*v))
		v++, n--;
	while (n && isspace((unsigned char)v[n - 1]))
		n--;
	if (n >= 2 && strncmp(v, "W/", 2) == 0)
		v += 2, n -= 2;
	if (n >= 2 && v[0] == '"' && v[n - 1] == '"')
		v++, n -= 2;
	len = n < cap - 1 ? n : cap - 1;
	memcpy(out, v, len);
	out[len] = '\0';
}

bool response_etag_equal(const char *a, const char *b)
{
	char na[256], nb[256];

	response_etag_normalize(a, strlen(a), na, sizeof(na));
	response_etag_normalize(b, strlen(b), nb, sizeof(nb));
	return strcmp(na, nb) == 0;
}

bool response_header_value(const char *line, size_t n, const char *name,
			   char *out, size_t cap)
{
	size_t nl = strlen(name), len;

	if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return false;
	line += nl + 1;
	n -= nl + 1;
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n && isspace((unsigned char)line[n - 1]))
		n--;
	len = n < cap - 1 ? n : cap - 1;
	memcpy(out, line, len);
	out[len] = '\0';
	return true;
}

int response_parse_http_date(const char *v, int64_t *ret)
{
	struct tm tm = { 0 };
	const char *end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);

	if (!end || *end)
		return -EINVAL;
	*ret = (int64_t)timegm(&tm);
	return 0;
}
