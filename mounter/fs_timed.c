// SPDX-License-Identifier: Apache-2.0
/*
 * The timed entry points of the dispatch table: each wraps one fs_*.c
 * operation, measures request to reply (every operation replies before it
 * returns) and records it, with the error it answered, in the mount's
 * metrics region (mstats.h). The fs pointer is taken before the call: the
 * request is gone once replied.
 */
#include <time.h>

#include "mounter/fs_impl.h"

static _Thread_local int reply_errno;

void fs_reply_err(fuse_req_t req, int err)
{
	reply_errno = err;
	fuse_reply_err(req, err);
}

static uint64_t begin(void)
{
	struct timespec ts;

	reply_errno = 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void end(struct lithfs *fs, enum mstats_op op, uint64_t t0)
{
	mstats_op(fs->cfg.mstats, op, begin() - t0, reply_errno);
}

#define TIMED(op, call)                         \
	do {                                    \
		struct lithfs *fs = fs_of(req); \
		uint64_t t0 = begin();          \
		call;                           \
		end(fs, op, t0);                \
	} while (0)

static void t_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	TIMED(MSTATS_LOOKUP, fs_lookup(req, parent, name));
}

static void t_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TIMED(MSTATS_GETATTR, fs_getattr(req, ino, fi));
}

static void t_statfs(fuse_req_t req, fuse_ino_t ino)
{
	TIMED(MSTATS_STATFS, fs_statfs(req, ino));
}

static void t_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TIMED(MSTATS_OPENDIR, fs_opendir(req, ino, fi));
}

static void t_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	TIMED(MSTATS_READDIR, fs_readdir(req, ino, size, off, fi));
}

static void t_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	TIMED(MSTATS_READDIR, fs_readdirplus(req, ino, size, off, fi));
}

static void t_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TIMED(MSTATS_RELEASEDIR, fs_releasedir(req, ino, fi));
}

static void t_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	TIMED(MSTATS_GETXATTR, fs_getxattr(req, ino, name, size));
}

static void t_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	TIMED(MSTATS_LISTXATTR, fs_listxattr(req, ino, size));
}

static void t_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TIMED(MSTATS_OPEN, fs_open(req, ino, fi));
}

static void t_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	TIMED(MSTATS_READ, fs_read(req, ino, size, off, fi));
}

static void t_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TIMED(MSTATS_RELEASE, fs_release(req, ino, fi));
}

void fs_timed_fill(struct fuse_lowlevel_ops *ops)
{
	ops->lookup = t_lookup;
	ops->getattr = t_getattr;
	ops->statfs = t_statfs;
	ops->opendir = t_opendir;
	ops->readdir = t_readdir;
	ops->readdirplus = t_readdirplus;
	ops->releasedir = t_releasedir;
	ops->getxattr = t_getxattr;
	ops->listxattr = t_listxattr;
	ops->open = t_open;
	ops->read = t_read;
	ops->release = t_release;
}
