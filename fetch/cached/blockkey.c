// SPDX-License-Identifier: Apache-2.0
/*
 * Block keys: SHA-256("lith.blockstore.key.v1\0" || len64 || endpoint ||
 * len64 || bucket || len64 || key || len64 || etag || block_no64), all
 * integers little endian. Length prefixes make the encoding injective; a
 * cryptographic hash (not XXH3-128) because object keys and ETags are chosen
 * by whoever writes the bucket, and a crafted collision would let one
 * tenant's bytes be served for another tenant's block. Any thread.
 */
#include <endian.h>
#include <errno.h>
#include <openssl/evp.h>
#include <string.h>

#include "fetch/cached/blockstore.h"

static const char key_domain[] = "lith.blockstore.key.v1";

static int add_u64(EVP_MD_CTX *ctx, uint64_t v)
{
	v = htole64(v);
	return EVP_DigestUpdate(ctx, &v, sizeof(v)) == 1 ? 0 : -EIO;
}

static int add_field(EVP_MD_CTX *ctx, const char *s)
{
	size_t n = strnlen(s, BLOCKSTORE_FIELD_MAX + 1);

	if (n > BLOCKSTORE_FIELD_MAX)
		return -EINVAL;
	if (add_u64(ctx, n) < 0 || EVP_DigestUpdate(ctx, s, n) != 1)
		return -EIO;
	return 0;
}

static int digest(EVP_MD_CTX *ctx, const char *const fields[4], uint64_t block_no,
		  struct blockstore_key *out)
{
	unsigned int len = 0;
	int r;

	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, key_domain, sizeof(key_domain)) != 1)
		return -EIO;
	for (int i = 0; i < 4; i++) {
		r = add_field(ctx, fields[i]);
		if (r < 0)
			return r;
	}
	r = add_u64(ctx, block_no);
	if (r < 0)
		return r;
	if (EVP_DigestFinal_ex(ctx, out->b, &len) != 1 || len != BLOCKSTORE_KEY_BYTES)
		return -EIO;
	return 0;
}

int blockstore_key(const char *endpoint, const char *bucket, const char *key,
		   const char *etag, uint64_t block_no, struct blockstore_key *ret)
{
	const char *const fields[4] = { endpoint, bucket, key, etag };
	struct blockstore_key out;
	EVP_MD_CTX *ctx;
	int r;

	if (!endpoint || !bucket || !key || !etag || !ret)
		return -EINVAL;
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	r = digest(ctx, fields, block_no, &out);
	EVP_MD_CTX_free(ctx);
	if (r < 0)
		return r;
	*ret = out;
	return 0;
}
