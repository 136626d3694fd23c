// SPDX-License-Identifier: Apache-2.0
/*
 * Opening and reading files. open refuses writers (EROFS) and gives each
 * handle its readahead state; read asks readahead.h for the fill kind and
 * a prefetch, sends the prefetch first (the daemon handles a connection's
 * requests in order, so the read then joins those fills), reads through
 * the cache link into a per-thread buffer and reports slow reads back to
 * the readahead window. Handles are kept by (fh, ino), so a read on a
 * handle an earlier server of the connection opened (a takeover) gets one
 * made from its inode. Runs on any worker thread; a handle's readahead
 * state is under its own mutex, held only while planning; the handle table
 * under handles_lock.
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

static struct lithfs_handle **bucket(struct lithfs *fs, uint64_t fh)
{
	return &fs->handles[(fh >> 4 ^ fh >> 20) % FS_HANDLE_BUCKETS];
}

/* Under handles_lock. */
static struct lithfs_handle *handle_find(struct lithfs *fs, uint64_t fh, uint64_t ino)
{
	struct lithfs_handle *h = *bucket(fs, fh);

	while (h && (h->fh != fh || h->ino != ino))
		h = h->next;
	return h;
}

/* Under handles_lock. */
static void handle_link(struct lithfs *fs, struct lithfs_handle *h)
{
	struct lithfs_handle **b = bucket(fs, h->fh);

	h->prev = NULL;
	h->next = *b;
	if (h->next)
		h->next->prev = h;
	*b = h;
}

static void handle_free(struct lithfs *fs, struct lithfs_handle *h)
{
	pthread_mutex_lock(&fs->handles_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		*bucket(fs, h->fh) = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->handles_lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void fs_free_handles(struct lithfs *fs)
{
	for (unsigned i = 0; i < FS_HANDLE_BUCKETS; i++)
		while (fs->handles[i])
			handle_free(fs, fs->handles[i]);
}

/* A new handle for a regular file; -errno (ENOENT, EISDIR, ENOMEM). */
static int handle_new(struct lithfs *fs, uint64_t ino, struct lithfs_handle **ret)
{
	struct lithfs_handle *h;
	struct index_attr a;
	int r = index_getattr(fs->idx, ino, &a);

	if (r == 0 && a.is_dir)
		r = -EISDIR;
	if (r < 0)
		return r == -ENOENT || r == -EISDIR ? r : -EIO;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->ino = ino;
	h->size = a.size;
	h->fh = (uintptr_t)h;
	pthread_mutex_init(&h->lock, NULL);
	ra_init(&h->ra, &fs->cfg.ra);
	*ret = h;
	return 0;
}

/* The handle of (fh, ino); one an earlier server opened is adopted. */
static int handle_get(struct lithfs *fs, uint64_t fh, uint64_t ino, struct lithfs_handle **ret)
{
	struct lithfs_handle *h, *mine;
	int r;

	pthread_mutex_lock(&fs->handles_lock);
	h = handle_find(fs, fh, ino);
	pthread_mutex_unlock(&fs->handles_lock);
	if (h || (r = handle_new(fs, ino, &mine)) < 0) {
		*ret = h;
		return h ? 0 : r;
	}
	mine->fh = fh;
	pthread_mutex_lock(&fs->handles_lock);
	h = handle_find(fs, fh, ino); /* another reader adopted it meanwhile? */
	if (!h)
		handle_link(fs, h = mine);
	pthread_mutex_unlock(&fs->handles_lock);
	if (h != mine) {
		pthread_mutex_destroy(&mine->lock);
		free(mine);
	}
	*ret = h;
	return 0;
}

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lithfs *fs = fs_of(req);
	struct lithfs_handle *h;
	int r;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fs_reply_err(req, EROFS);
		return;
	}
	r = handle_new(fs, ino, &h);
	if (r < 0) {
		fs_reply_err(req, -r);
		return;
	}
	fi->fh = h->fh;
	fi->keep_cache = 1;
	fi->noflush = 1;
	fs->opens++;
	pthread_mutex_lock(&fs->handles_lock);
	handle_link(fs, h);
	pthread_mutex_unlock(&fs->handles_lock);
	if (fuse_reply_open(req, fi) != 0) /* interrupted: no release will come */
		handle_free(fs, h);
	else if (fs->cfg.mstats)
		atomic_fetch_add(&fs->cfg.mstats->open_handles, 1);
}

/* The first read of a small file: if it continues a scan of its
 * directory, prefetch the siblings after it (siblings.h). */
static void prefetch_siblings(struct lithfs *fs, uint64_t ino)
{
	uint64_t sib[SIB_MAX_FILES];
	struct index_attr a;
	size_t n;

	pthread_mutex_lock(&fs->sib_lock);
	n = sib_plan(&fs->sib, fs->idx, ino, fs->cfg.ra.small_file, sib);
	pthread_mutex_unlock(&fs->sib_lock);
	for (size_t i = 0; i < n; i++)
		if (index_getattr(fs->idx, sib[i], &a) == 0 &&
		    cachelink_prefetch(fs->link, sib[i], 0, a.size, FILL_KIND_WHOLE) == 0)
			fs->prefetches++;
}

static void plan(struct lithfs *fs, struct lithfs_handle *h, uint64_t off, size_t size,
		 struct ra_plan *p)
{
	pthread_mutex_lock(&h->lock);
	ra_plan_read(&h->ra, &fs->cfg.ra, h->size, off, size, p);
	if (fs->cfg.mstats)
		atomic_store_explicit(&fs->cfg.mstats->ra_window, h->ra.window,
				      memory_order_relaxed);
	pthread_mutex_unlock(&h->lock);
	if (p->pf_len && cachelink_prefetch(fs->link, h->ino, p->pf_off, p->pf_len,
					    p->pf_kind) == 0)
		fs->prefetches++;
	if (p->pf_len && h->size <= fs->cfg.ra.small_file)
		prefetch_siblings(fs, h->ino);
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
	struct lithfs_handle *h;
	struct ra_plan p;
	uint64_t t0;
	ssize_t n;
	char *buf;
	int r = handle_get(fs, fi->fh, ino, &h);

	if (r < 0) {
		fs_reply_err(req, r == -ENOENT ? ESTALE : -r);
		return;
	}
	if (off < 0 || (uint64_t)off >= h->size || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	size = (size_t)MIN((uint64_t)size, h->size - (uint64_t)off);
	buf = thread_buf(size);
	if (!buf) {
		fs_reply_err(req, ENOMEM);
		return;
	}
	plan(fs, h, (uint64_t)off, size, &p);
	t0 = now_us();
	n = cachelink_read(fs->link, h->ino, (uint64_t)off, size, p.kind, p.exact, buf);
	note_time(fs, h, (uint64_t)off, now_us() - t0);
	fs->reads++;
	if (n >= 0 && (size_t)n != size)
		n = -EIO; /* a short read would tell the kernel the file ends here */
	if (n < 0) {
		fs->read_errors++;
		fs_reply_err(req, read_errno(n));
		return;
	}
	fs->read_bytes += (uint64_t)n;
	mstats_read(fs->cfg.mstats, (uint64_t)n);
	fuse_reply_buf(req, buf, (size_t)n);
}

void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct lithfs *fs = fs_of(req);
	struct lithfs_handle *h;

	pthread_mutex_lock(&fs->handles_lock);
	h = handle_find(fs, fi->fh, ino);
	pthread_mutex_unlock(&fs->handles_lock);
	if (h) /* none: opened by an earlier server and never read here */
		handle_free(fs, h);
	if (fs->cfg.mstats) /* counts the kernel's opens, whichever server saw them */
		atomic_fetch_sub(&fs->cfg.mstats->open_handles, 1);
	fs_reply_err(req, 0);
}

void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fs_reply_err(req, 0);
}
