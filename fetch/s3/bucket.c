// SPDX-License-Identifier: Apache-2.0
/*
 * Buckets: validated endpoint + bucket name + addressing style + region +
 * credentials. The region can change at run time (S3 tells us the real one
 * in a redirect), so it is guarded by a mutex; everything else is immutable
 * after s3_bucket_new. Shared by every request on any thread.
 */
#include "fetch/s3/bucket.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/base/parse.h"

struct s3_bucket {
	char name[256];
	char scheme[8];
	char host[256];   /* endpoint host, without bucket, with :port */
	bool aws_default; /* endpoint derived from region: follows region changes */
	bool virtual_host;
	bool requester_pays;
	bool anonymous;
	char *ca_file;
	struct s3_creds_cache *creds;
	pthread_mutex_t lock;
	char region[64];
};

bool s3_bucket_name_valid(const char *n)
{
	size_t len = strlen(n);

	if (len < 1 || len > 255)
		return false;
	for (const char *p = n; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_')
			return false;
	return true;
}

bool s3_bucket_name_dns_safe(const char *n)
{
	size_t len = strlen(n);

	if (len < 3 || len > 63 || n[0] == '-' || n[len - 1] == '-' || n[0] == '.')
		return false;
	for (const char *p = n; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' ||
		      *p == '.'))
			return false;
	return strstr(n, "..") == NULL;
}

static bool region_valid(const char *r)
{
	size_t len = strlen(r);

	if (len < 1 || len >= 64)
		return false;
	for (; *r; r++)
		if (!isalnum((unsigned char)*r) && *r != '-' && *r != '_')
			return false;
	return true;
}

static int parse_endpoint(struct s3_bucket *b, const char *ep, char *err, size_t errlen)
{
	const char *host;
	size_t n;

	if (strncmp(ep, "http://", 7) == 0) {
		strcpy(b->scheme, "http");
		host = ep + 7;
	} else if (strncmp(ep, "https://", 8) == 0) {
		strcpy(b->scheme, "https");
		host = ep + 8;
	} else {
		snprintf(err, errlen, "endpoint %s: must start with http:// or https://", ep);
		return -EINVAL;
	}
	n = strcspn(host, "/?#");
	if (n == 0 || n >= sizeof(b->host) || (host[n] && strcmp(host + n, "/") != 0)) {
		snprintf(err, errlen, "endpoint %s: expected scheme://host[:port] with no path", ep);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)host[i]) && !strchr(".-:[]_", host[i])) {
			snprintf(err, errlen, "endpoint %s: bad character in host", ep);
			return -EINVAL;
		}
	memcpy(b->host, host, n);
	b->host[n] = '\0';
	return 0;
}

static void aws_host(const char *region, char *out, size_t cap)
{
	snprintf(out, cap, "s3.%s.amazonaws.com", region);
}

static int bucket_configure(struct s3_bucket *b, const struct s3_bucket_config *cfg,
			    char *err, size_t errlen)
{
	const char *region = cfg->region && *cfg->region ? cfg->region : "us-east-1";

	if (!cfg->bucket || !s3_bucket_name_valid(cfg->bucket)) {
		snprintf(err, errlen, "bucket name %s: invalid (1-255 of a-z A-Z 0-9 . - _)",
			 cfg->bucket ? cfg->bucket : "(none)");
		return -EINVAL;
	}
	if (!region_valid(region)) {
		snprintf(err, errlen, "region %s: invalid", region);
		return -EINVAL;
	}
	snprintf(b->name, sizeof(b->name), "%s", cfg->bucket);
	snprintf(b->region, sizeof(b->region), "%s", region);
	if (cfg->endpoint && *cfg->endpoint) {
		int r = parse_endpoint(b, cfg->endpoint, err, errlen);
		if (r < 0)
			return r;
	} else {
		b->aws_default = true;
		strcpy(b->scheme, "https");
		aws_host(region, b->host, sizeof(b->host));
	}
	b->virtual_host = cfg->addressing == S3_ADDR_VIRTUAL ||
			  (cfg->addressing == S3_ADDR_AUTO && b->aws_default &&
			   s3_bucket_name_dns_safe(b->name) &&
			   !(strchr(b->name, '.') && strcmp(b->scheme, "https") == 0));
	if (b->virtual_host && !s3_bucket_name_dns_safe(b->name)) {
		snprintf(err, errlen, "bucket %s: not usable with virtual-hosted addressing",
			 b->name);
		return -EINVAL;
	}
	return 0;
}

int s3_bucket_new(const struct s3_bucket_config *cfg, struct s3_creds_cache *creds,
		  struct s3_bucket **ret, char *err, size_t errlen)
{
	struct s3_bucket *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	r = bucket_configure(b, cfg, err, errlen);
	if (r == 0 && !cfg->anonymous && !creds) {
		snprintf(err, errlen, "bucket %s: no credentials and not anonymous", b->name);
		r = -EINVAL;
	}
	if (r == 0 && cfg->ca_file && !(b->ca_file = strdup(cfg->ca_file)))
		r = -ENOMEM;
	if (r < 0) {
		free(b->ca_file);
		free(b);
		return r;
	}
	b->requester_pays = cfg->requester_pays;
	b->anonymous = cfg->anonymous;
	b->creds = creds;
	pthread_mutex_init(&b->lock, NULL);
	*ret = b;
	return 0;
}

void s3_bucket_free(struct s3_bucket *b)
{
	if (!b)
		return;
	s3_creds_cache_free(b->creds);
	pthread_mutex_destroy(&b->lock);
	free(b->ca_file);
	free(b);
}

const char *s3_bucket_name(const struct s3_bucket *b) { return b->name; }

void s3_bucket_region(struct s3_bucket *b, char *out, size_t cap)
{
	pthread_mutex_lock(&b->lock);
	snprintf(out, cap, "%s", b->region);
	pthread_mutex_unlock(&b->lock);
}

void s3_bucket_target(struct s3_bucket *b, struct s3_bucket_target *t)
{
	char host[256];

	pthread_mutex_lock(&b->lock);
	snprintf(t->region, sizeof(t->region), "%s", b->region);
	if (b->aws_default)
		aws_host(b->region, host, sizeof(host));
	else
		snprintf(host, sizeof(host), "%s", b->host);
	pthread_mutex_unlock(&b->lock);
	snprintf(t->scheme, sizeof(t->scheme), "%s", b->scheme);
	if (b->virtual_host) {
		snprintf(t->host, sizeof(t->host), "%s.%s", b->name, host);
		t->path_prefix[0] = '\0';
	} else {
		snprintf(t->host, sizeof(t->host), "%s", host);
		snprintf(t->path_prefix, sizeof(t->path_prefix), "/%s", b->name);
	}
}

bool s3_bucket_set_region(struct s3_bucket *b, const char *region)
{
	bool changed = false;

	if (!region_valid(region))
		return false;
	pthread_mutex_lock(&b->lock);
	if (strcmp(b->region, region) != 0) {
		snprintf(b->region, sizeof(b->region), "%s", region);
		changed = true;
	}
	pthread_mutex_unlock(&b->lock);
	return changed;
}

bool s3_bucket_anonymous(const struct s3_bucket *b) { return b->anonymous; }
bool s3_bucket_requester_pays(const struct s3_bucket *b) { return b->requester_pays; }
const char *s3_bucket_ca_file(const struct s3_bucket *b) { return b->ca_file; }

int s3_bucket_credentials(struct s3_bucket *b, struct s3_credentials *ret)
{
	int r;

	if (!b->creds)
		return -ENOKEY;
	r = s3_creds_cache_get(b->creds, ret);
	return r == -ENOENT ? -ENOKEY : r;
}

void s3_bucket_invalidate_credentials(struct s3_bucket *b)
{
	if (b->creds)
		s3_creds_cache_invalidate(b->creds);
}
