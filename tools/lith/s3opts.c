// SPDX-License-Identifier: Apache-2.0
/* Shared S3 command-line options (see s3opts.h). */
#include "tools/lith/s3opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void s3opts_init(struct s3opts *o)
{
	*o = (struct s3opts){ .addressing = S3_ADDR_AUTO };
	o->endpoint = getenv("AWS_ENDPOINT_URL_S3");
	if (!o->endpoint)
		o->endpoint = getenv("AWS_ENDPOINT_URL");
	o->region = getenv("AWS_REGION");
	if (!o->region)
		o->region = getenv("AWS_DEFAULT_REGION");
	o->ca_file = getenv("AWS_CA_BUNDLE");
}

bool s3opts_handle(struct s3opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 0x100: o->endpoint = arg; return true;
	case 0x101: o->region = arg; return true;
	case 0x102: o->addressing = S3_ADDR_PATH; return true;
	case 0x103: o->addressing = S3_ADDR_VIRTUAL; return true;
	case 0x104: o->anonymous = true; return true;
	case 0x105: o->requester_pays = true; return true;
	case 0x106: o->profile = arg; return true;
	case 0x107: o->ca_file = arg; return true;
	default: return false;
	}
}

int s3opts_bucket(const struct s3opts *o, const char *bucket, struct s3_bucket **ret)
{
	struct s3_bucket_config cfg = {
		.bucket = bucket, .endpoint = o->endpoint, .region = o->region,
		.addressing = o->addressing, .requester_pays = o->requester_pays,
		.anonymous = o->anonymous, .ca_file = o->ca_file,
	};
	struct s3_creds_cache *creds = NULL;
	char err[256] = "";
	int r;

	if (!o->anonymous) {
		struct s3_cred_provider *p = s3_creds_default_chain(o->profile);
		creds = p ? s3_creds_cache_new(p, 300, NULL) : NULL;
		if (!creds) {
			fprintf(stderr, "lith: out of memory\n");
			return -1;
		}
	}
	r = s3_bucket_new(&cfg, creds, ret, err, sizeof(err));
	if (r < 0) {
		s3_creds_cache_free(creds);
		fprintf(stderr, "lith: %s\n", err);
	}
	return r;
}
