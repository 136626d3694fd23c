// SPDX-License-Identifier: Apache-2.0
/*
 * The S3 engine: one thread drives one curl multi handle. Other threads
 * submit requests into a bounded queue and wake the thread; the thread
 * starts at most max_connections transfers at a time (the multi handle keeps
 * the keep-alive connections), schedules retries with jittered backoff on a
 * delay list, and completes each request exactly once through its callback.
 * Invariants: `incoming` is touched only under `lock`; everything else only
 * on the engine thread.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "fetch/base/clock.h"
#include "fetch/s3/retry.h"
#include "fetch/s3/s3.h"
#include "fetch/s3/xfer.h"

struct xfer_list {
	struct s3_xfer *head, *tail;
	unsigned count;
};

struct s3_engine {
	struct s3_engine_config cfg;
	CURLM *multi;
	pthread_t thread;
	pthread_mutex_t lock;
	struct xfer_list incoming; /* under lock */
	bool stopping;             /* under lock */
	atomic_uint outstanding;   /* submitted, not yet completed */
	/* engine thread only */
	struct xfer_list ready;
	struct xfer_list delayed;  /* sorted by retry_at_ns */
	struct s3_xfer *active_head;
	unsigned active;
	uint64_t rng;
	struct retry_budget budget;
};

static void list_push(struct xfer_list *l, struct s3_xfer *x)
{
	x->next = NULL;
	if (l->tail)
		l->tail->next = x;
	else
		l->head = x;
	l->tail = x;
	l->count++;
}

static struct s3_xfer *list_pop(struct xfer_list *l)
{
	struct s3_xfer *x = l->head;

	if (!x)
		return NULL;
	l->head = x->next;
	if (!l->head)
		l->tail = NULL;
	l->count--;
	x->next = NULL;
	return x;
}

static void list_insert_sorted(struct xfer_list *l, struct s3_xfer *x)
{
	struct s3_xfer **pp = &l->head, *prev = NULL;

	while (*pp && (*pp)->retry_at_ns <= x->retry_at_ns) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	x->next = *pp;
	*pp = x;
	if (!x->next)
		l->tail = x;
	(void)prev;
	l->count++;
}

static double engine_random(struct s3_engine *e)
{
	e->rng ^= e->rng << 13;
	e->rng ^= e->rng >> 7;
	e->rng ^= e->rng << 17;
	return (double)(e->rng >> 11) / (double)(1ull << 53);
}

static void complete(struct s3_engine *e, struct s3_xfer *x)
{
	struct s3_request *req = x->req;

	xfer_release(x);
	strbuf_free(&x->body);
	free(x->url);
	req->res.retries = x->attempt ? x->attempt - 1 : 0;
	req->res.total_s = (double)(clock_mono_ns() - x->submit_ns) / 1e9;
	if (req->res.err == 0)
		retry_budget_success(&e->budget);
	req->xfer = NULL;
	free(x);
	atomic_fetch_sub(&e->outstanding, 1);
	if (e->cfg.report)
		e->cfg.report(e->cfg.report_ctx, req);
	req->done(req);
}

static void start(struct s3_engine *e, struct s3_xfer *x)
{
	int r;

	x->attempt++;
	r = xfer_prepare(x);
	if (r == 0 && curl_multi_add_handle(e->multi, x->easy) != CURLM_OK)
		r = -ENOMEM;
	if (r < 0) {
		x->req->res.err = r;
		snprintf(x->req->res.errmsg, sizeof(x->req->res.errmsg), "%s",
			 r == -ENOKEY ? "no credentials found: set AWS_ACCESS_KEY_ID and "
					"AWS_SECRET_ACCESS_KEY, use a profile, or sign no request"
				      : strerror(-r));
		complete(e, x);
		return;
	}
	x->act_prev = NULL;
	x->act_next = e->active_head;
	if (e->active_head)
		e->active_head->act_prev = x;
	e->active_head = x;
	e->active++;
}

static void detach_active(struct s3_engine *e, struct s3_xfer *x)
{
	curl_multi_remove_handle(e->multi, x->easy);
	if (x->act_prev)
		x->act_prev->act_next = x->act_next;
	else
		e->active_head = x->act_next;
	if (x->act_next)
		x->act_next->act_prev = x->act_prev;
	e->active--;
}

static void schedule_retry(struct s3_engine *e, struct s3_xfer *x, enum retry_class cls)
{
	uint32_t ms;

	if (x->attempt >= e->cfg.max_attempts || !retry_budget_take(&e->budget, cls)) {
		complete(e, x);
		return;
	}
	ms = retry_backoff_ms(x->attempt, e->cfg.backoff_base_ms, e->cfg.backoff_cap_ms,
			      engine_random(e));
	x->retry_at_ns = clock_mono_ns() + (uint64_t)ms * 1000000ull;
	list_insert_sorted(&e->delayed, x);
}

static void on_done(struct s3_engine *e, CURL *easy, CURLcode code)
{
	struct s3_xfer *x = NULL;
	enum retry_class cls;
	enum xfer_outcome out;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	detach_active(e, x);
	out = xfer_finish(x, code, &cls);
	if (e->cfg.attempt)
		e->cfg.attempt(e->cfg.report_ctx, (int)x->req->op, (unsigned)x->status);
	xfer_release(x);
	if (out == XFER_DONE)
		complete(e, x);
	else if (out == XFER_REDIRECT)
		list_push(&e->ready, x);
	else
		schedule_retry(e, x, cls);
}

static void drain_messages(struct s3_engine *e)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(e->multi, &left)))
		if (m->msg == CURLMSG_DONE)
			on_done(e, m->easy_handle, m->data.result);
}

static void cancel_all(struct s3_engine *e)
{
	struct s3_xfer *x;

	while ((x = e->active_head)) {
		detach_active(e, x);
		x->req->res.err = -ECANCELED;
		complete(e, x);
	}
	while ((x = list_pop(&e->ready)) || (x = list_pop(&e->delayed)) ||
	       (x = list_pop(&e->incoming))) {
		x->req->res.err = -ECANCELED;
		complete(e, x);
	}
}

/* Moves submissions to the ready list; returns true when stopping. */
static bool take_incoming(struct s3_engine *e)
{
	struct s3_xfer *x;
	bool stopping;

	pthread_mutex_lock(&e->lock);
	while ((x = list_pop(&e->incoming)))
		list_push(&e->ready, x);
	stopping = e->stopping;
	pthread_mutex_unlock(&e->lock);
	return stopping;
}

/* Moves due retries to the ready list; returns ms until the next one. */
static int release_delayed(struct s3_engine *e)
{
	uint64_t now = clock_mono_ns();
	struct s3_xfer *x;

	while (e->delayed.head && e->delayed.head->retry_at_ns <= now) {
		x = list_pop(&e->delayed);
		list_push(&e->ready, x);
	}
	if (!e->delayed.head)
		return 1000;
	uint64_t ms = (e->delayed.head->retry_at_ns - now) / 1000000ull + 1;
	return ms < 1000 ? (int)ms : 1000;
}

static void *engine_main(void *arg)
{
	struct s3_engine *e = arg;
	struct s3_xfer *x;
	int running, timeout;

	while (!take_incoming(e)) {
		timeout = release_delayed(e);
		while (e->active < e->cfg.max_connections && (x = list_pop(&e->ready)))
			start(e, x);
		curl_multi_perform(e->multi, &running);
		drain_messages(e);
		if (e->ready.head && e->active < e->cfg.max_connections)
			continue; /* a redirect or completion freed a slot */
		curl_multi_poll(e->multi, NULL, 0, timeout, NULL);
	}
	cancel_all(e);
	return NULL;
}

static void apply_defaults(struct s3_engine_config *c)
{
	if (!c->max_connections)
		c->max_connections = 64;
	if (!c->max_queued)
		c->max_queued = 4096;
	if (!c->max_attempts)
		c->max_attempts = 8;
	if (!c->backoff_base_ms)
		c->backoff_base_ms = 50;
	if (!c->backoff_cap_ms)
		c->backoff_cap_ms = 5000;
	if (!c->retry_budget)
		c->retry_budget = 500;
	if (!c->connect_timeout_ms)
		c->connect_timeout_ms = 5000;
	if (!c->stall_timeout_s)
		c->stall_timeout_s = 15;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

int s3_engine_new(const struct s3_engine_config *cfg, struct s3_engine **ret)
{
	struct s3_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	pthread_once(&curl_once, curl_init_once);
	e->cfg = cfg ? *cfg : (struct s3_engine_config){ 0 };
	apply_defaults(&e->cfg);
	retry_budget_init(&e->budget, e->cfg.retry_budget);
	if (getrandom(&e->rng, sizeof(e->rng), 0) != sizeof(e->rng) || !e->rng)
		e->rng = clock_mono_ns() | 1;
	e->multi = curl_multi_init();
	if (!e->multi) {
		free(e);
		return -ENOMEM;
	}
	curl_multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, (long)e->cfg.max_connections);
	curl_multi_setopt(e->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)e->cfg.max_connections);
	pthread_mutex_init(&e->lock, NULL);
	if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
		curl_multi_cleanup(e->multi);
		pthread_mutex_destroy(&e->lock);
		free(e);
		return -EAGAIN;
	}
	*ret = e;
	return 0;
}

void s3_engine_free(struct s3_engine *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	pthread_mutex_unlock(&e->lock);
	curl_multi_wakeup(e->multi);
	pthread_join(e->thread, NULL);
	curl_multi_cleanup(e->multi);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

static int validate(const struct s3_request *req)
{
	if (!req->bucket || !req->done || req->op >= S3_OP__COUNT)
		return -EINVAL;
	if (req->op == S3_OP_LIST)
		return 0;
	if (!req->key || !req->key[0] || strlen(req->key) > S3XML_MAX_KEY)
		return -EINVAL;
	if (req->op == S3_OP_GET && req->sink)
		return req->length && req->offset <= UINT64_MAX - req->length ? 0 : -EINVAL;
	if (req->op == S3_OP_GET && (!req->buf || !req->cap ||
				     (req->length && req->length > req->cap) ||
				     req->offset > UINT64_MAX - req->length))
		return -EINVAL;
	return 0;
}

int s3_submit(struct s3_engine *e, struct s3_request *req)
{
	struct s3_xfer *x;
	int r = validate(req);

	if (r < 0)
		return r;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->req = req;
	x->connect_timeout_ms = e->cfg.connect_timeout_ms;
	x->stall_timeout_s = e->cfg.stall_timeout_s;
	x->submit_ns = clock_mono_ns();
	strbuf_init(&x->body, req->op == S3_OP_LIST ? S3XML_MAX_DOC : XFER_ERRBODY_MAX);
	memset(&req->res, 0, sizeof(req->res));
	memset(&req->page, 0, sizeof(req->page));
	req->xfer = x;
	pthread_mutex_lock(&e->lock);
	if (e->stopping)
		r = -ECANCELED;
	else if (atomic_load(&e->outstanding) >= e->cfg.max_queued)
		r = -EAGAIN;
	else {
		atomic_fetch_add(&e->outstanding, 1);
		list_push(&e->incoming, x);
	}
	pthread_mutex_unlock(&e->lock);
	if (r < 0) {
		req->xfer = NULL;
		free(x);
		return r;
	}
	curl_multi_wakeup(e->multi);
	return 0;
}

const char *s3_op_name(enum s3_op op)
{
	static const char *const names[] = { "get", "head", "list" };
	return op < S3_OP__COUNT ? names[op] : "unknown";
}
