// SPDX-License-Identifier: Apache-2.0
/*
 * Parallel ranged reader (see transfer.h). A ring of `concurrency` slots,
 * each with its own part buffer; parts are issued in order and written out
 * in order, so output to a pipe works. The calling thread waits on a
 * condition variable; completions arrive on the engine thread.
 */
#include "tools/lith/transfer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fetch/base/clock.h"
#include "fetch/base/fdio.h"
#include "fetch/base/macro.h"

struct transfer;

struct slot {
	struct s3_request req;
	struct transfer *t;
	bool done;
};

struct transfer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct slot *slots;
	unsigned n;
};

static void part_done(struct s3_request *req)
{
	struct slot *s = req->ctx;

	pthread_mutex_lock(&s->t->lock);
	s->done = true;
	pthread_cond_broadcast(&s->t->cond);
	pthread_mutex_unlock(&s->t->lock);
}

static int issue(struct s3_engine *e, struct s3_bucket *b, const struct transfer_spec *sp,
		 struct slot *s, uint64_t off)
{
	s->req.op = S3_OP_GET;
	s->req.bucket = b;
	s->req.key = sp->key;
	s->req.offset = off;
	s->req.length = MIN(sp->part_size, sp->last - off + 1);
	s->req.if_match = sp->etag;
	s->req.done = part_done;
	s->req.ctx = s;
	s->done = false;
	return s3_submit(e, &s->req);
}

static void wait_slot(struct transfer *t, struct slot *s)
{
	pthread_mutex_lock(&t->lock);
	while (!s->done)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
}

static int consume(const struct transfer_spec *sp, struct slot *s, struct transfer_stats *st)
{
	const struct s3_result *res = &s->req.res;

	st->requests++;
	st->retries += res->retries;
	st->ttfb_sum_s += res->ttfb_s;
	if (res->err < 0) {
		fprintf(stderr, "lith: get s3://%s/%s bytes %llu-%llu: %s [%s]\n",
			s3_bucket_name(s->req.bucket), sp->key,
			(unsigned long long)s->req.offset,
			(unsigned long long)(s->req.offset + s->req.length - 1), res->errmsg,
			strerror(-res->err));
		return res->err;
	}
	st->bytes += res->bytes;
	if (sp->out_fd >= 0)
		return fdio_write_all(sp->out_fd, s->req.buf, res->bytes);
	return 0;
}

static int alloc_slots(struct transfer *t, const struct transfer_spec *sp)
{
	t->slots = calloc(t->n, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	for (unsigned i = 0; i < t->n; i++) {
		t->slots[i].t = t;
		t->slots[i].req.cap = sp->part_size;
		t->slots[i].req.buf = malloc(sp->part_size);
		if (!t->slots[i].req.buf)
			return -ENOMEM;
	}
	return 0;
}

static void free_slots(struct transfer *t)
{
	for (unsigned i = 0; t->slots && i < t->n; i++)
		free(t->slots[i].req.buf);
	free(t->slots);
}

int transfer_run(struct s3_engine *e, struct s3_bucket *b, const struct transfer_spec *sp,
		 struct transfer_stats *ret)
{
	struct transfer t = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL,
			      sp->concurrency ? sp->concurrency : 1 };
	struct transfer_stats st = { 0 };
	uint64_t next = sp->first, start = clock_mono_ns();
	unsigned head = 0, inflight = 0;
	int r = alloc_slots(&t, sp), first_err = 0;

	while (r == 0 && sp->part_size && next <= sp->last && inflight < t.n) {
		r = issue(e, b, sp, &t.slots[(head + inflight) % t.n], next);
		next += sp->part_size;
		inflight += r == 0;
	}
	first_err = r;
	while (inflight) {
		struct slot *s = &t.slots[head];
		wait_slot(&t, s);
		inflight--;
		head = (head + 1) % t.n;
		r = first_err ? 0 : consume(sp, s, &st);
		if (r < 0 && !first_err)
			first_err = r;
		if (!first_err && next <= sp->last) {
			r = issue(e, b, sp, s, next);
			next += sp->part_size;
			if (r < 0)
				first_err = r;
			else
				inflight++;
		}
	}
	st.seconds = (double)(clock_mono_ns() - start) / 1e9;
	free_slots(&t);
	*ret = st;
	return first_err;
}
