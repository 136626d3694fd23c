// SPDX-License-Identifier: Apache-2.0
/*
 * The reconnecting link to lith cached (see cachelink.h).
 * Invariants: `cur` is the live connection or NULL while the daemon is
 * away; the link holds one reference on cur, every reader one on the
 * connection it uses. Only the watcher installs a connection; anyone who
 * sees it broken may take it down (set cur NULL). A connection is freed by
 * whoever drops its last reference, outside the lock.
 */
#include "mounter/cachelink.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fetch/base/macro.h"
#include "mounter/cacheclient.h"
#include "mounter/remap.h"

#define PAUSE_MIN_MS 50u
#define PAUSE_MAX_MS 1000u
#define WATCH_MS 250u
#define AGAIN_PAUSE_MS 20u
#define REPORT_FIRST 5u
#define REPORT_EVERY 60u

struct lconn {
	struct cache_client *c;
	uint64_t view;
	struct remap *map;
	unsigned refs;
};

struct cachelink {
	char *socket, *name;
	struct view_spec spec;      /* strings owned */
	unsigned wait_ms;
	struct privd *privd;
	void (*event)(void *ctx, enum cachelink_event ev, int err, const char *msg);
	void *event_ctx;
	const struct index *mine;
	struct stat mine_st;
	int index_fd;
	uint32_t block_size;
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* cur changed, or stopping */
	struct lconn *cur;
	bool stopping, started;
	pthread_t watcher;
	struct cachelink_stats st;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits on the link's condition until the monotonic deadline (ms). */
static void wait_until(struct cachelink *l, int64_t deadline)
{
	struct timespec ts = { .tv_sec = deadline / 1000, .tv_nsec = (deadline % 1000) * 1000000 };

	pthread_cond_timedwait(&l->cond, &l->lock, &ts);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* ---- the view spec copy ---- */

static char *dup0(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

static int spec_copy(const struct view_spec *in, struct view_spec *out)
{
	bool oom = false;

	*out = *in;
	out->endpoint = dup0(in->endpoint, &oom);
	out->region = dup0(in->region, &oom);
	out->bucket = dup0(in->bucket, &oom);
	out->prefix = dup0(in->prefix, &oom);
	out->access_key = dup0(in->access_key, &oom);
	out->secret_key = dup0(in->secret_key, &oom);
	out->session_token = dup0(in->session_token, &oom);
	out->volume_id = dup0(in->volume_id, &oom);
	out->ca_file = dup0(in->ca_file, &oom);
	out->pod_namespace = dup0(in->pod_namespace, &oom);
	out->pod_name = dup0(in->pod_name, &oom);
	out->refresh_index = false; /* a reconnect never forces a rebuild */
	return oom ? -ENOMEM : 0;
}

static void wipe_free(const char *s)
{
	if (s)
		explicit_bzero((char *)s, strlen(s));
	free((char *)s);
}

static void spec_free(struct view_spec *s)
{
	free((char *)s->endpoint);
	free((char *)s->region);
	free((char *)s->bucket);
	free((char *)s->prefix);
	wipe_free(s->access_key);
	wipe_free(s->secret_key);
	wipe_free(s->session_token);
	free((char *)s->volume_id);
	free((char *)s->ca_file);
	free((char *)s->pod_namespace);
	free((char *)s->pod_name);
}

/* ---- connections ---- */

static void conn_free(struct lconn *c)
{
	if (!c)
		return;
	cache_client_free(c->c);
	remap_free(c->map);
	free(c);
}

/* Connects and registers; the registration's index fd goes to *ret_fd.
 * *connected (may be NULL) tells whether a daemon answered at all. */
static int conn_open(struct cachelink *l, struct lconn **ret, int *ret_fd, bool *connected,
		     char *msg, size_t msglen)
{
	struct cache_view_info vi;
	struct lconn *c = calloc(1, sizeof(*c));
	int r = c ? 0 : -ENOMEM;

	if (r == 0 && l->privd && (r = privd_restart(l->privd)) < 0)
		snprintf(msg, msglen, "the private cache daemon did not start");
	if (r == 0 && (r = cache_client_connect(l->socket, l->name, &c->c)) < 0)
		snprintf(msg, msglen, "cannot connect to %s", l->socket);
	if (connected)
		*connected = r == 0;
	if (r == 0)
		r = cache_client_register(c->c, &l->spec, &vi, msg, msglen);
	if (r < 0) {
		conn_free(c);
		return r;
	}
	c->view = vi.view;
	c->refs = 1;
	*ret_fd = vi.index_fd;
	*ret = c;
	return 0;
}

static void conn_put(struct cachelink *l, struct lconn *c)
{
	bool last;

	pthread_mutex_lock(&l->lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&l->lock);
	if (last)
		conn_free(c);
}

/* A reference on the live connection, waiting for one until deadline (ms,
 * monotonic; 0: do not wait). */
static int conn_get(struct cachelink *l, int64_t deadline, struct lconn **ret)
{
	struct lconn *c;

	pthread_mutex_lock(&l->lock);
	while (!l->cur && !l->stopping && deadline && now_ms() < deadline)
		wait_until(l, deadline);
	c = l->cur;
	if (c)
		c->refs++;
	pthread_mutex_unlock(&l->lock);
	if (!c)
		return -ENOTCONN;
	*ret = c;
	return 0;
}

/* c broke under a reader: take it down so the watcher replaces it. */
static void conn_lost(struct cachelink *l, struct lconn *c)
{
	pthread_mutex_lock(&l->lock);
	if (l->cur == c) {
		l->cur = NULL;
		c->refs--; /* the link's; the caller still holds one */
		pthread_cond_broadcast(&l->cond);
	}
	l->st.lost_reads++;
	pthread_mutex_unlock(&l->lock);
}

/* ---- the watcher ---- */

static void emit(struct cachelink *l, enum cachelink_event ev, int err, const char *msg)
{
	if (l->event)
		l->event(l->event_ctx, ev, err, msg);
}

static int reconnect(struct cachelink *l, struct lconn **ret, char *msg, size_t msglen)
{
	struct lconn *c;
	int fd, r = conn_open(l, &c, &fd, NULL, msg, msglen);

	if (r < 0)
		return r;
	r = remap_new(l->mine, &l->mine_st, fd, &c->map);
	close(fd);
	if (r < 0) {
		snprintf(msg, msglen, "cannot map the daemon's index");
		conn_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

/* Takes a broken cur down; returns the reference to drop (or NULL). */
static struct lconn *take_broken(struct cachelink *l)
{
	struct lconn *c = l->cur;

	if (!c || !cache_client_broken(c->c))
		return NULL;
	l->cur = NULL;
	return c;
}

/* One reconnect attempt, called and returning with the lock held.
 * *failed counts failed attempts since the link was lost; a few are
 * reported (the REPORT_FIRST-th, then one in REPORT_EVERY). */
static bool attempt(struct cachelink *l, unsigned *failed)
{
	struct lconn *c = NULL;
	char msg[256] = "";
	int r;

	pthread_mutex_unlock(&l->lock);
	if (*failed == 0)
		emit(l, CACHELINK_LOST, 0, NULL);
	r = reconnect(l, &c, msg, sizeof(msg));
	if (r < 0 && (++*failed == REPORT_FIRST || *failed % REPORT_EVERY == 0))
		emit(l, CACHELINK_RETRY_FAILED, r, msg);
	pthread_mutex_lock(&l->lock);
	if (r < 0 || l->stopping) {
		pthread_mutex_unlock(&l->lock);
		conn_free(c);
		pthread_mutex_lock(&l->lock);
		return false;
	}
	l->cur = c;
	l->st.reconnects++;
	l->st.stale_maps += c->map != NULL;
	pthread_cond_broadcast(&l->cond);
	return true;
}

static void *watch_main(void *arg)
{
	struct cachelink *l = arg;
	unsigned pause = PAUSE_MIN_MS, failures = 0;

	pthread_mutex_lock(&l->lock);
	while (!l->stopping) {
		struct lconn *dead = take_broken(l);

		if (dead) {
			pthread_mutex_unlock(&l->lock);
			conn_put(l, dead);
			pthread_mutex_lock(&l->lock);
			continue;
		}
		if (l->cur) {
			wait_until(l, now_ms() + WATCH_MS);
			continue;
		}
		if (attempt(l, &failures)) {
			pthread_mutex_unlock(&l->lock);
			emit(l, CACHELINK_BACK, 0, NULL);
			pthread_mutex_lock(&l->lock);
			pause = PAUSE_MIN_MS;
			failures = 0;
			continue;
		}
		if (!l->stopping)
			wait_until(l, now_ms() + pause);
		pause = MIN(pause * 2, PAUSE_MAX_MS);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* ---- public ---- */

static int link_init(struct cachelink *l, const struct cachelink_config *cfg)
{
	pthread_condattr_t ca;

	l->index_fd = -1;
	l->wait_ms = cfg->wait_ms;
	l->privd = cfg->privd;
	l->event = cfg->event;
	l->event_ctx = cfg->event_ctx;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	l->socket = strdup(cfg->socket);
	l->name = strdup(cfg->client_name ? cfg->client_name : "lith mount");
	if (!l->socket || !l->name)
		return -ENOMEM;
	return spec_copy(cfg->spec, &l->spec);
}

int cachelink_open(const struct cachelink_config *cfg, struct cachelink **ret,
		   bool *ret_connected, char *msg, size_t msglen)
{
	struct cachelink *l = calloc(1, sizeof(*l));
	int r;

	if (ret_connected)
		*ret_connected = false;
	if (!l)
		return -ENOMEM;
	r = link_init(l, cfg);
	if (r == 0)
		r = conn_open(l, &l->cur, &l->index_fd, ret_connected, msg, msglen);
	if (r < 0) {
		cachelink_free(l);
		return r;
	}
	l->block_size = cache_client_block_size(l->cur->c);
	*ret = l;
	return 0;
}

int cachelink_index_fd(const struct cachelink *l) { return l->index_fd; }
uint32_t cachelink_block_size(const struct cachelink *l) { return l->block_size; }

int cachelink_start(struct cachelink *l, const struct index *mine)
{
	int r;

	if (fstat(l->index_fd, &l->mine_st) < 0)
		return -errno;
	l->mine = mine;
	r = -pthread_create(&l->watcher, NULL, watch_main, l);
	l->started = r == 0;
	return r;
}

/* One read on c; *lost tells a broken connection from a daemon error. */
static ssize_t read_on(struct lconn *c, uint64_t ino, uint64_t off, size_t len,
		       enum fill_kind kind, bool exact, void *buf, bool *lost)
{
	char msg[256];
	uint64_t entry;
	ssize_t n;
	int r = remap_entry(c->map, ino, &entry);

	*lost = false;
	if (r < 0)
		return r;
	n = cache_client_read(c->c, c->view, entry, off, len, kind, exact, buf, msg, sizeof(msg));
	*lost = n < 0 && cache_client_broken(c->c);
	return n;
}

ssize_t cachelink_read(struct cachelink *l, uint64_t ino, uint64_t off, size_t len,
		       enum fill_kind kind, bool exact, void *buf)
{
	int64_t deadline = now_ms() + l->wait_ms;

	for (;;) {
		struct lconn *c;
		bool lost;
		ssize_t n;

		if (conn_get(l, deadline, &c) < 0)
			return -EIO; /* the daemon stayed away */
		n = read_on(c, ino, off, len, kind, exact, buf, &lost);
		if (lost)
			conn_lost(l, c);
		conn_put(l, c);
		if (n == -EAGAIN && now_ms() < deadline)
			sleep_ms(AGAIN_PAUSE_MS); /* daemon backpressure: try again */
		else if (!lost)
			return n == -EAGAIN ? -EIO : n;
	}
}

int cachelink_prefetch(struct cachelink *l, uint64_t ino, uint64_t off, uint64_t len,
		       enum fill_kind kind)
{
	struct lconn *c;
	uint64_t entry;
	int r = conn_get(l, 0, &c);

	if (r < 0)
		return r;
	r = remap_entry(c->map, ino, &entry);
	if (r == 0)
		r = cache_client_prefetch(c->c, c->view, entry, off, len, kind);
	if (r < 0 && cache_client_broken(c->c))
		conn_lost(l, c);
	conn_put(l, c);
	return r;
}

void cachelink_get_stats(struct cachelink *l, struct cachelink_stats *ret)
{
	pthread_mutex_lock(&l->lock);
	*ret = l->st;
	pthread_mutex_unlock(&l->lock);
}

void cachelink_free(struct cachelink *l)
{
	struct lconn *c;

	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	if (l->started)
		pthread_join(l->watcher, NULL);
	c = l->cur;
	l->cur = NULL;
	if (c && !cache_client_broken(c->c))
		cache_client_release(c->c, c->view);
	if (c)
		conn_put(l, c);
	if (l->index_fd >= 0)
		close(l->index_fd);
	spec_free(&l->spec);
	free(l->socket);
	free(l->name);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
