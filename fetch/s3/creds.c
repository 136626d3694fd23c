// SPDX-License-Identifier: Apache-2.0
/*
 * Credential providers and the credential cache (see creds.h): static keys,
 * the AWS_* environment variables, the shared credentials/config files
 * (a small, bounded INI reader), a chain, and a mutex-guarded cache that
 * reloads `refresh_margin` seconds before expiry.
 *
 * Invariants: every string holding key material is wiped with explicit_bzero
 * before it is freed, including the raw file buffers; nothing here logs a
 * key, a token or a file line, only paths, profile names and line numbers,
 * and only at debug. Output parameters are untouched on failure. A
 * constructor that "takes ownership" of providers frees them even when it
 * fails, so callers never leak them.
 *
 * Threads: providers are reentrant (they keep no mutable state); the cache
 * serialises get/invalidate with one mutex and calls load() under it, so at
 * most one refresh runs at a time and readers wait for it.
 */
#include "fetch/base/fdio.h"
#include "fetch/s3/creds.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/base/log.h"
#include "fetch/base/macro.h"

#define CREDS_FILE_MAX (1024 * 1024) /* shared files larger than this: -EFBIG */
#define CREDS_LINE_MAX 4096          /* a longer line: -EINVAL */
#define CREDS_VALUE_MAX 4096         /* key id, secret or token */
#define CREDS_PROFILE_MAX 128

/* ---- credential sets ---- */

static void secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

void s3_credentials_clear(struct s3_credentials *c)
{
	if (!c)
		return;
	secret_free(c->access_key);
	secret_free(c->secret_key);
	secret_free(c->session_token);
	*c = (struct s3_credentials){ 0 };
}

/* Printable ASCII only: these strings end up in HTTP headers. */
static bool value_ok(const char *s, size_t n)
{
	if (!s || n == 0 || n > CREDS_VALUE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/* A value given as pointer + length; p == NULL means absent. */
struct span {
	const char *p;
	size_t n;
};

static struct span span_of(const char *s) { return (struct span){ s, s ? strlen(s) : 0 }; }

/* Validates and copies (ak, sk, token) into *ret; *ret untouched on error. */
static int creds_fill(struct span ak, struct span sk, struct span tok, int64_t expires_at,
		      struct s3_credentials *ret)
{
	struct s3_credentials c = { .expires_at = expires_at };

	if (!value_ok(ak.p, ak.n) || !value_ok(sk.p, sk.n) ||
	    (tok.p && tok.n && !value_ok(tok.p, tok.n)))
		return -EINVAL;
	c.access_key = strndup(ak.p, ak.n);
	c.secret_key = strndup(sk.p, sk.n);
	if (tok.p && tok.n)
		c.session_token = strndup(tok.p, tok.n);
	if (!c.access_key || !c.secret_key || (tok.p && tok.n && !c.session_token)) {
		s3_credentials_clear(&c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

int s3_credentials_copy(const struct s3_credentials *src, struct s3_credentials *ret)
{
	if (!src || !ret || !src->access_key || !src->secret_key)
		return -EINVAL;
	return creds_fill(span_of(src->access_key), span_of(src->secret_key),
			  span_of(src->session_token), src->expires_at, ret);
}

void s3_cred_provider_free(struct s3_cred_provider *p)
{
	if (p && p->free)
		p->free(p);
}

/* ---- static ---- */

struct static_provider {
	struct s3_cred_provider base;
	struct s3_credentials creds;
};

static int static_load(struct s3_cred_provider *p, struct s3_credentials *ret)
{
	struct static_provider *s = (struct static_provider *)p;
	return s3_credentials_copy(&s->creds, ret);
}

static void static_free(struct s3_cred_provider *p)
{
	struct static_provider *s = (struct static_provider *)p;
	s3_credentials_clear(&s->creds);
	free(s);
}

/* NULL when a key is missing or not printable ASCII, or out of memory. */
struct s3_cred_provider *s3_creds_static_new(const char *access_key, const char *secret_key,
					      const char *session_token)
{
	struct static_provider *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (creds_fill(span_of(access_key), span_of(secret_key), span_of(session_token), 0,
		       &s->creds) < 0) {
		free(s);
		return NULL;
	}
	s->base = (struct s3_cred_provider){ "static", static_load, static_free };
	return &s->base;
}

/* ---- environment ---- */

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static int env_load(struct s3_cred_provider *p, struct s3_credentials *ret)
{
	const char *ak = env_nonempty("AWS_ACCESS_KEY_ID");
	const char *sk = env_nonempty("AWS_SECRET_ACCESS_KEY");
	const char *tok = env_nonempty("AWS_SESSION_TOKEN");
	int r;

	(void)p;
	if (!ak && !sk)
		return -ENOENT;
	r = creds_fill(span_of(ak), span_of(sk), span_of(tok), 0, ret);
	if (r == -EINVAL)
		log_debug("creds: environment credentials incomplete or malformed",
			  "provider=env access_key_set=%d secret_key_set=%d", !!ak, !!sk);
	return r;
}

static void plain_free(struct s3_cred_provider *p) { free(p); }

struct s3_cred_provider *s3_creds_env_new(void)
{
	struct s3_cred_provider *p = calloc(1, sizeof(*p));

	if (p)
		*p = (struct s3_cred_provider){ "env", env_load, plain_free };
	return p;
}

/* ---- shared credentials / config files ---- */

enum ini_kind { INI_CREDENTIALS, INI_CONFIG };

struct ini_state {
	enum ini_kind kind;
	const char *profile;
	const char *path;   /* for debug logs only */
	bool in_target;     /* inside the profile's section */
	bool after_property; /* an indented line now continues a property */
	bool section_seen;
	struct span ak, sk, tok; /* point into the file buffer */
};

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static struct span span_trim(const char *b, const char *e)
{
	while (b < e && is_blank(*b))
		b++;
	while (e > b && is_blank(e[-1]))
		e--;
	return (struct span){ b, (size_t)(e - b) };
}

static bool span_eq(struct span s, const char *lit)
{
	return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

/* "[default]" / "[NAME]" in credentials; "[profile NAME]" (and "[default]"
 * or "[profile default]" for the default profile) in config. */
static bool section_matches(const struct ini_state *st, struct span name)
{
	bool is_default = strcmp(st->profile, "default") == 0;

	if (st->kind == INI_CREDENTIALS)
		return span_eq(name, st->profile);
	if (is_default && span_eq(name, "default"))
		return true;
	if (name.n < 8 || memcmp(name.p, "profile", 7) != 0 || !is_blank(name.p[7]))
		return false;
	return span_eq(span_trim(name.p + 8, name.p + name.n), st->profile);
}

/* A comment after a value needs blank space before its '#' or ';'. */
static const char *value_end(const char *b, const char *e)
{
	for (const char *p = b; p < e; p++)
		if ((*p == '#' || *p == ';') && p > b && is_blank(p[-1]))
			return p;
	return e;
}

static void ini_section(struct ini_state *st, const char *b, const char *e, int lineno)
{
	const char *close = memchr(b, ']', (size_t)(e - b));
	struct span rest;

	st->after_property = false;
	st->in_target = false;
	if (!close) {
		log_debug("creds: unterminated section header ignored", "path=%s line=%d",
			  st->path, lineno);
		return;
	}
	rest = span_trim(close + 1, e);
	if (rest.n && rest.p[0] != '#' && rest.p[0] != ';') {
		log_debug("creds: garbage after section header", "path=%s line=%d", st->path,
			  lineno);
		return;
	}
	if (section_matches(st, span_trim(b + 1, close))) {
		st->in_target = true;
		st->section_seen = true;
	}
}

static void ini_property(struct ini_state *st, const char *b, const char *e, int lineno)
{
	const char *eq = memchr(b, '=', (size_t)(e - b));
	struct span key, val;

	if (!eq || (key = span_trim(b, eq)).n == 0) {
		log_debug("creds: malformed line ignored", "path=%s line=%d", st->path, lineno);
		return;
	}
	st->after_property = true;
	if (!st->in_target)
		return;
	val = span_trim(eq + 1, value_end(eq + 1, e));
	if (key.n == 17 && strncasecmp(key.p, "aws_access_key_id", 17) == 0)
		st->ak = val;
	else if (key.n == 21 && strncasecmp(key.p, "aws_secret_access_key", 21) == 0)
		st->sk = val;
	else if (key.n == 17 && strncasecmp(key.p, "aws_session_token", 17) == 0)
		st->tok = val;
}

static void ini_line(struct ini_state *st, const char *b, const char *e, int lineno)
{
	struct span t;

	if (e > b && e[-1] == '\r')
		e--;
	t = span_trim(b, e);
	if (t.n == 0 || t.p[0] == '#' || t.p[0] == ';')
		return;
	/* Indented under a property: a continuation or nested sub-property
	 * ("s3 =\n  max_concurrent_requests = 4"), never a top-level key. */
	if (is_blank(b[0]) && st->after_property)
		return;
	if (t.p[0] == '[')
		ini_section(st, t.p, t.p + t.n, lineno);
	else
		ini_property(st, t.p, t.p + t.n, lineno);
}

static int ini_parse(struct ini_state *st, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	int lineno = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		lineno++;
		if (le - p > CREDS_LINE_MAX) {
			log_debug("creds: line too long", "path=%s line=%d", st->path, lineno);
			return -EINVAL;
		}
		ini_line(st, p, le, lineno);
		p = nl ? nl + 1 : end;
	}
	return 0;
}

static void buf_wipe_free(char *buf, size_t cap)
{
	if (!buf)
		return;
	explicit_bzero(buf, cap);
	free(buf);
}

static int read_fd_bounded(int fd, size_t size, char **ret, size_t *ret_len)
{
	char *buf = malloc(size + 1);
	size_t got = 0;

	if (!buf)
		return -ENOMEM;
	/* Reads what fstat saw; growth meanwhile is left for the next load. */
	ssize_t n = fdio_read_full(fd, buf, size);
	if (n < 0) {
		buf_wipe_free(buf, size + 1);
		return (int)n;
	}
	got = (size_t)n;
	buf[got] = '\0';
	*ret = buf;
	*ret_len = got;
	return 0;
}

/* -ENOENT when missing; -EFBIG over 1 MiB; -EINVAL when not a regular file. */
static int read_small_file(const char *path, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	struct stat stt;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOTDIR ? -ENOENT : -errno;
	if (fstat(fd, &stt) < 0)
		return -errno;
	if (!S_ISREG(stt.st_mode))
		return -EINVAL;
	if (stt.st_size > CREDS_FILE_MAX)
		return -EFBIG;
	return read_fd_bounded(fd, (size_t)stt.st_size, ret, ret_len);
}

/* What one file says about the profile: -ENOENT (nothing), -EINVAL
 * (half a key pair), or 0 with *ret filled. */
static int ini_result(const struct ini_state *st, struct s3_credentials *ret)
{
	bool has_ak = st->ak.p && st->ak.n, has_sk = st->sk.p && st->sk.n;

	if (!st->section_seen || (!has_ak && !has_sk))
		return -ENOENT;
	if (has_ak != has_sk) {
		log_debug("creds: profile has only half a key pair", "path=%s profile=%s",
			  st->path, st->profile);
		return -EINVAL;
	}
	return creds_fill(st->ak, st->sk, st->tok, 0, ret);
}

static int profile_from_file(const char *path, enum ini_kind kind, const char *profile,
			     struct s3_credentials *ret)
{
	struct ini_state st = { .kind = kind, .profile = profile, .path = path };
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_small_file(path, &buf, &len);
	if (r < 0) {
		if (r != -ENOENT)
			log_debug("creds: cannot read shared file", "path=%s errno=%d", path, -r);
		return r;
	}
	if (memchr(buf, '\0', len)) {
		log_debug("creds: NUL byte in shared file", "path=%s", path);
		r = -EINVAL;
	}
	if (r == 0)
		r = ini_parse(&st, buf, len);
	if (r == 0)
		r = ini_result(&st, ret);
	buf_wipe_free(buf, len + 1);
	return r;
}

static int home_dir(char *out, size_t n)
{
	const char *home = getenv("HOME");
	struct passwd pw, *res = NULL;
	char tmp[4096];

	if (!home || !*home) {
		if (getpwuid_r(getuid(), &pw, tmp, sizeof(tmp), &res) != 0 || !res ||
		    !res->pw_dir)
			return -ENOENT;
		home = res->pw_dir;
	}
	if ((size_t)snprintf(out, n, "%s", home) >= n)
		return -ENAMETOOLONG;
	return 0;
}

/* $ENV_VAR (with a leading "~/" expanded) or ~/.aws/<file>. */
static int shared_path(const char *env, const char *file, char *out, size_t n)
{
	const char *v = getenv(env);
	char home[PATH_MAX];
	int r;

	if (v && *v && strncmp(v, "~/", 2) != 0)
		return (size_t)snprintf(out, n, "%s", v) >= n ? -ENAMETOOLONG : 0;
	r = home_dir(home, sizeof(home));
	if (r < 0)
		return r;
	if (v && *v)
		r = snprintf(out, n, "%s/%s", home, v + 2);
	else
		r = snprintf(out, n, "%s/.aws/%s", home, file);
	return r < 0 || (size_t)r >= n ? -ENAMETOOLONG : 0;
}

struct profile_provider {
	struct s3_cred_provider base;
	char *profile; /* NULL: $AWS_PROFILE or "default", read at load() */
};

static const char *profile_name(const struct profile_provider *pp)
{
	const char *name = pp->profile ? pp->profile : getenv("AWS_PROFILE");
	return name && *name ? name : "default";
}

static int profile_load(struct s3_cred_provider *p, struct s3_credentials *ret)
{
	const char *name = profile_name((struct profile_provider *)p);
	char path[PATH_MAX];
	int r;

	if (strlen(name) > CREDS_PROFILE_MAX || !value_ok(name, strlen(name)))
		return -EINVAL;
	r = shared_path("AWS_SHARED_CREDENTIALS_FILE", "credentials", path, sizeof(path));
	if (r == 0)
		r = profile_from_file(path, INI_CREDENTIALS, name, ret);
	if (r != -ENOENT)
		return r;
	r = shared_path("AWS_CONFIG_FILE", "config", path, sizeof(path));
	if (r == 0)
		r = profile_from_file(path, INI_CONFIG, name, ret);
	if (r == -ENOENT)
		log_debug("creds: profile not found in shared files", "profile=%s", name);
	return r;
}

static void profile_free(struct s3_cred_provider *p)
{
	struct profile_provider *pp = (struct profile_provider *)p;
	free(pp->profile);
	free(pp);
}

struct s3_cred_provider *s3_creds_profile_new(const char *profile)
{
	struct profile_provider *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	if (profile && !(pp->profile = strdup(profile))) {
		free(pp);
		return NULL;
	}
	pp->base = (struct s3_cred_provider){ "profile", profile_load, profile_free };
	return &pp->base;
}

/* ---- chain ---- */

struct chain_provider {
	struct s3_cred_provider base;
	size_t n;
	struct s3_cred_provider *list[];
};

static int chain_load(struct s3_cred_provider *p, struct s3_credentials *ret)
{
	struct chain_provider *c = (struct chain_provider *)p;

	for (size_t i = 0; i < c->n; i++) {
		struct s3_credentials tmp = { 0 };
		int r = c->list[i]->load(c->list[i], &tmp);
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			s3_credentials_clear(&tmp);
			log_debug("creds: provider failed", "provider=%s errno=%d",
				  c->list[i]->name, -r);
			return r;
		}
		log_debug("creds: credentials loaded", "provider=%s", c->list[i]->name);
		*ret = tmp;
		return 0;
	}
	return -ENOENT;
}

static void chain_free(struct s3_cred_provider *p)
{
	struct chain_provider *c = (struct chain_provider *)p;

	for (size_t i = 0; i < c->n; i++)
		s3_cred_provider_free(c->list[i]);
	free(c);
}

static void providers_free(struct s3_cred_provider **list, size_t n)
{
	for (size_t i = 0; list && i < n; i++)
		s3_cred_provider_free(list[i]);
}

/* NULL (with the providers freed) on a NULL entry or out of memory. */
struct s3_cred_provider *s3_creds_chain_new(struct s3_cred_provider **list, size_t n)
{
	struct chain_provider *c;

	if (n && !list)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!list[i] || !list[i]->load) {
			providers_free(list, n);
			return NULL;
		}
	c = calloc(1, sizeof(*c) + n * sizeof(c->list[0]));
	if (!c) {
		providers_free(list, n);
		return NULL;
	}
	c->base = (struct s3_cred_provider){ "chain", chain_load, chain_free };
	c->n = n;
	if (n)
		memcpy(c->list, list, n * sizeof(list[0]));
	return &c->base;
}

struct s3_cred_provider *s3_creds_default_chain(const char *profile)
{
	struct s3_cred_provider *list[2] = { s3_creds_env_new(), s3_creds_profile_new(profile) };

	if (!list[0] || !list[1]) {
		providers_free(list, ARRAY_SIZE(list));
		return NULL;
	}
	return s3_creds_chain_new(list, ARRAY_SIZE(list));
}

/* ---- cache ---- */

struct s3_creds_cache {
	pthread_mutex_t lock;
	struct s3_cred_provider *p;
	time_t (*now)(void);
	int margin;
	bool have;
	struct s3_credentials cur;
};

static time_t wall_now(void) { return time(NULL); }

/* NULL (with p freed) when p is NULL or on allocation failure. */
struct s3_creds_cache *s3_creds_cache_new(struct s3_cred_provider *p, int refresh_margin_s,
					  time_t (*now)(void))
{
	struct s3_creds_cache *c;

	if (!p || !p->load) {
		s3_cred_provider_free(p);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c || pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		s3_cred_provider_free(p);
		return NULL;
	}
	c->p = p;
	c->now = now ? now : wall_now;
	c->margin = refresh_margin_s > 0 ? refresh_margin_s : 0;
	return c;
}

void s3_creds_cache_free(struct s3_creds_cache *c)
{
	if (!c)
		return;
	s3_credentials_clear(&c->cur);
	s3_cred_provider_free(c->p);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static bool cache_stale(const struct s3_creds_cache *c, time_t t)
{
	if (!c->have)
		return true;
	return c->cur.expires_at != 0 && c->cur.expires_at - c->margin <= (int64_t)t;
}

static bool cache_usable(const struct s3_creds_cache *c, time_t t)
{
	return c->have && (c->cur.expires_at == 0 || c->cur.expires_at > (int64_t)t);
}

static int cache_load(struct s3_creds_cache *c, time_t t)
{
	struct s3_credentials fresh = { 0 };
	int r = c->p->load(c->p, &fresh);

	if (r >= 0 && (!fresh.access_key || !fresh.secret_key))
		r = -EINVAL;
	if (r >= 0 && fresh.expires_at != 0 && fresh.expires_at <= (int64_t)t)
		r = -EKEYEXPIRED;
	if (r >= 0) {
		s3_credentials_clear(&c->cur);
		c->cur = fresh;
		c->have = true;
		return 0;
	}
	s3_credentials_clear(&fresh);
	if (cache_usable(c, t)) {
		log_debug("creds: refresh failed, keeping current credentials",
			  "provider=%s errno=%d expires_at=%lld", c->p->name, -r,
			  (long long)c->cur.expires_at);
		return 0;
	}
	s3_credentials_clear(&c->cur);
	c->have = false;
	return r;
}

int s3_creds_cache_get(struct s3_creds_cache *c, struct s3_credentials *ret)
{
	int r = 0;

	if (!c || !ret)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	time_t t = c->now();
	if (cache_stale(c, t))
		r = cache_load(c, t);
	if (r == 0)
		r = s3_credentials_copy(&c->cur, ret);
	pthread_mutex_unlock(&c->lock);
	return r;
}

void s3_creds_cache_invalidate(struct s3_creds_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	s3_credentials_clear(&c->cur);
	c->have = false;
	pthread_mutex_unlock(&c->lock);
}
