// SPDX-License-Identifier: Apache-2.0
/*
 * The mount registry (see mountreg.h): pid files named by a hash of the
 * mountpoint, verified with /proc/PID/stat's start time.
 */
#include "mounter/mountreg.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/base/procstat.h"

void mountreg_hash(const char *s, char out[17])
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	snprintf(out, 17, "%016" PRIx64, h);
}

static int rundir(char *buf, size_t cap)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	int n;

	if (geteuid() == 0)
		n = snprintf(buf, cap, "/run/lith");
	else if (x && *x == '/')
		n = snprintf(buf, cap, "%s/lith", x);
	else
		n = snprintf(buf, cap, "/tmp/lith-%u", (unsigned)geteuid());
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int mountreg_path(const char *mountpoint, const char *suffix, char *buf, size_t cap)
{
	char dir[256], h[17];
	int r = rundir(dir, sizeof(dir)), n;

	if (r < 0)
		return r;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	strcat(dir, "/mounts");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	mountreg_hash(mountpoint, h);
	n = snprintf(buf, cap, "%s/%s.%s", dir, h, suffix);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int mountreg_cache_dir(const char *key, char *buf, size_t cap)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char h[17];
	int n;

	mountreg_hash(key, h);
	if (geteuid() == 0)
		n = snprintf(buf, cap, "/var/cache/lith-private/%s", h);
	else if (x && *x == '/')
		n = snprintf(buf, cap, "%s/lith-private/%s", x, h);
	else if (home && *home == '/')
		n = snprintf(buf, cap, "%s/.cache/lith-private/%s", home, h);
	else
		n = snprintf(buf, cap, "/tmp/lith-%u/cache-%s", (unsigned)geteuid(), h);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* State and start time of pid. */
static int proc_stat(pid_t pid, char *ret_state, unsigned long long *ret_start)
{
	struct procstat ps = { 0 };
	int r = procstat_read(pid, &ps);

	*ret_state = ps.state;
	*ret_start = ps.start;
	return r < 0 ? r : 0;
}

int mountreg_alive(pid_t pid)
{
	unsigned long long start;
	char state;

	return pid > 0 && proc_stat(pid, &state, &start) == 0 && state != 'Z' && state != 'X';
}

int mountreg_add(const char *mountpoint)
{
	char path[512], tmp[520];
	unsigned long long start = 0;
	char state;
	FILE *f;
	int r = mountreg_path(mountpoint, "pid", path, sizeof(path));

	if (r == 0)
		r = proc_stat(getpid(), &state, &start);
	if (r < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%d %llu\n%s\n", (int)getpid(), start, mountpoint);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

void mountreg_remove(const char *mountpoint)
{
	char path[512];
	pid_t pid;

	if (mountreg_lookup(mountpoint, &pid) == 0 && pid == getpid() &&
	    mountreg_path(mountpoint, "pid", path, sizeof(path)) == 0)
		unlink(path);
}

void mountreg_forget_dead(const char *mountpoint)
{
	char path[512];
	pid_t pid;

	if (mountreg_lookup(mountpoint, &pid) == -ENOENT &&
	    mountreg_path(mountpoint, "pid", path, sizeof(path)) == 0)
		unlink(path);
}

int mountreg_lookup(const char *mountpoint, pid_t *ret)
{
	unsigned long long want, start;
	char path[512], state;
	int pid, r = mountreg_path(mountpoint, "pid", path, sizeof(path));
	FILE *f;

	if (r < 0)
		return r;
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	r = fscanf(f, "%d %llu", &pid, &want) == 2 ? 0 : -ENOENT;
	fclose(f);
	if (r == 0 && (proc_stat(pid, &state, &start) < 0 || start != want || state == 'Z'))
		r = -ENOENT;
	if (r == 0)
		*ret = pid;
	return r;
}
