// SPDX-License-Identifier: Apache-2.0
/*
 * Spawning, watching and stopping `lith mount` processes (see mounter.h).
 */
#include "csi/mounter.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fetch/base/procstat.h"

#define ARGV_MAX 64
#define ENV_MAX 8
#define FUSE_SUPER_MAGIC 0x65735546
#define ROOT_INO 1

struct argv_buf {
	char *argv[ARGV_MAX];
	int n;
	char src[2 * VOLCTX_VALUE_MAX];
	char uid[24], gid[24];
};

static void add(struct argv_buf *a, const char *s)
{
	if (a->n < ARGV_MAX - 1)
		a->argv[a->n++] = (char *)s;
	a->argv[a->n] = NULL;
}

/* The restart-related flags, each only when this mounter understands it. */
static void add_restart_flags(struct argv_buf *a, const struct mounter_args *ma)
{
	const struct mounter_features *f = mounter_features();

	if (f->init_file && ma->init_file) { add(a, "--init-file"); add(a, ma->init_file); }
	if (f->takeover && ma->takeover) add(a, "--takeover");
	if (f->no_private_cache) add(a, "--no-private-cache");
	if (f->status_fd) { add(a, "--status-fd"); add(a, "4"); }
	if (f->stats_fd && ma->stats_fd >= 0) { add(a, "--stats-fd"); add(a, "5"); }
}

/* podInfoOnMount's namespace and name label the mount's metrics. */
static void add_pod_labels(struct argv_buf *a, const struct volctx *v)
{
	for (size_t i = 0; i < v->n_labels; i++) {
		if (!strcmp(v->labels[i].key, "pod.namespace")) {
			add(a, "--pod-namespace");
			add(a, v->labels[i].value);
		} else if (!strcmp(v->labels[i].key, "pod.name")) {
			add(a, "--pod-name");
			add(a, v->labels[i].value);
		}
	}
}

static void build_argv(struct argv_buf *a, const struct volctx *v, const struct mounter_args *ma)
{
	add(a, "lith"); add(a, "mount"); add(a, "--foreground"); add(a, "--fuse-fd"); add(a, "3");
	add(a, "--allow-other"); add(a, "--volume-id"); add(a, v->volume_id);
	add_restart_flags(a, ma);
	if (ma->cache_socket) { add(a, "--cache-socket"); add(a, ma->cache_socket); }
	if (v->endpoint[0]) { add(a, "--endpoint"); add(a, v->endpoint); }
	if (v->region[0]) { add(a, "--region"); add(a, v->region); }
	if (v->path_style) add(a, "--path-style");
	if (v->virtual_host) add(a, "--virtual-host");
	if (v->no_sign) add(a, "--no-sign-request");
	if (v->requester_pays) add(a, "--requester-pays");
	if (v->exec) add(a, "--exec");
	snprintf(a->uid, sizeof(a->uid), "%lld", v->uid < 0 ? 0 : v->uid);
	snprintf(a->gid, sizeof(a->gid), "%lld", v->gid < 0 ? 0 : v->gid);
	add(a, "--uid"); add(a, a->uid); add(a, "--gid"); add(a, a->gid);
	for (int i = 0; i < VOLCTX_TUNING_N; i++)
		if (v->tuning[i][0]) { add(a, volctx_tuning_opts[i]); add(a, v->tuning[i]); }
	add_pod_labels(a, v);
	snprintf(a->src, sizeof(a->src), "s3://%s/%s", v->bucket, v->prefix);
	add(a, a->src);
	add(a, v->target);
}

/* Minimal environment: credentials only (never argv), no HOME profile. */
static void build_env(char env[ENV_MAX][VOLCTX_SECRET_MAX + 32], char *envp[ENV_MAX],
		      const struct volctx *v)
{
	int n = 0;

	snprintf(env[n++], sizeof(env[0]), "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
	snprintf(env[n++], sizeof(env[0]), "HOME=/nonexistent");
	if (getenv("LITH_LOG"))
		snprintf(env[n++], sizeof(env[0]), "LITH_LOG=%s", getenv("LITH_LOG"));
	if (v->access_key[0]) {
		snprintf(env[n++], sizeof(env[0]), "AWS_ACCESS_KEY_ID=%s", v->access_key);
		snprintf(env[n++], sizeof(env[0]), "AWS_SECRET_ACCESS_KEY=%s", v->secret_key);
	}
	if (v->session_token[0])
		snprintf(env[n++], sizeof(env[0]), "AWS_SESSION_TOKEN=%s", v->session_token);
	for (int i = 0; i < n; i++)
		envp[i] = env[i];
	envp[n] = NULL;
}

unsigned long long mounter_starttime(pid_t pid)
{
	struct procstat ps;

	return procstat_read(pid, &ps) == 0 ? ps.start : 0;
}

static int spawn(struct argv_buf *a, char **envp, int fuse_fd, int status_fd, int stats_fd,
		 const char *log_path, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	int r;

	sigemptyset(&none);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSID);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_adddup2(&fa, fuse_fd, MOUNTER_FUSE_FD);
	if (status_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, status_fd, MOUNTER_STATUS_FD);
	if (stats_fd >= 0 && mounter_features()->stats_fd)
		posix_spawn_file_actions_adddup2(&fa, stats_fd, MOUNTER_STATS_FD);
	r = -posix_spawn(pid, "/proc/self/exe", &fa, &at, a->argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return r;
}

int mounter_spawn(const struct volctx *v, int fuse_fd, const struct mounter_args *ma,
		  struct mounter_proc *ret)
{
	static char env[ENV_MAX][VOLCTX_SECRET_MAX + 32];
	static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
	struct argv_buf *a = calloc(1, sizeof(*a));
	int sp[2] = { -1, -1 };
	char *envp[ENV_MAX];
	pid_t pid = 0;
	int r;

	if (!a)
		return -ENOMEM;
	if (mounter_features()->status_fd && pipe2(sp, O_CLOEXEC) < 0) {
		free(a);
		return -errno;
	}
	build_argv(a, v, ma);
	pthread_mutex_lock(&env_lock);
	build_env(env, envp, v);
	r = spawn(a, envp, fuse_fd, sp[1], ma->stats_fd, ma->log_path, &pid);
	explicit_bzero(env, sizeof(env));
	pthread_mutex_unlock(&env_lock);
	free(a);
	if (sp[1] >= 0)
		close(sp[1]);
	if (r < 0) {
		if (sp[0] >= 0)
			close(sp[0]);
		return r;
	}
	ret->status_fd = sp[0];
	ret->exited = false;
	ret->pid = pid;
	ret->child = true;
	ret->start = mounter_starttime(pid);
	ret->pidfd = pidfd_open(pid, 0);
	return ret->pidfd < 0 ? -errno : 0;
}

/* ---- readiness ---- */

/* Shared by the waiting caller and the probe thread; the last one frees. */
struct probe {
	char target[PATH_MAX];
	int efd;
	int result;
	atomic_int refs;
};

static void probe_put(struct probe *p)
{
	if (atomic_fetch_sub(&p->refs, 1) == 1) {
		close(p->efd);
		free(p);
	}
}

/* stat of the root blocks until the mounter answered INIT and GETATTR. */
static void *probe_main(void *arg)
{
	struct probe *p = arg;
	struct statfs sf;
	struct stat st;
	uint64_t one = 1;

	if (stat(p->target, &st) < 0 || statfs(p->target, &sf) < 0)
		p->result = -errno;
	else if ((unsigned long)sf.f_type != FUSE_SUPER_MAGIC || st.st_ino != ROOT_INO)
		p->result = -ENOTCONN;
	if (write(p->efd, &one, sizeof(one)) < 0 && !p->result)
		p->result = -EIO;
	probe_put(p);
	return NULL;
}

static int probe_start(const char *target, struct probe **ret)
{
	struct probe *p = calloc(1, sizeof(*p));
	pthread_attr_t a;
	pthread_t t;
	int r;

	if (!p)
		return -ENOMEM;
	snprintf(p->target, sizeof(p->target), "%s", target);
	atomic_init(&p->refs, 2);
	p->efd = eventfd(0, EFD_CLOEXEC);
	if (p->efd < 0) {
		free(p);
		return -EMFILE;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &a, probe_main, p);
	pthread_attr_destroy(&a);
	if (r < 0) {
		close(p->efd);
		free(p);
		return r;
	}
	*ret = p;
	return 0;
}

static const int known_errnos[] = {
	ENOENT, EACCES, EPERM, ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT, ECONNRESET,
	EINVAL, ENOKEY, EHOSTDOWN, EAGAIN,
};

/* The last "lith mount: ..." line of the log, and the errno named in its
 * trailing "[strerror]". */
static int classify(const char *log_path, char *msg, size_t len)
{
	char buf[8192], *line, *end, *br;
	int fd = open(log_path, O_RDONLY | O_CLOEXEC);
	off_t size;
	ssize_t n;

	if (fd < 0)
		return -EIO;
	size = lseek(fd, 0, SEEK_END);
	n = pread(fd, buf, sizeof(buf) - 1, size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	line = NULL;
	for (char *s = strstr(buf, "lith mount: "); s; s = strstr(s + 1, "lith mount: "))
		line = s;
	if (!line)
		return -EIO;
	line += strlen("lith mount: ");
	if ((end = strchr(line, '\n')))
		*end = '\0';
	snprintf(msg, len, "%s", line);
	br = strrchr(line, '[');
	for (size_t i = 0; br && i < sizeof(known_errnos) / sizeof(known_errnos[0]); i++)
		if (!strncmp(br + 1, strerror(known_errnos[i]), strlen(strerror(known_errnos[i]))))
			return -known_errnos[i];
	return -EIO;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* 1: probe answered; 0: mounter exited; -ETIMEDOUT. */
static int wait_either(struct mounter_proc *p, int efd, unsigned timeout_ms)
{
	struct pollfd pf[2] = { { .fd = efd, .events = POLLIN }, { .fd = p->pidfd, .events = POLLIN } };
	double deadline = now_ms() + timeout_ms;

	for (;;) {
		int left = (int)(deadline - now_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(pf, 2, left) < 0 && errno != EINTR)
			return -errno;
		if (pf[0].revents)
			return 1;
		if (pf[1].revents)
			return 0;
	}
}

/* Reads the `errno\tmessage\n` line; 1 with *err set, 0 on EOF. */
static int status_line(int fd, int *err, char *msg, size_t len)
{
	char buf[1024], *tab, *nl;
	size_t n = 0;
	ssize_t k;

	while (n < sizeof(buf) - 1 && (k = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0) {
		n += (size_t)k;
		if (memchr(buf, '\n', n))
			break;
	}
	buf[n] = '\0';
	if (!(nl = strchr(buf, '\n')))
		return 0;
	*nl = '\0';
	*err = abs(atoi(buf));
	tab = strchr(buf, '\t');
	if (*err && tab)
		snprintf(msg, len, "%s", tab + 1);
	return 1;
}

/* Readiness through --status-fd: 0 ready, -errno (with msg) failed,
 * 1 when the mounter closed the pipe without a line. */
static int wait_status(struct mounter_proc *p, unsigned timeout_ms, char *msg, size_t len)
{
	int r = wait_either(p, p->status_fd, timeout_ms), err = 0;

	if (r < 0)
		return r;
	if (status_line(p->status_fd, &err, msg, len) == 0)
		return 1;
	return -err;
}

static int wait_probe(struct mounter_proc *p, const char *target, unsigned timeout_ms)
{
	struct probe *pr;
	int r = probe_start(target, &pr);

	if (r < 0)
		return r;
	r = wait_either(p, pr->efd, timeout_ms);
	if (r == 1)
		r = pr->result;
	else if (r == 0)
		r = 1;
	probe_put(pr); /* a blocked probe ends when the caller unmounts and closes the fd */
	return r;
}

int mounter_wait_ready(struct mounter_proc *p, const char *target, const char *log_path,
		       unsigned timeout_ms, char *msg, size_t len)
{
	int r = p->status_fd >= 0 ? wait_status(p, timeout_ms, msg, len)
				  : wait_probe(p, target, timeout_ms);

	if (p->status_fd >= 0) {
		close(p->status_fd);
		p->status_fd = -1;
	}
	if (r == 0)
		return 0;
	mounter_stop(p, 0);
	if (r < 0 && r != -ETIMEDOUT && msg[0])
		return r;
	if (r == -ETIMEDOUT) {
		snprintf(msg, len, "the mounter did not serve %s within %u s", target,
			 timeout_ms / 1000);
		return r;
	}
	r = classify(log_path, msg, len);
	if (r == -EIO && !msg[0])
		snprintf(msg, len, "the mounter exited during start-up (see %s)", log_path);
	return r;
}

/* ---- stopping and adopting ---- */

bool mounter_exited(struct mounter_proc *p)
{
	siginfo_t si = { 0 };

	if (p->pid <= 0 || p->exited)
		return true;
	if (p->child && p->pidfd >= 0) {
		p->exited = waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG) == 0 && si.si_pid;
		p->wstatus = si.si_status;
		p->wcode = si.si_code;
	} else if (p->pidfd >= 0) {
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };
		p->exited = poll(&pf, 1, 0) == 1;
	} else {
		p->exited = kill(p->pid, 0) < 0 || mounter_starttime(p->pid) != p->start;
	}
	return p->exited;
}

static void reap(struct mounter_proc *p, unsigned wait_ms)
{
	for (unsigned waited = 0; !mounter_exited(p) && waited < wait_ms; waited += 20) {
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };
		poll(&pf, 1, 20);
	}
}

void mounter_stop(struct mounter_proc *p, unsigned grace_ms)
{
	if (p->pid <= 0 || p->pidfd < 0)
		return;
	if (grace_ms) {
		pidfd_send_signal(p->pidfd, SIGTERM, NULL, 0);
		reap(p, grace_ms);
	}
	if (!mounter_exited(p)) {
		pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
		reap(p, 10000);
	}
	close(p->pidfd);
	p->pidfd = -1;
	p->pid = 0;
	if (p->status_fd >= 0)
		close(p->status_fd);
	p->status_fd = -1;
}

void mounter_describe_exit(const struct mounter_proc *p, char *buf, size_t len)
{
	if (!p->child)
		snprintf(buf, len, "exited");
	else if (p->wcode == CLD_EXITED)
		snprintf(buf, len, "exited with status %d", p->wstatus);
	else
		snprintf(buf, len, "was killed by signal %d", p->wstatus);
}

int mounter_adopt(struct mounter_proc *p, int fd_in_mounter)
{
	int fd;

	if (p->pid <= 0 || mounter_starttime(p->pid) != p->start)
		return -ESRCH;
	p->pidfd = pidfd_open(p->pid, 0);
	if (p->pidfd < 0)
		return -errno;
	p->child = false;
	p->status_fd = -1;
	p->exited = false;
	fd = pidfd_getfd(p->pidfd, fd_in_mounter, 0);
	if (fd < 0 || mounter_starttime(p->pid) != p->start) {
		int e = fd < 0 ? errno : ESRCH;
		if (fd >= 0)
			close(fd);
		close(p->pidfd);
		p->pidfd = -1;
		return -e;
	}
	return fd; /* pidfd_getfd sets O_CLOEXEC */
}

/* ---- what this binary's mounter supports ---- */

static struct mounter_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

/* `lith mount --help` of /proc/self/exe into buf (NUL-terminated). */
static void help_text(char *buf, size_t len)
{
	char *argv[] = { "lith", "mount", "--help", NULL }, *envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	size_t n = 0;
	ssize_t k;
	int pp[2];
	pid_t pid;

	buf[0] = '\0';
	if (pipe2(pp, O_CLOEXEC) < 0)
		return;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pp[1], 2);
	if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp) != 0)
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	close(pp[1]);
	while (pid > 0 && n < len - 1 && (k = read(pp[0], buf + n, len - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	close(pp[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void features_probe(void)
{
	static char help[16384];

	help_text(help, sizeof(help));
	features.init_file = strstr(help, "--init-file") != NULL;
	features.takeover = strstr(help, "--takeover") != NULL;
	features.no_private_cache = strstr(help, "--no-private-cache") != NULL;
	features.status_fd = strstr(help, "--status-fd") != NULL;
	features.stats_fd = strstr(help, "--stats-fd") != NULL;
}

const struct mounter_features *mounter_features(void)
{
	pthread_once(&features_once, features_probe);
	return &features;
}

/* ---- credentials of a running mounter ---- */

static void take_secret(const char *kv, const char *name, char *dst, size_t len, int *found)
{
	size_t n = strlen(name);

	if (!strncmp(kv, name, n) && kv[n] == '=' && strlen(kv + n + 1) < len) {
		snprintf(dst, len, "%s", kv + n + 1);
		*found = 1;
	}
}

int mounter_read_secrets(pid_t pid, struct volctx *v)
{
	static const size_t max = 64 * 1024;
	char path[64], *buf = malloc(max);
	int fd, found = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if (!buf || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		free(buf);
		return 0;
	}
	n = read(fd, buf, max - 1);
	close(fd);
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = '\0';
		take_secret(buf + i, "AWS_ACCESS_KEY_ID", v->access_key, sizeof(v->access_key), &found);
		take_secret(buf + i, "AWS_SECRET_ACCESS_KEY", v->secret_key, sizeof(v->secret_key), &found);
		take_secret(buf + i, "AWS_SESSION_TOKEN", v->session_token, sizeof(v->session_token), &found);
	}
	explicit_bzero(buf, max);
	free(buf);
	return found;
}
