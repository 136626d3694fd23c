// SPDX-License-Identifier: Apache-2.0
/*
 * The write side of the filesystem: there is none. Every mutating
 * operation answers EROFS (the kernel already does so on an `ro` mount;
 * these cover a connection mounted without it, e.g. by another process
 * that passed us the fd). fsync has nothing to flush and succeeds.
 */
#include <errno.h>

#include "mounter/fs_impl.h"

static void rofs(fuse_req_t req) { fs_reply_err(req, EROFS); }

static void ro_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	(void)ino, (void)attr, (void)to_set, (void)fi;
	rofs(req);
}

static void ro_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	(void)parent, (void)name, (void)mode, (void)rdev;
	rofs(req);
}

static void ro_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent, (void)name, (void)mode;
	rofs(req);
}

static void ro_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent, (void)name;
	rofs(req);
}

static void ro_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link, (void)parent, (void)name;
	rofs(req);
}

static void ro_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
	rofs(req);
}

static void ro_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino, (void)newparent, (void)newname;
	rofs(req);
}

static void ro_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)size, (void)off, (void)fi;
	rofs(req);
}

static void ro_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)parent, (void)name, (void)mode, (void)fi;
	rofs(req);
}

static void ro_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	(void)ino, (void)mode, (void)offset, (void)length, (void)fi;
	rofs(req);
}

static void ro_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	(void)ino, (void)name, (void)value, (void)size, (void)flags;
	rofs(req);
}

static void ro_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino, (void)name;
	rofs(req);
}

static void ro_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	(void)ino_in, (void)off_in, (void)fi_in, (void)ino_out, (void)off_out, (void)fi_out;
	(void)len, (void)flags;
	rofs(req);
}

static void ok_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino, (void)datasync, (void)fi;
	fs_reply_err(req, 0);
}

void fs_rofs_fill(struct fuse_lowlevel_ops *ops)
{
	ops->setattr = ro_setattr;
	ops->mknod = ro_mknod;
	ops->mkdir = ro_mkdir;
	ops->unlink = ro_unlink;
	ops->rmdir = ro_unlink;
	ops->symlink = ro_symlink;
	ops->rename = ro_rename;
	ops->link = ro_link;
	ops->write = ro_write;
	ops->create = ro_create;
	ops->fallocate = ro_fallocate;
	ops->setxattr = ro_setxattr;
	ops->removexattr = ro_removexattr;
	ops->copy_file_range = ro_copy_file_range;
	ops->fsync = ok_fsync;
	ops->fsyncdir = ok_fsync;
}
