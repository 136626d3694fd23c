// SPDX-License-Identifier: Apache-2.0
/*
 * The index file checksum: SHA-256 (OpenSSL EVP, SHA-NI where the CPU has
 * it) over the whole file with the header's checksum field read as zeros.
 * Used by the reader on every open, by the writer while streaming, and by
 * tests that corrupt a file and reseal it. Pure; thread-safe.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <string.h>

#include "fetch/index/checksum.h"
#include "fetch/index/format.h"

int index_hash_begin(struct index_hash *h)
{
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx)
		return -ENOMEM;
	if (!EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(h->ctx);
		h->ctx = NULL;
		return -EIO;
	}
	return 0;
}

int index_hash_update(struct index_hash *h, const void *p, size_t n)
{
	return EVP_DigestUpdate(h->ctx, p, n) ? 0 : -EIO;
}

int index_hash_end(struct index_hash *h, uint8_t out[INDEX_CHECKSUM_LEN])
{
	unsigned len = 0;
	int r = EVP_DigestFinal_ex(h->ctx, out, &len) && len == INDEX_CHECKSUM_LEN ? 0 : -EIO;

	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
	return r;
}

void index_hash_abort(struct index_hash *h)
{
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
}

int index_checksum(const void *file, size_t size, uint8_t out[INDEX_CHECKSUM_LEN])
{
	const size_t at = offsetof(struct index_disk_header, checksum);
	static const uint8_t zero[INDEX_CHECKSUM_LEN];
	struct index_hash h;
	int r;

	if (size < INDEX_HEADER_SIZE)
		return -EBADMSG;
	r = index_hash_begin(&h);
	if (r < 0)
		return r;
	if (index_hash_update(&h, file, at) < 0 ||
	    index_hash_update(&h, zero, sizeof(zero)) < 0 ||
	    index_hash_update(&h, (const uint8_t *)file + at + INDEX_CHECKSUM_LEN,
			      size - at - INDEX_CHECKSUM_LEN) < 0) {
		index_hash_abort(&h);
		return -EIO;
	}
	return index_hash_end(&h, out);
}

int index_seal(void *file, size_t size)
{
	uint8_t sum[INDEX_CHECKSUM_LEN];
	int r = index_checksum(file, size, sum);

	if (r < 0)
		return r;
	memcpy((uint8_t *)file + offsetof(struct index_disk_header, checksum), sum, sizeof(sum));
	return 0;
}
