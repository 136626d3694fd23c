// SPDX-License-Identifier: Apache-2.0
/*
 * The private cache daemon (see privd.h): spawn, wait for the socket,
 * reap, restart, stop. Runs on the main thread or the cache link's
 * watcher thread, never both at once.
 */
#include "mounter/privd.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fetch/base/macro.h"
#include "fetch/base/usock.h"

#define STOP_TIMEOUT_MS 15000
#define POLL_MS 20

extern char **environ;

struct privd {
	char *exe, *cache_dir, *socket, *log_path;
	uint64_t cache_size;
	long allow_uid;
	unsigned start_timeout_ms;
	bool ephemeral;
	pid_t pid;                 /* 0: not running */
};

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[512];
	size_t n = strlen(path);

	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* environ plus LITH_CACHED_PARENT=<our pid>; the strings are borrowed. */
static char **child_env(char *parent_var, size_t cap)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LITH_CACHED_PARENT=", 19) != 0)
			env[k++] = environ[i];
	snprintf(parent_var, cap, "LITH_CACHED_PARENT=%d", (int)getpid());
	env[k] = parent_var;
	return env;
}

static int spawn_attrs(posix_spawnattr_t *at, posix_spawn_file_actions_t *fa, const char *log)
{
	sigset_t none, dfl;
	int r;

	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGPIPE);
	r = posix_spawnattr_setflags(at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					     POSIX_SPAWN_SETSIGDEF);
	if (!r)
		r = posix_spawnattr_setpgroup(at, 0);
	if (!r)
		r = posix_spawnattr_setsigmask(at, &none);
	if (!r)
		r = posix_spawnattr_setsigdefault(at, &dfl);
	if (!r)
		r = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
	if (!r)
		r = posix_spawn_file_actions_addopen(fa, 1, log ? log : "/dev/null",
						     O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (!r)
		r = posix_spawn_file_actions_adddup2(fa, 1, 2);
	return -r;
}

static int spawn(struct privd *d)
{
	char size[32], uid[32], parent[64];
	char *argv[] = { d->exe, "cached", "--socket", d->socket, "--cache-dir", d->cache_dir,
			 "--cache-size", size, NULL, NULL, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char **env = child_env(parent, sizeof(parent));
	int r;

	if (!env)
		return -ENOMEM;
	snprintf(size, sizeof(size), "%llu", (unsigned long long)d->cache_size);
	if (d->allow_uid >= 0) {
		snprintf(uid, sizeof(uid), "%ld", d->allow_uid);
		argv[8] = "--allow-uid";
		argv[9] = uid;
	}
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_init(&fa);
	r = spawn_attrs(&at, &fa, d->log_path);
	if (r == 0)
		r = -posix_spawn(&d->pid, d->exe, &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(env);
	if (r < 0)
		d->pid = 0;
	return r;
}

static bool socket_answers(const char *path)
{
	int fd;

	if (usock_connect(path, 0, &fd) < 0)
		return false;
	close(fd);
	return true;
}

static int wait_ready(struct privd *d)
{
	for (unsigned waited = 0; waited < d->start_timeout_ms; waited += POLL_MS) {
		if (!privd_running(d))
			return -ECHILD;
		if (socket_answers(d->socket))
			return 0;
		sleep_ms(POLL_MS);
	}
	return -ETIMEDOUT;
}

static int start(struct privd *d)
{
	int r = mkdir_p(d->cache_dir, 0700);

	if (r == 0)
		r = spawn(d);
	if (r == 0)
		r = wait_ready(d);
	return r;
}

/* Our own binary's path, so `ps` shows "lith cached" (fallback: the
 * /proc link itself). */
static char *self_exe(void)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return strdup("/proc/self/exe");
	buf[n] = '\0';
	/* a rebuilt binary: only the /proc link still reaches our own */
	return strdup(strstr(buf, " (deleted)") ? "/proc/self/exe" : buf);
}

static void privd_free(struct privd *d)
{
	free(d->exe);
	free(d->cache_dir);
	free(d->socket);
	free(d->log_path);
	free(d);
}

int privd_start(const struct privd_config *cfg, struct privd **ret)
{
	struct privd *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	d->exe = cfg->exe ? strdup(cfg->exe) : self_exe();
	d->cache_dir = strdup(cfg->cache_dir);
	d->socket = strdup(cfg->socket);
	d->log_path = cfg->log_path ? strdup(cfg->log_path) : NULL;
	d->cache_size = cfg->cache_size;
	d->allow_uid = cfg->allow_uid;
	d->start_timeout_ms = cfg->start_timeout_ms ? cfg->start_timeout_ms : 60000;
	d->ephemeral = cfg->ephemeral;
	if (!d->exe || !d->cache_dir || !d->socket || (cfg->log_path && !d->log_path)) {
		privd_free(d);
		return -ENOMEM;
	}
	r = start(d);
	if (r < 0) {
		d->ephemeral = false; /* keep its log: the error message points there */
		privd_stop(d);
		return r;
	}
	*ret = d;
	return 0;
}

bool privd_running(struct privd *d)
{
	int st;

	if (d->pid > 0 && waitpid(d->pid, &st, WNOHANG) == d->pid)
		d->pid = 0;
	return d->pid > 0;
}

int privd_restart(struct privd *d)
{
	if (privd_running(d))
		return 0;
	return start(d);
}

pid_t privd_pid(const struct privd *d) { return d->pid; }

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* The daemon is gone: its files can go too (never following symlinks). */
static void remove_cache_dir(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void privd_stop(struct privd *d)
{
	bool stopped;

	if (!d)
		return;
	if (privd_running(d)) {
		kill(d->pid, SIGTERM);
		for (unsigned w = 0; w < STOP_TIMEOUT_MS && privd_running(d); w += POLL_MS)
			sleep_ms(POLL_MS);
		if (privd_running(d)) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, NULL, 0);
			d->pid = 0;
		}
	}
	stopped = !privd_running(d);
	if (d->ephemeral && stopped)
		remove_cache_dir(d->cache_dir);
	privd_free(d);
}
