// SPDX-License-Identifier: Apache-2.0
/*
 * Mounter supervision and re-adoption.
 *
 * At start (csi_supervise_adopt, before the server listens): every record
 * in the state dir whose target is still mounted and whose mounter is
 * alive (pid + start time) is re-adopted: pidfd_open, and the FUSE fd is
 * taken back with pidfd_getfd so that lith csi again holds the connection;
 * the mounter's credentials are read back from its environment (memory
 * only). Anything else is stale: lazy unmount, mounter stopped, record
 * removed. Mounters run in their own session, so the signal that stopped
 * the previous lith csi never reached them and pods saw nothing.
 *
 * Then one thread polls every mounter's pidfd. A mounter that dies is
 * restarted on the fd we kept with `--takeover --init-file` (the kernel
 * re-queues the requests the dead one had read), with exponential
 * backoff, at most RESTARTS_MAX times in a row (the count resets once a
 * mounter stayed up STABLE_MS). While it is down, or once we give up, the
 * volume condition is abnormal with a message. Giving up closes our fd:
 * the connection is aborted, so readers get ENOTCONN instead of hanging.
 *
 * Locking: the thread collects (gen, volume id, target) under the plugin
 * lock, polls without locks, and acts on a pub only under its volume lock
 * after finding it again by target and gen.
 */
#include <errno.h>
#include <poll.h>
#include <sys/pidfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "csi/fusemount.h"
#include "csi/plugin.h"
#include "csi/state.h"
#include "fetch/base/log.h"

#define RESTARTS_MAX 5u
#define STABLE_MS 60000.0
#define BACKOFF_FIRST_MS 250.0
#define BACKOFF_MAX_MS 8000.0
#define RESTART_READY_MS 60000u
#define STALE_STOP_MS 5000u

double csi_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void csi_supervise_wake(struct csi_plugin *p)
{
	uint64_t one = 1;

	if (p->wake_fd >= 0 && write(p->wake_fd, &one, sizeof(one)) < 0)
		return; /* counter saturated: a wake-up is pending anyway */
}

/* ---- adoption at start ---- */

static void stop_stale(const struct state_rec *r)
{
	struct mounter_proc mp = { .pid = r->pid, .start = r->start, .pidfd = -1, .status_fd = -1 };
	int fd = mounter_adopt(&mp, r->fuse_fd);

	if (fd >= 0) {
		close(fd);
		mounter_stop(&mp, STALE_STOP_MS);
	}
}

static void forget(struct csi_plugin *p, const struct state_rec *r, const char *why)
{
	log_warn("dropping stale volume state", "volume_id=\"%s\" target=\"%s\" reason=\"%s\"",
		 r->v.volume_id, r->v.target, why);
	stop_stale(r);
	fusemount_unmount(r->v.target);
	if (r->created)
		rmdir(r->v.target);
	state_remove(p->cfg.state_dir, r->v.target);
}

static struct pub *pub_of(struct state_rec *r, int fd)
{
	struct pub *pub = calloc(1, sizeof(*pub));

	if (!pub)
		return NULL;
	pub->v = r->v;
	pub->fd = fd;
	pub->stats_fd = -1;
	pub->created = r->created;
	pub->secrets_known = !r->has_secrets || mounter_read_secrets(r->pid, &pub->v) > 0;
	pub->up_since = csi_now_ms();
	return pub;
}

/* The running mounter's metrics region, so its counters carry on; a fresh
 * one when it has none (its successor gets that). */
static void adopt_stats(struct pub *pub)
{
	int fd = pidfd_getfd(pub->proc.pidfd, MOUNTER_STATS_FD, 0);

	if (fd >= 0 && mstats_map(fd, &pub->mstats) == 0) {
		pub->stats_fd = fd;
		return;
	}
	if (fd >= 0)
		close(fd);
	if (mstats_create(&pub->stats_fd, &pub->mstats) < 0)
		pub->stats_fd = -1;
}

static void adopt_one(void *ctx, struct state_rec *r)
{
	struct mounter_proc mp = { .pid = r->pid, .start = r->start, .pidfd = -1, .status_fd = -1 };
	struct csi_plugin *p = ctx;
	struct pub *pub;
	int fd;

	if (fusemount_is_mounted(r->v.target) != 1) {
		forget(p, r, "the target is no longer mounted");
		return;
	}
	if ((fd = mounter_adopt(&mp, r->fuse_fd)) < 0) {
		forget(p, r, "its mounter is gone (the connection died with it)");
		return;
	}
	if (!(pub = pub_of(r, fd))) {
		close(fd);
		close(mp.pidfd);
		return; /* out of memory: leave it running, retry at the next start */
	}
	pub->proc = mp;
	adopt_stats(pub);
	csi_pub_add(p, pub);
	log_info("re-adopted mounter", "volume_id=\"%s\" target=\"%s\" pid=%d credentials=%s",
		 r->v.volume_id, r->v.target, (int)r->pid, pub->secrets_known ? "known" : "lost");
}

void csi_supervise_adopt(struct csi_plugin *p)
{
	int r = state_load(p->cfg.state_dir, adopt_one, p);

	if (r < 0)
		log_error("cannot read the state dir", "state_dir=\"%s\" err=\"%s\"",
			  p->cfg.state_dir, strerror(-r));
}

/* ---- restarting ---- */

static void give_up(struct pub *pub, const char *why)
{
	snprintf(pub->condition, sizeof(pub->condition), "the mounter is down and will not be "
		 "restarted: %s; republish the volume (restart the pod)", why);
	log_error("mounter given up", "volume_id=\"%s\" target=\"%s\" reason=\"%s\"",
		  pub->v.volume_id, pub->v.target, why);
	pub->unhealthy = true;
	pub->retry_at = 0;
	if (pub->fd >= 0)
		close(pub->fd); /* aborts the connection: ENOTCONN rather than hung readers */
	pub->fd = -1;
}

static void schedule(struct pub *pub, const char *how)
{
	double delay = BACKOFF_FIRST_MS;
	char why[400];

	pub->unhealthy = true;
	if (pub->fd < 0)
		return;
	if (!mounter_features()->takeover)
		return give_up(pub, "this lith mount cannot take over a live connection (--takeover)");
	if (!pub->secrets_known)
		return give_up(pub, "its credentials were lost with a lith csi restart");
	if (pub->restarts >= RESTARTS_MAX) {
		snprintf(why, sizeof(why), "%u restarts in a row failed (last: the mounter %s)",
			 pub->restarts, how);
		return give_up(pub, why);
	}
	for (unsigned i = 0; i < pub->restarts && delay < BACKOFF_MAX_MS; i++)
		delay *= 2;
	pub->retry_at = csi_now_ms() + (pub->restarts ? delay : 1);
	snprintf(pub->condition, sizeof(pub->condition), "the mounter %s; restarting it "
		 "(attempt %u of %u)", how, pub->restarts + 1, RESTARTS_MAX);
}

static void on_exit_seen(struct pub *pub)
{
	char how[64];

	mounter_describe_exit(&pub->proc, how, sizeof(how));
	mounter_stop(&pub->proc, 0);
	if (csi_now_ms() - pub->up_since > STABLE_MS)
		pub->restarts = 0;
	log_warn("mounter exited", "volume_id=\"%s\" target=\"%s\" how=\"%s\" restarts=%u",
		 pub->v.volume_id, pub->v.target, how, pub->restarts);
	schedule(pub, how);
}

static void restart(struct csi_plugin *p, struct pub *pub)
{
	char logp[PATH_MAX], initp[PATH_MAX], msg[256] = "", how[300];
	struct mounter_args ma = { p->cfg.cache_socket, logp, initp, true, pub->stats_fd };
	int r;

	csi_pub_log_path(p, pub->v.target, logp, sizeof(logp));
	csi_pub_init_path(p, pub->v.target, initp, sizeof(initp));
	pub->retry_at = 0;
	pub->restarts++;
	pub->restarts_total++;
	pub->proc.status_fd = -1;
	r = mounter_spawn(&pub->v, pub->fd, &ma, &pub->proc);
	if (r == 0)
		r = mounter_wait_ready(&pub->proc, pub->v.target, logp, RESTART_READY_MS, msg,
				       sizeof(msg));
	if (r < 0) {
		snprintf(how, sizeof(how), "could not be restarted (%s)", msg[0] ? msg : strerror(-r));
		log_warn("mounter restart failed", "volume_id=\"%s\" target=\"%s\" err=\"%s\"",
			 pub->v.volume_id, pub->v.target, how);
		return schedule(pub, how);
	}
	pub->unhealthy = false;
	pub->condition[0] = '\0';
	pub->up_since = csi_now_ms();
	if ((r = csi_pub_save(p, pub)) < 0)
		log_error("cannot write volume state", "volume_id=\"%s\" err=\"%s\"",
			  pub->v.volume_id, strerror(-r));
	log_info("mounter restarted", "volume_id=\"%s\" target=\"%s\" pid=%d attempt=%u",
		 pub->v.volume_id, pub->v.target, (int)pub->proc.pid, pub->restarts);
}

/* ---- the thread ---- */

struct watch {
	unsigned long long gen;
	char vol[VOLCTX_ID_MAX + 1];
	char target[PATH_MAX];
};

/* Under the volume lock: the pub this watch was for, if it still exists. */
static void handle(struct csi_plugin *p, const struct watch *w)
{
	struct vlock *l = csi_volume_lock(p, w->vol);
	struct pub *pub = l ? csi_pub_find(p, w->target) : NULL;

	if (pub && pub->gen == w->gen && !p->stop) {
		if (pub->proc.pidfd >= 0 && mounter_exited(&pub->proc))
			on_exit_seen(pub);
		if (pub->proc.pidfd < 0 && pub->retry_at > 0 && csi_now_ms() >= pub->retry_at)
			restart(p, pub);
	}
	if (l)
		csi_volume_unlock(p, l);
}

static size_t count_pubs(struct csi_plugin *p)
{
	size_t n = 0;

	for (struct pub *pub = p->pubs; pub; pub = pub->next)
		n++;
	return n;
}

/* Under the plugin lock: what to watch; *timeout until the next retry. */
static size_t collect(struct csi_plugin *p, struct pollfd *pf, struct watch *w, size_t max,
		      int *timeout)
{
	double now = csi_now_ms();
	size_t n = 0;

	for (struct pub *pub = p->pubs; pub && n < max; pub = pub->next) {
		if (pub->proc.pidfd < 0 && pub->retry_at <= 0)
			continue;
		w[n].gen = pub->gen;
		snprintf(w[n].vol, sizeof(w[n].vol), "%s", pub->v.volume_id);
		snprintf(w[n].target, sizeof(w[n].target), "%s", pub->v.target);
		pf[n + 1] = (struct pollfd){ .fd = pub->proc.pidfd, .events = POLLIN };
		if (pub->proc.pidfd < 0) {
			int left = pub->retry_at > now ? (int)(pub->retry_at - now) + 1 : 0;
			*timeout = *timeout < 0 || left < *timeout ? left : *timeout;
		}
		n++;
	}
	return n;
}

/* One round: wait for a death, a due retry or a wake-up; act. */
static void round_once(struct csi_plugin *p)
{
	struct pollfd *pf;
	struct watch *w;
	size_t max, n;
	int timeout = -1;
	uint64_t v;

	pthread_mutex_lock(&p->lock);
	max = count_pubs(p);
	pf = calloc(max + 1, sizeof(*pf));
	w = calloc(max + 1, sizeof(*w));
	n = pf && w ? collect(p, pf, w, max, &timeout) : 0;
	pthread_mutex_unlock(&p->lock);
	if (!pf || !w) {
		free(pf);
		free(w);
		usleep(100000);
		return;
	}
	pf[0] = (struct pollfd){ .fd = p->wake_fd, .events = POLLIN };
	if (poll(pf, n + 1, timeout) >= 0) {
		if (pf[0].revents && read(p->wake_fd, &v, sizeof(v)) < 0)
			v = 0;
		for (size_t i = 0; i < n && !p->stop; i++)
			if (pf[i + 1].revents || pf[i + 1].fd < 0)
				handle(p, &w[i]);
	}
	free(pf);
	free(w);
}

static void *supervise_main(void *arg)
{
	struct csi_plugin *p = arg;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
		round_once(p);
	return NULL;
}

int csi_supervise_start(struct csi_plugin *p)
{
	int r = -pthread_create(&p->supervisor, NULL, supervise_main, p);

	p->supervising = r == 0;
	return r;
}

void csi_supervise_stop(struct csi_plugin *p)
{
	if (!p->supervising)
		return;
	__atomic_store_n(&p->stop, true, __ATOMIC_RELEASE);
	csi_supervise_wake(p);
	pthread_join(p->supervisor, NULL);
	p->supervising = false;
}
