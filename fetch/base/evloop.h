/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small epoll event loop for the daemons: fd watches with callbacks,
 * monotonic timers (one-shot and periodic) in a bounded min-heap, a bounded
 * cross-thread queue of posted callbacks woken through an eventfd, and
 * signal delivery through a signalfd.
 *
 * Invariants:
 *  - A watch or timer may be removed at any time on the loop thread,
 *    including from inside any callback (its own or another one): a removed
 *    watch never gets another callback, even for events already returned by
 *    the same epoll_wait. Watch records are freed after the dispatch pass.
 *  - Timers fire in deadline order; at most the timers present when a pass
 *    starts fire in that pass, so a callback re-arming a zero delay cannot
 *    starve I/O. A periodic timer that falls behind skips missed ticks.
 *  - Queues are bounded: max_timers timers, max_posts pending posts.
 *  - All fds the loop creates are O_CLOEXEC; the loop never closes fds it
 *    was given.
 *
 * Threads: everything runs on the thread that calls evloop_run, except
 * evloop_post and evloop_stop, which any thread may call. Not reentrant:
 * callbacks must not call evloop_run/evloop_run_once/evloop_free.
 */
#ifndef LITH_BASE_EVLOOP_H
#define LITH_BASE_EVLOOP_H

#include <signal.h>
#include <stdint.h>

struct evloop;

/* Interest and reported events. HUP/ERR are always reported. */
#define EVLOOP_READ 0x1u
#define EVLOOP_WRITE 0x2u
#define EVLOOP_HUP 0x4u
#define EVLOOP_ERR 0x8u

#define EVLOOP_MAX_TIMERS_DEFAULT 1024u
#define EVLOOP_MAX_POSTS_DEFAULT 4096u

typedef void (*evloop_io_fn)(struct evloop *loop, int fd, uint32_t events, void *data);
typedef void (*evloop_timer_fn)(struct evloop *loop, uint64_t timer_id, void *data);
typedef void (*evloop_post_fn)(struct evloop *loop, void *arg);
typedef void (*evloop_signal_fn)(struct evloop *loop, int signo, pid_t sender, void *data);

/* 0 for either bound takes the default. */
int evloop_new(unsigned max_timers, unsigned max_posts, struct evloop **ret);
/* Accepts NULL. Posted callbacks still queued are discarded, not run. */
void evloop_free(struct evloop *loop);

/* -EEXIST if fd is already watched. The loop does not own fd. */
int evloop_add(struct evloop *loop, int fd, uint32_t events, evloop_io_fn fn, void *data);
int evloop_mod(struct evloop *loop, int fd, uint32_t events);
/* -ENOENT if fd is not watched. Call before closing fd. */
int evloop_del(struct evloop *loop, int fd);

/*
 * Arms a timer firing after delay_ns, then every period_ns if non-zero.
 * -ENOSPC when max_timers are armed. Ids are never reused by the loop.
 * A one-shot timer is disarmed before its callback runs.
 */
int evloop_timer_add(struct evloop *loop, uint64_t delay_ns, uint64_t period_ns,
		     evloop_timer_fn fn, void *data, uint64_t *ret_id);
/* -ENOENT for an unknown, fired (one-shot) or cancelled id. */
int evloop_timer_cancel(struct evloop *loop, uint64_t timer_id);
unsigned evloop_timer_count(const struct evloop *loop);

/*
 * Any thread: queue fn(loop, arg) to run on the loop thread, in post order.
 * -EAGAIN when max_posts are pending (the caller keeps arg).
 */
int evloop_post(struct evloop *loop, evloop_post_fn fn, void *arg);

/*
 * Delivers `set` (NULL: SIGTERM, SIGINT, SIGHUP) to fn on the loop thread
 * via a signalfd. Blocks the signals in the calling thread: call it before
 * starting other threads so they inherit the mask. One handler per loop
 * (-EEXIST on a second call). The mask is left as is by evloop_free.
 */
int evloop_signals(struct evloop *loop, const sigset_t *set, evloop_signal_fn fn, void *data);

/* Any thread: makes evloop_run return after the current callback. */
void evloop_stop(struct evloop *loop);
/* Runs until evloop_stop. Returns 0, or -errno if epoll_wait fails. */
int evloop_run(struct evloop *loop);
/*
 * One wait (timeout_ms < 0: until the next timer or event) and dispatch.
 * Dispatch ends early while the stop flag is set; only evloop_run clears it.
 */
int evloop_run_once(struct evloop *loop, int timeout_ms);

#endif
