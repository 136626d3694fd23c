/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to fetch/s3: what the request builder needs from a bucket —
 * the URL for a key, the signing region and credentials, region updates
 * after a redirect. The public half of the bucket API is in s3.h.
 */
#ifndef LITH_S3_BUCKET_H
#define LITH_S3_BUCKET_H

#include <stdbool.h>
#include <stddef.h>

#include "fetch/base/strbuf.h"
#include "fetch/s3/creds.h"
#include "fetch/s3/s3.h"

struct s3_bucket_target {
	char scheme[8];       /* "http" | "https" */
	char host[520];       /* host as it goes in the Host header (with :port if any) */
	char path_prefix[260]; /* "/bucket" for path-style, "" for virtual */
	char region[64];
};

/* Snapshot of where a request for this bucket goes right now. */
void s3_bucket_target(struct s3_bucket *b, struct s3_bucket_target *ret);
/* Adopts the region S3 told us; true if it changed. */
bool s3_bucket_set_region(struct s3_bucket *b, const char *region);
bool s3_bucket_anonymous(const struct s3_bucket *b);
bool s3_bucket_requester_pays(const struct s3_bucket *b);
const char *s3_bucket_ca_file(const struct s3_bucket *b);
/* Current credentials (caller clears). */
int s3_bucket_credentials(struct s3_bucket *b, struct s3_credentials *ret);
void s3_bucket_invalidate_credentials(struct s3_bucket *b);

/* Validation, exposed for unit tests. */
bool s3_bucket_name_valid(const char *name);
bool s3_bucket_name_dns_safe(const char *name);

#endif
