/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Options shared by every command that talks to S3 (--endpoint, --region,
 * --path-style, --virtual-host, --no-sign-request, --requester-pays,
 * --profile, --ca-bundle) and turning them into an s3_bucket with the
 * right credential provider.
 */
#ifndef LITH_TOOLS_S3OPTS_H
#define LITH_TOOLS_S3OPTS_H

#include <getopt.h>
#include <stdbool.h>

#include "fetch/s3/s3.h"

struct s3opts {
	const char *endpoint;
	const char *region;
	const char *profile;
	const char *ca_file;
	enum s3_addressing addressing;
	bool anonymous;
	bool requester_pays;
};

/* getopt_long entries for the shared options (values >= 0x100). */
#define S3OPTS_LONGOPTS                                                   \
	{ "endpoint", required_argument, NULL, 0x100 },                   \
	{ "region", required_argument, NULL, 0x101 },                     \
	{ "path-style", no_argument, NULL, 0x102 },                       \
	{ "virtual-host", no_argument, NULL, 0x103 },                     \
	{ "no-sign-request", no_argument, NULL, 0x104 },                  \
	{ "requester-pays", no_argument, NULL, 0x105 },                   \
	{ "profile", required_argument, NULL, 0x106 },                    \
	{ "ca-bundle", required_argument, NULL, 0x107 }

#define S3OPTS_HELP                                                                  \
	"  --endpoint URL       S3 endpoint (default: AWS for the region)\n"        \
	"  --region R           signing region (default us-east-1; AWS_REGION)\n"   \
	"  --path-style         path-style addressing (default for custom endpoints)\n" \
	"  --virtual-host       virtual-hosted-style addressing\n"                   \
	"  --no-sign-request    anonymous requests (public buckets)\n"               \
	"  --requester-pays     accept requester-pays charges\n"                     \
	"  --profile P          profile in ~/.aws/credentials and ~/.aws/config\n"  \
	"  --ca-bundle FILE     extra CA certificates for https endpoints\n"

void s3opts_init(struct s3opts *o);
/* Handles one getopt result; true if it was a shared option. */
bool s3opts_handle(struct s3opts *o, int opt, const char *arg);
/* Builds the bucket; prints a clear error and returns < 0 on failure. */
int s3opts_bucket(const struct s3opts *o, const char *bucket, struct s3_bucket **ret);

#endif
