// SPDX-License-Identifier: Apache-2.0
/*
 * gRPC C core server (see server.h). One notification completion queue,
 * driven by csi_server_run; each accepted call gets its own pluck queue
 * and a detached thread that receives the request, runs the handler and
 * sends the reply.
 */
#include "csi/server.h"

#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "csi/callstats.h"
#include "fetch/base/log.h"

#define SHUTDOWN_TAG ((void *)1)
#define OP_TAG ((void *)2)

struct csi_server {
	grpc_server *server;
	grpc_completion_queue *cq;
	const struct csi_method *methods;
	size_t n;
	void *ctx;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned active;
	atomic_bool stopping;
};

struct pending {
	struct csi_server *s;
	grpc_call *call;
	grpc_completion_queue *cq;   /* pluck queue bound to this call */
	grpc_call_details details;
	grpc_metadata_array md;
};

static gpr_timespec forever(void) { return gpr_inf_future(GPR_CLOCK_REALTIME); }

static void pending_free(struct pending *p)
{
	if (!p)
		return;
	if (p->call)
		grpc_call_unref(p->call);
	grpc_call_details_destroy(&p->details);
	grpc_metadata_array_destroy(&p->md);
	if (p->cq) {
		grpc_completion_queue_shutdown(p->cq);
		while (grpc_completion_queue_pluck(p->cq, NULL, forever(), NULL).type !=
		       GRPC_QUEUE_SHUTDOWN)
			;
		grpc_completion_queue_destroy(p->cq);
	}
	free(p);
}

static bool batch(struct pending *p, const grpc_op *ops, size_t n)
{
	if (grpc_call_start_batch(p->call, ops, n, OP_TAG, NULL) != GRPC_CALL_OK)
		return false;
	return grpc_completion_queue_pluck(p->cq, OP_TAG, forever(), NULL).success != 0;
}

/* The request payload, copied out (NULL with *len 0 for an empty one). */
static int recv_request(struct pending *p, uint8_t **buf, size_t *len)
{
	grpc_byte_buffer *bb = NULL;
	grpc_op op = { .op = GRPC_OP_RECV_MESSAGE };
	grpc_byte_buffer_reader rd;
	grpc_slice sl;

	op.data.recv_message.recv_message = &bb;
	*buf = NULL;
	*len = 0;
	if (!batch(p, &op, 1))
		return -ECONNRESET;
	if (!bb)
		return 0;
	if (!grpc_byte_buffer_reader_init(&rd, bb)) {
		grpc_byte_buffer_destroy(bb);
		return -EBADMSG;
	}
	sl = grpc_byte_buffer_reader_readall(&rd);
	grpc_byte_buffer_reader_destroy(&rd);
	grpc_byte_buffer_destroy(bb);
	*len = GRPC_SLICE_LENGTH(sl);
	*buf = malloc(*len ? *len : 1);
	if (*buf)
		memcpy(*buf, GRPC_SLICE_START_PTR(sl), *len);
	grpc_slice_unref(sl);
	return *buf ? 0 : -ENOMEM;
}

static void send_reply(struct pending *p, const struct csi_reply *r)
{
	grpc_slice payload = grpc_slice_from_copied_buffer((const char *)r->buf, r->len);
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&payload, 1);
	grpc_slice details = grpc_slice_from_copied_string(r->msg);
	int cancelled = 0;
	grpc_op ops[4] = { { .op = GRPC_OP_SEND_INITIAL_METADATA } };
	size_t n = 1;

	if (r->code == 0) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = bb;
	}
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = (grpc_status_code)r->code;
	ops[n++].data.send_status_from_server.status_details = &details;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &cancelled;
	batch(p, ops, n);
	grpc_byte_buffer_destroy(bb);
	grpc_slice_unref(payload);
	grpc_slice_unref(details);
}

static const struct csi_method *lookup(const struct csi_server *s, grpc_slice path)
{
	size_t len = GRPC_SLICE_LENGTH(path);

	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->methods[i].path) == len &&
		    !memcmp(s->methods[i].path, GRPC_SLICE_START_PTR(path), len))
			return &s->methods[i];
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void dispatch(struct pending *p, const uint8_t *in, size_t len, struct csi_reply *r,
		     char *vol)
{
	const struct csi_method *m = lookup(p->s, p->details.method);

	if (!m)
		csi_reply_fail(r, -ENOSYS, "method not implemented by lith.csi");
	else
		m->fn(p->s->ctx, in, len, r, vol);
}

static void log_call(struct pending *p, const char *vol, double ms, const struct csi_reply *r)
{
	grpc_slice m = p->details.method;
	int mlen = (int)GRPC_SLICE_LENGTH(m);
	const char *ms_ = (const char *)GRPC_SLICE_START_PTR(m);

	csi_callstats_add(ms_, (size_t)mlen, r->code, ms / 1000.0);
	if (r->code == 0)
		log_info("call", "method=%.*s volume_id=\"%s\" ms=%.1f code=OK", mlen, ms_, vol, ms);
	else
		log_warn("call", "method=%.*s volume_id=\"%s\" ms=%.1f code=%s error=\"%s\"", mlen,
			 ms_, vol, ms, csi_status_name(r->code), r->msg);
}

static void call_done(struct csi_server *s)
{
	pthread_mutex_lock(&s->lock);
	if (--s->active == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

static void *call_main(void *arg)
{
	struct pending *p = arg;
	struct csi_server *s = p->s;
	struct csi_reply *r = calloc(1, sizeof(*r));
	char vol[CSI_VOLUME_LOG_MAX] = "";
	double t0 = now_ms();
	uint8_t *in = NULL;
	size_t len = 0;
	int err = r ? recv_request(p, &in, &len) : -ENOMEM;

	if (r && err == 0)
		dispatch(p, in, len, r, vol);
	else if (r)
		csi_reply_fail(r, err, "cannot read the request: %s", strerror(-err));
	if (r) {
		send_reply(p, r);
		log_call(p, vol, now_ms() - t0, r);
		free(r->buf);
	}
	free(r);
	free(in);
	pending_free(p);
	call_done(s);
	return NULL;
}

static int request_next(struct csi_server *s)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->s = s;
	grpc_call_details_init(&p->details);
	grpc_metadata_array_init(&p->md);
	p->cq = grpc_completion_queue_create_for_pluck(NULL);
	if (grpc_server_request_call(s->server, &p->call, &p->details, &p->md, p->cq, s->cq, p) !=
	    GRPC_CALL_OK) {
		pending_free(p);
		return -EIO;
	}
	return 0;
}

static void start_call(struct csi_server *s, struct pending *p)
{
	pthread_attr_t a;
	pthread_t t;
	int r = -EUSERS;

	pthread_mutex_lock(&s->lock);
	if (s->active < CSI_SERVER_MAX_CALLS) {
		s->active++;
		r = 0;
	}
	pthread_mutex_unlock(&s->lock);
	if (r == 0) {
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		r = -pthread_create(&t, &a, call_main, p);
		pthread_attr_destroy(&a);
		if (r < 0)
			call_done(s);
	}
	if (r < 0) {
		struct csi_reply busy = { 0 };
		csi_reply_fail(&busy, -EUSERS, "too many calls in flight; retry");
		send_reply(p, &busy);
		pending_free(p);
	}
}

static int listen_on(struct csi_server *s, const char *endpoint)
{
	grpc_server_credentials *creds;
	int port;

	if (strncmp(endpoint, "unix://", 7) != 0)
		return -EINVAL;
	unlink(endpoint + 7 + (endpoint[7] == '/' ? 0 : 0));
	creds = grpc_insecure_server_credentials_create();
	port = grpc_server_add_http2_port(s->server, endpoint, creds);
	grpc_server_credentials_release(creds);
	return port > 0 ? 0 : -EADDRNOTAVAIL;
}

int csi_server_new(const char *endpoint, const struct csi_method *methods, size_t n,
		   void *ctx, struct csi_server **ret)
{
	struct csi_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	grpc_init();
	s->methods = methods;
	s->n = n;
	s->ctx = ctx;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	s->server = grpc_server_create(NULL, NULL);
	s->cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(s->server, s->cq, NULL);
	r = listen_on(s, endpoint);
	if (r < 0) {
		csi_server_free(s);
		return r;
	}
	grpc_server_start(s->server);
	*ret = s;
	return 0;
}

int csi_server_run(struct csi_server *s)
{
	bool shut = false;
	int r = request_next(s);

	while (r == 0 && !shut) {
		grpc_event ev = grpc_completion_queue_next(s->cq, forever(), NULL);

		if (ev.type != GRPC_OP_COMPLETE)
			break;
		if (ev.tag == SHUTDOWN_TAG) {
			shut = true;
		} else if (!ev.success || atomic_load(&s->stopping)) {
			pending_free(ev.tag);
		} else {
			start_call(s, ev.tag);
			r = request_next(s);
		}
	}
	pthread_mutex_lock(&s->lock);
	while (s->active)
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return r;
}

void csi_server_stop(struct csi_server *s)
{
	if (atomic_exchange(&s->stopping, true))
		return;
	grpc_server_shutdown_and_notify(s->server, s->cq, SHUTDOWN_TAG);
	grpc_server_cancel_all_calls(s->server);
}

void csi_server_free(struct csi_server *s)
{
	if (!s)
		return;
	if (s->server) {
		if (!atomic_load(&s->stopping)) {
			csi_server_stop(s);
			while (grpc_completion_queue_next(s->cq, forever(), NULL).tag != SHUTDOWN_TAG)
				;
		}
		grpc_server_destroy(s->server);
	}
	grpc_completion_queue_shutdown(s->cq);
	while (grpc_completion_queue_next(s->cq, forever(), NULL).type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(s->cq);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->idle);
	free(s);
	grpc_shutdown();
}
