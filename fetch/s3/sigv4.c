// SPDX-License-Identifier: Apache-2.0
/*
 * AWS Signature Version 4 for S3 (see sigv4.h): URI encoding, the canonical
 * request, the string to sign, the signing-key chain and the Authorization
 * value, with OpenSSL's EVP digest and one-shot HMAC.
 *
 * Invariants: every public function appends to its output strbuf and, on
 * failure, leaves it exactly as it was (length and content). Secret-derived
 * bytes (the "AWS4"+secret key and each derived HMAC key) live on the stack
 * and are wiped with explicit_bzero before returning. No global state: any
 * thread may call any function.
 */
#include "fetch/s3/sigv4.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

/* Bound for the scratch buffers this file allocates (canonical request,
 * encoded query items, header values). Keys are at most 1 KiB raw, so this
 * is generous while still a limit. */
#define SIGV4_SCRATCH_MAX (256u * 1024u)
#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SIGV4_MAX_SECRET 256

struct canon_header {
	char *name;  /* lowercased, owned */
	char *value; /* trimmed, runs collapsed, duplicates joined with ',' */
};

struct canon_param {
	char *name;  /* encoded, owned */
	char *value; /* encoded, owned */
};

static void sb_rollback(struct strbuf *b, size_t len)
{
	b->len = len;
	if (b->p)
		b->p[len] = '\0';
}

static bool is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~';
}

static void hex_encode(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

/* Encodes into a small stack chunk and flushes it, so long inputs cost one
 * append per 256 output bytes instead of one per input byte. */
static int uri_encode_append(const char *s, size_t n, bool keep_slash, struct strbuf *out)
{
	static const char up[] = "0123456789ABCDEF";
	char chunk[256];
	size_t k = 0;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		unsigned char c = (unsigned char)s[i];
		if (is_unreserved(c) || (keep_slash && c == '/')) {
			chunk[k++] = (char)c;
		} else {
			chunk[k++] = '%';
			chunk[k++] = up[c >> 4];
			chunk[k++] = up[c & 0xf];
		}
		if (k > sizeof(chunk) - 3) {
			r = strbuf_append(out, chunk, k);
			k = 0;
		}
	}
	/* Even for zero bytes: leaves out->p a valid (NUL-terminated) string. */
	if (r == 0)
		r = strbuf_append(out, chunk, k);
	return r;
}

int sigv4_uri_encode(const char *s, size_t n, bool keep_slash, struct strbuf *out)
{
	size_t saved;
	int r;

	if (!out || (!s && n))
		return -EINVAL;
	saved = out->len;
	r = uri_encode_append(s, n, keep_slash, out);
	if (r < 0)
		sb_rollback(out, saved);
	return r;
}

void sigv4_sha256_hex(const void *data, size_t n, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data, n, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
		memset(out, 0, 65); /* an empty string never matches a real hash */
		return;
	}
	hex_encode(md, 32, out);
}

void sigv4_format_date(long long t, char out[17])
{
	/* Clamp to what "YYYYMMDDTHHMMSSZ" can hold: 1970..9999. */
	const long long max = 253402300799LL; /* 9999-12-31T23:59:59Z */
	time_t tt = (time_t)(t < 0 ? 0 : t > max ? max : t);
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		memcpy(out, "19700101T000000Z", 17);
}

/* ---- canonical query ---- */

static char *encode_dup(const char *s, int *r)
{
	struct strbuf b;

	strbuf_init(&b, SIGV4_SCRATCH_MAX);
	*r = uri_encode_append(s, strlen(s), false, &b);
	if (*r < 0) {
		strbuf_free(&b);
		return NULL;
	}
	char *p = strbuf_steal(&b);
	if (!p)
		*r = -ENOMEM;
	return p;
}

static int param_cmp(const void *a, const void *b)
{
	const struct canon_param *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->value, y->value);
}

static void params_free(struct canon_param *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

static int params_encode(const struct sigv4_param *q, size_t n, struct canon_param **ret)
{
	struct canon_param *v = calloc(n ? n : 1, sizeof(*v));
	int r = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (!q[i].name || !q[i].value) {
			r = -EINVAL;
			break;
		}
		v[i].name = encode_dup(q[i].name, &r);
		if (r == 0)
			v[i].value = encode_dup(q[i].value, &r);
	}
	if (r < 0) {
		params_free(v, n);
		return r;
	}
	qsort(v, n, sizeof(*v), param_cmp);
	*ret = v;
	return 0;
}

static int params_join(const struct canon_param *v, size_t n, struct strbuf *out)
{
	int r = strbuf_append(out, "", 0); /* out->p valid even when n == 0 */

	for (size_t i = 0; i < n && r == 0; i++) {
		if (i)
			r = strbuf_append(out, "&", 1);
		if (r == 0)
			r = strbuf_appendf(out, "%s=%s", v[i].name, v[i].value);
	}
	return r;
}

int sigv4_canonical_query(const struct sigv4_param *q, size_t n, struct strbuf *out)
{
	struct canon_param *v = NULL;
	size_t saved;
	int r;

	if (!out || (!q && n))
		return -EINVAL;
	r = params_encode(q, n, &v);
	if (r < 0)
		return r;
	saved = out->len;
	r = params_join(v, n, out);
	if (r < 0)
		sb_rollback(out, saved);
	params_free(v, n);
	return r;
}

/* ---- canonical headers ---- */

static bool is_tchar(unsigned char c)
{
	/* RFC 9110 token characters: a header name must be one. */
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool valid_header_name(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > 256)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)name[i]))
			return false;
	return true;
}

static char *lower_dup(const char *s)
{
	char *p = strdup(s);

	for (char *c = p; c && *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c + 32);
	return p;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* Trim, collapse inner runs of blanks to one space, append. CR/LF/NUL-free
 * values only: a line break in a header value is never legitimate here. */
static int append_header_value(struct strbuf *b, const char *v)
{
	bool pending_space = false;
	int r = 0;

	while (is_blank(*v))
		v++;
	for (; *v && r == 0; v++) {
		if (*v == '\r' || *v == '\n')
			return -EINVAL;
		if (is_blank(*v)) {
			pending_space = true;
			continue;
		}
		if (pending_space)
			r = strbuf_append(b, " ", 1);
		pending_space = false;
		if (r == 0)
			r = strbuf_append(b, v, 1);
	}
	return r;
}

struct hdr_ref {
	const struct sigv4_header *h;
	char *lname;
	size_t idx; /* original position: makes the sort stable */
};

static int hdr_ref_cmp(const void *a, const void *b)
{
	const struct hdr_ref *x = a, *y = b;
	int c = strcmp(x->lname, y->lname);
	return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static void hdr_refs_free(struct hdr_ref *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].lname);
	free(v);
}

static int hdr_refs_build(const struct sigv4_input *in, struct hdr_ref **ret)
{
	struct hdr_ref *v = calloc(in->nheaders ? in->nheaders : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < in->nheaders; i++) {
		const struct sigv4_header *h = &in->headers[i];
		int r = 0;

		v[i] = (struct hdr_ref){ .h = h, .idx = i };
		if (!valid_header_name(h->name) || !h->value)
			r = -EINVAL;
		else if (!(v[i].lname = lower_dup(h->name)))
			r = -ENOMEM;
		if (r < 0) {
			hdr_refs_free(v, in->nheaders);
			return r;
		}
	}
	qsort(v, in->nheaders, sizeof(*v), hdr_ref_cmp);
	*ret = v;
	return 0;
}

static void canon_headers_free(struct canon_header *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

/* Builds one canonical header from refs[*i..] sharing a name; advances *i. */
static int canon_header_merge(struct hdr_ref *refs, size_t n, size_t *i, struct canon_header *out)
{
	struct strbuf b;
	size_t j = *i;
	int r = 0;

	strbuf_init(&b, SIGV4_SCRATCH_MAX);
	for (; j < n && strcmp(refs[j].lname, refs[*i].lname) == 0 && r == 0; j++) {
		if (j > *i)
			r = strbuf_append(&b, ",", 1);
		if (r == 0)
			r = append_header_value(&b, refs[j].h->value);
	}
	if (r == 0 && !(out->value = strbuf_steal(&b)))
		r = -ENOMEM;
	if (r < 0) {
		strbuf_free(&b);
		return r;
	}
	out->name = refs[*i].lname;
	refs[*i].lname = NULL; /* ownership moves to out */
	*i = j;
	return 0;
}

static bool has_header(const struct canon_header *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return true;
	return false;
}

/* Sorted, merged, normalized headers; host and x-amz-date must be there. */
static int canon_headers_build(const struct sigv4_input *in, struct canon_header **ret,
			       size_t *ret_n)
{
	struct hdr_ref *refs = NULL;
	struct canon_header *v;
	size_t i = 0, n = 0;
	int r;

	if (!in->headers && in->nheaders)
		return -EINVAL;
	r = hdr_refs_build(in, &refs);
	if (r < 0)
		return r;
	v = calloc(in->nheaders ? in->nheaders : 1, sizeof(*v));
	if (!v)
		r = -ENOMEM;
	while (r == 0 && i < in->nheaders)
		r = canon_header_merge(refs, in->nheaders, &i, &v[n++]);
	hdr_refs_free(refs, in->nheaders);
	if (r == 0 && (!has_header(v, n, "host") || !has_header(v, n, "x-amz-date")))
		r = -EINVAL;
	if (r < 0) {
		canon_headers_free(v, n);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int append_signed_headers(const struct canon_header *v, size_t n, struct strbuf *out)
{
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		if (i)
			r = strbuf_append(out, ";", 1);
		if (r == 0)
			r = strbuf_appends(out, v[i].name);
	}
	return r;
}

/* ---- canonical request ---- */

static bool valid_date(const char *d)
{
	if (!d || strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
		return false;
	for (int i = 0; i < 15; i++)
		if (i != 8 && (d[i] < '0' || d[i] > '9'))
			return false;
	return true;
}

static bool valid_scope_part(const char *s)
{
	/* region and service end up in the scope, split on '/'. */
	if (!s || !*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (*s == '/' || (unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static int input_check(const struct sigv4_input *in)
{
	if (!in || !in->method || !*in->method || !in->path || in->path[0] != '/' ||
	    !in->payload_hash || !*in->payload_hash || !valid_date(in->amz_date) ||
	    !valid_scope_part(in->region) || !valid_scope_part(in->service))
		return -EINVAL;
	if (strpbrk(in->method, " \r\n") || strpbrk(in->payload_hash, "\r\n"))
		return -EINVAL;
	return 0;
}

static int append_creq_headers(const struct canon_header *h, size_t nh, struct strbuf *out)
{
	int r = 0;

	for (size_t i = 0; i < nh && r == 0; i++)
		r = strbuf_appendf(out, "%s:%s\n", h[i].name, h[i].value);
	if (r == 0)
		r = strbuf_append(out, "\n", 1);
	if (r == 0)
		r = append_signed_headers(h, nh, out);
	return r;
}

/* Appends the canonical request to out; also the signed-header list to
 * signed_headers when not NULL. No rollback here: callers do it. */
static int canon_build(const struct sigv4_input *in, struct strbuf *out,
		       struct strbuf *signed_headers)
{
	struct canon_header *h = NULL;
	size_t nh = 0;
	int r;

	r = canon_headers_build(in, &h, &nh);
	if (r < 0)
		return r;
	r = strbuf_appendf(out, "%s\n", in->method);
	if (r == 0)
		r = uri_encode_append(in->path, strlen(in->path), true, out);
	if (r == 0)
		r = strbuf_append(out, "\n", 1);
	if (r == 0)
		r = sigv4_canonical_query(in->query, in->nquery, out);
	if (r == 0)
		r = strbuf_append(out, "\n", 1);
	if (r == 0)
		r = append_creq_headers(h, nh, out);
	if (r == 0)
		r = strbuf_appendf(out, "\n%s", in->payload_hash);
	if (r == 0 && signed_headers)
		r = append_signed_headers(h, nh, signed_headers);
	canon_headers_free(h, nh);
	return r;
}

int sigv4_canonical_request(const struct sigv4_input *in, struct strbuf *out)
{
	size_t saved;
	int r;

	if (!out)
		return -EINVAL;
	r = input_check(in);
	if (r < 0)
		return r;
	saved = out->len;
	r = canon_build(in, out, NULL);
	if (r < 0)
		sb_rollback(out, saved);
	return r;
}

/* ---- string to sign ---- */

static int sts_build(const struct sigv4_input *in, struct strbuf *out,
		     struct strbuf *signed_headers)
{
	struct strbuf creq;
	char hash[65];
	int r;

	strbuf_init(&creq, SIGV4_SCRATCH_MAX);
	r = canon_build(in, &creq, signed_headers);
	if (r == 0) {
		sigv4_sha256_hex(creq.p, creq.len, hash);
		r = strbuf_appendf(out, SIGV4_ALGORITHM "\n%s\n%.8s/%s/%s/aws4_request\n%s",
				   in->amz_date, in->amz_date, in->region, in->service, hash);
	}
	strbuf_free(&creq);
	return r;
}

int sigv4_string_to_sign(const struct sigv4_input *in, struct strbuf *out)
{
	size_t saved;
	int r;

	if (!out)
		return -EINVAL;
	r = input_check(in);
	if (r < 0)
		return r;
	saved = out->len;
	r = sts_build(in, out, NULL);
	if (r < 0)
		sb_rollback(out, saved);
	return r;
}

/* ---- signing key and signature ---- */

static int hmac(const void *key, size_t keylen, const void *msg, size_t n, unsigned char out[32])
{
	unsigned int len = 0;

	if (!HMAC(EVP_sha256(), key, (int)keylen, msg, n, out, &len) || len != 32)
		return -EIO;
	return 0;
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service),
 * "aws4_request"); the signature is hex(HMAC(kSigning, string to sign)). */
static int compute_signature(const struct sigv4_input *in, const struct strbuf *sts,
			     char out[65])
{
	unsigned char a[32], b[32];
	char ksecret[4 + SIGV4_MAX_SECRET];
	size_t slen = strlen(in->secret_key);
	int r;

	if (slen > SIGV4_MAX_SECRET)
		return -EINVAL;
	memcpy(ksecret, "AWS4", 4);
	memcpy(ksecret + 4, in->secret_key, slen);
	r = hmac(ksecret, 4 + slen, in->amz_date, 8, a); /* kDate */
	if (r == 0)
		r = hmac(a, 32, in->region, strlen(in->region), b); /* kRegion */
	if (r == 0)
		r = hmac(b, 32, in->service, strlen(in->service), a); /* kService */
	if (r == 0)
		r = hmac(a, 32, "aws4_request", 12, b); /* kSigning */
	if (r == 0)
		r = hmac(b, 32, sts->p, sts->len, a);
	if (r == 0)
		hex_encode(a, 32, out);
	explicit_bzero(ksecret, sizeof(ksecret));
	explicit_bzero(a, sizeof(a));
	explicit_bzero(b, sizeof(b));
	return r;
}

static bool valid_access_key(const char *s)
{
	if (!s || !*s || strlen(s) > 256)
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ',' || (unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

int sigv4_authorization(const struct sigv4_input *in, struct strbuf *out)
{
	struct strbuf sts, sh;
	char sig[65];
	int r;

	if (!out)
		return -EINVAL;
	r = input_check(in);
	if (r == 0 && (!valid_access_key(in->access_key) || !in->secret_key))
		r = -EINVAL;
	if (r < 0)
		return r;
	strbuf_init(&sts, SIGV4_SCRATCH_MAX);
	strbuf_init(&sh, SIGV4_SCRATCH_MAX);
	r = sts_build(in, &sts, &sh);
	if (r == 0)
		r = compute_signature(in, &sts, sig);
	if (r == 0)
		r = strbuf_appendf(out,
				   SIGV4_ALGORITHM " Credential=%s/%.8s/%s/%s/aws4_request, "
				   "SignedHeaders=%s, Signature=%s",
				   in->access_key, in->amz_date, in->region, in->service, sh.p,
				   sig);
	strbuf_free(&sts);
	strbuf_free(&sh);
	return r;
}
