// SPDX-License-Identifier: Apache-2.0
/*
 * Extended attributes from the index, read-only:
 *   user.lith.key   the S3 key (directories: the prefix ending in '/')
 *   user.lith.etag  the indexed ETag, files only (the version reads are
 *                   pinned to)
 * Any other name is ENODATA. Runs on any worker thread.
 */
#include <errno.h>
#include <string.h>

#include "fetch/index/normalize.h"
#include "mounter/fs_impl.h"

#define XATTR_KEY "user.lith.key"
#define XATTR_ETAG "user.lith.etag"
#define VALUE_CAP (INDEX_KEY_MAX + INDEX_ETAG_MAX + 2)

/* The attribute's value into buf; returns its length or -errno. */
static int value(const struct lithfs *fs, uint64_t ino, const char *name, char *buf, size_t cap)
{
	if (!strcmp(name, XATTR_KEY))
		return index_key(fs->idx, ino, buf, cap);
	if (!strcmp(name, XATTR_ETAG)) {
		int r = index_etag(fs->idx, ino, buf, cap);
		return r == -EISDIR ? -ENODATA : r;
	}
	return -ENODATA;
}

/* Replies to a size probe (size 0), a short buffer, or with the bytes. */
static void reply_sized(fuse_req_t req, const char *buf, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fs_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
}

void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char buf[VALUE_CAP];
	int r = value(fs_of(req), ino, name, buf, sizeof(buf));

	if (r < 0)
		fs_reply_err(req, r == -ENODATA || r == -ENOENT ? -r : EIO);
	else
		reply_sized(req, buf, (size_t)r, size);
}

void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	static const char names[] = XATTR_KEY "\0" XATTR_ETAG;
	struct index_attr a;
	int r = index_getattr(fs_of(req)->idx, ino, &a);

	if (r < 0) {
		fs_reply_err(req, r == -ENOENT ? ENOENT : EIO);
		return;
	}
	/* both names, NUL-terminated; directories only the first */
	reply_sized(req, names, a.is_dir ? sizeof(XATTR_KEY) : sizeof(names), size);
}
