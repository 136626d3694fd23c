// SPDX-License-Identifier: Apache-2.0
/*
 * lith cached client (see cacheclient.h). Threads: callers send under
 * `send_lock` and sleep on their own pending record; the receiver thread
 * owns the read side of the socket. When the connection breaks, every
 * pending and future call fails with -ECONNRESET.
 */
#include "mounter/cacheclient.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fetch/base/macro.h"
#include "fetch/base/strbuf.h"
#include "fetch/base/usock.h"
#include "fetch/cached/blockread.h"
#include "proto/cache.pb-c.h"

#define REPLY_MAX (16u << 20)
#define STALE_RETRIES 8

struct pending {
	uint64_t id;
	bool done;
	Lith__Cache__Reply *rep;
	int fds[USOCK_MAX_FDS];
	unsigned nfds;
	struct pending *next;
};

struct cache_client {
	int fd;
	uint32_t block_size;
	uint64_t nslots;
	int data_fd;
	struct blockread_gens *gens;
	pthread_t rx;
	bool rx_started;
	pthread_mutex_t lock;      /* pending list, broken, next_id */
	pthread_cond_t cond;
	pthread_mutex_t send_lock;
	struct pending *pending;
	uint64_t next_id;
	int broken;                /* 0 or -errno */
};

static int send_request(struct cache_client *c, Lith__Cache__Request *req)
{
	size_t len = lith__cache__request__get_packed_size(req);
	uint8_t *buf = malloc(len ? len : 1);
	int r;

	if (!buf)
		return -ENOMEM;
	lith__cache__request__pack(req, buf);
	pthread_mutex_lock(&c->send_lock);
	r = usock_send_frame(c->fd, buf, len, NULL, 0, -1);
	pthread_mutex_unlock(&c->send_lock);
	free(buf);
	return r;
}

static void deliver(struct cache_client *c, Lith__Cache__Reply *rep, struct usock_frame *f)
{
	struct pending *p;

	pthread_mutex_lock(&c->lock);
	for (p = c->pending; p && p->id != rep->id; p = p->next)
		;
	if (p && !p->done) {
		p->rep = rep;
		p->nfds = f->nfds;
		memcpy(p->fds, f->fds, sizeof(int) * f->nfds);
		f->nfds = 0; /* ownership moves to the caller */
		p->done = true;
		pthread_cond_broadcast(&c->cond);
		rep = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (rep)
		lith__cache__reply__free_unpacked(rep, NULL);
}

static void *rx_main(void *arg)
{
	struct cache_client *c = arg;
	struct usock_frame f;
	int r;

	for (;;) {
		r = usock_recv_frame(c->fd, REPLY_MAX, USOCK_MAX_FDS, -1, &f);
		if (r < 0)
			break;
		Lith__Cache__Reply *rep = lith__cache__reply__unpack(NULL, f.len, f.data);
		if (!rep) {
			usock_frame_release(&f);
			r = -EBADMSG;
			break;
		}
		deliver(c, rep, &f);
		usock_frame_release(&f);
	}
	pthread_mutex_lock(&c->lock);
	c->broken = r < 0 ? r : -ECONNRESET;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void pending_unlink(struct cache_client *c, struct pending *p)
{
	struct pending **pp;

	for (pp = &c->pending; *pp && *pp != p; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = p->next;
}

/* Sends req and waits for its reply; *ret_rep and fds are the caller's. */
static int call(struct cache_client *c, Lith__Cache__Request *req, Lith__Cache__Reply **ret_rep,
		int *fds, unsigned *nfds)
{
	struct pending p = { 0 };
	int r;

	pthread_mutex_lock(&c->lock);
	if (c->broken) {
		pthread_mutex_unlock(&c->lock);
		return c->broken;
	}
	p.id = req->id = ++c->next_id;
	p.next = c->pending;
	c->pending = &p;
	pthread_mutex_unlock(&c->lock);
	r = send_request(c, req);
	pthread_mutex_lock(&c->lock);
	if ((r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN) && !c->broken)
		c->broken = r; /* the stream is gone (or out of sync) */
	while (r == 0 && !p.done && !c->broken)
		pthread_cond_wait(&c->cond, &c->lock);
	pending_unlink(c, &p);
	if (r == 0 && !p.done)
		r = c->broken;
	pthread_mutex_unlock(&c->lock);
	if (r < 0)
		return r;
	*ret_rep = p.rep;
	if (nfds) {
		*nfds = p.nfds;
		memcpy(fds, p.fds, sizeof(int) * p.nfds);
	} else {
		for (unsigned i = 0; i < p.nfds; i++)
			close(p.fds[i]);
	}
	return 0;
}

static int reply_error(Lith__Cache__Reply *rep, char *msg, size_t msglen)
{
	if (!rep->error)
		return 0;
	if (msg)
		snprintf(msg, msglen, "%s", rep->message ? rep->message : "");
	return -rep->error;
}

static void close_fds(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

static int hello(struct cache_client *c, const char *name)
{
	Lith__Cache__Request req = LITH__CACHE__REQUEST__INIT;
	Lith__Cache__Hello h = LITH__CACHE__HELLO__INIT;
	Lith__Cache__Reply *rep;
	int fds[USOCK_MAX_FDS];
	unsigned nfds = 0;
	int r;

	h.version = LITH__CACHE__VERSION__PROTOCOL_VERSION;
	h.client = (char *)(name ? name : "");
	req.body_case = LITH__CACHE__REQUEST__BODY_HELLO;
	req.hello = &h;
	r = call(c, &req, &rep, fds, &nfds);
	if (r < 0)
		return r;
	r = reply_error(rep, NULL, 0);
	if (r == 0 && (rep->body_case != LITH__CACHE__REPLY__BODY_HELLO || nfds != 2))
		r = -EPROTO;
	if (r == 0) {
		c->block_size = rep->hello->block_size;
		c->nslots = rep->hello->slots;
		c->data_fd = fds[0];
		r = blockread_map_gens(fds[1], (uint32_t)c->nslots, &c->gens);
		close(fds[1]);
		nfds = 0;
	}
	close_fds(fds, nfds);
	lith__cache__reply__free_unpacked(rep, NULL);
	return r;
}

int cache_client_connect(const char *socket_path, const char *name, struct cache_client **ret)
{
	struct cache_client *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->data_fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	pthread_mutex_init(&c->send_lock, NULL);
	r = usock_connect(socket_path, 0, &c->fd);
	if (r < 0) {
		c->fd = -1;
		cache_client_free(c);
		return r;
	}
	r = -pthread_create(&c->rx, NULL, rx_main, c);
	c->rx_started = r == 0;
	if (r == 0)
		r = hello(c, name);
	if (r < 0) {
		cache_client_free(c);
		return r;
	}
	*ret = c;
	return 0;
}

void cache_client_free(struct cache_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR); /* wakes the receiver */
	if (c->rx_started)
		pthread_join(c->rx, NULL);
	if (c->fd >= 0)
		close(c->fd);
	if (c->data_fd >= 0)
		close(c->data_fd);
	blockread_unmap_gens(c->gens);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
}

uint32_t cache_client_block_size(const struct cache_client *c) { return c->block_size; }

bool cache_client_broken(struct cache_client *c)
{
	bool b;

	pthread_mutex_lock(&c->lock);
	b = c->broken != 0;
	pthread_mutex_unlock(&c->lock);
	return b;
}

static void spec_to_proto(const struct view_spec *s, Lith__Cache__ViewSpec *p)
{
#define S(x) ((char *)((x) ? (x) : ""))
	p->endpoint = S(s->endpoint);
	p->region = S(s->region);
	p->bucket = S(s->bucket);
	p->prefix = S(s->prefix);
	p->path_style = s->path_style;
	p->virtual_host = s->virtual_host;
	p->anonymous = s->anonymous;
	p->requester_pays = s->requester_pays;
	p->refresh_index = s->refresh_index;
	p->access_key = S(s->access_key);
	p->secret_key = S(s->secret_key);
	p->session_token = S(s->session_token);
	p->volume_id = S(s->volume_id);
	p->ca_file = S(s->ca_file);
	p->pod_namespace = S(s->pod_namespace);
	p->pod_name = S(s->pod_name);
#undef S
}

int cache_client_register(struct cache_client *c, const struct view_spec *spec,
			  struct cache_view_info *ret, char *msg, size_t msglen)
{
	Lith__Cache__Request req = LITH__CACHE__REQUEST__INIT;
	Lith__Cache__RegisterView rv = LITH__CACHE__REGISTER_VIEW__INIT;
	Lith__Cache__ViewSpec vs = LITH__CACHE__VIEW_SPEC__INIT;
	Lith__Cache__Reply *rep;
	int fds[USOCK_MAX_FDS];
	unsigned nfds = 0;
	int r;

	spec_to_proto(spec, &vs);
	rv.spec = &vs;
	req.body_case = LITH__CACHE__REQUEST__BODY_REGISTER_VIEW;
	req.register_view = &rv;
	r = call(c, &req, &rep, fds, &nfds);
	if (r < 0) {
		snprintf(msg, msglen, "lost the cache daemon");
		return r;
	}
	r = reply_error(rep, msg, msglen);
	if (r == 0 && (rep->body_case != LITH__CACHE__REPLY__BODY_VIEW || nfds != 1))
		r = -EPROTO;
	if (r == 0) {
		*ret = (struct cache_view_info){ .view = rep->view->view, .index_fd = fds[0],
						 .index_bytes = rep->view->index_bytes,
						 .keys = rep->view->keys,
						 .total_bytes = rep->view->total_bytes };
		nfds = 0;
	}
	close_fds(fds, nfds);
	lith__cache__reply__free_unpacked(rep, NULL);
	return r;
}

int cache_client_release(struct cache_client *c, uint64_t view)
{
	Lith__Cache__Request req = LITH__CACHE__REQUEST__INIT;
	Lith__Cache__ReleaseView rv = LITH__CACHE__RELEASE_VIEW__INIT;
	Lith__Cache__Reply *rep;
	int r;

	rv.view = view;
	req.body_case = LITH__CACHE__REQUEST__BODY_RELEASE_VIEW;
	req.release_view = &rv;
	r = call(c, &req, &rep, NULL, NULL);
	if (r < 0)
		return r;
	r = reply_error(rep, NULL, 0);
	lith__cache__reply__free_unpacked(rep, NULL);
	return r;
}

static int request_read(struct cache_client *c, uint64_t view, uint64_t entry, uint64_t off,
			uint64_t len, enum fill_kind kind, bool no_wait, bool exact,
			Lith__Cache__Reply **ret, char *msg, size_t msglen)
{
	Lith__Cache__Request req = LITH__CACHE__REQUEST__INIT;
	Lith__Cache__Read rd = LITH__CACHE__READ__INIT;
	int r;

	rd.view = view;
	rd.entry = entry;
	rd.offset = off;
	rd.length = len;
	rd.kind = (Lith__Cache__FillKind)kind;
	rd.no_wait = no_wait;
	rd.exact = exact;
	req.body_case = LITH__CACHE__REQUEST__BODY_READ;
	req.read = &rd;
	r = call(c, &req, ret, NULL, NULL);
	if (r < 0) {
		if (msg)
			snprintf(msg, msglen, "lost the cache daemon");
		return r;
	}
	r = reply_error(*ret, msg, msglen);
	if (r < 0)
		lith__cache__reply__free_unpacked(*ret, NULL);
	return r;
}

/* Copies what the blocks hold of [off, off+len); -ESTALE if one was
 * recycled, -EIO if the reply does not cover the range. */
static ssize_t copy_blocks(struct cache_client *c, const Lith__Cache__ReadReply *rr,
			   uint64_t off, size_t len, char *buf)
{
	size_t done = 0;

	for (size_t i = 0; i < rr->n_blocks && done < len; i++) {
		const Lith__Cache__BlockLoc *b = rr->blocks[i];
		struct blockread_loc loc = { .slot = (uint32_t)b->slot, .len = b->length,
					     .offset = b->data_offset,
					     .generation = b->generation };
		uint64_t pos = off + done;
		ssize_t n;

		if (pos < b->object_offset || pos >= b->object_offset + b->length)
			continue;
		n = blockread_pread(c->data_fd, c->gens, &loc, buf + done,
				    pos - b->object_offset, len - done);
		if (n < 0)
			return n;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* An exact read's bytes, inline in the reply. */
static ssize_t copy_inline(const Lith__Cache__ReadReply *rr, size_t len, char *buf)
{
	size_t n = MIN(rr->data.len, len);

	memcpy(buf, rr->data.data, n);
	return (ssize_t)n;
}

ssize_t cache_client_read(struct cache_client *c, uint64_t view, uint64_t entry, uint64_t off,
			  size_t len, enum fill_kind kind, bool exact, void *buf, char *msg,
			  size_t msglen)
{
	for (int attempt = 0; attempt < STALE_RETRIES; attempt++) {
		Lith__Cache__Reply *rep;
		ssize_t n;
		int r = request_read(c, view, entry, off, len, kind, false, exact, &rep, msg, msglen);

		if (r < 0)
			return r;
		if (rep->body_case != LITH__CACHE__REPLY__BODY_READ)
			n = -EPROTO;
		else if (rep->read->data.len)
			n = copy_inline(rep->read, len, buf);
		else
			n = copy_blocks(c, rep->read, off, len, buf);
		lith__cache__reply__free_unpacked(rep, NULL);
		if (n != -ESTALE)
			return n;
	}
	if (msg)
		snprintf(msg, msglen, "blocks kept being recycled under the reader");
	return -EAGAIN;
}

int cache_client_prefetch(struct cache_client *c, uint64_t view, uint64_t entry, uint64_t off,
			  uint64_t len, enum fill_kind kind)
{
	Lith__Cache__Reply *rep;
	int r = request_read(c, view, entry, off, len, kind, true, false, &rep, NULL, 0);

	if (r == 0)
		lith__cache__reply__free_unpacked(rep, NULL);
	return r;
}

/* A GetStats reply (the caller frees it). */
static int get_stats(struct cache_client *c, bool exposition, Lith__Cache__Reply **ret)
{
	Lith__Cache__Request req = LITH__CACHE__REQUEST__INIT;
	Lith__Cache__GetStats gs = LITH__CACHE__GET_STATS__INIT;
	int r;

	gs.exposition = exposition;
	req.body_case = LITH__CACHE__REQUEST__BODY_GET_STATS;
	req.get_stats = &gs;
	r = call(c, &req, ret, NULL, NULL);
	if (r == 0 && (*ret)->body_case != LITH__CACHE__REPLY__BODY_STATS) {
		lith__cache__reply__free_unpacked(*ret, NULL);
		r = -EPROTO;
	}
	return r;
}

int cache_client_exposition(struct cache_client *c, char **ret, struct cache_proc *proc)
{
	Lith__Cache__Reply *rep;
	int r = get_stats(c, true, &rep);

	if (r < 0)
		return r;
	if (!rep->stats->exposition || !*rep->stats->exposition)
		r = -EMSGSIZE; /* the daemon could not render it within its cap */
	else if (!(*ret = strdup(rep->stats->exposition)))
		r = -ENOMEM;
	if (r == 0 && proc)
		*proc = (struct cache_proc){ .rss_bytes = rep->stats->rss_bytes,
					     .cpu_seconds = rep->stats->cpu_seconds };
	lith__cache__reply__free_unpacked(rep, NULL);
	return r;
}

int cache_client_stats_text(struct cache_client *c, char **ret)
{
	static const char *const kinds[] = { "demand", "whole", "prefetch-range" };
	Lith__Cache__Reply *rep;
	struct strbuf b;
	int r = get_stats(c, false, &rep);

	if (r < 0)
		return r;
	const Lith__Cache__StatsReply *s = rep->stats;
	strbuf_init(&b, 1u << 20);
	strbuf_appendf(&b, "capacity_bytes %llu\nused_bytes %llu\nhits %llu\nmisses %llu\n"
		       "evictions %llu\ns3_get %llu\ns3_errors %llu\n",
		       (unsigned long long)s->capacity_bytes, (unsigned long long)s->used_bytes,
		       (unsigned long long)s->hits, (unsigned long long)s->misses,
		       (unsigned long long)s->evictions, (unsigned long long)s->s3_get,
		       (unsigned long long)s->s3_errors);
	for (size_t i = 0; i < s->n_views; i++)
		for (size_t k = 0; k < s->views[i]->n_kinds && k < 3; k++)
			strbuf_appendf(&b, "view %llu %s fills %llu bytes %llu\n",
				       (unsigned long long)s->views[i]->view, kinds[k],
				       (unsigned long long)s->views[i]->kinds[k]->fills,
				       (unsigned long long)s->views[i]->kinds[k]->bytes);
	lith__cache__reply__free_unpacked(rep, NULL);
	*ret = strbuf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}
