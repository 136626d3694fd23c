// SPDX-License-Identifier: Apache-2.0
/*
 * epoll event loop (see evloop.h).
 *
 * Watches are heap records pointed to by epoll_data and indexed by fd. A
 * removed watch is marked dead and parked on a graveyard list until the
 * dispatch pass ends, so events already returned for it are skipped instead
 * of touching freed memory. Timers live in a fixed slot table ordered by a
 * binary min-heap of slot numbers; a timer id is (sequence << 20 | slot) so a
 * stale id never cancels a newer timer in the same slot. The eventfd and
 * the signalfd are ordinary internal watches.
 *
 * Threads: the loop thread owns everything except the post ring and the stop
 * flag, which are shared (mutex / atomic).
 */
#include "fetch/base/evloop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "fetch/base/clock.h"
#include "fetch/base/macro.h"

#define SLOT_BITS 20
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define EVENT_BATCH 64

struct watch {
	int fd;
	evloop_io_fn fn;
	void *data;
	bool dead;
	struct watch *next_dead;
};

struct timer {
	uint64_t id; /* 0: free slot */
	uint64_t deadline;
	uint64_t period;
	evloop_timer_fn fn;
	void *data;
	unsigned heap_idx;
};

struct post {
	evloop_post_fn fn;
	void *arg;
};

struct evloop {
	int epfd;
	int wakefd;
	int sigfd;
	struct watch **watches; /* indexed by fd */
	size_t nwatches;
	struct watch *graveyard;
	bool dispatching;

	struct timer *timers;
	unsigned *heap;    /* slot numbers, min-heap by deadline */
	unsigned *free;    /* stack of free slots */
	unsigned max_timers, nheap, nfree;
	uint64_t timer_seq;

	pthread_mutex_t post_lock;
	struct post *posts; /* ring */
	unsigned max_posts, post_head, post_count;

	atomic_bool stop;
	evloop_signal_fn sig_fn;
	void *sig_data;
};

/* ---- lifecycle ------------------------------------------------------------ */

static void wake_cb(struct evloop *l, int fd, uint32_t events, void *data);

static int loop_alloc(struct evloop *l, unsigned max_timers, unsigned max_posts)
{
	l->max_timers = max_timers;
	l->max_posts = max_posts;
	l->timers = calloc(max_timers, sizeof(*l->timers));
	l->heap = calloc(max_timers, sizeof(*l->heap));
	l->free = calloc(max_timers, sizeof(*l->free));
	l->posts = calloc(max_posts, sizeof(*l->posts));
	if (!l->timers || !l->heap || !l->free || !l->posts)
		return -ENOMEM;
	for (unsigned i = 0; i < max_timers; i++)
		l->free[i] = max_timers - 1 - i;
	l->nfree = max_timers;
	return 0;
}

int evloop_new(unsigned max_timers, unsigned max_posts, struct evloop **ret)
{
	struct evloop *l;
	int r;

	max_timers = max_timers ? max_timers : EVLOOP_MAX_TIMERS_DEFAULT;
	max_posts = max_posts ? max_posts : EVLOOP_MAX_POSTS_DEFAULT;
	if (max_timers > SLOT_MASK + 1)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->epfd = l->wakefd = l->sigfd = -1;
	pthread_mutex_init(&l->post_lock, NULL);
	r = loop_alloc(l, max_timers, max_posts);
	if (r == 0 && (l->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0 && (l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		r = -errno;
	if (r == 0)
		r = evloop_add(l, l->wakefd, EVLOOP_READ, wake_cb, NULL);
	if (r < 0) {
		evloop_free(l);
		return r;
	}
	*ret = l;
	return 0;
}

static void reap_graveyard(struct evloop *l)
{
	while (l->graveyard) {
		struct watch *w = l->graveyard;
		l->graveyard = w->next_dead;
		free(w);
	}
}

void evloop_free(struct evloop *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nwatches; i++)
		free(l->watches[i]);
	reap_graveyard(l);
	free(l->watches);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->wakefd >= 0)
		close(l->wakefd);
	if (l->sigfd >= 0)
		close(l->sigfd);
	free(l->timers);
	free(l->heap);
	free(l->free);
	free(l->posts);
	pthread_mutex_destroy(&l->post_lock);
	free(l);
}

/* ---- watches -------------------------------------------------------------- */

static uint32_t to_epoll(uint32_t events)
{
	return ((events & EVLOOP_READ) ? EPOLLIN | EPOLLRDHUP : 0) |
	       ((events & EVLOOP_WRITE) ? EPOLLOUT : 0);
}

static uint32_t from_epoll(uint32_t ev)
{
	return ((ev & EPOLLIN) ? EVLOOP_READ : 0) | ((ev & EPOLLOUT) ? EVLOOP_WRITE : 0) |
	       ((ev & (EPOLLHUP | EPOLLRDHUP)) ? EVLOOP_HUP : 0) |
	       ((ev & EPOLLERR) ? EVLOOP_ERR : 0);
}

static int watches_grow(struct evloop *l, int fd)
{
	size_t n = l->nwatches ? l->nwatches : 64;
	struct watch **p;

	while (n <= (size_t)fd)
		n *= 2;
	p = realloc(l->watches, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + l->nwatches, 0, (n - l->nwatches) * sizeof(*p));
	l->watches = p;
	l->nwatches = n;
	return 0;
}

static struct watch *watch_get(const struct evloop *l, int fd)
{
	if (fd < 0 || (size_t)fd >= l->nwatches)
		return NULL;
	return l->watches[fd];
}

int evloop_add(struct evloop *l, int fd, uint32_t events, evloop_io_fn fn, void *data)
{
	struct epoll_event ev = { .events = to_epoll(events) };
	struct watch *w;
	int r;

	if (fd < 0 || !fn)
		return -EINVAL;
	if (watch_get(l, fd))
		return -EEXIST;
	if ((size_t)fd >= l->nwatches && (r = watches_grow(l, fd)) < 0)
		return r;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct watch){ .fd = fd, .fn = fn, .data = data };
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		r = -errno;
		free(w);
		return r;
	}
	l->watches[fd] = w;
	return 0;
}

int evloop_mod(struct evloop *l, int fd, uint32_t events)
{
	struct watch *w = watch_get(l, fd);
	struct epoll_event ev = { .events = to_epoll(events) };

	if (!w)
		return -ENOENT;
	ev.data.ptr = w;
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

int evloop_del(struct evloop *l, int fd)
{
	struct watch *w = watch_get(l, fd);

	if (!w)
		return -ENOENT;
	/* EBADF/ENOENT: the fd was closed already; forget it anyway. */
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->watches[fd] = NULL;
	w->dead = true;
	w->next_dead = l->graveyard;
	l->graveyard = w;
	if (!l->dispatching)
		reap_graveyard(l);
	return 0;
}

/* ---- timers: min-heap of slots --------------------------------------------- */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static bool heap_less(const struct evloop *l, unsigned a, unsigned b)
{
	return l->timers[l->heap[a]].deadline < l->timers[l->heap[b]].deadline;
}

static void heap_swap(struct evloop *l, unsigned a, unsigned b)
{
	unsigned t = l->heap[a];

	l->heap[a] = l->heap[b];
	l->heap[b] = t;
	l->timers[l->heap[a]].heap_idx = a;
	l->timers[l->heap[b]].heap_idx = b;
}

static void heap_up(struct evloop *l, unsigned i)
{
	while (i > 0 && heap_less(l, i, (i - 1) / 2)) {
		heap_swap(l, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct evloop *l, unsigned i)
{
	for (;;) {
		unsigned m = i, c = 2 * i + 1;
		if (c < l->nheap && heap_less(l, c, m))
			m = c;
		if (c + 1 < l->nheap && heap_less(l, c + 1, m))
			m = c + 1;
		if (m == i)
			return;
		heap_swap(l, i, m);
		i = m;
	}
}

static void heap_remove(struct evloop *l, unsigned i)
{
	l->nheap--;
	if (i == l->nheap)
		return;
	heap_swap(l, i, l->nheap);
	heap_down(l, i);
	heap_up(l, i);
}

static void timer_release(struct evloop *l, unsigned slot)
{
	l->timers[slot].id = 0;
	l->free[l->nfree++] = slot;
}

int evloop_timer_add(struct evloop *l, uint64_t delay_ns, uint64_t period_ns,
		     evloop_timer_fn fn, void *data, uint64_t *ret_id)
{
	unsigned slot;
	struct timer *t;

	if (!fn)
		return -EINVAL;
	if (l->nfree == 0)
		return -ENOSPC;
	slot = l->free[--l->nfree];
	t = &l->timers[slot];
	*t = (struct timer){
		.id = (++l->timer_seq << SLOT_BITS) | slot,
		.deadline = sat_add(clock_mono_ns(), delay_ns),
		.period = period_ns,
		.fn = fn,
		.data = data,
		.heap_idx = l->nheap,
	};
	l->heap[l->nheap++] = slot;
	heap_up(l, t->heap_idx);
	if (ret_id)
		*ret_id = t->id;
	return 0;
}

int evloop_timer_cancel(struct evloop *l, uint64_t id)
{
	unsigned slot = (unsigned)(id & SLOT_MASK);

	if (id == 0 || slot >= l->max_timers || l->timers[slot].id != id)
		return -ENOENT;
	heap_remove(l, l->timers[slot].heap_idx);
	timer_release(l, slot);
	return 0;
}

unsigned evloop_timer_count(const struct evloop *l)
{
	return l->nheap;
}

static uint64_t next_deadline(uint64_t d, uint64_t period, uint64_t now)
{
	d = sat_add(d, period);
	if (d <= now) /* fell behind: skip the missed ticks */
		d = sat_add(d, period * ((now - d) / period + 1));
	return d;
}

/* Fires due timers; at most those armed when the pass started. */
static void timers_run(struct evloop *l)
{
	uint64_t now = clock_mono_ns();
	unsigned budget = l->nheap;

	while (budget-- > 0 && l->nheap > 0 && !atomic_load(&l->stop)) {
		unsigned slot = l->heap[0];
		struct timer *t = &l->timers[slot];
		struct timer fire = *t;

		if (t->deadline > now)
			return;
		if (t->period) {
			t->deadline = next_deadline(t->deadline, t->period, now);
			heap_down(l, 0);
		} else {
			heap_remove(l, 0);
			timer_release(l, slot);
		}
		fire.fn(l, fire.id, fire.data);
	}
}

/* Milliseconds until the first timer (rounded up), capped by cap_ms. */
static int timers_timeout(const struct evloop *l, int cap_ms)
{
	uint64_t now, d, ms;

	if (l->nheap == 0)
		return cap_ms;
	now = clock_mono_ns();
	d = l->timers[l->heap[0]].deadline;
	ms = d <= now ? 0 : (d - now + 999999) / 1000000;
	if (cap_ms >= 0 && ms > (uint64_t)cap_ms)
		return cap_ms;
	return (int)MIN(ms, (uint64_t)INT32_MAX);
}

/* ---- posts and wakeups --------------------------------------------------------- */

static void wake(struct evloop *l)
{
	uint64_t one = 1;
	ssize_t n = write(l->wakefd, &one, sizeof(one));
	(void)n; /* EAGAIN only if the counter is saturated: already awake */
}

int evloop_post(struct evloop *l, evloop_post_fn fn, void *arg)
{
	if (!fn)
		return -EINVAL;
	pthread_mutex_lock(&l->post_lock);
	if (l->post_count == l->max_posts) {
		pthread_mutex_unlock(&l->post_lock);
		return -EAGAIN;
	}
	l->posts[(l->post_head + l->post_count) % l->max_posts] = (struct post){ fn, arg };
	l->post_count++;
	pthread_mutex_unlock(&l->post_lock);
	wake(l);
	return 0;
}

static bool post_pop(struct evloop *l, struct post *ret, unsigned *ret_left)
{
	bool got = false;

	pthread_mutex_lock(&l->post_lock);
	if (l->post_count > 0) {
		*ret = l->posts[l->post_head];
		l->post_head = (l->post_head + 1) % l->max_posts;
		l->post_count--;
		got = true;
	}
	*ret_left = l->post_count;
	pthread_mutex_unlock(&l->post_lock);
	return got;
}

/* Runs the posts queued before the eventfd was read; later ones re-wake. */
static void wake_cb(struct evloop *l, int fd, uint32_t events, void *data)
{
	uint64_t v;
	unsigned budget, left = 0;
	struct post p;

	(void)events;
	(void)data;
	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&l->post_lock);
	budget = l->post_count;
	pthread_mutex_unlock(&l->post_lock);
	while (budget-- > 0 && !atomic_load(&l->stop) && post_pop(l, &p, &left))
		p.fn(l, p.arg);
	if (left > 0)
		wake(l);
}

void evloop_stop(struct evloop *l)
{
	atomic_store(&l->stop, true);
	wake(l);
}

/* ---- signals ---------------------------------------------------------------------- */

static void signal_cb(struct evloop *l, int fd, uint32_t events, void *data)
{
	struct signalfd_siginfo si;

	(void)events;
	(void)data;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		l->sig_fn(l, (int)si.ssi_signo, (pid_t)si.ssi_pid, l->sig_data);
}

int evloop_signals(struct evloop *l, const sigset_t *set, evloop_signal_fn fn, void *data)
{
	sigset_t dflt;
	int r, fd;

	if (!fn)
		return -EINVAL;
	if (l->sigfd >= 0)
		return -EEXIST;
	if (!set) {
		sigemptyset(&dflt);
		sigaddset(&dflt, SIGTERM);
		sigaddset(&dflt, SIGINT);
		sigaddset(&dflt, SIGHUP);
		set = &dflt;
	}
	r = pthread_sigmask(SIG_BLOCK, set, NULL);
	if (r != 0)
		return -r;
	fd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	r = evloop_add(l, fd, EVLOOP_READ, signal_cb, NULL);
	if (r < 0) {
		close(fd);
		return r;
	}
	l->sigfd = fd;
	l->sig_fn = fn;
	l->sig_data = data;
	return 0;
}

/* ---- running -------------------------------------------------------------------- */

static void dispatch(struct evloop *l, const struct epoll_event *ev, int n)
{
	l->dispatching = true;
	for (int i = 0; i < n && !atomic_load(&l->stop); i++) {
		struct watch *w = ev[i].data.ptr;
		if (!w->dead)
			w->fn(l, w->fd, from_epoll(ev[i].events), w->data);
	}
	l->dispatching = false;
	reap_graveyard(l);
}

int evloop_run_once(struct evloop *l, int timeout_ms)
{
	struct epoll_event ev[EVENT_BATCH];
	int n;

	n = epoll_wait(l->epfd, ev, EVENT_BATCH, timers_timeout(l, timeout_ms));
	if (n < 0 && errno != EINTR)
		return -errno;
	if (n > 0)
		dispatch(l, ev, n);
	timers_run(l);
	return 0;
}

int evloop_run(struct evloop *l)
{
	int r = 0;

	while (!atomic_load(&l->stop) && r == 0)
		r = evloop_run_once(l, -1);
	atomic_store(&l->stop, false);
	return r;
}
