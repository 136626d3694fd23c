// SPDX-License-Identifier: Apache-2.0
/*
 * Writing an index file (layout in format.h) from a finished tree: the
 * breadth-first layout fixes every entry's position, then the sections are
 * streamed through one bounded buffer while being hashed, and the checksum
 * is patched into the header last. The file appears under its name only
 * complete: written to a temporary file in the same directory, fsynced,
 * renamed over the target, directory fsynced. On any failure the temporary
 * file is removed and the target is untouched. Builder thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/base/fdio.h"
#include "fetch/base/macro.h"
#include "fetch/index/checksum.h"
#include "fetch/index/tree_internal.h"

#define OUT_BUF (256u << 10)

struct out {
	int fd;
	int err;
	size_t len;
	struct index_hash hash;
	uint8_t buf[OUT_BUF];
};

static void out_flush(struct out *o)
{
	if (o->err || !o->len)
		return;
	if (index_hash_update(&o->hash, o->buf, o->len) < 0) {
		o->err = -EIO;
		return;
	}
	o->err = fdio_write_all(o->fd, o->buf, o->len);
	o->len = 0;
}

static void out_put(struct out *o, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n && !o->err) {
		size_t k = MIN(n, OUT_BUF - o->len);
		memcpy(o->buf + o->len, b, k);
		o->len += k;
		b += k;
		n -= k;
		if (o->len == OUT_BUF)
			out_flush(o);
	}
}

/* ---- sections ---------------------------------------------------------- */

static uint64_t sample_bytes(const struct index_tree *t, uint64_t *ret_count)
{
	uint64_t bytes = 0, count = 0;

	for (int r = 1; r < INDEX_SKIP__COUNT; r++)
		for (unsigned i = 0; i < t->nsamples[r]; i++) {
			bytes += t->samples[r][i].len;
			count++;
		}
	*ret_count = count;
	return bytes;
}

static struct index_disk_ref put_ref(uint64_t *at, const char *s)
{
	struct index_disk_ref ref = { .off = *at, .len = (uint32_t)strlen(s) };

	*at += ref.len;
	return ref;
}

static void fill_header(const struct index_tree *t, const struct index_layout *l,
			const struct index_meta *m, struct index_disk_header *h)
{
	uint64_t nsamples, sbytes = sample_bytes(t, &nsamples);
	uint64_t at = l->name_bytes + l->etag_bytes + sbytes;

	*h = (struct index_disk_header){
		.version = INDEX_FORMAT_VERSION, .header_size = INDEX_HEADER_SIZE,
		.entry_off = INDEX_HEADER_SIZE, .entry_count = l->n,
		.dir_count = l->ndirs, .sample_count = nsamples, .name_bytes = l->name_bytes,
		.nfiles = t->counts.files, .ndirs = t->counts.dirs,
		.total_bytes = t->counts.total_bytes, .keys_listed = t->counts.keys_listed,
		.markers = t->counts.markers, .build_time = m->build_time,
		.build_usec = m->build_usec, .list_requests = m->list_requests,
		.build_flags = m->serial ? INDEX_BUILD_SERIAL : 0, .concurrency = m->concurrency,
	};
	memcpy(h->magic, INDEX_MAGIC, sizeof(h->magic));
	for (int r = 1; r < INDEX_SKIP__COUNT; r++)
		h->skipped[r] = t->counts.skipped[r];
	h->endpoint = put_ref(&at, m->endpoint ? m->endpoint : "");
	h->bucket = put_ref(&at, m->bucket ? m->bucket : "");
	h->prefix = put_ref(&at, t->prefix);
	h->pool_size = at;
	h->dir_off = h->entry_off + l->n * sizeof(struct index_disk_entry);
	h->sample_off = h->dir_off + l->ndirs * sizeof(struct index_disk_dir);
	h->pool_off = h->sample_off + nsamples * sizeof(struct index_disk_sample);
	h->file_size = h->pool_off + ((h->pool_size + 7) & ~7ull);
}

static void put_entries(struct out *o, const struct index_tree *t, const struct index_layout *l)
{
	uint64_t name_at = 0, etag_at = l->name_bytes;

	for (uint64_t i = 0; i < l->n && !o->err; i++) {
		const struct tnode *c = &t->nodes[l->order[i]];
		struct index_disk_entry e = {
			.size = c->size, .mtime = c->mtime, .name_off = name_at,
			.parent = l->row[c->parent], .name_len = c->name_len, .flags = c->flags,
			.etag_parts = c->etag_parts,
		};

		name_at += c->name_len;
		if (c->flags & INDEX_ENTRY_DIR) {
			e.size = l->row[l->order[i]];
			e.mtime = l->dir_mtime[e.size];
		} else if (c->flags & INDEX_ENTRY_ETAG_MD5) {
			memcpy(e.etag.md5, c->etag.md5, sizeof(e.etag.md5));
		} else if (c->flags & INDEX_ENTRY_ETAG_STR) {
			e.etag.str = (struct index_disk_ref){ .off = etag_at, .len = c->etag.str.len };
			etag_at += c->etag.str.len;
		}
		out_put(o, &e, sizeof(e));
	}
}

static void put_samples(struct out *o, const struct index_tree *t, const struct index_layout *l)
{
	uint64_t at = l->name_bytes + l->etag_bytes;

	for (int r = 1; r < INDEX_SKIP__COUNT; r++)
		for (unsigned i = 0; i < t->nsamples[r]; i++) {
			struct index_disk_sample s = { .reason = (uint32_t)r,
						       .len = t->samples[r][i].len, .off = at };
			at += s.len;
			out_put(o, &s, sizeof(s));
		}
}

static void put_pool(struct out *o, const struct index_tree *t, const struct index_layout *l,
		     const struct index_disk_header *h, const struct index_meta *m)
{
	static const uint8_t pad[8];

	for (uint64_t i = 0; i < l->n; i++) {
		const struct tnode *c = &t->nodes[l->order[i]];
		out_put(o, tnode_name(t, c), c->name_len);
	}
	for (uint64_t i = 0; i < l->n; i++) {
		const struct tnode *c = &t->nodes[l->order[i]];
		if (c->flags & INDEX_ENTRY_ETAG_STR)
			out_put(o, t->arena + c->etag.str.off, c->etag.str.len);
	}
	for (int r = 1; r < INDEX_SKIP__COUNT; r++)
		for (unsigned i = 0; i < t->nsamples[r]; i++)
			out_put(o, t->samples[r][i].key, t->samples[r][i].len);
	out_put(o, m->endpoint ? m->endpoint : "", h->endpoint.len);
	out_put(o, m->bucket ? m->bucket : "", h->bucket.len);
	out_put(o, t->prefix, h->prefix.len);
	out_put(o, pad, (size_t)(h->file_size - h->pool_off - h->pool_size));
}

static int write_sections(struct out *o, const struct index_tree *t,
			  const struct index_layout *l, const struct index_meta *m)
{
	struct index_disk_header h;
	uint8_t sum[INDEX_CHECKSUM_LEN];
	int r;

	fill_header(t, l, m, &h);
	out_put(o, &h, sizeof(h)); /* checksum still zero */
	put_entries(o, t, l);
	out_put(o, l->dirs, l->ndirs * sizeof(*l->dirs));
	put_samples(o, t, l);
	put_pool(o, t, l, &h, m);
	out_flush(o);
	if (o->err)
		return o->err;
	r = index_hash_end(&o->hash, sum);
	if (r < 0)
		return r;
	if (pwrite(o->fd, sum, sizeof(sum), offsetof(struct index_disk_header, checksum)) !=
	    (ssize_t)sizeof(sum))
		return -EIO;
	return 0;
}

/* ---- the file ---------------------------------------------------------- */

static int write_fd(int fd, const struct index_tree *t, const struct index_meta *m)
{
	struct index_layout l;
	struct out *o = malloc(sizeof(*o));
	int r;

	if (!o)
		return -ENOMEM;
	o->fd = fd;
	o->err = 0;
	o->len = 0;
	r = index_hash_begin(&o->hash);
	if (r == 0) {
		r = index_layout_build(t, &l);
		if (r == 0) {
			r = write_sections(o, t, &l, m);
			index_layout_free(&l);
		}
		if (o->hash.ctx)
			index_hash_abort(&o->hash);
	}
	free(o);
	return r;
}

static int fsync_dir_of(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int fd = -1;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		return -errno;
	return 0;
}

int index_tree_write(const struct index_tree *t, const struct index_meta *meta,
		     const char *path)
{
	static const struct index_meta none;
	_cleanup_free_ char *tmp = NULL;
	int fd, r;

	if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
		tmp = NULL;
		return -ENOMEM;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write_fd(fd, t, meta ? meta : &none);
	if (r == 0 && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	return fsync_dir_of(path);
}
