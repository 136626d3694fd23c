/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read-only filesystem: libfuse low-level operations over a namespace
 * index (metadata) and a cache link (data).
 *
 *  - lookup, getattr, readdir(plus), opendir, statfs, getxattr, listxattr
 *    are answered from the mmapped index: no S3 request, no daemon call.
 *    Inode numbers are the index's (root = FUSE_ROOT_ID = INDEX_ROOT_INO);
 *    the dataset is immutable, so entries, attributes and negative lookups
 *    are cached by the kernel for `timeout` seconds and file pages are kept
 *    across opens (FOPEN_KEEP_CACHE); directories are cached too.
 *  - Files are 0444 (0555 with exec), directories 0555, owned by uid/gid;
 *    the kernel enforces them (default_permissions).
 *  - Every mutating operation, and open for writing, fails with EROFS.
 *  - read: per-handle readahead (readahead.h) drives prefetches; the bytes
 *    come from the cache link. Errors become errno at this edge only:
 *    ESTALE (object changed or gone in S3), EACCES (credentials refused),
 *    EIO (daemon away longer than the link's wait, or anything else).
 *  - xattrs: user.lith.key (the S3 key) on everything, user.lith.etag on
 *    files.
 *
 * Threads: every operation may run on any libfuse worker thread at once;
 * the index is read-only, per-handle state has its own mutex, counters are
 * atomic.
 * Ownership: the index and the link are borrowed and must outlive the fs.
 */
#ifndef LITH_MOUNTER_FS_H
#define LITH_MOUNTER_FS_H

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314 /* FUSE_MAKE_VERSION(3, 14) */
#endif
#include <fuse3/fuse_lowlevel.h>

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fetch/index/index.h"
#include "mounter/cachelink.h"
#include "mounter/mstats.h"
#include "mounter/readahead.h"

struct lithfs_config {
	uid_t uid;
	gid_t gid;
	bool exec;                /* files 0555 instead of 0444 */
	double timeout;           /* entry/attr/negative timeouts, seconds */
	uint32_t max_read;        /* bytes per FUSE read (conn->max_read) */
	uint32_t max_readahead;   /* conn->max_readahead */
	unsigned max_background;  /* kernel's async request limit */
	uint64_t stall_us;        /* a read slower than this waited on a fill */
	struct ra_config ra;
	struct mstats *mstats;    /* FUSE metrics; NULL: none */
};

struct lithfs_stats {
	uint64_t opens, reads, read_bytes, read_errors, stalls, prefetches;
};

struct lithfs;

int lithfs_new(const struct lithfs_config *cfg, const struct index *idx, struct cachelink *link,
	       struct lithfs **ret);
/* After the session has ended; also frees the handles of files the kernel
 * never released (an aborted connection drops pending RELEASEs). NULL ok. */
void lithfs_free(struct lithfs *fs);
/* The operations table; the userdata given to fuse_session_new must be the
 * struct lithfs. */
const struct fuse_lowlevel_ops *lithfs_ops(void);
/* Waits until the kernel's INIT was answered (timeout_ms; -ETIMEDOUT). */
int lithfs_wait_init(struct lithfs *fs, unsigned timeout_ms);
void lithfs_get_stats(struct lithfs *fs, struct lithfs_stats *ret);

#endif
