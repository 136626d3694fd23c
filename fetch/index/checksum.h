/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 of an index file (see format.h: the checksum field counts as
 * zeros). Streaming for the writer, one-shot for the reader, and
 * index_seal to rewrite the checksum of an image in memory (tests corrupt
 * a file, reseal it, and check that structural validation still holds).
 * Pure functions; thread-safe.
 */
#ifndef LITH_INDEX_CHECKSUM_H
#define LITH_INDEX_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#define INDEX_CHECKSUM_LEN 32

struct index_hash {
	void *ctx; /* EVP_MD_CTX */
};

int index_hash_begin(struct index_hash *h);
int index_hash_update(struct index_hash *h, const void *p, size_t n);
/* Finishes and releases h. */
int index_hash_end(struct index_hash *h, uint8_t out[INDEX_CHECKSUM_LEN]);
void index_hash_abort(struct index_hash *h);

/* Checksum of a whole file image; -EBADMSG if shorter than a header. */
int index_checksum(const void *file, size_t size, uint8_t out[INDEX_CHECKSUM_LEN]);
/* Recomputes and stores the checksum of the image in place. */
int index_seal(void *file, size_t size);

#endif
