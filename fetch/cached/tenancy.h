/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tenancy: which identities have shown they may read which object versions.
 * A cached block is served to a view only if the view's identity has a
 * proof for that (endpoint, bucket, key, ETag): a GET or HEAD for it that
 * S3 answered with success for those credentials. Proofs are kept as 64-bit
 * hashes in a bounded open-addressing set; when it fills up it is cleared
 * (forgotten proofs are re-established with one HEAD each), so memory is
 * bounded whatever the clients do. An identity is a hash of the endpoint and
 * the full credentials (a wrong secret is another identity). Loop thread only.
 */
#ifndef LITH_CACHED_TENANCY_H
#define LITH_CACHED_TENANCY_H

#include <stdbool.h>
#include <stdint.h>

struct tenancy;

int tenancy_new(uint32_t capacity_log2, struct tenancy **ret);
void tenancy_free(struct tenancy *t);
bool tenancy_has(const struct tenancy *t, uint64_t identity, const char *endpoint,
		 const char *bucket, const char *key, const char *etag);
void tenancy_add(struct tenancy *t, uint64_t identity, const char *endpoint,
		 const char *bucket, const char *key, const char *etag);
uint64_t tenancy_count(const struct tenancy *t);

/* Persistence, so warm reads after a daemon restart need no new proofs.
 * The file holds only hashes (no credentials); it is written atomically
 * with mode 0600. load ignores a missing, foreign or corrupt file. */
int tenancy_save(const struct tenancy *t, const char *path);
int tenancy_load(struct tenancy *t, const char *path);
bool tenancy_dirty(const struct tenancy *t);

/* Identity of a set of credentials at an endpoint (anonymous: key NULL). */
uint64_t tenancy_identity(const char *endpoint, const char *access_key,
			  const char *secret_key, const char *session_token);

#endif
