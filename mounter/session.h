/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The FUSE session of one mount: kernel options, mounting (on a path, or
 * on an already-mounted connection passed as an fd), the multi-threaded
 * loop, signals and unmounting.
 *
 * Kernel options for an immutable dataset: ro, default_permissions (the
 * kernel enforces our modes), max_read, fsname "lith:BUCKET", subtype
 * "lith", allow_other on request. The loop is libfuse's multi-threaded
 * loop on the one session fd (never clone_fd: a cloned fd dies with its
 * process). SIGTERM, SIGINT and SIGHUP end the loop; a path mount is then
 * unmounted. A connection passed as an fd belongs to whoever mounted it:
 * it is never unmounted here.
 *
 * Threads: session_new/run/free on the main thread; session_exit from any.
 */
#ifndef LITH_MOUNTER_SESSION_H
#define LITH_MOUNTER_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "mounter/fs.h"

struct session_config {
	const char *mountpoint;   /* absolute path; NULL in fd mode without one */
	int fuse_fd;              /* >= 0: serve this mounted connection */
	const char *fsname;       /* "lith:BUCKET"; ',' and '\\' are escaped */
	bool allow_other;
	bool debug;               /* libfuse's request trace on stderr */
	uint32_t max_read;
	unsigned max_threads;
	unsigned max_idle_threads;
};

struct session;

/* Creates the session and mounts it. msg gets libfuse's complaint on
 * failure. */
int session_new(const struct session_config *cfg, const struct fuse_lowlevel_ops *ops,
		void *userdata, struct session **ret, char *msg, size_t msglen);
/* Serves requests until unmounted or told to exit; 0 or -errno. */
int session_run(struct session *s);
void session_exit(struct session *s);
/* Unmounts (path mounts), removes the signal handlers, frees. NULL ok. */
void session_free(struct session *s);

/* Raises the kernel readahead of the filesystem mounted at mountpoint
 * (/sys/class/bdi/MAJ:MIN/read_ahead_kb): FUSE read sizes follow it. */
int session_tune_readahead(const char *mountpoint, unsigned kb);

#endif
