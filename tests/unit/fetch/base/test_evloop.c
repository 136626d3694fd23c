// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for fetch/base/evloop: timer order, periodic timers cancelled
 * from their own callback, bounds, removal of watches from inside callbacks
 * (own and other fds, fd number reuse), write interest, HUP, posts from
 * several threads with a bounded queue, stop from another thread, signals.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "fetch/base/clock.h"
#include "fetch/base/evloop.h"

#define MS 1000000ull


/* Open descriptors, to catch leaks (the DIR's own fd counts both times). */
static void pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		abort();
}

/* ---- timers ------------------------------------------------------------------ */

static int order[8], norder;

static void record_timer(struct evloop *l, uint64_t id, void *data)
{
	(void)l;
	(void)id;
	if (norder < 8)
		order[norder++] = (int)(intptr_t)data;
}

static void run_until(struct evloop *l, int *counter, int want, uint64_t max_ns)
{
	uint64_t end = clock_mono_ns() + max_ns;
	while (*counter < want && clock_mono_ns() < end)
		evloop_run_once(l, 10);
}

static void test_timer_order(void)
{
	struct evloop *l = NULL;
	uint64_t id = 0, t0 = clock_mono_ns();

	CHECK_INT(evloop_new(0, 0, &l), 0);
	norder = 0;
	CHECK_INT(evloop_timer_add(l, 30 * MS, 0, record_timer, (void *)3, &id), 0);
	CHECK_INT(evloop_timer_add(l, 10 * MS, 0, record_timer, (void *)1, NULL), 0);
	CHECK_INT(evloop_timer_add(l, 20 * MS, 0, record_timer, (void *)2, NULL), 0);
	CHECK_INT(evloop_timer_add(l, 0, 0, record_timer, (void *)0, NULL), 0);
	CHECK_INT(evloop_timer_count(l), 4);
	run_until(l, &norder, 4, 2000 * MS);
	CHECK_INT(norder, 4);
	CHECK(order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3);
	CHECK(clock_mono_ns() - t0 >= 30 * MS);
	CHECK_INT(evloop_timer_count(l), 0);
	CHECK_INT(evloop_timer_cancel(l, id), -ENOENT); /* fired one-shot */
	CHECK_INT(evloop_timer_cancel(l, 0), -ENOENT);
	evloop_free(l);
}

static int ticks;

static void tick(struct evloop *l, uint64_t id, void *data)
{
	(void)data;
	if (++ticks == 5)
		CHECK_INT(evloop_timer_cancel(l, id), 0);
}

static void test_periodic_cancel_self(void)
{
	struct evloop *l = NULL;
	uint64_t id = 0;

	CHECK_INT(evloop_new(0, 0, &l), 0);
	ticks = 0;
	CHECK_INT(evloop_timer_add(l, 1 * MS, 2 * MS, tick, NULL, &id), 0);
	run_until(l, &ticks, 5, 2000 * MS);
	CHECK_INT(ticks, 5);
	uint64_t end = clock_mono_ns() + 20 * MS;
	while (clock_mono_ns() < end)
		evloop_run_once(l, 5);
	CHECK_INT(ticks, 5);
	CHECK_INT(evloop_timer_count(l), 0);
	CHECK_INT(evloop_timer_cancel(l, id), -ENOENT);
	evloop_free(l);
}

static void test_timer_bounds(void)
{
	struct evloop *l = NULL;
	uint64_t a = 0, b = 0, c = 0;

	CHECK_INT(evloop_new(2, 0, &l), 0);
	CHECK_INT(evloop_timer_add(l, 1000 * MS, 0, record_timer, NULL, &a), 0);
	CHECK_INT(evloop_timer_add(l, UINT64_MAX, UINT64_MAX, record_timer, NULL, &b), 0);
	CHECK_INT(evloop_timer_add(l, 1, 0, record_timer, NULL, &c), -ENOSPC);
	CHECK_INT(evloop_timer_cancel(l, a), 0);
	CHECK_INT(evloop_timer_add(l, 1000 * MS, 0, record_timer, NULL, &c), 0);
	CHECK(c != a); /* same slot, new id */
	CHECK_INT(evloop_timer_cancel(l, a), -ENOENT); /* stale id */
	CHECK_INT(evloop_timer_cancel(l, c), 0);
	CHECK_INT(evloop_timer_cancel(l, b), 0);
	CHECK_INT(evloop_timer_add(l, 1, 0, NULL, NULL, &c), -EINVAL);
	evloop_free(l);
}

/* ---- watches ------------------------------------------------------------------ */

struct pairwatch {
	int fd[2]; /* read ends of two socketpairs */
	int calls[2];
};

static void remove_other(struct evloop *l, int fd, uint32_t events, void *data)
{
	struct pairwatch *p = data;
	int me = fd == p->fd[0] ? 0 : 1;

	(void)events;
	p->calls[me]++;
	CHECK_INT(evloop_del(l, p->fd[!me]), 0);
	CHECK_INT(evloop_del(l, fd), 0); /* and itself */
}

static void test_remove_in_callback(void)
{
	struct evloop *l = NULL;
	struct pairwatch p = { 0 };
	int a[2], b[2];

	CHECK_INT(evloop_new(0, 0, &l), 0);
	pair(a);
	pair(b);
	p.fd[0] = a[1];
	p.fd[1] = b[1];
	CHECK_INT(evloop_add(l, a[1], EVLOOP_READ, remove_other, &p), 0);
	CHECK_INT(evloop_add(l, b[1], EVLOOP_READ, remove_other, &p), 0);
	CHECK_INT(evloop_add(l, b[1], EVLOOP_READ, remove_other, &p), -EEXIST);
	CHECK(write(a[0], "x", 1) == 1 && write(b[0], "y", 1) == 1);
	for (int i = 0; i < 3; i++)
		evloop_run_once(l, 20);
	CHECK_INT(p.calls[0] + p.calls[1], 1); /* both were ready; one ran */
	CHECK_INT(evloop_del(l, a[1]), -ENOENT);
	CHECK_INT(evloop_mod(l, a[1], EVLOOP_READ), -ENOENT);
	evloop_free(l);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

/* The first callback closes its own fd and the other one, then re-adds a
 * fresh socket that may reuse one of the numbers: the stale event must not
 * reach the new watch. */
struct reuse {
	int fds[2];
	int first_calls, new_calls;
	int newfd[2];
};

static void new_cb(struct evloop *l, int fd, uint32_t events, void *data)
{
	struct reuse *r = data;
	(void)l;
	(void)fd;
	(void)events;
	r->new_calls++;
}

static void reuse_cb(struct evloop *l, int fd, uint32_t events, void *data)
{
	struct reuse *r = data;
	(void)events;
	(void)fd;
	r->first_calls++;
	for (int i = 0; i < 2; i++) {
		evloop_del(l, r->fds[i]);
		close(r->fds[i]);
	}
	pair(r->newfd); /* likely reuses the numbers just closed */
	CHECK_INT(evloop_add(l, r->newfd[0], EVLOOP_READ, new_cb, r), 0);
	CHECK_INT(evloop_add(l, r->newfd[1], EVLOOP_READ, new_cb, r), 0);
}

static void test_fd_reuse_in_batch(void)
{
	struct evloop *l = NULL;
	struct reuse r = { 0 };
	int a[2], b[2];

	CHECK_INT(evloop_new(0, 0, &l), 0);
	pair(a);
	pair(b);
	r.fds[0] = a[1];
	r.fds[1] = b[1];
	CHECK_INT(evloop_add(l, a[1], EVLOOP_READ, reuse_cb, &r), 0);
	CHECK_INT(evloop_add(l, b[1], EVLOOP_READ, reuse_cb, &r), 0);
	CHECK(write(a[0], "x", 1) == 1 && write(b[0], "y", 1) == 1);
	evloop_run_once(l, 50);
	evloop_run_once(l, 10);
	CHECK_INT(r.first_calls, 1);
	CHECK_INT(r.new_calls, 0); /* nothing was written to the new pair */
	evloop_free(l);
	close(a[0]);
	close(b[0]);
	close(r.newfd[0]);
	close(r.newfd[1]);
}

static uint32_t last_events;
static int io_calls;

static void note_io(struct evloop *l, int fd, uint32_t events, void *data)
{
	(void)l;
	(void)fd;
	(void)data;
	last_events = events;
	io_calls++;
}

static void test_write_interest_and_hup(void)
{
	struct evloop *l = NULL;
	int s[2];

	CHECK_INT(evloop_new(0, 0, &l), 0);
	pair(s);
	io_calls = 0;
	CHECK_INT(evloop_add(l, s[1], EVLOOP_WRITE, note_io, NULL), 0);
	evloop_run_once(l, 50);
	CHECK_INT(io_calls, 1);
	CHECK(last_events & EVLOOP_WRITE);
	CHECK_INT(evloop_mod(l, s[1], EVLOOP_READ), 0);
	io_calls = 0;
	evloop_run_once(l, 20);
	CHECK_INT(io_calls, 0); /* writable but no longer interested */
	close(s[0]);
	evloop_run_once(l, 50);
	CHECK_INT(io_calls, 1);
	CHECK(last_events & EVLOOP_HUP);
	CHECK_INT(evloop_del(l, s[1]), 0);
	close(s[1]);
	CHECK_INT(evloop_add(l, -1, EVLOOP_READ, note_io, NULL), -EINVAL);
	evloop_free(l);
}

/* ---- posts, stop, signals ---------------------------------------------------- */

#define POSTERS 4
#define PER_POSTER 2000

static int posted_sum;

static void add_one(struct evloop *l, void *arg)
{
	posted_sum += (int)(intptr_t)arg;
	if (posted_sum == POSTERS * PER_POSTER)
		evloop_stop(l);
}

static void *poster(void *arg)
{
	struct evloop *l = arg;

	for (int i = 0; i < PER_POSTER; i++)
		while (evloop_post(l, add_one, (void *)1) == -EAGAIN)
			sched_yield();
	return NULL;
}

static void test_post_threads(void)
{
	struct evloop *l = NULL;
	pthread_t t[POSTERS];

	CHECK_INT(evloop_new(0, 16, &l), 0); /* small queue: posters hit -EAGAIN */
	posted_sum = 0;
	for (int i = 0; i < POSTERS; i++)
		pthread_create(&t[i], NULL, poster, l);
	CHECK_INT(evloop_run(l), 0);
	for (int i = 0; i < POSTERS; i++)
		pthread_join(t[i], NULL);
	CHECK_INT(posted_sum, POSTERS * PER_POSTER);
	evloop_free(l);
}

static void noop_post(struct evloop *l, void *arg)
{
	(void)l;
	(*(int *)arg)++;
}

static void test_post_bound(void)
{
	struct evloop *l = NULL;
	int ran = 0;

	CHECK_INT(evloop_new(0, 8, &l), 0);
	for (int i = 0; i < 8; i++)
		CHECK_INT(evloop_post(l, noop_post, &ran), 0);
	CHECK_INT(evloop_post(l, noop_post, &ran), -EAGAIN);
	CHECK_INT(evloop_post(l, NULL, &ran), -EINVAL);
	evloop_run_once(l, 0);
	CHECK_INT(ran, 8);
	CHECK_INT(evloop_post(l, noop_post, &ran), 0);
	evloop_free(l); /* pending post discarded, not run */
	CHECK_INT(ran, 8);
}

static void *stopper(void *arg)
{
	usleep(30000);
	evloop_stop(arg);
	return NULL;
}

static void test_stop_from_thread(void)
{
	struct evloop *l = NULL;
	pthread_t t;
	uint64_t t0 = clock_mono_ns();

	CHECK_INT(evloop_new(0, 0, &l), 0);
	pthread_create(&t, NULL, stopper, l);
	CHECK_INT(evloop_run(l), 0); /* blocks with no timers until stopped */
	pthread_join(t, NULL);
	CHECK(clock_mono_ns() - t0 >= 25 * MS);
	evloop_free(l);
}

static int got_signo;
static pid_t got_pid;

static void on_signal(struct evloop *l, int signo, pid_t sender, void *data)
{
	(void)data;
	got_signo = signo;
	got_pid = sender;
	evloop_stop(l);
}

static void test_signals(void)
{
	struct evloop *l = NULL;

	CHECK_INT(evloop_new(0, 0, &l), 0);
	CHECK_INT(evloop_signals(l, NULL, on_signal, NULL), 0);
	CHECK_INT(evloop_signals(l, NULL, on_signal, NULL), -EEXIST);
	kill(getpid(), SIGTERM); /* blocked: queued for the signalfd */
	CHECK_INT(evloop_run(l), 0);
	CHECK_INT(got_signo, SIGTERM);
	CHECK_INT(got_pid, getpid());
	kill(getpid(), SIGHUP);
	CHECK_INT(evloop_run(l), 0);
	CHECK_INT(got_signo, SIGHUP);
	evloop_free(l);
}

int main(void)
{
	int fds0 = check_count_fds();

	test_timer_order();
	test_periodic_cancel_self();
	test_timer_bounds();
	test_remove_in_callback();
	test_fd_reuse_in_batch();
	test_write_interest_and_hup();
	test_post_threads();
	test_post_bound();
	test_stop_from_thread();
	test_signals(); /* last: leaves SIGTERM/SIGINT/SIGHUP blocked */
	CHECK_INT(check_count_fds(), fds0); /* nothing leaked */
	return check_done();
}
