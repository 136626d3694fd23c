/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credential providers for S3 requests, behind one interface so that later
 * sources (web identity, instance metadata) slot in: a provider's load()
 * returns a fresh set of keys, possibly with an expiry. Providers shipped
 * here: static keys, the standard AWS environment variables, shared
 * credentials/config files with profiles, and a chain trying several in
 * order. A cache in front of a provider makes credentials cheap to read from
 * many threads and refreshes them `refresh_margin` seconds before they
 * expire. Secrets are wiped (explicit_bzero) when released and never logged.
 */
#ifndef LITH_S3_CREDS_H
#define LITH_S3_CREDS_H

#include <stdint.h>
#include <time.h>

struct s3_credentials {
	char *access_key;
	char *secret_key;
	char *session_token; /* NULL when none */
	int64_t expires_at;  /* unix seconds; 0 = does not expire */
};

/* Wipes and frees the strings; leaves *c zeroed. Accepts a zeroed struct. */
void s3_credentials_clear(struct s3_credentials *c);
int s3_credentials_copy(const struct s3_credentials *src, struct s3_credentials *ret);

struct s3_cred_provider {
	const char *name; /* "static", "env", "profile", "chain": for logs */
	/* Fills *ret (caller clears it). -ENOENT: this provider has nothing;
	 * -EINVAL: present but malformed (message in logs at debug). */
	int (*load)(struct s3_cred_provider *p, struct s3_credentials *ret);
	void (*free)(struct s3_cred_provider *p);
};

void s3_cred_provider_free(struct s3_cred_provider *p);

struct s3_cred_provider *s3_creds_static_new(const char *access_key, const char *secret_key,
					      const char *session_token);
/* AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, read at load(). */
struct s3_cred_provider *s3_creds_env_new(void);
/* Shared files: AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials) and
 * AWS_CONFIG_FILE (default ~/.aws/config, sections "[profile NAME]" and
 * "[default]"). profile NULL → $AWS_PROFILE or "default". Credentials file
 * wins over config file. Re-read at every load(). */
struct s3_cred_provider *s3_creds_profile_new(const char *profile);
/* Takes ownership of the providers; the first that does not say -ENOENT wins. */
struct s3_cred_provider *s3_creds_chain_new(struct s3_cred_provider **list, size_t n);
/* env, then profile(profile). */
struct s3_cred_provider *s3_creds_default_chain(const char *profile);

struct s3_creds_cache;
/* Takes ownership of p. now may be NULL (uses time()); tests inject a clock. */
struct s3_creds_cache *s3_creds_cache_new(struct s3_cred_provider *p, int refresh_margin_s,
					  time_t (*now)(void));
void s3_creds_cache_free(struct s3_creds_cache *c);
/* Thread-safe. Returns a private copy in *ret (caller clears it); reloads from
 * the provider when nothing is cached or the cached set expires within the
 * margin. If a refresh fails but the old set has not expired yet, the old set
 * is returned. */
int s3_creds_cache_get(struct s3_creds_cache *c, struct s3_credentials *ret);
/* Drop what is cached so the next get reloads (e.g. after a 403 ExpiredToken). */
void s3_creds_cache_invalidate(struct s3_creds_cache *c);

#endif
