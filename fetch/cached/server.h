/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cache daemon's protocol server (proto/cache.proto) on a Unix socket:
 * accepts connections from root or one configured uid (SO_PEERCRED), reads
 * length-prefixed protobuf frames, and answers Hello (with the block file
 * and generation table fds), RegisterView (with the index fd), Read (with
 * block locations, after fills and tenancy checks), ReleaseView, GetStats.
 * A malformed, oversized or unexpected frame closes that connection only;
 * its views are released. Loop thread only.
 */
#ifndef LITH_CACHED_SERVER_H
#define LITH_CACHED_SERVER_H

#include <sys/types.h>

#include "fetch/base/blkdev.h"
#include "fetch/base/evloop.h"
#include "fetch/cached/blockstore.h"
#include "fetch/cached/fill.h"
#include "fetch/cached/s3stats.h"
#include "fetch/cached/tenancy.h"
#include "fetch/cached/views.h"

struct server_config {
	struct evloop *loop;
	struct blockstore *store;
	struct fill_sched *fills;
	struct views *views;
	struct tenancy *tenancy;
	struct s3_engine *engine;
	const struct s3stats *s3stats;  /* may be NULL */
	const struct blkdev_info *device; /* behind the cache dir; may be NULL */
	uid_t allowed_uid;       /* besides root; (uid_t)-1 for none */
	unsigned max_conns;
	unsigned max_read_blocks;/* blocks per Read request */
};

struct server;

/* Takes over listen_fd (closed by server_free). */
int server_new(const struct server_config *cfg, int listen_fd, struct server **ret);
void server_free(struct server *srv);

struct server_counters {
	uint64_t conns_accepted, conns_refused, conns_dropped;
	uint64_t reads, read_errors, proofs, proof_failures;
};
void server_counters(const struct server *srv, struct server_counters *ret);

#endif
