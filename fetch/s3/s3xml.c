// SPDX-License-Identifier: Apache-2.0
/*
 * Bounded expat parsers for the ListObjectsV2 result and the S3 <Error> body
 * (see s3xml.h). Invariants: a DOCTYPE or entity declaration stops the parser
 * at once (no internal subset, no entity expansion, no external fetch); depth,
 * document size, entry count and every captured field have a hard cap; the
 * result is built in a private state and handed to *ret only when the whole
 * document parsed and validated, so a failure never leaks a partial page.
 * Elements are matched on their local name (namespace-aware parser), unknown
 * elements are skipped. encoding-type=url is undone after the parse, because
 * <EncodingType> may come after the entries it governs.
 *
 * How servers encode under encoding-type=url (RGW 16.2 recorded live, see
 * tests/unit/fetch/s3/data; AWS from measurements and botocore, which undoes
 * it with unquote_plus): AWS S3 sends a space as '+', Ceph RGW as "%20"; both
 * send a literal '+' as "%2B" and '%' as "%25", so '+' -> ' ' plus %XX
 * decoding is right for both. RGW echoes the top-level <Prefix>, <Delimiter>
 * and <StartAfter> unencoded even under encoding-type=url: Delimiter and
 * StartAfter are not read at all, the echoed Prefix see decode_echo_prefix().
 * RGW's NextContinuationToken is the last raw key; a control character in it
 * comes out as an XML-invalid &#x01; and the page is rejected.
 *
 * Pure functions on caller memory; thread-safe; runs in whatever thread
 * calls it (the fetch daemon's S3 workers).
 */
#include "fetch/s3/s3xml.h"

#include <errno.h>
#include <expat.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "fetch/base/macro.h"
#include "fetch/base/parse.h"
#include "fetch/base/strbuf.h"

/* Expat joins namespace URI and local name with this; it cannot occur in
 * well-formed XML 1.0, so the local name is what follows its last use. */
#define NS_SEP '\x01'
/* An encoded key may be three times its decoded length ("%XX" per byte). */
#define KEY_RAW_MAX (3u * S3XML_MAX_KEY)
#define SMALL_MAX 64u

/* ---- shared expat plumbing ------------------------------------------------ */

struct xbase {
	XML_Parser xp; /* non-NULL only while XML_Parse runs */
	int rc;        /* first failure, sticky; 0 while fine */
	char *err;
	size_t errlen;
	unsigned depth;
};

static void vseterr(struct xbase *b, int rc, const char *fmt, va_list ap)
{
	if (b->rc < 0)
		return; /* keep the first reason */
	b->rc = rc;
	if (b->err && b->errlen)
		vsnprintf(b->err, b->errlen, fmt, ap);
}

static __attribute__((format(printf, 3, 4))) void
xfail_rc(struct xbase *b, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vseterr(b, rc, fmt, ap);
	va_end(ap);
	if (b->xp)
		XML_StopParser(b->xp, XML_FALSE);
}

#define xfail(b, ...) xfail_rc((b), -EBADMSG, __VA_ARGS__)

static const char *local_name(const XML_Char *name)
{
	const char *s = strrchr(name, NS_SEP);
	return s ? s + 1 : name;
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name UNUSED,
			       const XML_Char *sysid UNUSED,
			       const XML_Char *pubid UNUSED, int internal UNUSED)
{
	xfail(ud, "DOCTYPE not allowed");
}

static void XMLCALL on_entity_decl(void *ud, const XML_Char *name UNUSED,
				   int is_param UNUSED, const XML_Char *v UNUSED,
				   int vlen UNUSED, const XML_Char *base UNUSED,
				   const XML_Char *sysid UNUSED,
				   const XML_Char *pubid UNUSED,
				   const XML_Char *notation UNUSED)
{
	xfail(ud, "entity declaration not allowed");
}

static int XMLCALL on_external_entity(XML_Parser p UNUSED,
				      const XML_Char *context UNUSED,
				      const XML_Char *base UNUSED,
				      const XML_Char *sysid UNUSED,
				      const XML_Char *pubid UNUSED)
{
	return XML_STATUS_ERROR;
}

/* Common start-element bookkeeping: depth cap and root check. Returns the
 * local name, or NULL when parsing must stop. */
static const char *xenter(struct xbase *b, const XML_Char *name,
			  const char *root)
{
	const char *l = local_name(name);

	if (b->rc < 0)
		return NULL;
	if (++b->depth > S3XML_MAX_DEPTH) {
		xfail(b, "nesting deeper than %u", S3XML_MAX_DEPTH);
		return NULL;
	}
	if (b->depth == 1 && strcmp(l, root) != 0) {
		xfail(b, "root element <%.64s>, expected <%s>", l, root);
		return NULL;
	}
	return l;
}

static void xsetup(struct xbase *b, XML_StartElementHandler start,
		   XML_EndElementHandler end, XML_CharacterDataHandler text)
{
	XML_SetUserData(b->xp, b);
	XML_SetElementHandler(b->xp, start, end);
	XML_SetCharacterDataHandler(b->xp, text);
	XML_SetStartDoctypeDeclHandler(b->xp, on_doctype);
	XML_SetEntityDeclHandler(b->xp, on_entity_decl);
	XML_SetExternalEntityRefHandler(b->xp, on_external_entity);
	XML_SetParamEntityParsing(b->xp, XML_PARAM_ENTITY_PARSING_NEVER);
}

static void xerror_from_expat(struct xbase *b)
{
	enum XML_Error e = XML_GetErrorCode(b->xp);

	xfail_rc(b, e == XML_ERROR_NO_MEMORY ? -ENOMEM : -EBADMSG,
		 "xml: %s at line %lu column %lu", XML_ErrorString(e),
		 (unsigned long)XML_GetCurrentLineNumber(b->xp),
		 (unsigned long)XML_GetCurrentColumnNumber(b->xp));
}

/* Parses the whole document in one final call; b must be the first member
 * of the handlers' state. Returns b->rc. */
static int xrun(struct xbase *b, const char *xml, size_t len,
		XML_StartElementHandler start, XML_EndElementHandler end,
		XML_CharacterDataHandler text)
{
	enum XML_Status st;

	if (!xml && len) {
		xfail_rc(b, -EINVAL, "NULL document");
		return b->rc;
	}
	if (len > S3XML_MAX_DOC) {
		xfail(b, "document of %zu bytes exceeds %u", len, S3XML_MAX_DOC);
		return b->rc;
	}
	b->xp = XML_ParserCreateNS(NULL, NS_SEP);
	if (!b->xp) {
		xfail_rc(b, -ENOMEM, "out of memory");
		return b->rc;
	}
	xsetup(b, start, end, text);
	st = XML_Parse(b->xp, xml ? xml : "", (int)len, XML_TRUE);
	if (st != XML_STATUS_OK)
		xerror_from_expat(b); /* no-op if a handler already failed */
	XML_ParserFree(b->xp);
	b->xp = NULL;
	return b->rc;
}

/* ---- url decoding ----------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool url_valid(const char *s, size_t *ret_len)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (s[i] == '%' && (hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0))
			return false;
	*ret_len = i;
	return i <= INT_MAX;
}

int s3xml_url_decode(char *s)
{
	size_t i, o, n;

	if (!s || !url_valid(s, &n))
		return -EINVAL; /* validated first: s untouched on failure */
	for (i = o = 0; i < n; o++) {
		if (s[i] == '%') {
			s[o] = (char)(hexval(s[i + 1]) << 4 | hexval(s[i + 2]));
			i += 3;
		} else {
			s[o] = s[i] == '+' ? ' ' : s[i];
			i++;
		}
	}
	s[o] = '\0';
	return (int)o;
}

/* ---- field value parsers ---------------------------------------------- */

/* 'd' in pat matches one digit, anything else matches itself. */
static bool match_pattern(const char *s, const char *pat)
{
	for (; *pat; s++, pat++) {
		if (*pat == 'd' ? (*s < '0' || *s > '9') : *s != *pat)
			return false;
	}
	return true;
}

static int num(const char *s, int n)
{
	int v = 0;
	while (n--)
		v = v * 10 + (*s++ - '0');
	return v;
}

static int days_in_month(int y, int m)
{
	static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return d[m - 1] + (m == 2 && leap);
}

/* "2009-10-12T17:50:30.000Z" (fraction optional, 1-9 digits) -> unix s. */
static int parse_mtime(const char *s, int64_t *ret)
{
	struct tm tm;
	const char *p;
	int y, mo, d;

	if (!match_pattern(s, "dddd-dd-ddTdd:dd:dd"))
		return -EINVAL;
	p = s + 19;
	if (*p == '.' && match_pattern(p + 1, "d"))
		for (p++; *p >= '0' && *p <= '9' && p - s < 29; p++)
			;
	if (strcmp(p, "Z") != 0)
		return -EINVAL;
	y = num(s, 4), mo = num(s + 5, 2), d = num(s + 8, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return -EINVAL;
	tm = (struct tm){ .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
			  .tm_hour = num(s + 11, 2), .tm_min = num(s + 14, 2),
			  .tm_sec = num(s + 17, 2) };
	if (tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -EINVAL;
	*ret = (int64_t)timegm(&tm);
	return 0;
}

static int parse_object_size(const char *s, uint64_t *ret)
{
	uint64_t v;
	int r = parse_u64(s, &v);

	if (r < 0)
		return r;
	if (v > INT64_MAX) /* must fit off_t */
		return -ERANGE;
	*ret = v;
	return 0;
}

/* Strips one pair of surrounding double quotes, in place. */
static void etag_unquote(char *s)
{
	size_t n = strlen(s);

	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		memmove(s, s + 1, n - 2);
		s[n - 2] = '\0';
	}
}

/* ---- ListObjectsV2 ---------------------------------------------------- */

enum ctx { CTX_NONE, CTX_ROOT, CTX_CONTENTS, CTX_CPREFIX };

enum fid {
	FID_PREFIX,
	FID_TOKEN,
	FID_TRUNC,
	FID_ENC,
	FID_KEY,
	FID_SIZE,
	FID_MTIME,
	FID_ETAG,
	FID_CP_PREFIX,
};

struct field_def {
	enum ctx parent;
	const char *name;
	enum fid id;
	size_t cap; /* bytes of raw (still encoded) text accepted */
};

static const struct field_def list_fields[] = {
	{ CTX_ROOT, "Prefix", FID_PREFIX, KEY_RAW_MAX },
	{ CTX_ROOT, "NextContinuationToken", FID_TOKEN, S3XML_MAX_TOKEN },
	{ CTX_ROOT, "IsTruncated", FID_TRUNC, SMALL_MAX },
	{ CTX_ROOT, "EncodingType", FID_ENC, SMALL_MAX },
	{ CTX_CONTENTS, "Key", FID_KEY, KEY_RAW_MAX },
	{ CTX_CONTENTS, "Size", FID_SIZE, SMALL_MAX },
	{ CTX_CONTENTS, "LastModified", FID_MTIME, SMALL_MAX },
	{ CTX_CONTENTS, "ETag", FID_ETAG, S3XML_MAX_ETAG + 2 },
	{ CTX_CPREFIX, "Prefix", FID_CP_PREFIX, KEY_RAW_MAX },
};

#define ITEM_REQUIRED ((1u << FID_KEY) | (1u << FID_SIZE) | (1u << FID_MTIME))

struct list_state {
	struct xbase b; /* first: handlers get a list_state via xbase */
	enum ctx ctx;   /* container open at depth 2 */
	const struct field_def *field; /* leaf being captured, or NULL */
	struct strbuf text;
	unsigned top_seen, item_seen; /* bit per enum fid */
	struct s3_object cur;
	char *cur_prefix;
	bool encoded;
	struct s3_list_page page;
	size_t objects_cap, prefixes_cap;
};

void s3_list_page_free(struct s3_list_page *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nobjects; i++) {
		free(p->objects[i].key);
		free(p->objects[i].etag);
	}
	free(p->objects);
	for (size_t i = 0; i < p->nprefixes; i++)
		free(p->prefixes[i]);
	free(p->prefixes);
	free(p->next_token);
	free(p->prefix);
	*p = (struct s3_list_page){ 0 };
}

static void list_state_free(struct list_state *st)
{
	strbuf_free(&st->text);
	free(st->cur.key);
	free(st->cur.etag);
	free(st->cur_prefix);
	s3_list_page_free(&st->page);
}

static const struct field_def *field_lookup(enum ctx parent, const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(list_fields); i++)
		if (list_fields[i].parent == parent &&
		    strcmp(list_fields[i].name, name) == 0)
			return &list_fields[i];
	return NULL;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	p = reallocarray(*arr, ncap, elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static void open_container(struct list_state *st, const char *l)
{
	if (strcmp(l, "Contents") == 0)
		st->ctx = CTX_CONTENTS;
	else if (strcmp(l, "CommonPrefixes") == 0)
		st->ctx = CTX_CPREFIX;
	else
		return;
	if (st->page.nobjects + st->page.nprefixes >= S3XML_MAX_ENTRIES) {
		xfail(&st->b, "more than %u entries", S3XML_MAX_ENTRIES);
		return;
	}
	st->item_seen = 0;
}

static void open_field(struct list_state *st, const struct field_def *f)
{
	unsigned *seen = f->parent == CTX_ROOT ? &st->top_seen : &st->item_seen;

	if (*seen & (1u << f->id)) {
		xfail(&st->b, "duplicate <%s>", f->name);
		return;
	}
	*seen |= 1u << f->id;
	st->field = f;
	strbuf_init(&st->text, f->cap);
}

static void XMLCALL list_start(void *ud, const XML_Char *name,
			       const XML_Char **attrs UNUSED)
{
	struct list_state *st = ud;
	const struct field_def *f;
	const char *l = xenter(&st->b, name, "ListBucketResult");

	if (!l)
		return;
	if (st->field) {
		xfail(&st->b, "element <%.64s> inside <%s>", l, st->field->name);
		return;
	}
	if (st->b.depth == 2)
		open_container(st, l);
	if (st->b.rc < 0 || st->b.depth < 2 || st->b.depth > 3)
		return;
	f = field_lookup(st->b.depth == 2 ? CTX_ROOT : st->ctx, l);
	if (f)
		open_field(st, f);
}

static void XMLCALL list_text(void *ud, const XML_Char *s, int n)
{
	struct list_state *st = ud;
	int r;

	if (st->b.rc < 0 || !st->field)
		return;
	r = strbuf_append(&st->text, s, (size_t)n);
	if (r == -E2BIG)
		xfail(&st->b, "<%s> longer than %zu bytes", st->field->name,
		      st->field->cap);
	else if (r < 0)
		xfail_rc(&st->b, r, "out of memory");
}

static char *take_text(struct list_state *st)
{
	/* strbuf_steal() of a never-appended buffer is not NUL-terminated */
	char *s = st->text.p ? strbuf_steal(&st->text) : strdup("");

	if (!s)
		xfail_rc(&st->b, -ENOMEM, "out of memory");
	return s;
}

static void set_truncated(struct list_state *st, const char *v)
{
	if (strcmp(v, "true") == 0)
		st->page.truncated = true;
	else if (strcmp(v, "false") == 0)
		st->page.truncated = false;
	else
		xfail(&st->b, "bad IsTruncated \"%.32s\"", v);
}

static void set_encoding(struct list_state *st, const char *v)
{
	if (strcasecmp(v, "url") == 0)
		st->encoded = true;
	else
		xfail(&st->b, "unsupported EncodingType \"%.32s\"", v);
}

/* Fields parsed from their text without keeping it. */
static void close_scalar(struct list_state *st, enum fid id, const char *v)
{
	switch (id) {
	case FID_TRUNC:
		set_truncated(st, v);
		break;
	case FID_ENC:
		set_encoding(st, v);
		break;
	case FID_SIZE:
		if (parse_object_size(v, &st->cur.size) < 0)
			xfail(&st->b, "bad Size \"%.32s\"", v);
		break;
	case FID_MTIME:
		if (parse_mtime(v, &st->cur.mtime) < 0)
			xfail(&st->b, "bad LastModified \"%.40s\"", v);
		break;
	default:
		break;
	}
}

/* Fields whose text we keep: hand the buffer to its owner. */
static void close_string(struct list_state *st, enum fid id)
{
	char *s = take_text(st);

	if (!s)
		return;
	if (id == FID_ETAG)
		etag_unquote(s);
	if (id == FID_TOKEN && !*s)
		free(TAKE_PTR(s)); /* empty token: same as none */
	char **dst = id == FID_PREFIX  ? &st->page.prefix :
		     id == FID_TOKEN   ? &st->page.next_token :
		     id == FID_KEY     ? &st->cur.key :
		     id == FID_ETAG    ? &st->cur.etag :
					 &st->cur_prefix;
	*dst = s;
}

static void close_field(struct list_state *st)
{
	enum fid id = st->field->id;

	st->field = NULL;
	if (id == FID_TRUNC || id == FID_ENC || id == FID_SIZE || id == FID_MTIME)
		close_scalar(st, id, st->text.p ? st->text.p : "");
	else
		close_string(st, id);
	strbuf_free(&st->text);
}

static void push_object(struct list_state *st)
{
	struct s3_list_page *pg = &st->page;

	if ((st->item_seen & ITEM_REQUIRED) != ITEM_REQUIRED) {
		xfail(&st->b, "<Contents> without Key, Size or LastModified");
		return;
	}
	if (!st->cur.etag && !(st->cur.etag = strdup(""))) {
		xfail_rc(&st->b, -ENOMEM, "out of memory");
		return;
	}
	if (grow((void **)&pg->objects, &st->objects_cap, pg->nobjects,
		 sizeof(*pg->objects)) < 0) {
		xfail_rc(&st->b, -ENOMEM, "out of memory");
		return;
	}
	pg->objects[pg->nobjects++] = st->cur;
	st->cur = (struct s3_object){ 0 };
}

static void push_prefix(struct list_state *st)
{
	struct s3_list_page *pg = &st->page;

	if (!st->cur_prefix) {
		xfail(&st->b, "<CommonPrefixes> without Prefix");
		return;
	}
	if (grow((void **)&pg->prefixes, &st->prefixes_cap, pg->nprefixes,
		 sizeof(*pg->prefixes)) < 0) {
		xfail_rc(&st->b, -ENOMEM, "out of memory");
		return;
	}
	pg->prefixes[pg->nprefixes++] = TAKE_PTR(st->cur_prefix);
}

static void XMLCALL list_end(void *ud, const XML_Char *name UNUSED)
{
	struct list_state *st = ud;

	if (st->b.rc < 0)
		return;
	if (st->field)
		close_field(st); /* a field is always a leaf: this is its end */
	else if (st->b.depth == 2 && st->ctx == CTX_CONTENTS)
		push_object(st);
	else if (st->b.depth == 2 && st->ctx == CTX_CPREFIX)
		push_prefix(st);
	if (st->b.depth == 2)
		st->ctx = CTX_NONE;
	st->b.depth--;
}

/* ---- post-parse validation and decoding ------------------------------- */

static __attribute__((format(printf, 2, 3))) int
post_fail(struct list_state *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vseterr(&st->b, -EBADMSG, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* Decodes (if encoded) and checks a key or common prefix in place. */
static int finish_key(struct list_state *st, char *k, size_t *ret_len,
		      const char *what, size_t idx)
{
	size_t n = strlen(k);

	if (st->encoded) {
		int r = s3xml_url_decode(k);
		if (r < 0)
			return post_fail(st, "%s %zu: bad %%-escape", what, idx);
		n = (size_t)r;
	}
	if (n == 0)
		return post_fail(st, "%s %zu: empty", what, idx);
	if (n > S3XML_MAX_KEY)
		return post_fail(st, "%s %zu: longer than %u bytes", what, idx,
				 S3XML_MAX_KEY);
	if (memchr(k, '\0', n))
		return post_fail(st, "%s %zu: contains NUL", what, idx);
	if (ret_len)
		*ret_len = n;
	return 0;
}

/* The echoed top-level Prefix is informational (the caller sent it). AWS
 * encodes it under encoding-type=url, RGW echoes it raw; so decode when it
 * is a valid encoding and keep it as sent otherwise, never failing the page
 * over it. Bounds still apply. */
static int decode_echo_prefix(struct list_state *st)
{
	char *p = st->page.prefix;
	size_t n;

	if (!p)
		return 0;
	if (st->encoded && url_valid(p, &n)) {
		n = (size_t)s3xml_url_decode(p);
		if (memchr(p, '\0', n))
			return post_fail(st, "Prefix contains NUL");
	}
	if (strlen(p) > S3XML_MAX_KEY)
		return post_fail(st, "Prefix longer than %u bytes", S3XML_MAX_KEY);
	return 0;
}

static int list_finish(struct list_state *st)
{
	struct s3_list_page *pg = &st->page;
	int r;

	for (size_t i = 0; i < pg->nobjects; i++) {
		r = finish_key(st, pg->objects[i].key, &pg->objects[i].key_len,
			       "key", i);
		if (r < 0)
			return r;
		if (strlen(pg->objects[i].etag) > S3XML_MAX_ETAG)
			return post_fail(st, "key %zu: ETag too long", i);
	}
	for (size_t i = 0; i < pg->nprefixes; i++) {
		r = finish_key(st, pg->prefixes[i], NULL, "common prefix", i);
		if (r < 0)
			return r;
	}
	if (pg->truncated && !pg->next_token)
		return post_fail(st, "IsTruncated without NextContinuationToken");
	return decode_echo_prefix(st);
}

int s3xml_parse_list(const char *xml, size_t len, struct s3_list_page *ret,
		     char *err, size_t errlen)
{
	struct list_state st = { .b = { .err = err, .errlen = errlen } };
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!ret)
		return -EINVAL;
	strbuf_init(&st.text, 0);
	r = xrun(&st.b, xml, len, list_start, list_end, list_text);
	if (r >= 0)
		r = list_finish(&st);
	if (r < 0) {
		list_state_free(&st);
		return r;
	}
	*ret = st.page;
	st.page = (struct s3_list_page){ 0 };
	list_state_free(&st);
	return 0;
}

/* ---- <Error> body ----------------------------------------------------- */

struct err_state {
	struct xbase b;
	struct s3_error_doc doc;
	char *dst; /* field being captured, or NULL */
	size_t dstsize, dstlen;
	bool cut;
};

/* Drops a trailing UTF-8 sequence left incomplete by truncation. */
static void utf8_trim(char *s, size_t *len)
{
	size_t n = *len, i = n, need;
	unsigned char c;

	while (i > 0 && n - i < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i == 0)
		return;
	c = (unsigned char)s[i - 1];
	if (c < 0x80)
		return;
	need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
	if (n - (i - 1) < need) {
		*len = i - 1;
		s[*len] = '\0';
	}
}

#define ERR_FIELD(n, m) \
	{ n, offsetof(struct s3_error_doc, m), \
	  sizeof(((struct s3_error_doc *)0)->m) }

static const struct {
	const char *name;
	size_t off, size;
} err_fields[] = {
	ERR_FIELD("Code", code),
	ERR_FIELD("Message", message),
	ERR_FIELD("Region", region),
	ERR_FIELD("RequestId", request_id),
};

static void XMLCALL err_start(void *ud, const XML_Char *name,
			      const XML_Char **attrs UNUSED)
{
	struct err_state *st = ud;
	const char *l = xenter(&st->b, name, "Error");

	st->dst = NULL;
	if (!l || st->b.depth != 2)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(err_fields); i++) {
		if (strcmp(l, err_fields[i].name) != 0)
			continue;
		st->dst = (char *)&st->doc + err_fields[i].off;
		st->dstsize = err_fields[i].size;
		st->dst[0] = '\0'; /* a repeated field: last one wins */
		st->dstlen = 0;
		st->cut = false;
	}
}

static void XMLCALL err_text(void *ud, const XML_Char *s, int n)
{
	struct err_state *st = ud;
	size_t take;

	if (st->b.rc < 0 || !st->dst)
		return;
	take = MIN((size_t)n, st->dstsize - 1 - st->dstlen);
	memcpy(st->dst + st->dstlen, s, take);
	st->dstlen += take;
	st->dst[st->dstlen] = '\0';
	st->cut |= take < (size_t)n;
}

static void XMLCALL err_end(void *ud, const XML_Char *name UNUSED)
{
	struct err_state *st = ud;

	if (st->b.rc < 0)
		return;
	if (st->dst && st->cut)
		utf8_trim(st->dst, &st->dstlen);
	st->dst = NULL;
	st->b.depth--;
}

int s3xml_parse_error(const char *xml, size_t len, struct s3_error_doc *ret)
{
	struct err_state st = { 0 };
	int r;

	if (!ret)
		return -EINVAL;
	r = xrun(&st.b, xml, len, err_start, err_end, err_text);
	if (r < 0)
		return r;
	*ret = st.doc;
	return 0;
}
