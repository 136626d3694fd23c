// SPDX-License-Identifier: Apache-2.0
/*
 * Attributes from the index: stat, lookup (positive and negative entries),
 * getattr, statfs, and the forget calls (inodes are the index's entries,
 * nothing to free). Runs on any libfuse worker thread.
 */
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#include "mounter/fs_impl.h"

#define FS_BLKSIZE (1u << 20)   /* st_blksize: makes cp/cat read 1 MiB at a time */
#define FS_STATFS_BSIZE 4096u

int fs_stat(const struct lithfs *fs, uint64_t ino, struct stat *st)
{
	struct index_attr a;
	int r = index_getattr(fs->idx, ino, &a);

	if (r < 0)
		return r;
	memset(st, 0, sizeof(*st));
	st->st_ino = a.ino;
	st->st_uid = fs->cfg.uid;
	st->st_gid = fs->cfg.gid;
	st->st_blksize = FS_BLKSIZE;
	st->st_mtim.tv_sec = st->st_ctim.tv_sec = st->st_atim.tv_sec = a.mtime;
	if (a.is_dir) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2 + a.nsubdirs;
	} else {
		st->st_mode = S_IFREG | (fs->cfg.exec ? 0555 : 0444);
		st->st_nlink = 1;
		st->st_size = (off_t)a.size;
		st->st_blocks = (blkcnt_t)((a.size + 511) / 512);
	}
	return 0;
}

int fs_entry(const struct lithfs *fs, uint64_t ino, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->attr_timeout = e->entry_timeout = fs->cfg.timeout;
	return fs_stat(fs, ino, &e->attr);
}

/* The kernel maps our errors to the caller's errno: keep index errors
 * meaningful (ENOENT, ENOTDIR) and everything else EIO. */
static int meta_errno(int r)
{
	return r == -ENOENT || r == -ENOTDIR || r == -ENAMETOOLONG ? -r : EIO;
}

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct lithfs *fs = fs_of(req);
	struct fuse_entry_param e;
	size_t len = strlen(name);
	uint64_t ino;
	int r = len > INDEX_NAME_MAX ? -ENAMETOOLONG
				     : index_lookup(fs->idx, parent, name, len, &ino);

	if (r == -ENOENT) {
		memset(&e, 0, sizeof(e)); /* ino 0: a cached negative entry */
		e.entry_timeout = fs->cfg.timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (r == 0)
		r = fs_entry(fs, ino, &e);
	if (r < 0)
		fs_reply_err(req, meta_errno(r));
	else
		fuse_reply_entry(req, &e);
}

void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct lithfs *fs = fs_of(req);
	struct stat st;
	int r = fs_stat(fs, ino, &st);

	(void)fi;
	if (r < 0)
		fs_reply_err(req, meta_errno(r));
	else
		fuse_reply_attr(req, &st, fs->cfg.timeout);
}

void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	const struct lithfs *fs = fs_of(req);
	struct statvfs sv = {
		.f_bsize = FS_STATFS_BSIZE,
		.f_frsize = FS_STATFS_BSIZE,
		.f_blocks = (fs->ist.total_bytes + FS_STATFS_BSIZE - 1) / FS_STATFS_BSIZE,
		.f_files = fs->ist.entries,
		.f_namemax = INDEX_NAME_MAX,
		.f_flag = ST_RDONLY,
	};

	(void)ino;
	fuse_reply_statfs(req, &sv);
}

void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}
