// SPDX-License-Identifier: Apache-2.0
/* Bounded growable buffer (see strbuf.h). */
#include "fetch/base/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(struct strbuf *b, size_t max)
{
	*b = (struct strbuf){ .max = max };
}

void strbuf_free(struct strbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void strbuf_reset(struct strbuf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

static int strbuf_reserve(struct strbuf *b, size_t extra)
{
	size_t need, ncap;
	char *np;

	if (extra > b->max || b->len > b->max - extra)
		return -E2BIG;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 64;
	while (ncap < need)
		ncap *= 2;
	np = realloc(b->p, ncap);
	if (!np)
		return -ENOMEM;
	b->p = np;
	b->cap = ncap;
	return 0;
}

int strbuf_append(struct strbuf *b, const void *data, size_t n)
{
	int r = strbuf_reserve(b, n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int strbuf_appends(struct strbuf *b, const char *s)
{
	return strbuf_append(b, s, strlen(s));
}

int strbuf_appendf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	r = strbuf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *strbuf_steal(struct strbuf *b)
{
	char *p;
	if (!b->p) {
		if (strbuf_reserve(b, 0) < 0)
			return NULL;
		b->p[0] = '\0';
	}
	p = b->p;
	*b = (struct strbuf){ .max = b->max };
	return p;
}
