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
 */
#ifndef LITH_CSI_MOUNTER_H
#define LITH_CSI_MOUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "csi/volctx.h"

#define MOUNTER_FUSE_FD 3

struct mounter_proc {
	pid_t pid;
	int pidfd;                    /* -1 when not watched */
	unsigned long long start;     /* /proc/PID/stat starttime: tells pid reuse */
	bool child;                   /* ours to reap */
	bool exited;
};

int mounter_spawn(const struct volctx *v, int fuse_fd, const char *cache_socket,
		  const char *log_path, struct mounter_proc *ret);
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

#endif
