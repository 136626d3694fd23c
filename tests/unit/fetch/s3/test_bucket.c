// SPDX-License-Identifier: Apache-2.0
/* Unit tests for bucket addressing: endpoint validation, path vs virtual
 * host, AWS default endpoints following region redirects, s3:// URIs. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fetch/s3/bucket.h"
#include "fetch/s3/s3uri.h"

static struct s3_bucket *mk(const char *bucket, const char *endpoint, const char *region,
			    enum s3_addressing a)
{
	struct s3_bucket_config cfg = { .bucket = bucket, .endpoint = endpoint,
					.region = region, .addressing = a, .anonymous = true };
	struct s3_bucket *b = NULL;
	char err[256];

	if (s3_bucket_new(&cfg, NULL, &b, err, sizeof(err)) < 0)
		return NULL;
	return b;
}

static void test_addressing(void)
{
	struct s3_bucket_target t;
	struct s3_bucket *b;

	b = mk("data", "http://127.0.0.1:7480", NULL, S3_ADDR_AUTO);
	CHECK(b != NULL);
	s3_bucket_target(b, &t);
	CHECK_STR(t.scheme, "http");
	CHECK_STR(t.host, "127.0.0.1:7480");
	CHECK_STR(t.path_prefix, "/data");
	CHECK_STR(t.region, "us-east-1");
	s3_bucket_free(b);

	b = mk("data", "http://localhost:7480/", "eu-west-1", S3_ADDR_VIRTUAL);
	s3_bucket_target(b, &t);
	CHECK_STR(t.host, "data.localhost:7480");
	CHECK_STR(t.path_prefix, "");
	s3_bucket_free(b);

	/* AWS default: virtual-hosted, and the host follows the region. */
	b = mk("my-bucket", NULL, "us-west-2", S3_ADDR_AUTO);
	s3_bucket_target(b, &t);
	CHECK_STR(t.scheme, "https");
	CHECK_STR(t.host, "my-bucket.s3.us-west-2.amazonaws.com");
	CHECK(s3_bucket_set_region(b, "eu-central-1"));
	CHECK(!s3_bucket_set_region(b, "eu-central-1"));
	CHECK(!s3_bucket_set_region(b, "bad/region"));
	s3_bucket_target(b, &t);
	CHECK_STR(t.host, "my-bucket.s3.eu-central-1.amazonaws.com");
	CHECK_STR(t.region, "eu-central-1");
	s3_bucket_free(b);

	/* Dotted names cannot use virtual hosts over https: path-style. */
	b = mk("my.bucket", NULL, "us-east-1", S3_ADDR_AUTO);
	s3_bucket_target(b, &t);
	CHECK_STR(t.path_prefix, "/my.bucket");
	s3_bucket_free(b);
}

static void test_rejects(void)
{
	CHECK(mk("data", "ftp://x", NULL, S3_ADDR_AUTO) == NULL);
	CHECK(mk("data", "http://host/path", NULL, S3_ADDR_AUTO) == NULL);
	CHECK(mk("data", "http://", NULL, S3_ADDR_AUTO) == NULL);
	CHECK(mk("data", "http://a b", NULL, S3_ADDR_AUTO) == NULL);
	CHECK(mk("bad/name", "http://h", NULL, S3_ADDR_AUTO) == NULL);
	CHECK(mk("", "http://h", NULL, S3_ADDR_AUTO) == NULL);
	CHECK(mk("Upper_Case", "http://h", NULL, S3_ADDR_VIRTUAL) == NULL);
	CHECK(mk("data", "http://h", "us east", S3_ADDR_AUTO) == NULL);
	CHECK(s3_bucket_name_dns_safe("abc"));
	CHECK(!s3_bucket_name_dns_safe("ab"));
	CHECK(!s3_bucket_name_dns_safe("a..b"));
	CHECK(!s3_bucket_name_dns_safe("-ab"));

	struct s3_bucket_config cfg = { .bucket = "data", .endpoint = "http://h" };
	struct s3_bucket *b = NULL;
	char err[256] = "";
	CHECK_INT(s3_bucket_new(&cfg, NULL, &b, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "credentials") != NULL);
}

static void test_uri(void)
{
	struct s3_uri u;
	char err[128];

	CHECK_INT(s3_uri_parse("s3://b/k with space/%41?#", &u, err, sizeof(err)), 0);
	CHECK_STR(u.bucket, "b");
	CHECK_STR(u.key, "k with space/%41?#");
	CHECK_INT(s3_uri_parse("s3://b", &u, err, sizeof(err)), 0);
	CHECK_STR(u.key, "");
	CHECK_INT(s3_uri_parse("s3:///k", &u, err, sizeof(err)), -EINVAL);
	CHECK_INT(s3_uri_parse("http://b/k", &u, err, sizeof(err)), -EINVAL);
	char long_key[1200];
	memset(long_key, 'k', sizeof(long_key));
	memcpy(long_key, "s3://b/", 7);
	long_key[sizeof(long_key) - 1] = '\0';
	CHECK_INT(s3_uri_parse(long_key, &u, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	test_addressing();
	test_rejects();
	test_uri();
	return check_done();
}
