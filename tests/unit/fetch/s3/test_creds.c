// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for fetch/s3/creds.c: the static, env, profile and chain
 * providers, the shared-file parser's edge cases (missing files and
 * profiles, garbage, size and line limits, CRLF, comments, precedence of the
 * credentials file over the config file), and the cache (refresh before
 * expiry with an injected clock, keeping the old set when a refresh fails,
 * invalidation, 8 threads calling get). Shared files are written to a fresh
 * temporary directory, and HOME points there so ~/.aws is never the real one.
 */
#include "check.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/base/macro.h"
#include "fetch/s3/creds.h"

static char tmpdir[PATH_MAX];

/* ---- helpers ---- */

static const char *tmp_path(const char *name)
{
	static char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

static void write_bytes(const char *name, const char *data, size_t n)
{
	FILE *f = fopen(tmp_path(name), "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_INT(fwrite(data, 1, n, f), n);
	fclose(f);
}

static void write_file(const char *name, const char *text) { write_bytes(name, text, strlen(text)); }

/* Points the profile provider at two files in tmpdir (NULL: a missing one). */
static void use_files(const char *creds_name, const char *config_name)
{
	setenv("AWS_SHARED_CREDENTIALS_FILE", tmp_path(creds_name ? creds_name : "missing-c"), 1);
	setenv("AWS_CONFIG_FILE", tmp_path(config_name ? config_name : "missing-f"), 1);
}

static int load_profile(const char *profile, struct s3_credentials *c)
{
	struct s3_cred_provider *p = s3_creds_profile_new(profile);
	int r;

	CHECK(p != NULL);
	if (!p)
		return -ENOMEM;
	CHECK_STR(p->name, "profile");
	r = p->load(p, c);
	s3_cred_provider_free(p);
	return r;
}

/* Loads and checks the three values (tok NULL: no token expected). */
static void expect_profile(const char *profile, const char *ak, const char *sk, const char *tok)
{
	struct s3_credentials c = { 0 };

	CHECK_INT(load_profile(profile, &c), 0);
	CHECK_STR(c.access_key, ak);
	CHECK_STR(c.secret_key, sk);
	if (tok)
		CHECK_STR(c.session_token, tok);
	else
		CHECK(c.session_token == NULL);
	CHECK_INT(c.expires_at, 0);
	s3_credentials_clear(&c);
}

static void expect_profile_error(const char *profile, int want)
{
	struct s3_credentials c = { 0 };

	CHECK_INT(load_profile(profile, &c), want);
	CHECK(c.access_key == NULL && c.secret_key == NULL && c.session_token == NULL);
}

/* ---- credential sets ---- */

static void test_copy_and_clear(void)
{
	struct s3_credentials src = { .access_key = "AK", .secret_key = "SK",
				      .session_token = "TOK", .expires_at = 42 };
	struct s3_credentials dst = { 0 }, bad = { .secret_key = "SK" };

	CHECK_INT(s3_credentials_copy(&src, &dst), 0);
	CHECK_STR(dst.access_key, "AK");
	CHECK_STR(dst.secret_key, "SK");
	CHECK_STR(dst.session_token, "TOK");
	CHECK_INT(dst.expires_at, 42);
	CHECK(dst.access_key != src.access_key);
	s3_credentials_clear(&dst);
	CHECK(!dst.access_key && !dst.secret_key && !dst.session_token && !dst.expires_at);
	s3_credentials_clear(&dst); /* zeroed struct is fine */
	s3_credentials_clear(NULL);
	CHECK_INT(s3_credentials_copy(&bad, &dst), -EINVAL);
	CHECK(dst.access_key == NULL);
}

/* ---- static / env ---- */

static void test_static(void)
{
	struct s3_cred_provider *p = s3_creds_static_new("AKST", "SKST", "TOKST");
	struct s3_credentials c = { 0 };

	CHECK(p != NULL);
	CHECK_STR(p->name, "static");
	CHECK_INT(p->load(p, &c), 0);
	CHECK_STR(c.access_key, "AKST");
	CHECK_STR(c.secret_key, "SKST");
	CHECK_STR(c.session_token, "TOKST");
	s3_credentials_clear(&c);
	s3_cred_provider_free(p);

	p = s3_creds_static_new("AKST", "SKST", NULL);
	CHECK_INT(p->load(p, &c), 0);
	CHECK(c.session_token == NULL);
	s3_credentials_clear(&c);
	s3_cred_provider_free(p);

	CHECK(s3_creds_static_new(NULL, "SK", NULL) == NULL);
	CHECK(s3_creds_static_new("AK", "", NULL) == NULL);
	CHECK(s3_creds_static_new("AK\r\nX: y", "SK", NULL) == NULL);
	s3_cred_provider_free(NULL);
}

static void clear_env(void)
{
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
}

static void test_env(void)
{
	struct s3_cred_provider *p = s3_creds_env_new();
	struct s3_credentials c = { 0 };

	CHECK_STR(p->name, "env");
	clear_env();
	CHECK_INT(p->load(p, &c), -ENOENT);
	setenv("AWS_ACCESS_KEY_ID", "", 1);
	CHECK_INT(p->load(p, &c), -ENOENT);
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	CHECK_INT(p->load(p, &c), -EINVAL);
	CHECK(c.access_key == NULL);
	setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
	CHECK_INT(p->load(p, &c), 0);
	CHECK_STR(c.access_key, "AKENV");
	CHECK_STR(c.secret_key, "SKENV");
	CHECK(c.session_token == NULL);
	s3_credentials_clear(&c);
	setenv("AWS_SESSION_TOKEN", "TOKENV", 1);
	CHECK_INT(p->load(p, &c), 0); /* read at every load */
	CHECK_STR(c.session_token, "TOKENV");
	s3_credentials_clear(&c);
	setenv("AWS_SECRET_ACCESS_KEY", "bad\x01key", 1);
	CHECK_INT(p->load(p, &c), -EINVAL);
	clear_env();
	s3_cred_provider_free(p);
}

/* ---- profile ---- */

static const char creds_basic[] =
	"# a comment\n"
	"; another comment\n"
	"[default]\n"
	"aws_access_key_id = AKDEFAULT\n"
	"aws_secret_access_key=SKDEFAULT\n"
	"\n"
	"[work]\n"
	"  aws_access_key_id   =   AKWORK   \n"
	"aws_secret_access_key =\tSKWORK\n"
	"aws_session_token = TOKWORK\n"
	"[profile dev]\n"
	"aws_access_key_id = NOT-IN-CREDENTIALS\n"
	"aws_secret_access_key = NOT-IN-CREDENTIALS\n";

static void test_profile_basic(void)
{
	write_file("creds_basic", creds_basic);
	use_files("creds_basic", NULL);
	expect_profile("default", "AKDEFAULT", "SKDEFAULT", NULL);
	expect_profile("work", "AKWORK", "SKWORK", "TOKWORK");
	expect_profile_error("nope", -ENOENT);
	/* "[profile dev]" means nothing in the credentials file. */
	expect_profile_error("dev", -ENOENT);
	/* NULL profile: $AWS_PROFILE, else "default". */
	expect_profile(NULL, "AKDEFAULT", "SKDEFAULT", NULL);
	setenv("AWS_PROFILE", "work", 1);
	expect_profile(NULL, "AKWORK", "SKWORK", "TOKWORK");
	unsetenv("AWS_PROFILE");
}

static void test_profile_missing_files(void)
{
	use_files(NULL, NULL);
	expect_profile_error("default", -ENOENT);
	/* A directory where the file should be: present but not a file. */
	setenv("AWS_SHARED_CREDENTIALS_FILE", tmpdir, 1);
	expect_profile_error("default", -EINVAL);
	/* A path through a regular file: ENOTDIR counts as missing. */
	write_file("plainfile", "x");
	setenv("AWS_SHARED_CREDENTIALS_FILE", tmp_path("plainfile/credentials"), 1);
	expect_profile_error("default", -ENOENT);
	/* Empty file: nothing there. */
	write_file("empty", "");
	use_files("empty", "empty");
	expect_profile_error("default", -ENOENT);
}

static void test_profile_default_paths(void)
{
	char dir[PATH_MAX + 64];

	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unsetenv("AWS_CONFIG_FILE");
	expect_profile_error("default", -ENOENT); /* $HOME/.aws does not exist */
	snprintf(dir, sizeof(dir), "%s/.aws", tmpdir);
	CHECK_INT(mkdir(dir, 0700), 0);
	write_file(".aws/config", "[profile home]\naws_access_key_id=AKHOME\n"
				  "aws_secret_access_key=SKHOME\n");
	expect_profile("home", "AKHOME", "SKHOME", NULL);
	write_file(".aws/credentials", "[home]\naws_access_key_id=AKHOMEC\n"
				       "aws_secret_access_key=SKHOMEC\n");
	expect_profile("home", "AKHOMEC", "SKHOMEC", NULL);
	/* A leading "~/" in the variable is $HOME. */
	write_file("tilde", "[default]\naws_access_key_id=AKT\naws_secret_access_key=SKT\n");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "~/tilde", 1);
	expect_profile("default", "AKT", "SKT", NULL);
}

static const char config_basic[] =
	"[default]\n"
	"region = us-east-1\n"
	"aws_access_key_id = AKCFGDEF\n"
	"aws_secret_access_key = SKCFGDEF\n"
	"[dev]\n"
	"aws_access_key_id = WRONG-SECTION\n"
	"aws_secret_access_key = WRONG-SECTION\n"
	"[profile   dev]\n"
	"aws_access_key_id = AKDEV\n"
	"aws_secret_access_key = SKDEV\n"
	"aws_session_token = TOKDEV\n"
	"[profile regiononly]\n"
	"region = eu-west-1\n";

static void test_profile_config(void)
{
	write_file("config_basic", config_basic);
	use_files(NULL, "config_basic");
	expect_profile("default", "AKCFGDEF", "SKCFGDEF", NULL);
	expect_profile("dev", "AKDEV", "SKDEV", "TOKDEV");
	expect_profile_error("regiononly", -ENOENT);
	expect_profile_error("profile", -ENOENT);
	write_file("config_pdefault", "[profile default]\naws_access_key_id=AKPD\n"
				      "aws_secret_access_key=SKPD\n");
	use_files(NULL, "config_pdefault");
	expect_profile("default", "AKPD", "SKPD", NULL);
}

static void test_profile_precedence(void)
{
	/* Both files know "dev": the credentials file wins, as a whole set
	 * (the config file's token is not paired with its keys). */
	write_file("creds_dev", "[dev]\naws_access_key_id = AKCRED\n"
				"aws_secret_access_key = SKCRED\n");
	write_file("config_basic", config_basic);
	use_files("creds_dev", "config_basic");
	expect_profile("dev", "AKCRED", "SKCRED", NULL);
	/* Section present in credentials but without keys: config is used. */
	write_file("creds_nokeys", "[dev]\nregion = us-west-2\n");
	use_files("creds_nokeys", "config_basic");
	expect_profile("dev", "AKDEV", "SKDEV", "TOKDEV");
	/* A broken credentials file is an error, not a reason to fall back. */
	write_file("creds_half", "[dev]\naws_access_key_id = AKHALF\n");
	use_files("creds_half", "config_basic");
	expect_profile_error("dev", -EINVAL);
}

static void test_profile_malformed(void)
{
	write_file("garbage_ok",
		   "this line is garbage\n"
		   "=\n"
		   "[default\n"
		   "[default] trailing junk\n"
		   "[default] # a comment is fine\n"
		   "no equals sign here\n"
		   " = value without key\n"
		   "aws_access_key_id = AKOK\n"
		   "aws_secret_access_key = SKOK\n"
		   "]]][[[\n");
	use_files("garbage_ok", NULL);
	expect_profile("default", "AKOK", "SKOK", NULL);

	/* Keys after an unterminated header belong to no section. */
	write_file("broken_header", "[default]\naws_access_key_id = AKB\n[broken\n"
				    "aws_secret_access_key = SKB\n");
	use_files("broken_header", NULL);
	expect_profile_error("default", -EINVAL);

	write_file("half", "[default]\naws_secret_access_key = SKONLY\n");
	use_files("half", NULL);
	expect_profile_error("default", -EINVAL);

	write_file("empty_value", "[default]\naws_access_key_id =\naws_secret_access_key = S\n");
	use_files("empty_value", NULL);
	expect_profile_error("default", -EINVAL);

	write_file("ctrl", "[default]\naws_access_key_id = AK\naws_secret_access_key = S\x01K\n");
	use_files("ctrl", NULL);
	expect_profile_error("default", -EINVAL);

	static const char nul[] = "[default]\naws_access_key_id = AK\0\naws_secret_access_key = SK\n";
	write_bytes("nul", nul, sizeof(nul) - 1);
	use_files("nul", NULL);
	expect_profile_error("default", -EINVAL);
}

static void test_profile_syntax(void)
{
	/* CRLF line endings, tabs, upper-case key names, inline comments only
	 * after blank space, a nested sub-property that must not count, and
	 * the last assignment winning. */
	write_file("crlf", "\r\n[default]\r\naws_access_key_id = AKCRLF\r\n"
			   "aws_secret_access_key = SKCRLF\r\n\r\n");
	use_files("crlf", NULL);
	expect_profile("default", "AKCRLF", "SKCRLF", NULL);

	write_file("syntax",
		   "[default]\n"
		   "AWS_ACCESS_KEY_ID = AKFIRST\n"
		   "Aws_Access_Key_Id\t=\tAKCASE ; trailing comment\n"
		   "aws_secret_access_key = SK#not;a/comment+x # comment\n"
		   "s3 =\n"
		   "  aws_session_token = NESTED\n"
		   "  max_concurrent_requests = 4\n");
	use_files("syntax", NULL);
	expect_profile("default", "AKCASE", "SK#not;a/comment+x", NULL);

	write_file("no_final_newline", "[default]\naws_access_key_id=A\naws_secret_access_key=S");
	use_files("no_final_newline", NULL);
	expect_profile("default", "A", "S", NULL);
}

static void test_profile_limits(void)
{
	const char *tail = "[default]\naws_access_key_id = AKBIG\naws_secret_access_key = SKBIG\n";
	size_t max = 1024 * 1024, tl = strlen(tail);
	char *buf = malloc(max + 2);
	char line[5000];

	/* Exactly 1 MiB (comment lines of 100 bytes, then the keys): allowed. */
	memset(buf, '#', max + 1);
	for (size_t i = 99; i < max; i += 100)
		buf[i] = '\n';
	memcpy(buf + max - tl, tail, tl);
	buf[max - tl - 1] = '\n';
	write_bytes("exact_mib", buf, max);
	use_files("exact_mib", NULL);
	expect_profile("default", "AKBIG", "SKBIG", NULL);
	/* One byte more: rejected. */
	buf[max] = '\n';
	write_bytes("over_mib", buf, max + 1);
	use_files("over_mib", NULL);
	expect_profile_error("default", -EFBIG);
	free(buf);

	/* A 4096-byte line is fine, 4097 is not. */
	memset(line, '#', sizeof(line));
	snprintf(line + 4096, sizeof(line) - 4096, "\n%s", tail);
	write_file("line_4096", line);
	use_files("line_4096", NULL);
	expect_profile("default", "AKBIG", "SKBIG", NULL);
	memset(line, '#', sizeof(line));
	snprintf(line + 4097, sizeof(line) - 4097, "\n%s", tail);
	write_file("line_4097", line);
	use_files("line_4097", NULL);
	expect_profile_error("default", -EINVAL);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_profile_fuzz(void)
{
	static const char alphabet[] = "[]=#; \t\r\n\n\nabcdefault_idkeysprofile\x01\xff";
	char buf[8192];
	int bad = 0;

	for (int round = 0; round < 300; round++) {
		size_t n = rng() % sizeof(buf);
		bool binary = round % 3 == 0;
		for (size_t i = 0; i < n; i++)
			buf[i] = binary ? (char)rng()
					: alphabet[rng() % (sizeof(alphabet) - 1)];
		write_bytes("fuzz", buf, n);
		use_files("fuzz", "fuzz");
		struct s3_credentials c = { 0 };
		int r = load_profile(round % 2 ? "default" : "profile", &c);
		if (r != 0 && r != -ENOENT && r != -EINVAL)
			bad++;
		s3_credentials_clear(&c);
	}
	CHECK_INT(bad, 0);
}

/* ---- fake provider ---- */

struct fake {
	struct s3_cred_provider base;
	int rc;          /* what load() returns; 0: success */
	int loads;
	int *freed;      /* incremented by free() when set */
	int64_t ttl;     /* > 0: expires_at = now + ttl */
	int64_t expires; /* used when ttl == 0 */
	time_t (*now)(void);
	const char *tag;
};

static int fake_load(struct s3_cred_provider *p, struct s3_credentials *ret)
{
	struct fake *f = (struct fake *)p;
	char ak[64], sk[64];

	f->loads++;
	if (f->rc < 0)
		return f->rc;
	snprintf(ak, sizeof(ak), "AK%s%d", f->tag, f->loads);
	snprintf(sk, sizeof(sk), "SK%s%d", f->tag, f->loads);
	struct s3_credentials c = {
		.access_key = ak, .secret_key = sk,
		.expires_at = f->ttl > 0 ? (int64_t)f->now() + f->ttl : f->expires,
	};
	return s3_credentials_copy(&c, ret);
}

static void fake_free(struct s3_cred_provider *p)
{
	struct fake *f = (struct fake *)p;
	if (f->freed)
		(*f->freed)++;
	free(f);
}

static struct fake *fake_new(const char *tag, int rc, int *freed)
{
	struct fake *f = calloc(1, sizeof(*f));
	f->base = (struct s3_cred_provider){ "fake", fake_load, fake_free };
	f->rc = rc;
	f->freed = freed;
	f->tag = tag;
	return f;
}

/* ---- chain ---- */

static void test_chain(void)
{
	int freed = 0;
	struct fake *a = fake_new("a", -ENOENT, &freed), *b = fake_new("b", 0, &freed),
		    *c = fake_new("c", 0, &freed);
	struct s3_cred_provider *list[] = { &a->base, &b->base, &c->base };
	struct s3_cred_provider *ch = s3_creds_chain_new(list, 3);
	struct s3_credentials cr = { 0 };

	CHECK_STR(ch->name, "chain");
	CHECK_INT(ch->load(ch, &cr), 0);
	CHECK_STR(cr.access_key, "AKb1");
	CHECK_INT(a->loads, 1);
	CHECK_INT(b->loads, 1);
	CHECK_INT(c->loads, 0);
	s3_credentials_clear(&cr);
	/* An error other than -ENOENT stops the chain. */
	b->rc = -EACCES;
	CHECK_INT(ch->load(ch, &cr), -EACCES);
	CHECK(cr.access_key == NULL);
	CHECK_INT(c->loads, 0);
	b->rc = -ENOENT;
	CHECK_INT(ch->load(ch, &cr), 0);
	CHECK_STR(cr.access_key, "AKc1");
	s3_credentials_clear(&cr);
	a->rc = b->rc = c->rc = -ENOENT;
	CHECK_INT(ch->load(ch, &cr), -ENOENT);
	s3_cred_provider_free(ch);
	CHECK_INT(freed, 3);

	ch = s3_creds_chain_new(NULL, 0);
	CHECK_INT(ch->load(ch, &cr), -ENOENT);
	s3_cred_provider_free(ch);

	/* A NULL entry: no chain, and the others are freed, not leaked. */
	freed = 0;
	struct s3_cred_provider *withnull[] = { &fake_new("x", 0, &freed)->base, NULL };
	CHECK(s3_creds_chain_new(withnull, 2) == NULL);
	CHECK_INT(freed, 1);
}

static void test_default_chain(void)
{
	struct s3_cred_provider *p = s3_creds_default_chain("work");
	struct s3_credentials c = { 0 };

	write_file("creds_basic", creds_basic);
	use_files("creds_basic", NULL);
	clear_env();
	CHECK_INT(p->load(p, &c), 0);
	CHECK_STR(c.access_key, "AKWORK");
	s3_credentials_clear(&c);
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
	CHECK_INT(p->load(p, &c), 0);
	CHECK_STR(c.access_key, "AKENV");
	s3_credentials_clear(&c);
	clear_env();
	s3_cred_provider_free(p);
}

/* ---- cache ---- */

static time_t fake_time;
static time_t fake_clock(void) { return fake_time; }

static void expect_get(struct s3_creds_cache *cache, const char *ak)
{
	struct s3_credentials c = { 0 };

	CHECK_INT(s3_creds_cache_get(cache, &c), 0);
	CHECK_STR(c.access_key, ak);
	s3_credentials_clear(&c);
}

static void test_cache_refresh(void)
{
	int freed = 0;
	struct fake *f = fake_new("", 0, &freed);
	struct s3_creds_cache *cache;
	struct s3_credentials c = { 0 };

	f->ttl = 3600;
	f->now = fake_clock;
	fake_time = 1000;
	cache = s3_creds_cache_new(&f->base, 300, fake_clock);
	expect_get(cache, "AK1"); /* expires at 4600 */
	expect_get(cache, "AK1");
	CHECK_INT(f->loads, 1);
	fake_time = 4600 - 301; /* just outside the margin */
	expect_get(cache, "AK1");
	CHECK_INT(f->loads, 1);
	fake_time = 4600 - 300; /* inside it: refreshed before expiry */
	expect_get(cache, "AK2");
	CHECK_INT(f->loads, 2); /* AK2 expires at 7900 */

	/* Refresh fails inside the margin: the old set is still served. */
	f->rc = -EIO;
	fake_time = 7900 - 10;
	expect_get(cache, "AK2");
	CHECK_INT(f->loads, 3);
	expect_get(cache, "AK2");
	CHECK_INT(f->loads, 4); /* tried again on each get */
	/* Expired and the refresh still fails: the error, nothing returned. */
	fake_time = 7900;
	CHECK_INT(s3_creds_cache_get(cache, &c), -EIO);
	CHECK(c.access_key == NULL && c.secret_key == NULL);
	f->rc = 0;
	expect_get(cache, "AK6");
	CHECK_INT(f->loads, 6);

	/* Invalidate forces a reload even though the set is fresh. */
	s3_creds_cache_invalidate(cache);
	expect_get(cache, "AK7");
	CHECK_INT(f->loads, 7);

	/* A provider that hands out an already expired set. */
	s3_creds_cache_invalidate(cache);
	f->ttl = 0;
	f->expires = fake_time - 1;
	CHECK_INT(s3_creds_cache_get(cache, &c), -EKEYEXPIRED);
	s3_creds_cache_free(cache);
	CHECK_INT(freed, 1);
}

static void test_cache_no_expiry(void)
{
	struct s3_creds_cache *cache;
	struct fake *f = fake_new("", 0, NULL);
	struct s3_credentials c = { 0 };

	fake_time = 5;
	cache = s3_creds_cache_new(&f->base, -7, fake_clock); /* negative margin: 0 */
	expect_get(cache, "AK1");
	fake_time = 1LL << 40;
	expect_get(cache, "AK1");
	CHECK_INT(f->loads, 1);
	f->rc = -ENOENT;
	s3_creds_cache_invalidate(cache);
	CHECK_INT(s3_creds_cache_get(cache, &c), -ENOENT);
	CHECK_INT(s3_creds_cache_get(NULL, &c), -EINVAL);
	CHECK_INT(s3_creds_cache_get(cache, NULL), -EINVAL);
	s3_creds_cache_free(cache);
	s3_creds_cache_free(NULL);
	s3_creds_cache_invalidate(NULL);
	CHECK(s3_creds_cache_new(NULL, 10, NULL) == NULL);

	/* Default clock: time(); a static set never expires. */
	cache = s3_creds_cache_new(s3_creds_static_new("AKS", "SKS", NULL), 300, NULL);
	expect_get(cache, "AKS");
	s3_creds_cache_free(cache);
}

/* 8 threads hammer get() while the clock runs: every copy must be a whole,
 * consistent set (AKn with SKn), and reloads must happen but stay rare. */
static time_t race_time;
static time_t race_clock(void) { return __atomic_add_fetch(&race_time, 1, __ATOMIC_RELAXED); }

struct race_arg {
	struct s3_creds_cache *cache;
	int errors;
};

static void *race_thread(void *p)
{
	struct race_arg *a = p;

	for (int i = 0; i < 2000; i++) {
		struct s3_credentials c = { 0 };
		if (s3_creds_cache_get(a->cache, &c) != 0 || !c.access_key || !c.secret_key ||
		    strcmp(c.access_key + 2, c.secret_key + 2) != 0 || c.expires_at == 0)
			a->errors++;
		s3_credentials_clear(&c);
	}
	return NULL;
}

static void test_cache_threads(void)
{
	struct fake *f = fake_new("r", 0, NULL);
	struct race_arg args[8];
	pthread_t th[8];
	struct s3_creds_cache *cache;
	int errors = 0;

	f->ttl = 100;
	f->now = race_clock;
	race_time = 1000;
	cache = s3_creds_cache_new(&f->base, 10, race_clock);
	for (int i = 0; i < 8; i++) {
		args[i] = (struct race_arg){ .cache = cache };
		CHECK_INT(pthread_create(&th[i], NULL, race_thread, &args[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		errors += args[i].errors;
	}
	CHECK_INT(errors, 0);
	/* 16000 gets, each one clock tick; a set lives ~90 ticks. */
	CHECK(f->loads > 100 && f->loads < 1000);
	s3_creds_cache_free(cache);
}

static void cleanup_tmpdir(void)
{
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/lith-test-creds-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("HOME", tmpdir, 1);
	clear_env();

	test_copy_and_clear();
	test_static();
	test_env();
	test_profile_basic();
	test_profile_missing_files();
	test_profile_default_paths();
	test_profile_config();
	test_profile_precedence();
	test_profile_malformed();
	test_profile_syntax();
	test_profile_limits();
	test_profile_fuzz();
	test_chain();
	test_default_chain();
	test_cache_refresh();
	test_cache_no_expiry();
	test_cache_threads();

	cleanup_tmpdir();
	return check_done();
}
