/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable byte buffer with a hard maximum. Appends past `max` fail with
 * -E2BIG and leave the buffer unchanged; the content is always NUL-terminated
 * (the NUL is not counted in len). The buffer owns `p`; strbuf_free releases it.
 */
#ifndef LITH_BASE_STRBUF_H
#define LITH_BASE_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *p;
	size_t len;
	size_t cap;
	size_t max;
};

void strbuf_init(struct strbuf *b, size_t max);
void strbuf_free(struct strbuf *b);
void strbuf_reset(struct strbuf *b);
int strbuf_append(struct strbuf *b, const void *data, size_t n);
int strbuf_appends(struct strbuf *b, const char *s);
int strbuf_appendf(struct strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Hands the bytes to the caller (never NULL on success); buffer becomes empty. */
char *strbuf_steal(struct strbuf *b);

#endif
