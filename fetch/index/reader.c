// SPDX-License-Identifier: Apache-2.0
/*
 * The index reader (API in index.h, layout in format.h): maps the file
 * read-only, validates all of it once, then answers lookups in place.
 *
 * Invariant after index_open*: every offset and length in the file has been
 * checked against the file size; names are 1..255 bytes with no '/' or NUL
 * and are not "." or ".."; each directory's child range lies inside the
 * entries, the ranges tile [1, n) in row order, every child names its
 * directory as parent, children are strictly sorted (so names are unique)
 * and come after their directory (so parent walks terminate); directory
 * rows and directory entries point at each other one to one; the header's
 * counts and total size match the entries, and every listed key is
 * accounted for exactly once (file, marker or skip), so no sum overflows. Accessors rely on this and do
 * no further bounds checks on file data, only on caller arguments.
 * Any thread; the handle is immutable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/base/macro.h"
#include "fetch/index/checksum.h"
#include "fetch/index/format.h"
#include "fetch/index/index.h"

struct index {
	const uint8_t *base;
	size_t size;
	bool mapped;
	const struct index_disk_header *h;
	const struct index_disk_entry *e;
	const struct index_disk_dir *d;
	const struct index_disk_sample *s;
	const char *pool;
	uint64_t n, ndirs;
};

static uint64_t align8(uint64_t v) { return (v + 7) & ~7ull; }

static bool ref_ok(uint64_t off, uint64_t len, uint64_t limit)
{
	return off <= limit && len <= limit - off;
}

static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, MIN(al, bl));

	return c ? c : (al > bl) - (al < bl);
}

static const char *entry_name(const struct index *x, const struct index_disk_entry *e)
{
	return x->pool + e->name_off;
}

/* ---- validation ------------------------------------------------------ */

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static int check_header(const struct index_disk_header *h, size_t size)
{
	if (memcmp(h->magic, INDEX_MAGIC, sizeof(h->magic)) != 0 ||
	    h->version != INDEX_FORMAT_VERSION || h->header_size != INDEX_HEADER_SIZE ||
	    h->file_size != size || !all_zero(h->reserved, sizeof(h->reserved)) ||
	    h->skipped[0] != 0 ||
	    !all_zero(&h->skipped[INDEX_SKIP__COUNT],
		      sizeof(h->skipped) - INDEX_SKIP__COUNT * sizeof(h->skipped[0])))
		return -EBADMSG;
	return 0;
}

static int check_checksum(const uint8_t *base, size_t size)
{
	const struct index_disk_header *h = (const void *)base;
	uint8_t sum[INDEX_CHECKSUM_LEN];
	int r = index_checksum(base, size, sum);

	if (r < 0)
		return r == -EBADMSG ? r : -EIO;
	return memcmp(sum, h->checksum, sizeof(sum)) == 0 ? 0 : -EBADMSG;
}

/* Sections must sit back to back in the canonical order. */
static int check_layout(const struct index_disk_header *h)
{
	uint64_t at = INDEX_HEADER_SIZE;

	if (h->entry_count < 1 || h->entry_count > UINT32_MAX || h->dir_count < 1 ||
	    h->dir_count > h->entry_count ||
	    h->sample_count > (uint64_t)INDEX_SAMPLES_PER_REASON * INDEX_SKIP__COUNT)
		return -EBADMSG;
	if (h->entry_off != at)
		return -EBADMSG;
	at += h->entry_count * sizeof(struct index_disk_entry);
	if (h->dir_off != at)
		return -EBADMSG;
	at += h->dir_count * sizeof(struct index_disk_dir);
	if (h->sample_off != at)
		return -EBADMSG;
	at += h->sample_count * sizeof(struct index_disk_sample);
	if (h->pool_off != at || h->pool_size > h->file_size ||
	    at + align8(h->pool_size) != h->file_size || h->name_bytes > h->pool_size)
		return -EBADMSG;
	if (h->ndirs != h->dir_count || h->nfiles + h->ndirs != h->entry_count)
		return -EBADMSG;
	return 0;
}

static bool name_ok(const char *p, size_t len)
{
	if (memchr(p, '/', len) || memchr(p, '\0', len))
		return false;
	return !((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'));
}

static int check_etag(const struct index *x, const struct index_disk_entry *e)
{
	unsigned kind = e->flags & (INDEX_ENTRY_ETAG_MD5 | INDEX_ENTRY_ETAG_STR);

	if (kind == (INDEX_ENTRY_ETAG_MD5 | INDEX_ENTRY_ETAG_STR))
		return -EBADMSG;
	if (kind != INDEX_ENTRY_ETAG_MD5 && e->etag_parts != 0)
		return -EBADMSG;
	if (kind == INDEX_ENTRY_ETAG_STR) {
		const struct index_disk_ref *s = &e->etag.str;
		if (s->zero || s->len == 0 || s->len > INDEX_ETAG_MAX ||
		    !ref_ok(s->off, s->len, x->h->pool_size) ||
		    memchr(x->pool + s->off, '\0', s->len))
			return -EBADMSG;
	}
	if (!kind && !all_zero(&e->etag, sizeof(e->etag)))
		return -EBADMSG;
	return 0;
}

struct totals {
	uint64_t files, dirs, bytes;
};

static int check_entry(const struct index *x, uint64_t i, struct totals *t)
{
	const struct index_disk_entry *e = &x->e[i];

	if ((e->flags & ~INDEX_ENTRY_FLAGS) || e->parent >= x->ndirs)
		return -EBADMSG;
	if (i == 0 ? (e->name_len != 0 || e->parent != 0 || !(e->flags & INDEX_ENTRY_DIR))
		   : e->name_len == 0)
		return -EBADMSG;
	if (!ref_ok(e->name_off, e->name_len, x->h->name_bytes) ||
	    !name_ok(entry_name(x, e), e->name_len))
		return -EBADMSG;
	if (e->flags & INDEX_ENTRY_DIR) {
		if ((e->flags & ~INDEX_ENTRY_DIR) || e->etag_parts ||
		    !all_zero(&e->etag, sizeof(e->etag)) || e->size >= x->ndirs ||
		    x->d[e->size].entry != i)
			return -EBADMSG;
		t->dirs++;
		return 0;
	}
	if (check_etag(x, e) < 0 || e->size > UINT64_MAX - t->bytes)
		return -EBADMSG;
	t->files++;
	t->bytes += e->size;
	return 0;
}

static int check_entries(const struct index *x)
{
	struct totals t = { 0 };

	for (uint64_t i = 0; i < x->n; i++)
		if (check_entry(x, i, &t) < 0)
			return -EBADMSG;
	if (t.files != x->h->nfiles || t.dirs != x->h->ndirs || t.bytes != x->h->total_bytes)
		return -EBADMSG;
	return 0;
}

static int check_children(const struct index *x, uint32_t row)
{
	const struct index_disk_dir *d = &x->d[row];
	uint32_t subdirs = 0;

	for (uint64_t c = d->first_child; c < (uint64_t)d->first_child + d->nchildren; c++) {
		const struct index_disk_entry *e = &x->e[c];

		if (e->parent != row)
			return -EBADMSG;
		if (e->flags & INDEX_ENTRY_DIR)
			subdirs++;
		if (c > d->first_child &&
		    name_cmp(entry_name(x, e - 1), e[-1].name_len, entry_name(x, e),
			     e->name_len) >= 0)
			return -EBADMSG;
	}
	return subdirs == d->nsubdirs ? 0 : -EBADMSG;
}

static int check_dirs(const struct index *x)
{
	uint64_t next = 1;

	for (uint64_t row = 0; row < x->ndirs; row++) {
		const struct index_disk_dir *d = &x->d[row];

		if (d->entry >= x->n || !(x->e[d->entry].flags & INDEX_ENTRY_DIR) ||
		    x->e[d->entry].size != row || (row == 0 && d->entry != 0))
			return -EBADMSG;
		if (d->first_child != next || d->nchildren > x->n - next ||
		    (d->nchildren && d->first_child <= d->entry))
			return -EBADMSG;
		if (check_children(x, (uint32_t)row) < 0)
			return -EBADMSG;
		next += d->nchildren;
	}
	return next == x->n ? 0 : -EBADMSG;
}

/* Every listed key became a file, a marker or a skip: nothing else. */
static int check_counts(const struct index_disk_header *h)
{
	uint64_t sum;

	if (__builtin_add_overflow(h->nfiles, h->markers, &sum))
		return -EBADMSG;
	for (int r = 1; r < INDEX_SKIP__COUNT; r++)
		if (__builtin_add_overflow(sum, h->skipped[r], &sum))
			return -EBADMSG;
	return sum == h->keys_listed ? 0 : -EBADMSG;
}

static int check_samples(const struct index *x)
{
	const struct index_disk_header *h = x->h;

	for (uint64_t i = 0; i < h->sample_count; i++) {
		const struct index_disk_sample *s = &x->s[i];
		if (s->reason == INDEX_SKIP_NONE || s->reason >= INDEX_SKIP__COUNT ||
		    s->len > INDEX_KEY_MAX || !ref_ok(s->off, s->len, h->pool_size))
			return -EBADMSG;
	}
	if (h->endpoint.zero || h->bucket.zero || h->prefix.zero ||
	    !ref_ok(h->endpoint.off, h->endpoint.len, h->pool_size) ||
	    !ref_ok(h->bucket.off, h->bucket.len, h->pool_size) ||
	    !ref_ok(h->prefix.off, h->prefix.len, h->pool_size))
		return -EBADMSG;
	return 0;
}

static int validate(struct index *x)
{
	const struct index_disk_header *h = (const void *)x->base;
	int r;

	if (x->size < INDEX_HEADER_SIZE || check_header(h, x->size) < 0)
		return -EBADMSG;
	r = check_checksum(x->base, x->size);
	if (r < 0)
		return r;
	if (check_layout(h) < 0 || check_counts(h) < 0)
		return -EBADMSG;
	x->h = h;
	x->n = h->entry_count;
	x->ndirs = h->dir_count;
	x->e = (const void *)(x->base + h->entry_off);
	x->d = (const void *)(x->base + h->dir_off);
	x->s = (const void *)(x->base + h->sample_off);
	x->pool = (const char *)x->base + h->pool_off;
	if (check_entries(x) < 0 || check_dirs(x) < 0 || check_samples(x) < 0)
		return -EBADMSG;
	return 0;
}

/* ---- opening --------------------------------------------------------- */

int index_open_mem(const void *buf, size_t len, struct index **ret)
{
	struct index *x;
	int r;

	if (!buf || ((uintptr_t)buf & 7))
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->base = buf;
	x->size = len;
	r = validate(x);
	if (r < 0) {
		free(x);
		return r;
	}
	*ret = x;
	return 0;
}

int index_open_fd(int fd, struct index **ret)
{
	struct index *x;
	struct stat st;
	void *map;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADMSG;
	if (st.st_size < (off_t)INDEX_HEADER_SIZE || (uint64_t)st.st_size > INDEX_MAX_FILE_SIZE)
		return -EBADMSG;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	r = index_open_mem(map, (size_t)st.st_size, &x);
	if (r < 0) {
		munmap(map, (size_t)st.st_size);
		return r;
	}
	x->mapped = true;
	*ret = x;
	return 0;
}

int index_open(const char *path, struct index **ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return index_open_fd(fd, ret);
}

void index_close(struct index *x)
{
	if (!x)
		return;
	if (x->mapped)
		munmap((void *)x->base, x->size);
	free(x);
}

/* ---- accessors ------------------------------------------------------- */

static const struct index_disk_entry *entry_of(const struct index *x, uint64_t ino)
{
	return ino >= 1 && ino <= x->n ? &x->e[ino - 1] : NULL;
}

static int dir_of(const struct index *x, uint64_t ino, const struct index_disk_dir **ret)
{
	const struct index_disk_entry *e = entry_of(x, ino);

	if (!e)
		return -ENOENT;
	if (!(e->flags & INDEX_ENTRY_DIR))
		return -ENOTDIR;
	*ret = &x->d[e->size];
	return 0;
}

int index_lookup(const struct index *x, uint64_t dir, const char *name, size_t len,
		 uint64_t *ret_ino)
{
	const struct index_disk_dir *d;
	uint64_t lo, hi;
	int r = dir_of(x, dir, &d);

	if (r < 0)
		return r;
	lo = d->first_child;
	hi = lo + d->nchildren;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		const struct index_disk_entry *e = &x->e[mid];
		int c = name_cmp(entry_name(x, e), e->name_len, name, len);

		if (c == 0) {
			*ret_ino = mid + 1;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

int index_readdir(const struct index *x, uint64_t dir, uint64_t *ret_first, uint32_t *ret_count)
{
	const struct index_disk_dir *d;
	int r = dir_of(x, dir, &d);

	if (r < 0)
		return r;
	*ret_first = (uint64_t)d->first_child + 1;
	*ret_count = d->nchildren;
	return 0;
}

int index_getattr(const struct index *x, uint64_t ino, struct index_attr *ret)
{
	const struct index_disk_entry *e = entry_of(x, ino);
	bool dir;

	if (!e)
		return -ENOENT;
	dir = e->flags & INDEX_ENTRY_DIR;
	*ret = (struct index_attr){
		.ino = ino, .parent = (uint64_t)x->d[e->parent].entry + 1,
		.size = dir ? 0 : e->size, .mtime = e->mtime, .is_dir = dir,
		.nchildren = dir ? x->d[e->size].nchildren : 0,
		.nsubdirs = dir ? x->d[e->size].nsubdirs : 0,
	};
	return 0;
}

int index_name(const struct index *x, uint64_t ino, const char **ret_name, size_t *ret_len)
{
	const struct index_disk_entry *e = entry_of(x, ino);

	if (!e)
		return -ENOENT;
	*ret_name = entry_name(x, e);
	*ret_len = e->name_len;
	return 0;
}

static uint64_t parent_entry(const struct index *x, uint64_t i)
{
	return x->d[x->e[i].parent].entry;
}

/* head + "a/b/c" + tail into buf; parent walks end at entry 0 (validated). */
static int join_path(const struct index *x, uint64_t i, const char *head, size_t hlen,
		     const char *tail, char *buf, size_t cap)
{
	size_t tlen = strlen(tail), len = hlen + tlen;

	for (uint64_t j = i; j != 0; j = parent_entry(x, j))
		len += x->e[j].name_len + (j != i);
	if (len >= cap || len > INT32_MAX)
		return -ENOSPC;
	memcpy(buf, head, hlen);
	memcpy(buf + len - tlen, tail, tlen + 1);
	size_t at = len - tlen;
	for (uint64_t j = i; j != 0; j = parent_entry(x, j)) {
		if (j != i)
			buf[--at] = '/';
		at -= x->e[j].name_len;
		memcpy(buf + at, entry_name(x, &x->e[j]), x->e[j].name_len);
	}
	return (int)len;
}

int index_path(const struct index *x, uint64_t ino, char *buf, size_t cap)
{
	if (!entry_of(x, ino))
		return -ENOENT;
	return join_path(x, ino - 1, "", 0, "", buf, cap);
}

int index_key(const struct index *x, uint64_t ino, char *buf, size_t cap)
{
	const struct index_disk_entry *e = entry_of(x, ino);
	const char *tail = "";

	if (!e)
		return -ENOENT;
	if ((e->flags & INDEX_ENTRY_DIR) && ino != INDEX_ROOT_INO)
		tail = "/";
	return join_path(x, ino - 1, x->pool + x->h->prefix.off, x->h->prefix.len, tail, buf,
			 cap);
}

static int format_md5(const struct index_disk_entry *e, char *buf, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[48];
	int n;

	for (int i = 0; i < 16; i++) {
		tmp[2 * i] = hex[e->etag.md5[i] >> 4];
		tmp[2 * i + 1] = hex[e->etag.md5[i] & 15];
	}
	n = 32;
	if (e->etag_parts)
		n += snprintf(tmp + 32, sizeof(tmp) - 32, "-%u", (unsigned)e->etag_parts);
	else
		tmp[32] = '\0';
	if ((size_t)n >= cap)
		return -ENOSPC;
	memcpy(buf, tmp, (size_t)n + 1);
	return n;
}

int index_etag(const struct index *x, uint64_t ino, char *buf, size_t cap)
{
	const struct index_disk_entry *e = entry_of(x, ino);

	if (!e)
		return -ENOENT;
	if (e->flags & INDEX_ENTRY_DIR)
		return -EISDIR;
	if (e->flags & INDEX_ENTRY_ETAG_MD5)
		return format_md5(e, buf, cap);
	if (e->flags & INDEX_ENTRY_ETAG_STR) {
		if (e->etag.str.len >= cap)
			return -ENOSPC;
		memcpy(buf, x->pool + e->etag.str.off, e->etag.str.len);
		buf[e->etag.str.len] = '\0';
		return (int)e->etag.str.len;
	}
	if (cap < 1)
		return -ENOSPC;
	buf[0] = '\0';
	return 0;
}

void index_get_stats(const struct index *x, struct index_stats *ret)
{
	const struct index_disk_header *h = x->h;

	*ret = (struct index_stats){
		.version = h->version, .file_size = h->file_size, .entries = h->entry_count,
		.files = h->nfiles, .dirs = h->ndirs, .total_bytes = h->total_bytes,
		.keys_listed = h->keys_listed, .markers = h->markers,
		.samples = h->sample_count, .build_time = h->build_time,
		.build_usec = h->build_usec, .list_requests = h->list_requests,
		.concurrency = h->concurrency, .serial = h->build_flags & INDEX_BUILD_SERIAL,
		.endpoint = x->pool + h->endpoint.off, .endpoint_len = h->endpoint.len,
		.bucket = x->pool + h->bucket.off, .bucket_len = h->bucket.len,
		.prefix = x->pool + h->prefix.off, .prefix_len = h->prefix.len,
	};
	for (int i = 1; i < INDEX_SKIP__COUNT; i++) {
		ret->skipped[i] = h->skipped[i];
		ret->skipped[0] += h->skipped[i];
	}
}

int index_sample(const struct index *x, size_t i, enum index_skip *ret_reason,
		 const char **ret_key, size_t *ret_len)
{
	const struct index_disk_sample *s;

	if (i >= x->h->sample_count)
		return -ENOENT;
	s = &x->s[i];
	*ret_reason = (enum index_skip)s->reason;
	*ret_key = x->pool + s->off;
	*ret_len = s->len;
	return 0;
}
