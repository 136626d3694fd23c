/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the protocol server: shared by server.c, readop.c, stats.c. */
#ifndef LITH_CACHED_SERVER_IMPL_H
#define LITH_CACHED_SERVER_IMPL_H

#include <stdbool.h>

#include "fetch/base/usock.h"
#include "fetch/cached/server.h"
#include "proto/cache.pb-c.h"

struct conn {
	struct server *srv;
	int fd;
	struct usock_reader rd;
	bool hello;
	bool dead;
	int refs;
	pid_t pid;
	uid_t uid;
	struct conn *next;
};

struct server {
	struct server_config cfg;
	int listen_fd;
	struct conn *conns;
	unsigned nconns;
	struct server_counters c;
	unsigned exact_inflight;   /* exactop.c */
};

void conn_ref(struct conn *c);
void conn_unref(struct conn *c);
int conn_reply(struct conn *c, Lith__Cache__Reply *rep, const int *fds, size_t nfds);
int conn_reply_error(struct conn *c, uint64_t id, int err, const char *msg);

/* readop.c */
void readop_start(struct conn *c, const Lith__Cache__Request *req);
/* exactop.c: 1 when it took the read (its reply follows), 0 when the
 * caller should fill blocks instead. */
int exactop_start(struct conn *c, uint64_t id, uint64_t view_id, const struct fill_object *obj,
		  uint64_t off, uint64_t len);
/* stats.c */
void stats_reply(struct conn *c, const Lith__Cache__Request *req);

#endif
