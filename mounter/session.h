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
 * Connections passed as an fd can outlive their server (DESIGN.md, and
 * fuseinit.h): session_capture_init answers the kernel's INIT itself and
 * keeps the request in a file; session_replay_init enters the initialised
 * state of a connection whose INIT an earlier server answered;
 * session_resend has the kernel queue again what an earlier server read but
 * never answered. Both run before session_run, on the main thread.
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
/* Fd mode: reads the first request (blocking until the kernel sends it),
 * which must be FUSE_INIT, saves it to path (fuseinit_save), then answers
 * it (the init callback runs on this thread). -EPROTO when the connection
 * was already initialised (the request read is queued again). */
int session_capture_init(struct session *s, const char *path, char *msg, size_t msglen);
/* Fd mode, connection already initialised: replays the INIT saved at path
 * into the session; nothing is read from the connection. */
int session_replay_init(struct session *s, const char *path, char *msg, size_t msglen);
/* Fd mode: FUSE_NOTIFY_RESEND (fuseinit_resend). */
int session_resend(struct session *s);
/* Serves requests until unmounted or told to exit; 0 or -errno. */
int session_run(struct session *s);
void session_exit(struct session *s);
/* Unmounts (path mounts), removes the signal handlers, frees. NULL ok. */
void session_free(struct session *s);

/* Raises the kernel readahead of the filesystem mounted at mountpoint
 * (/sys/class/bdi/MAJ:MIN/read_ahead_kb): FUSE read sizes follow it. */
int session_tune_readahead(const char *mountpoint, unsigned kb);

#endif
