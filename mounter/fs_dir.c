// SPDX-License-Identifier: Apache-2.0
/*
 * Directories from the index: opendir (kernel-cached listings), readdir
 * and readdirplus. The children of a directory are a contiguous, sorted
 * range of inodes, so a listing position is just an index into it:
 * offset 0 is ".", 1 "..", 2 + i the i-th child. Runs on any worker thread;
 * no per-directory state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mounter/fs_impl.h"

#define POS_FIRST_CHILD 2

struct dirlist {
	const struct lithfs *fs;
	fuse_req_t req;
	bool plus;
	char *buf;
	size_t cap, used;
};

void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct index_attr a;
	int r = index_getattr(fs_of(req)->idx, ino, &a);

	if (r == 0 && !a.is_dir)
		r = -ENOTDIR;
	if (r < 0) {
		fs_reply_err(req, r == -ENOENT || r == -ENOTDIR ? -r : EIO);
		return;
	}
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* Adds one entry; false when the buffer is full. */
static bool add(struct dirlist *d, const char *name, uint64_t ino, bool link, off_t next)
{
	struct fuse_entry_param e;
	size_t n;

	if (fs_entry(d->fs, ino, &e) < 0)
		return true; /* cannot happen with a validated index: skip */
	if (!link)
		e.ino = 0; /* "." and "..": no lookup reference taken */
	if (d->plus)
		n = fuse_add_direntry_plus(d->req, d->buf + d->used, d->cap - d->used, name, &e,
					   next);
	else
		n = fuse_add_direntry(d->req, d->buf + d->used, d->cap - d->used, name, &e.attr,
				      next);
	if (n > d->cap - d->used)
		return false;
	d->used += n;
	return true;
}

static bool add_child(struct dirlist *d, uint64_t ino, off_t next)
{
	char name[INDEX_NAME_MAX + 1];
	const char *s;
	size_t len;

	if (index_name(d->fs->idx, ino, &s, &len) < 0 || len > INDEX_NAME_MAX)
		return true;
	memcpy(name, s, len);
	name[len] = '\0';
	return add(d, name, ino, true, next);
}

static int list(struct dirlist *d, uint64_t dir, uint64_t pos)
{
	struct index_attr a;
	uint64_t first;
	uint32_t count;
	int r = index_getattr(d->fs->idx, dir, &a);

	if (r == 0)
		r = index_readdir(d->fs->idx, dir, &first, &count);
	if (r < 0)
		return r;
	if (pos == 0 && !add(d, ".", dir, false, 1))
		return 0;
	if (pos <= 1 && !add(d, "..", a.parent, false, 2))
		return 0;
	for (uint64_t i = pos > POS_FIRST_CHILD ? pos - POS_FIRST_CHILD : 0; i < count; i++)
		if (!add_child(d, first + i, (off_t)(i + 1 + POS_FIRST_CHILD)))
			break;
	return 0;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct dirlist d = { .fs = fs_of(req), .req = req, .plus = plus, .cap = size };
	int r;

	d.buf = malloc(size ? size : 1);
	if (!d.buf) {
		fs_reply_err(req, ENOMEM);
		return;
	}
	r = off < 0 ? -EINVAL : list(&d, ino, (uint64_t)off);
	if (r < 0)
		fs_reply_err(req, r == -ENOTDIR || r == -ENOENT || r == -EINVAL ? -r : EIO);
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, ino, size, off, false);
}

void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	readdir_common(req, ino, size, off, true);
}

void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fs_reply_err(req, 0);
}
