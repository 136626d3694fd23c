/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One mount from start to end: the process `lith mount` becomes.
 *   1. detach (fork; the parent waits for the verdict) unless foreground;
 *   2. connect to the node's `lith cached`; only when nothing listens on
 *      its socket (unless no_private_daemon), start a private one
 *      (privd.h) with its own cache dir and socket; a daemon that refuses
 *      the view (missing bucket, bad credentials, endpoint down) is an error;
 *   3. register the view, map the index it returns;
 *   4. mount (a path, or serve a connection passed as an fd), answer INIT
 *      (with init_file: saved first; with takeover: the saved one is
 *      replayed and the kernel re-sends what the dead server had read),
 *      check the root answers (stat of the mountpoint), raise the kernel
 *      readahead to the FUSE read size, then report success (and on
 *      status_fd);
 *   5. serve until unmounted or SIGTERM/SIGINT/SIGHUP; unmount (path
 *      mounts) or, in fd mode, have the kernel re-queue what the loop read
 *      but dropped (FUSE_NOTIFY_RESEND, for a successor), release the
 *      view, stop the private daemon, exit.
 * If the cache daemon goes away the mount stays: reads wait up to
 * daemon_wait_ms for it to come back (a private daemon is restarted), then
 * fail with EIO.
 * Threads: lmount_run runs on the main thread, which then runs the FUSE
 * loop; a short-lived thread reports readiness.
 */
#ifndef LITH_MOUNTER_LMOUNT_H
#define LITH_MOUNTER_LMOUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "fetch/cached/viewspec.h"
#include "mounter/fs.h"

#define LMOUNT_DEFAULT_SOCKET "/run/lith/cached.sock"
#define LMOUNT_DEFAULT_CACHE_SIZE (1ull << 30)
#define LMOUNT_DEFAULT_WAIT_MS 30000u

struct lmount_config {
	struct view_spec spec;      /* what to mount, with credentials (borrowed) */
	const char *source;         /* "s3://bucket/prefix", for logs */
	const char *mountpoint;     /* absolute; may be NULL with fuse_fd */
	int fuse_fd;                /* >= 0: serve this mounted connection */
	const char *cache_socket;   /* the node daemon (default LMOUNT_DEFAULT_SOCKET) */
	const char *cache_dir;      /* private daemon's dir, kept (NULL: mountreg's
				     * default, removed when the mount ends) */
	uint64_t cache_size;        /* private daemon's cache size */
	bool private_daemon;        /* always start a private daemon */
	bool no_private_daemon;     /* never: no daemon on the socket is an error */
	const char *init_file;      /* fd mode: the connection's FUSE_INIT is kept
				     * here (saved on a normal start, replayed
				     * with takeover) */
	bool takeover;              /* fd mode: the connection is initialised
				     * already; replay init_file, RESEND */
	int status_fd;              /* >= 0: "ERRNO\tMESSAGE\n" then closed */
	bool foreground, allow_other, debug;
	unsigned daemon_wait_ms;    /* reads wait this long for a lost daemon */
	unsigned max_threads;
	unsigned readahead_kb;      /* bdi read_ahead_kb (default max_read / 1024) */
	const char *log_file;       /* background log (NULL: mountreg's HASH.log,
				     * removed again when the mount ends cleanly) */
	struct lithfs_config fs;
};

/* Returns the process exit code (0 ok, 1 failure). */
int lmount_run(const struct lmount_config *cfg);

#endif
