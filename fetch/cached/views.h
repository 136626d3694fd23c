/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Views, targets and datasets: what a client registered and what it shares.
 *  - target: one S3 bucket at one endpoint with one set of credentials
 *    (s3_bucket + identity). Shared by views with the same credentials;
 *    refcounted by views and by fills using its credentials.
 *  - dataset: the namespace index of (endpoint, bucket, prefix), shared by
 *    every view of it; loaded from the cache dir when a valid one is there,
 *    else built (fan-out LIST) on a worker thread. Kept across restarts;
 *    rebuilt on request or when older than the configured maximum age.
 *  - view: a client's handle on (target, dataset), with its fill stats.
 * Registration always proves the credentials first with one LIST (max-keys
 * 1) on the view's prefix, so a bad key, a missing bucket or an unreachable
 * endpoint is reported as such, and nobody sees a namespace listed with
 * someone else's credentials without being allowed to list it.
 * Credentials live in memory only (s3_bucket's cache) and are never logged.
 * Loop thread only, except the index build worker, which touches only its
 * own job and posts the result back.
 */
#ifndef LITH_CACHED_VIEWS_H
#define LITH_CACHED_VIEWS_H

#include <stdbool.h>
#include <stdint.h>

#include "fetch/base/evloop.h"
#include "fetch/base/promtext.h"
#include "fetch/cached/fill.h"
#include "fetch/cached/viewspec.h"
#include "fetch/index/index.h"
#include "fetch/s3/s3.h"


struct target;
struct dataset;

struct view {
	uint64_t id;
	void *owner;               /* the connection that registered it */
	struct target *target;
	struct dataset *ds;
	char *volume_id;
	struct prom_labels labels; /* volume_id, namespace, pod: its metrics */
	struct fill_stats stats;
	uint64_t hits, misses;
	struct view *next;
};

struct views_config {
	struct evloop *loop;
	struct s3_engine *engine;
	const char *index_dir;
	uint64_t index_budget;     /* bytes all index files may take */
	uint64_t max_age_s;        /* 0: an index is never too old */
	unsigned index_concurrency;
	unsigned max_views;
};

struct views;

int views_new(const struct views_config *cfg, struct views **ret);
void views_free(struct views *vs);

typedef void (*views_ready_fn)(void *ctx, int err, const char *msg, struct view *v);
/* Starts registration; ready(ctx, ...) runs later on the loop thread
 * exactly once (unless this returns < 0: -EINVAL with msg filled). */
int views_register(struct views *vs, const struct view_spec *spec, void *owner,
		   views_ready_fn ready, void *ctx, char *msg, size_t msglen);
struct view *views_find(struct views *vs, uint64_t id);
void views_release(struct views *vs, struct view *v);
/* Walks every live view (for stats). */
struct view *views_first(struct views *vs);

/* What reads need from a view's target and dataset. */
const struct index *view_index(const struct view *v);
int view_index_fd(const struct view *v);
uint64_t view_index_bytes(const struct view *v);
/* Fills obj for the file at index entry `ino` (key and etag point into
 * keybuf/etagbuf). -ENOENT no such entry, -EISDIR a directory. */
int view_object(const struct view *v, uint64_t ino, char *keybuf, size_t keycap,
		char *etagbuf, size_t etagcap, struct fill_object *obj);

#endif
