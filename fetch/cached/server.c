// SPDX-License-Identifier: Apache-2.0
/*
 * Protocol server (see server.h): connections and message dispatch.
 * Read handling is in readop.c. A connection is refcounted by the
 * asynchronous operations it started (registrations, reads); closing it
 * marks it dead, releases its views, and frees it when the last operation
 * finishes (their replies are then dropped).
 */
#include "fetch/cached/server.h"
#include "fetch/cached/server_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fetch/base/log.h"
#include "fetch/base/usock.h"

#define REQUEST_MAX (64u << 10)

/* ---- connections ---------------------------------------------------- */

void conn_ref(struct conn *c) { c->refs++; }

void conn_unref(struct conn *c)
{
	if (--c->refs > 0)
		return;
	usock_reader_reset(&c->rd);
	free(c);
}

static void conn_close(struct conn *c, const char *why)
{
	struct server *srv = c->srv;
	struct conn **pp;
	struct view *v, *next;

	if (c->dead)
		return;
	if (why) {
		srv->c.conns_dropped++;
		log_warn("dropping cache client", "pid=%d uid=%u reason=\"%s\"", (int)c->pid,
			 (unsigned)c->uid, why);
	}
	c->dead = true;
	evloop_del(srv->cfg.loop, c->fd);
	close(c->fd);
	c->fd = -1;
	for (pp = &srv->conns; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
	srv->nconns--;
	for (v = views_first(srv->cfg.views); v; v = next) {
		next = v->next;
		if (v->owner == c) {
			fill_sched_forget_stats(srv->cfg.fills, &v->stats);
			views_release(srv->cfg.views, v);
		}
	}
	conn_unref(c);
}

int conn_reply(struct conn *c, Lith__Cache__Reply *rep, const int *fds, size_t nfds)
{
	size_t len;
	uint8_t *buf;
	int r;

	if (c->dead)
		return -ECONNRESET;
	len = lith__cache__reply__get_packed_size(rep);
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	lith__cache__reply__pack(rep, buf);
	r = usock_send_frame(c->fd, buf, len, fds, nfds, 2000);
	free(buf);
	if (r < 0)
		conn_close(c, "cannot send a reply");
	return r;
}

int conn_reply_error(struct conn *c, uint64_t id, int err, const char *msg)
{
	Lith__Cache__Reply rep = LITH__CACHE__REPLY__INIT;

	rep.id = id;
	rep.error = err < 0 ? -err : err;
	rep.message = (char *)(msg && *msg ? msg : strerror(err < 0 ? -err : err));
	return conn_reply(c, &rep, NULL, 0);
}

/* ---- simple requests ------------------------------------------------ */

static void on_hello(struct conn *c, const Lith__Cache__Request *req)
{
	Lith__Cache__Reply rep = LITH__CACHE__REPLY__INIT;
	Lith__Cache__HelloReply h = LITH__CACHE__HELLO_REPLY__INIT;
	struct blockstore *st = c->srv->cfg.store;
	int fds[2] = { blockstore_data_fd(st), blockstore_gen_fd(st) };

	if (req->hello->version != LITH__CACHE__VERSION__PROTOCOL_VERSION) {
		conn_reply_error(c, req->id, EPROTONOSUPPORT, "protocol version mismatch");
		conn_close(c, "protocol version mismatch");
		return;
	}
	c->hello = true;
	h.version = LITH__CACHE__VERSION__PROTOCOL_VERSION;
	h.block_size = blockstore_block_size(st);
	h.slots = blockstore_nslots(st);
	rep.id = req->id;
	rep.body_case = LITH__CACHE__REPLY__BODY_HELLO;
	rep.hello = &h;
	conn_reply(c, &rep, fds, 2);
}

static void on_release(struct conn *c, const Lith__Cache__Request *req)
{
	struct view *v = views_find(c->srv->cfg.views, req->release_view->view);
	Lith__Cache__Reply rep = LITH__CACHE__REPLY__INIT;

	if (!v || v->owner != c) {
		conn_reply_error(c, req->id, EBADF, "no such view on this connection");
		return;
	}
	fill_sched_forget_stats(c->srv->cfg.fills, &v->stats);
	views_release(c->srv->cfg.views, v);
	rep.id = req->id;
	conn_reply(c, &rep, NULL, 0);
}

/* ---- registration --------------------------------------------------- */

struct regop {
	struct conn *c;
	uint64_t id;
};

static void reg_ready(void *ctx, int err, const char *msg, struct view *v)
{
	struct regop *op = ctx;
	struct conn *c = op->c;
	Lith__Cache__Reply rep = LITH__CACHE__REPLY__INIT;
	Lith__Cache__ViewReply vr = LITH__CACHE__VIEW_REPLY__INIT;
	struct index_stats st;
	int fd;

	if (err < 0) {
		conn_reply_error(c, op->id, err, msg);
	} else if (c->dead) {
		views_release(c->srv->cfg.views, v);
	} else {
		index_get_stats(view_index(v), &st);
		vr.view = v->id;
		vr.index_bytes = view_index_bytes(v);
		vr.keys = st.files;
		vr.total_bytes = st.total_bytes;
		rep.id = op->id;
		rep.body_case = LITH__CACHE__REPLY__BODY_VIEW;
		rep.view = &vr;
		fd = view_index_fd(v);
		conn_reply(c, &rep, &fd, 1);
	}
	conn_unref(c);
	free(op);
}

static const char *str_or_null(const char *s) { return s && *s ? s : NULL; }

static void on_register(struct conn *c, const Lith__Cache__Request *req)
{
	const Lith__Cache__ViewSpec *s = req->register_view->spec;
	struct regop *op;
	char msg[256] = "";
	int r;

	if (!s) {
		conn_reply_error(c, req->id, EINVAL, "RegisterView without a spec");
		return;
	}
	struct view_spec vs = {
		.endpoint = s->endpoint, .region = str_or_null(s->region), .bucket = s->bucket,
		.prefix = s->prefix, .path_style = s->path_style, .virtual_host = s->virtual_host,
		.anonymous = s->anonymous, .requester_pays = s->requester_pays,
		.refresh_index = s->refresh_index, .access_key = s->access_key,
		.secret_key = s->secret_key, .session_token = str_or_null(s->session_token),
		.volume_id = s->volume_id, .ca_file = str_or_null(s->ca_file),
		.pod_namespace = s->pod_namespace, .pod_name = s->pod_name,
	};
	op = calloc(1, sizeof(*op));
	if (!op) {
		conn_reply_error(c, req->id, ENOMEM, NULL);
		return;
	}
	*op = (struct regop){ .c = c, .id = req->id };
	conn_ref(c);
	r = views_register(c->srv->cfg.views, &vs, c, reg_ready, op, msg, sizeof(msg));
	if (r < 0) {
		conn_reply_error(c, req->id, r, msg);
		conn_unref(c);
		free(op);
	}
}

/* ---- dispatch ------------------------------------------------------- */

static void dispatch(struct conn *c, const Lith__Cache__Request *req)
{
	if (!c->hello && req->body_case != LITH__CACHE__REQUEST__BODY_HELLO) {
		conn_reply_error(c, req->id, EPROTO, "Hello first");
		conn_close(c, "request before Hello");
		return;
	}
	switch (req->body_case) {
	case LITH__CACHE__REQUEST__BODY_HELLO:
		on_hello(c, req);
		break;
	case LITH__CACHE__REQUEST__BODY_REGISTER_VIEW:
		on_register(c, req);
		break;
	case LITH__CACHE__REQUEST__BODY_READ:
		readop_start(c, req);
		break;
	case LITH__CACHE__REQUEST__BODY_RELEASE_VIEW:
		on_release(c, req);
		break;
	case LITH__CACHE__REQUEST__BODY_GET_STATS:
		stats_reply(c, req);
		break;
	default:
		conn_reply_error(c, req->id, EOPNOTSUPP, "unknown request");
		break;
	}
}

static void handle_frame(struct conn *c, struct usock_frame *f)
{
	Lith__Cache__Request *req;

	if (f->nfds) {
		conn_close(c, "client sent file descriptors");
		return;
	}
	req = lith__cache__request__unpack(NULL, f->len, f->data);
	if (!req) {
		conn_close(c, "malformed request");
		return;
	}
	conn_ref(c);
	dispatch(c, req);
	lith__cache__request__free_unpacked(req, NULL);
	conn_unref(c);
}

static void on_conn_io(struct evloop *loop, int fd, uint32_t events, void *data)
{
	struct conn *c = data;
	struct usock_frame f;
	int r = 0;

	(void)loop;
	(void)fd;
	(void)events;
	conn_ref(c);
	while (!c->dead && (r = usock_reader_feed(&c->rd, c->fd)) == USOCK_FRAME) {
		if (usock_reader_next(&c->rd, &f) < 0)
			break;
		handle_frame(c, &f);
		usock_frame_release(&f);
	}
	if (!c->dead && r == USOCK_EOF)
		conn_close(c, NULL);
	else if (!c->dead && r < 0)
		conn_close(c, r == -EMSGSIZE ? "oversized frame" : "broken frame");
	conn_unref(c);
}

static bool peer_allowed(struct server *srv, struct conn *c)
{
	gid_t gid;

	if (usock_peer_cred(c->fd, &c->pid, &c->uid, &gid) < 0)
		return false;
	return c->uid == 0 || c->uid == srv->cfg.allowed_uid;
}

static void on_accept(struct evloop *loop, int fd, uint32_t events, void *data)
{
	struct server *srv = data;
	struct conn *c;
	int cfd;

	(void)events;
	while (usock_accept(fd, USOCK_NONBLOCK, &cfd) == 0) {
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			continue;
		}
		*c = (struct conn){ .srv = srv, .fd = cfd, .refs = 1 };
		usock_reader_init(&c->rd, REQUEST_MAX, 0);
		if (srv->nconns >= srv->cfg.max_conns || !peer_allowed(srv, c) ||
		    evloop_add(loop, cfd, EVLOOP_READ, on_conn_io, c) < 0) {
			srv->c.conns_refused++;
			log_warn("refused cache client", "pid=%d uid=%u", (int)c->pid,
				 (unsigned)c->uid);
			close(cfd);
			free(c);
			continue;
		}
		srv->c.conns_accepted++;
		srv->nconns++;
		c->next = srv->conns;
		srv->conns = c;
	}
}

int server_new(const struct server_config *cfg, int listen_fd, struct server **ret)
{
	struct server *srv = calloc(1, sizeof(*srv));
	int r;

	if (!srv)
		return -ENOMEM;
	srv->cfg = *cfg;
	if (!srv->cfg.max_conns)
		srv->cfg.max_conns = 1024;
	if (!srv->cfg.max_read_blocks)
		srv->cfg.max_read_blocks = 256;
	srv->listen_fd = listen_fd;
	r = evloop_add(cfg->loop, listen_fd, EVLOOP_READ, on_accept, srv);
	if (r < 0) {
		free(srv);
		return r;
	}
	*ret = srv;
	return 0;
}

void server_free(struct server *srv)
{
	if (!srv)
		return;
	while (srv->conns)
		conn_close(srv->conns, NULL);
	evloop_del(srv->cfg.loop, srv->listen_fd);
	close(srv->listen_fd);
	free(srv);
}

void server_counters(const struct server *srv, struct server_counters *ret)
{
	*ret = srv->c;
}
