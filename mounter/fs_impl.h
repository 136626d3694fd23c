/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the fs_*.c files: the filesystem state, the open
 * file handle, attribute helpers and each file's operations. Not for use
 * outside mounter/fs*.c.
 */
#ifndef LITH_MOUNTER_FS_IMPL_H
#define LITH_MOUNTER_FS_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "mounter/fs.h"
#include "mounter/siblings.h"

#define FS_HANDLE_BUCKETS 1024u

struct lithfs {
	struct lithfs_config cfg;
	const struct index *idx;
	struct cachelink *link;
	struct index_stats ist;
	pthread_mutex_t init_lock;
	pthread_cond_t init_cond;
	bool init_done;
	pthread_mutex_t handles_lock;
	/* open files by fh: freed by release, or at free */
	struct lithfs_handle *handles[FS_HANDLE_BUCKETS];
	_Atomic uint64_t opens, reads, read_bytes, read_errors, stalls, prefetches;
	pthread_mutex_t sib_lock;
	struct sib_state sib;    /* sibling readahead (siblings.h) */
};

/* An open file, found by (fh, ino). fh is the handle's address when this
 * process opened it, or the value an earlier server of the connection gave
 * the kernel (adopted on first use after a takeover: everything in a handle
 * follows from its inode). fh is never dereferenced. */
struct lithfs_handle {
	struct lithfs_handle *prev, *next;
	uint64_t fh;
	uint64_t ino;
	uint64_t size;
	pthread_mutex_t lock;    /* ra */
	struct ra_state ra;
};

static inline struct lithfs *fs_of(fuse_req_t req) { return fuse_req_userdata(req); }

/* fs_attr.c */
int fs_stat(const struct lithfs *fs, uint64_t ino, struct stat *st);
/* An entry for ino (attributes and timeouts); -errno from the index. */
int fs_entry(const struct lithfs *fs, uint64_t ino, struct fuse_entry_param *e);
void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_statfs(fuse_req_t req, fuse_ino_t ino);
void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);

/* fs_dir.c */
void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* fs_xattr.c */
void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);

/* fs_read.c */
/* Frees the handles the kernel never released (a connection aborted at
 * unmount drops its pending RELEASE requests). */
void fs_free_handles(struct lithfs *fs);
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* fs_rofs.c: the mutating operations, all EROFS */
void fs_rofs_fill(struct fuse_lowlevel_ops *ops);

/* fs_timed.c: the timed operations of the dispatch table; every error reply
 * goes through fs_reply_err so the metrics see it. */
void fs_timed_fill(struct fuse_lowlevel_ops *ops);
void fs_reply_err(fuse_req_t req, int err);

#endif
