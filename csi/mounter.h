/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-volume mounter process: `lith mount --foreground --fuse-fd 3
 * ... s3://bucket/prefix TARGET`, spawned (posix_spawn of /proc/self/exe)
 * on a dup of the FUSE fd lith csi keeps. Credentials go through the
 * child's environment (AWS_ACCESS_KEY_ID, ...), never argv; the
 * environment is otherwise minimal. stdout/stderr go to a per-volume log
 * file under the state dir (0600), whose last `lith mount:` line tells why
 * a start failed; that line becomes the user's error with an errno
 * (ENOENT bucket missing, EACCES credentials, ECONNREFUSED... endpoint).
 * Watching is by pidfd. Any thread.
 *
 * Restarts: a normal start passes `--init-file` (the mounter saves the
 * raw FUSE_INIT there); a successor started on the same connection gets
 * `--takeover --init-file` (it replays that INIT and asks the kernel to
 * re-queue what the dead one had read). Which of these flags the mounter
 * understands is probed once (`lith mount --help` of this very binary),
 * so lith csi runs against a mounter without them (no restarts then).
 */
#ifndef LITH_CSI_MOUNTER_H
#define LITH_CSI_MOUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "csi/volctx.h"

#define MOUNTER_FUSE_FD 3
#define MOUNTER_STATUS_FD 4
#define MOUNTER_STATS_FD 5

/* What this binary's `lith mount` supports (mounter_features). */
struct mounter_features {
	bool init_file, takeover, no_private_cache, status_fd, stats_fd;
};

/* How to start one mounter. */
struct mounter_args {
	const char *cache_socket;
	const char *log_path;
	const char *init_file;  /* NULL: unsupported */
	bool takeover;          /* serve the already-initialised connection */
	int stats_fd;           /* metrics region (mstats.h) for --stats-fd; -1: none */
};

struct mounter_proc {
	pid_t pid;
	int pidfd;                    /* -1 when not watched */
	unsigned long long start;     /* /proc/PID/stat starttime: tells pid reuse */
	bool child;                   /* ours to reap */
	bool exited;
	int status_fd;                /* read end of --status-fd, -1 if none */
	int wstatus;                  /* siginfo si_status once exited (child) */
	int wcode;                    /* siginfo si_code (CLD_EXITED, CLD_KILLED...) */
};

/* Probes once (thread-safe); later calls return the cached answer. */
const struct mounter_features *mounter_features(void);
int mounter_spawn(const struct volctx *v, int fuse_fd, const struct mounter_args *a,
		  struct mounter_proc *ret);
/* Waits until target serves its root, the mounter exits, or timeout_ms.
 * On failure the mounter is killed; msg says why (from its log). */
int mounter_wait_ready(struct mounter_proc *p, const char *target, const char *log_path,
		       unsigned timeout_ms, char *msg, size_t msglen);
/* SIGTERM, then SIGKILL after grace_ms; reaps a child; closes the pidfd. */
void mounter_stop(struct mounter_proc *p, unsigned grace_ms);
/* Re-attaches to a running mounter (pid + starttime from the state);
 * takes its FUSE fd back with pidfd_getfd. Returns the fd. */
int mounter_adopt(struct mounter_proc *p, int fd_in_mounter);
/* True when the process has exited (reaping it if ours). */
bool mounter_exited(struct mounter_proc *p);
unsigned long long mounter_starttime(pid_t pid);
/* Reads the credentials of a running mounter from /proc/PID/environ into
 * v (root only; used after a lith csi restart so that the mounter can be
 * restarted without secrets ever touching the disk). 1 found, 0 none. */
int mounter_read_secrets(pid_t pid, struct volctx *v);
/* "killed by signal 9" / "exited with status 1" into buf. */
void mounter_describe_exit(const struct mounter_proc *p, char *buf, size_t len);

#endif
