// SPDX-License-Identifier: Apache-2.0
/*
 * Opening and reading files. open refuses writers (EROFS) and gives each
 * handle its readahead state; read asks readahead.h for the fill kind and
 * a prefetch, sends the prefetch first (the daemon handles a connection's
 * requests in order, so the read then joins those fills), reads through
 * the cache link into a per-thread buffer and reports slow reads back to
 * the readahead window. Runs on any worker thread; a handle's readahead
 * state is under its own mutex, held only while planning.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "fetch/base/macro.h"
#include "mounter/fs_impl.h"

static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

struct tbuf {
	size_t cap;
	char data[];
};

static void make_key(void) { pthread_key_create(&buf_key, free); }

/* The calling thread's read buffer, at least len bytes (freed at thread
 * exit). */
static char *thread_buf(size_t len)
{
	struct tbuf *b;

	pthread_once(&buf_once, make_key);
	b = pthread_getspecific(buf_key);
	if (b && b->cap >= len)
		return b->data;
	free(b);
	b = malloc(sizeof(*b) + len);
	pthread_setspecific(buf_key, b);
	if (!b)
		return NULL;
	b->cap = len;
	return b->data;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* -errno from the cache link → the errno a reader sees. */
static int read_errno(long r)
{
	switch (r) {
	case -ESTALE:
	case -ENOENT:
		return ESTALE; /* changed or deleted in S3 since indexed */
	case -EACCES:
	case -EPERM:
		return EACCES;
	case -ENOMEM:
		return ENOMEM;
	default:
		return EIO;
	}
}

static void handle_link(struct lithfs *fs, struct lithfs_handle *h)
{
	pthread_mutex_lock(&fs->handles_lock);
	h->next = fs->handles;
	if (h->next)
		h->next->prev = h;
	fs->handles = h;
	pthread_mutex_unlock(&fs->handles_lock);
}

static void handle_free(struct lithfs *fs, struct lithfs_handle *h)
{
	pthread_mutex_lock(&fs->handles_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->handles_lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void fs_free_handles(struct lithfs *fs)
{
	while (fs->handles)
		handle_free(fs, fs->handles);
}

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lithfs *fs = fs_of(req);
	struct lithfs_handle *h;
	struct index_attr a;
	int r;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	r = index_getattr(fs->idx, ino, &a);
	if (r == 0 && a.is_dir)
		r = -EISDIR;
	h = r == 0 ? calloc(1, sizeof(*h)) : NULL;
	if (!h) {
		fuse_reply_err(req, r == -ENOENT || r == -EISDIR ? -r : r < 0 ? EIO : ENOMEM);
		return;
	}
	h->ino = ino;
	h->size = a.size;
	pthread_mutex_init(&h->lock, NULL);
	ra_init(&h->ra, &fs->cfg.ra);
	fi->fh = (uintptr_t)h;
	fi->keep_cache = 1;
	fi->noflush = 1;
	fs->opens++;
	handle_link(fs, h);
	if (fuse_reply_open(req, fi) != 0) /* interrupted: no release will come */
		handle_free(fs, h);
}

static void plan(struct lithfs *fs, struct lithfs_handle *h, uint64_t off, size_t size,
		 struct ra_plan *p)
{
	pthread_mutex_lock(&h->lock);
	ra_plan_read(&h->ra, &fs->cfg.ra, h->size, off, size, p);
	pthread_mutex_unlock(&h->lock);
	if (p->pf_len && cachelink_prefetch(fs->link, h->ino, p->pf_off, p->pf_len,
					    p->pf_kind) == 0)
		fs->prefetches++;
}

static void note_time(struct lithfs *fs, struct lithfs_handle *h, uint64_t off, uint64_t us)
{
	if (us < fs->cfg.stall_us)
		return;
	fs->stalls++;
	pthread_mutex_lock(&h->lock);
	ra_note_stall(&h->ra, &fs->cfg.ra, off);
	pthread_mutex_unlock(&h->lock);
}

void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct lithfs *fs = fs_of(req);
	struct lithfs_handle *h = (struct lithfs_handle *)(uintptr_t)fi->fh;
	struct ra_plan p;
	uint64_t t0;
	ssize_t n;
	char *buf;

	(void)ino;
	if (off < 0 || (uint64_t)off >= h->size || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	size = (size_t)MIN((uint64_t)size, h->size - (uint64_t)off);
	buf = thread_buf(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	plan(fs, h, (uint64_t)off, size, &p);
	t0 = now_us();
	n = cachelink_read(fs->link, h->ino, (uint64_t)off, size, p.kind, buf);
	note_time(fs, h, (uint64_t)off, now_us() - t0);
	fs->reads++;
	if (n >= 0 && (size_t)n != size)
		n = -EIO; /* a short read would tell the kernel the file ends here */
	if (n < 0) {
		fs->read_errors++;
		fuse_reply_err(req, read_errno(n));
		return;
	}
	fs->read_bytes += (uint64_t)n;
	fuse_reply_buf(req, buf, (size_t)n);
}

void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lithfs_handle *h = (struct lithfs_handle *)(uintptr_t)fi->fh;

	(void)ino;
	if (h)
		handle_free(fs_of(req), h);
	fuse_reply_err(req, 0);
}

void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}
