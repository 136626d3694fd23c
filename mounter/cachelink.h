/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mounter's link to `lith cached`: one registered view over a client
 * connection that survives the daemon. When the connection breaks (the
 * daemon exited, crashed or was restarted), a watcher thread reconnects
 * with a growing pause (50 ms .. 1 s), restarting the private daemon first
 * if the mounter owns one, registers the view again and checks the
 * daemon's index against the one the filesystem serves (remap.h).
 *
 * Reads that find the link down wait for it up to wait_ms, then fail with
 * -EIO; prefetches never wait (dropped while down). Errors the daemon
 * reports (-ESTALE object changed, -EACCES, ...) are returned as they are.
 *
 * Threads: cachelink_read/prefetch from any number of threads; the
 * connection in use is reference-counted, so a reader holding the old one
 * finishes (with an error) before it is freed. The watcher is the only
 * thread that connects and registers.
 * Ownership: the link owns its connection(s), its copy of the view spec
 * (credentials included, wiped at free) and the first registration's
 * index fd; the private daemon is borrowed.
 */
#ifndef LITH_MOUNTER_CACHELINK_H
#define LITH_MOUNTER_CACHELINK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fetch/cached/fill.h"
#include "fetch/cached/viewspec.h"
#include "fetch/index/index.h"
#include "mounter/privd.h"

enum cachelink_event { CACHELINK_LOST, CACHELINK_BACK, CACHELINK_RETRY_FAILED };

struct cachelink_config {
	const char *socket;
	const char *client_name;
	const struct view_spec *spec;  /* copied */
	unsigned wait_ms;              /* reads wait this long for a lost daemon */
	struct privd *privd;           /* restarted when it died; may be NULL */
	/* Called on the watcher thread (may be NULL): lost, back, and a few of
	 * the failed reconnect attempts (err, msg): the 5th, then every 60th. */
	void (*event)(void *ctx, enum cachelink_event ev, int err, const char *msg);
	void *event_ctx;
};

struct cachelink_stats {
	uint64_t reconnects, lost_reads, stale_maps;
};

struct cachelink;

/* Connects and registers the view (may take as long as an index build).
 * -errno with the daemon's message in msg. *ret_connected (may be NULL)
 * tells a daemon that answered and refused the view (a missing bucket,
 * rejected credentials, an unreachable endpoint: true) from no daemon on
 * the socket (false). */
int cachelink_open(const struct cachelink_config *cfg, struct cachelink **ret,
		   bool *ret_connected, char *msg, size_t msglen);
/* The index the first registration returned (owned by the link, read-only). */
int cachelink_index_fd(const struct cachelink *l);
uint32_t cachelink_block_size(const struct cachelink *l);
/* Starts the watcher; `mine` (the index the filesystem serves, opened from
 * cachelink_index_fd) must outlive the link. */
int cachelink_start(struct cachelink *l, const struct index *mine);
/* Bytes read (short only at the end of the object) or -errno; -EIO when the
 * daemon stayed away longer than wait_ms. */
ssize_t cachelink_read(struct cachelink *l, uint64_t ino, uint64_t off, size_t len,
		       enum fill_kind kind, bool exact, void *buf);
/* Best effort, never waits. */
int cachelink_prefetch(struct cachelink *l, uint64_t ino, uint64_t off, uint64_t len,
		       enum fill_kind kind);
void cachelink_get_stats(struct cachelink *l, struct cachelink_stats *ret);
/* Stops the watcher, releases the view, closes everything. Accepts NULL. */
void cachelink_free(struct cachelink *l);

#endif
