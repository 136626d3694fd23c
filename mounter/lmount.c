// SPDX-License-Identifier: Apache-2.0
/*
 * One mount's life (see lmount.h). Main thread: start-up, the FUSE loop,
 * teardown in reverse order. The readiness thread waits for INIT, checks
 * the root answers, tunes readahead and reports to the waiting parent.
 * This is the top of the mounter process: it logs.
 */
#include "mounter/lmount.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fetch/base/log.h"
#include "mounter/cachelink.h"
#include "mounter/detach.h"
#include "mounter/mountreg.h"
#include "mounter/privd.h"
#include "mounter/session.h"
#include "mounter/statusfd.h"

#define FUSE_SUPER_MAGIC 0x65735546
#define INIT_SLICE_MS 200u
#define INIT_TIMEOUT_MS 60000u
#define SOCKET_MAX 107

struct lmount {
	const struct lmount_config *cfg;
	struct detach det;
	struct privd *privd;
	struct cachelink *link;
	struct index *idx;
	struct lithfs *fs;
	struct session *sess;
	char socket[SOCKET_MAX + 1];
	char cache_dir[512];
	char log_path[512];
	char msg[1024];
	pthread_mutex_t stop_lock;  /* stopping vs. the readiness thread's signal */
	bool stopping;
	atomic_bool reported;
	int ready_err;
	pthread_t main_thread;
	pthread_t ready;
	bool ready_started;
	bool registered;
};

static const char *where(const struct lmount *m)
{
	return m->cfg->mountpoint ? m->cfg->mountpoint : "(fd)";
}

static void on_link_event(void *ctx, enum cachelink_event ev, int err, const char *msg)
{
	struct lmount *m = ctx;

	if (ev == CACHELINK_LOST)
		log_warn("cache daemon lost; reads wait for it", "mountpoint=\"%s\" socket=%s "
			 "wait_ms=%u", where(m), m->socket, m->cfg->daemon_wait_ms);
	else if (ev == CACHELINK_BACK)
		log_info("cache daemon back", "mountpoint=\"%s\" socket=%s", where(m), m->socket);
	else
		log_warn("cache daemon still away", "mountpoint=\"%s\" err=%d msg=\"%s\"",
			 where(m), -err, msg ? msg : "");
}

static int open_link(struct lmount *m, bool *connected)
{
	struct cachelink_config lc = {
		.socket = m->socket, .client_name = "lith mount", .spec = &m->cfg->spec,
		.wait_ms = m->cfg->daemon_wait_ms, .privd = m->privd, .event = on_link_event,
		.event_ctx = m,
	};
	char msg[256] = "";
	int r = cachelink_open(&lc, &m->link, connected, msg, sizeof(msg));

	if (r < 0)
		snprintf(m->msg, sizeof(m->msg), "cache daemon at %s: %s [%s]", m->socket,
			 msg[0] ? msg : "cannot register the view", strerror(-r));
	return r;
}

static int private_paths(struct lmount *m)
{
	const struct lmount_config *c = m->cfg;
	int n;

	if (c->cache_dir)
		n = snprintf(m->cache_dir, sizeof(m->cache_dir), "%s", c->cache_dir);
	else
		n = mountreg_cache_dir(c->mountpoint ? c->mountpoint : c->source, m->cache_dir,
				       sizeof(m->cache_dir)) < 0 ? -1 : 0;
	if (n < 0 || (size_t)n >= sizeof(m->cache_dir))
		return -ENAMETOOLONG;
	n = snprintf(m->socket, sizeof(m->socket), "%s/cached.sock", m->cache_dir);
	return n < 0 || (size_t)n >= sizeof(m->socket) ? -ENAMETOOLONG : 0;
}

static int start_private(struct lmount *m)
{
	char log[600];
	struct privd_config pc = { .cache_dir = m->cache_dir, .socket = m->socket,
				   .cache_size = m->cfg->cache_size, .log_path = log,
				   .allow_uid = geteuid() == 0 ? -1 : (long)geteuid(),
				   .ephemeral = !m->cfg->cache_dir };
	int r = private_paths(m);

	if (r < 0) {
		snprintf(m->msg, sizeof(m->msg), "private cache dir path too long");
		return r;
	}
	snprintf(log, sizeof(log), "%s/cached.log", m->cache_dir);
	r = privd_start(&pc, &m->privd);
	if (r < 0) {
		snprintf(m->msg, sizeof(m->msg), "the private cache daemon did not start: %s "
			 "(see %.400s)", strerror(-r), log);
		return r;
	}
	log_info("started a private cache daemon", "pid=%d cache_dir=\"%s\" cache_size=%llu",
		 (int)privd_pid(m->privd), m->cache_dir, (unsigned long long)m->cfg->cache_size);
	return open_link(m, NULL);
}

/* A private daemon stands in only when nobody listens on the socket: a
 * daemon that answered and refused the view reported a real error. */
static int connect_daemon(struct lmount *m)
{
	bool connected = false;
	int r;

	if (!m->cfg->private_daemon) {
		snprintf(m->socket, sizeof(m->socket), "%s", m->cfg->cache_socket);
		r = open_link(m, &connected);
		if (r == 0 || connected || (r != -ENOENT && r != -ECONNREFUSED))
			return r;
		if (m->cfg->no_private_daemon) {
			snprintf(m->msg, sizeof(m->msg), "no cache daemon at %s (--no-private-cache) "
				 "[%s]", m->socket, strerror(-r));
			return r;
		}
		log_info("no cache daemon; starting a private one", "socket=%s", m->socket);
	}
	return start_private(m);
}

static int open_fs(struct lmount *m)
{
	int r = index_open_fd(cachelink_index_fd(m->link), &m->idx);

	if (r < 0) {
		snprintf(m->msg, sizeof(m->msg), "the daemon's index is unusable: %s", strerror(-r));
		return r;
	}
	r = lithfs_new(&m->cfg->fs, m->idx, m->link, &m->fs);
	if (r == 0)
		r = cachelink_start(m->link, m->idx);
	if (r < 0)
		snprintf(m->msg, sizeof(m->msg), "start-up: %s", strerror(-r));
	return r;
}

/* The connection's earlier server died or handed over: enter its
 * initialised state, then have the kernel re-send what it had read. */
static int take_over(struct lmount *m)
{
	int r = session_replay_init(m->sess, m->cfg->init_file, m->msg, sizeof(m->msg));

	if (r < 0)
		return r;
	r = session_resend(m->sess);
	if (r < 0)
		log_warn("the kernel did not re-send pending requests (needs Linux 6.9+); "
			 "readers of the earlier server may hang", "err=%d", -r);
	else
		log_info("took over a live FUSE connection", "source=\"%s\" mountpoint=\"%s\"",
			 m->cfg->source, where(m));
	return 0;
}

static int mount_fs(struct lmount *m)
{
	const struct lmount_config *c = m->cfg;
	char fsname[300];
	struct session_config sc = {
		.mountpoint = c->fuse_fd >= 0 ? NULL : c->mountpoint, .fuse_fd = c->fuse_fd,
		.fsname = fsname, .allow_other = c->allow_other, .debug = c->debug,
		.max_read = c->fs.max_read, .max_threads = c->max_threads,
	};
	int r;

	snprintf(fsname, sizeof(fsname), "lith:%s", c->spec.bucket);
	r = session_new(&sc, lithfs_ops(), m->fs, &m->sess, m->msg, sizeof(m->msg));
	if (r == 0 && c->fuse_fd < 0 && mountreg_add(c->mountpoint) == 0)
		m->registered = true;
	if (r < 0 || c->fuse_fd < 0)
		return r;
	if (c->takeover)
		return take_over(m);
	if (c->init_file) /* answers INIT here, after saving it */
		return session_capture_init(m->sess, c->init_file, m->msg, sizeof(m->msg));
	return 0;
}

/* ---- readiness ---- */

static bool stopping(struct lmount *m)
{
	bool s;

	pthread_mutex_lock(&m->stop_lock);
	s = m->stopping;
	pthread_mutex_unlock(&m->stop_lock);
	return s;
}

/* Ends the FUSE loop from the readiness thread (libfuse's SIGTERM handler
 * wakes the main thread), unless teardown has begun. */
static void end_loop(struct lmount *m)
{
	pthread_mutex_lock(&m->stop_lock);
	if (!m->stopping)
		pthread_kill(m->main_thread, SIGTERM);
	pthread_mutex_unlock(&m->stop_lock);
}

static int check_root(const char *mountpoint)
{
	struct statfs sf;
	struct stat st;

	if (statfs(mountpoint, &sf) < 0 || stat(mountpoint, &st) < 0)
		return -errno;
	if ((unsigned long)sf.f_type != FUSE_SUPER_MAGIC || st.st_ino != INDEX_ROOT_INO)
		return -ENOTCONN;
	return 0;
}

static int become_ready(struct lmount *m)
{
	const struct lmount_config *c = m->cfg;
	unsigned waited = 0;
	int r = -ETIMEDOUT;

	while (!stopping(m) && waited < INIT_TIMEOUT_MS && r == -ETIMEDOUT) {
		r = lithfs_wait_init(m->fs, INIT_SLICE_MS);
		waited += INIT_SLICE_MS;
	}
	if (r < 0) {
		snprintf(m->msg, sizeof(m->msg), "the kernel never initialised the connection");
		return r;
	}
	if (!c->mountpoint)
		return 0;
	r = check_root(c->mountpoint);
	if (r < 0) {
		snprintf(m->msg, sizeof(m->msg), "%s does not serve the mount: %s", c->mountpoint,
			 strerror(-r));
		return r;
	}
	if (session_tune_readahead(c->mountpoint, c->readahead_kb) < 0)
		log_warn("cannot raise the mount's readahead", "mountpoint=\"%s\"",
			 c->mountpoint);
	return 0;
}

static void report(struct lmount *m, int err)
{
	if (atomic_exchange(&m->reported, true))
		return;
	detach_done(&m->det, err, err ? m->msg : NULL, m->log_path[0] ? m->log_path : NULL);
	statusfd_write(m->cfg->status_fd, err, err ? m->msg : NULL);
}

static void *ready_main(void *arg)
{
	struct lmount *m = arg;
	int r = become_ready(m);

	if (r == 0) {
		struct index_stats st;
		index_get_stats(m->idx, &st);
		log_info("mounted", "source=\"%s\" mountpoint=\"%s\" socket=%s private=%d "
			 "files=%llu dirs=%llu bytes=%llu", m->cfg->source, where(m), m->socket,
			 m->privd != NULL, (unsigned long long)st.files,
			 (unsigned long long)st.dirs, (unsigned long long)st.total_bytes);
	}
	m->ready_err = r;
	report(m, r);
	if (r < 0)
		end_loop(m);
	return NULL;
}

/* ---- life ---- */

static void log_end(struct lmount *m)
{
	struct lithfs_stats fs = { 0 };
	struct cachelink_stats ls = { 0 };

	if (m->fs)
		lithfs_get_stats(m->fs, &fs);
	if (m->link)
		cachelink_get_stats(m->link, &ls);
	log_info("unmounted", "mountpoint=\"%s\" opens=%llu reads=%llu read_bytes=%llu "
		 "read_errors=%llu stalls=%llu prefetches=%llu reconnects=%llu", where(m),
		 (unsigned long long)fs.opens, (unsigned long long)fs.reads,
		 (unsigned long long)fs.read_bytes, (unsigned long long)fs.read_errors,
		 (unsigned long long)fs.stalls, (unsigned long long)fs.prefetches,
		 (unsigned long long)ls.reconnects);
}

/* The session goes first: unmounting and closing the connection fails
 * any request the readiness thread still waits on. */
static void teardown(struct lmount *m)
{
	pthread_mutex_lock(&m->stop_lock);
	m->stopping = true;
	pthread_mutex_unlock(&m->stop_lock);
	if (m->sess && m->cfg->fuse_fd >= 0)
		session_resend(m->sess); /* for a successor: what the loop read and dropped */
	session_free(m->sess);
	if (m->ready_started)
		pthread_join(m->ready, NULL);
	if (!m->reported) {
		snprintf(m->msg, sizeof(m->msg), "the mount ended during start-up");
		report(m, -ENOTCONN);
	}
	if (m->sess)
		log_end(m);
	cachelink_free(m->link);
	lithfs_free(m->fs);
	index_close(m->idx);
	privd_stop(m->privd);
	if (m->registered)
		mountreg_remove(m->cfg->mountpoint);
}

static int start(struct lmount *m)
{
	int r = connect_daemon(m);

	if (r == 0)
		r = open_fs(m);
	if (r == 0)
		r = mount_fs(m);
	if (r == 0) {
		r = -pthread_create(&m->ready, NULL, ready_main, m);
		m->ready_started = r == 0;
	}
	return r;
}

static void log_target(struct lmount *m)
{
	const struct lmount_config *c = m->cfg;

	if (c->log_file)
		snprintf(m->log_path, sizeof(m->log_path), "%s", c->log_file);
	else if (c->mountpoint && mountreg_path(c->mountpoint, "log", m->log_path,
						 sizeof(m->log_path)) < 0)
		m->log_path[0] = '\0';
}

int lmount_run(const struct lmount_config *cfg)
{
	struct lmount m = { .cfg = cfg, .main_thread = pthread_self(),
			    .stop_lock = PTHREAD_MUTEX_INITIALIZER };
	int r = detach_begin(&m.det, cfg->foreground);

	if (r == DETACH_PARENT)
		return m.det.exit_code;
	if (r < 0) {
		fprintf(stderr, "lith mount: cannot go to the background: %s\n", strerror(-r));
		return 1;
	}
	log_target(&m);
	r = start(&m);
	if (r < 0)
		report(&m, r);
	else if ((r = session_run(m.sess)) == -EINTR)
		r = 0; /* SIGTERM/SIGINT/SIGHUP: a clean end */
	teardown(&m);
	r = r < 0 || m.ready_err < 0 ? 1 : 0;
	if (r == 0 && !cfg->foreground && !cfg->log_file && m.log_path[0])
		unlink(m.log_path); /* a clean end: keep only the logs of failures */
	return r;
}
