/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The private cache daemon: when no `lith cached` answers on the node
 * socket, `lith mount` runs its own, so one command works on a single
 * machine. The child is `/proc/self/exe cached ...` started with
 * posix_spawn in its own process group (a Ctrl-C aimed at a foreground
 * mount reaches the mounter, which then stops the daemon in order).
 *
 * Lifetime: privd_stop sends SIGTERM and waits (SIGKILL after a bound),
 * then removes an ephemeral cache dir (the default one: a cache that lives
 * as long as its mount, so per-mount caches never pile up on disk; a daemon
 * that was killed leaves it for the next mount on the same path).
 * If the mounter dies without stopping it, the daemon gets SIGTERM from
 * the kernel (LITH_CACHED_PARENT makes `lith cached` set PR_SET_PDEATHSIG).
 * PDEATHSIG follows the *thread* that spawned the child: spawn only from
 * threads that live as long as the mount (the main thread, the cache link's
 * watcher).
 *
 * Threads: one privd is used by one thread at a time (the caller
 * serialises start/restart/stop).
 */
#ifndef LITH_MOUNTER_PRIVD_H
#define LITH_MOUNTER_PRIVD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct privd_config {
	const char *exe;          /* the lith binary (default: our own) */
	const char *cache_dir;    /* created (0700) if missing */
	const char *socket;       /* where the daemon listens */
	uint64_t cache_size;
	const char *log_path;     /* the daemon's stdout/stderr (NULL: /dev/null) */
	long allow_uid;           /* < 0: root only */
	unsigned start_timeout_ms;
	bool ephemeral;           /* remove cache_dir once the daemon has stopped */
};

struct privd;

/* Spawns the daemon and waits until its socket accepts connections.
 * -ETIMEDOUT, or -ECHILD when it exited during start-up (see its log). */
int privd_start(const struct privd_config *cfg, struct privd **ret);
/* Reaps the child if it exited; true while it runs. */
bool privd_running(struct privd *d);
/* Starts it again after it died (no-op while it runs). */
int privd_restart(struct privd *d);
pid_t privd_pid(const struct privd *d);
/* Stops the daemon (SIGTERM, then SIGKILL after 15 s) and frees d.
 * Accepts NULL. */
void privd_stop(struct privd *d);

#endif
