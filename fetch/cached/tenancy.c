// SPDX-License-Identifier: Apache-2.0
/* Tenancy proofs (see tenancy.h): SHA-256 of length-prefixed fields,
 * truncated to 64 bits, in a linear-probing set cleared when 3/4 full. */
#include "fetch/cached/tenancy.h"

#include "fetch/base/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

struct tenancy {
	uint64_t *slots; /* 0 = empty */
	uint64_t mask;
	uint64_t used;
	bool dirty;
};

#define TENANCY_MAGIC 0x31594e414e45544cull /* "LTENANY1" */

static uint64_t hash_fields(const char *const *f, size_t n)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	uint64_t h = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		for (size_t i = 0; i < n; i++) {
			const char *s = f[i] ? f[i] : "";
			uint64_t len = f[i] ? strlen(s) : UINT64_MAX; /* NULL ≠ "" */
			EVP_DigestUpdate(ctx, &len, sizeof(len));
			EVP_DigestUpdate(ctx, s, f[i] ? len : 0);
		}
		EVP_DigestFinal_ex(ctx, md, &mdlen);
		memcpy(&h, md, sizeof(h));
	}
	EVP_MD_CTX_free(ctx);
	return h ? h : 1; /* 0 marks an empty slot */
}

uint64_t tenancy_identity(const char *endpoint, const char *access_key,
			  const char *secret_key, const char *session_token)
{
	const char *f[] = { "identity", endpoint, access_key, secret_key, session_token };
	return hash_fields(f, 5);
}

static uint64_t proof_hash(uint64_t identity, const char *endpoint, const char *bucket,
			   const char *key, const char *etag)
{
	char id[17];
	const char *f[] = { "proof", id, endpoint, bucket, key, etag };

	for (int i = 0; i < 16; i++)
		id[i] = "0123456789abcdef"[(identity >> (4 * i)) & 15];
	id[16] = '\0';
	return hash_fields(f, 6);
}

int tenancy_new(uint32_t capacity_log2, struct tenancy **ret)
{
	struct tenancy *t = calloc(1, sizeof(*t));

	if (!t || capacity_log2 < 4 || capacity_log2 > 28) {
		free(t);
		return t ? -EINVAL : -ENOMEM;
	}
	t->mask = (1ull << capacity_log2) - 1;
	t->slots = calloc(t->mask + 1, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return -ENOMEM;
	}
	*ret = t;
	return 0;
}

void tenancy_free(struct tenancy *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t);
}

static uint64_t *probe(const struct tenancy *t, uint64_t h)
{
	for (uint64_t i = h & t->mask;; i = (i + 1) & t->mask)
		if (t->slots[i] == h || t->slots[i] == 0)
			return &t->slots[i];
}

bool tenancy_has(const struct tenancy *t, uint64_t identity, const char *endpoint,
		 const char *bucket, const char *key, const char *etag)
{
	uint64_t h = proof_hash(identity, endpoint, bucket, key, etag);
	return *probe(t, h) == h;
}

void tenancy_add(struct tenancy *t, uint64_t identity, const char *endpoint,
		 const char *bucket, const char *key, const char *etag)
{
	uint64_t h = proof_hash(identity, endpoint, bucket, key, etag);
	uint64_t *slot;

	if (t->used >= (t->mask + 1) / 4 * 3) {
		memset(t->slots, 0, (t->mask + 1) * sizeof(*t->slots));
		t->used = 0;
	}
	slot = probe(t, h);
	if (*slot == 0) {
		*slot = h;
		t->used++;
		t->dirty = true;
	}
}

uint64_t tenancy_count(const struct tenancy *t) { return t->used; }

bool tenancy_dirty(const struct tenancy *t) { return t->dirty; }

int tenancy_save(const struct tenancy *t, const char *path)
{
	uint64_t hdr[2] = { TENANCY_MAGIC, t->mask + 1 };
	char tmp[4096];
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = fdio_write_all(fd, hdr, sizeof(hdr));
	if (r == 0)
		r = fdio_write_all(fd, t->slots, (t->mask + 1) * sizeof(uint64_t));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	else
		((struct tenancy *)t)->dirty = false;
	return r;
}

int tenancy_load(struct tenancy *t, const char *path)
{
	uint64_t hdr[2];
	size_t bytes = (t->mask + 1) * sizeof(uint64_t);
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (read(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) || hdr[0] != TENANCY_MAGIC ||
	    hdr[1] != t->mask + 1 || read(fd, t->slots, bytes) != (ssize_t)bytes)
		r = -EBADMSG;
	close(fd);
	t->used = 0;
	for (uint64_t i = 0; r == 0 && i <= t->mask; i++)
		t->used += t->slots[i] != 0;
	if (r < 0)
		memset(t->slots, 0, bytes);
	return r;
}
