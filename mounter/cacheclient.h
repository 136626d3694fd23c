/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client of lith cached (proto/cache.proto): one connection, any number of
 * threads. Calls are synchronous for the caller but pipelined on the
 * socket: a receiver thread matches replies to waiting callers by id, so a
 * read waiting for an S3 fill does not hold up other threads.
 * Data never crosses the socket: the daemon answers a read with block
 * locations and the client preads the bytes from the block file (fd passed
 * once at Hello) with the generation check of blockread.h; a block recycled
 * meanwhile is asked for again (bounded).
 * Ownership: the client owns its socket, the block file fd, the generation
 * mapping, and every index fd it returns until cache_client_free.
 */
#ifndef LITH_MOUNTER_CACHECLIENT_H
#define LITH_MOUNTER_CACHECLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fetch/cached/fill.h"
#include "fetch/cached/viewspec.h"

struct cache_client;

struct cache_view_info {
	uint64_t view;
	int index_fd;          /* read-only; owned by the caller after register */
	uint64_t index_bytes;
	uint64_t keys;
	uint64_t total_bytes;
};

/* Connects and says Hello. -ECONNREFUSED/-ENOENT when no daemon listens;
 * -EPROTONOSUPPORT on a version mismatch. */
int cache_client_connect(const char *socket_path, const char *name, struct cache_client **ret);
void cache_client_free(struct cache_client *c);
uint32_t cache_client_block_size(const struct cache_client *c);
/* True once the connection is gone (the daemon exited or broke the
 * stream): every later call fails; the caller should connect again. Tells
 * a lost daemon apart from an error the daemon reported. */
bool cache_client_broken(struct cache_client *c);

/* Registers a view (may take as long as an index build). -errno from the
 * daemon with its message in msg (ENOENT bucket missing, EACCES credentials
 * rejected, ECONNREFUSED/EHOSTUNREACH/ETIMEDOUT endpoint unreachable). */
int cache_client_register(struct cache_client *c, const struct view_spec *spec,
			  struct cache_view_info *ret, char *msg, size_t msglen);
int cache_client_release(struct cache_client *c, uint64_t view);

/* Reads [off, off+len) of index entry `entry` into buf; returns bytes read
 * (short only at the end of the object) or -errno. exact: a random
 * reader's fault; on a miss the daemon fetches just this range, uncached
 * (Read.exact in proto/cache.proto). */
ssize_t cache_client_read(struct cache_client *c, uint64_t view, uint64_t entry, uint64_t off,
			  size_t len, enum fill_kind kind, bool exact, void *buf, char *msg,
			  size_t msglen);
/* Asks the daemon to fetch a range ahead; does not wait for the fill. */
int cache_client_prefetch(struct cache_client *c, uint64_t view, uint64_t entry, uint64_t off,
			  uint64_t len, enum fill_kind kind);

/* Raw stats reply, as text lines "key value" (caller frees). */
int cache_client_stats_text(struct cache_client *c, char **ret);
/* The daemon's Prometheus families (caller frees) and its process figures.
 * -EMSGSIZE when the daemon could not render them within its cap. */
struct cache_proc {
	uint64_t rss_bytes;
	double cpu_seconds;
};
int cache_client_exposition(struct cache_client *c, char **ret, struct cache_proc *proc);

#endif
