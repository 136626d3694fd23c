// SPDX-License-Identifier: Apache-2.0
/*
 * Unmounting (see unmount.h): umount2 or fusermount3, then waiting for the
 * mounter recorded in the mount registry.
 */
#include "mounter/unmount.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mounter/mountreg.h"

#define POLL_MS 20

extern char **environ;

static int fusermount(const char *mountpoint, bool lazy)
{
	char *argv[] = { "fusermount3", lazy ? "-uz" : "-u", (char *)mountpoint, NULL };
	pid_t pid;
	int st, r = posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ);

	if (r)
		return -r;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EBUSY;
}

static int detach_mount(const char *mountpoint, bool lazy)
{
	if (umount2(mountpoint, lazy ? MNT_DETACH : 0) == 0)
		return 0;
	if (errno == EPERM)
		return fusermount(mountpoint, lazy);
	return -errno;
}

static int wait_gone(pid_t pid, unsigned timeout_ms)
{
	struct timespec ts = { .tv_nsec = POLL_MS * 1000000L };

	for (unsigned w = 0; w < timeout_ms; w += POLL_MS) {
		if (!mountreg_alive(pid))
			return 0;
		nanosleep(&ts, NULL);
	}
	return mountreg_alive(pid) ? -ETIMEDOUT : 0;
}

int unmount_path(const char *mountpoint, bool lazy, unsigned timeout_ms, char *msg,
		 size_t msglen)
{
	pid_t pid = 0;
	bool known = mountreg_lookup(mountpoint, &pid) == 0;
	int r = detach_mount(mountpoint, lazy);

	if (r == -EBUSY) {
		snprintf(msg, msglen, "%s is in use (open files or a working directory inside); "
			 "close them, or use --lazy to detach it now", mountpoint);
		return r;
	}
	if (r < 0) {
		snprintf(msg, msglen, "%s: %s", mountpoint,
			 r == -EINVAL ? "not a mount point" : strerror(-r));
		return r;
	}
	if (!known)
		mountreg_forget_dead(mountpoint);
	if (lazy || !known)
		return 0;
	r = wait_gone(pid, timeout_ms);
	if (r < 0)
		snprintf(msg, msglen, "unmounted, but the mounter (pid %d) is still running",
			 (int)pid);
	return r;
}
