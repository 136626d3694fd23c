// SPDX-License-Identifier: Apache-2.0
/* GetStats: the daemon's accounting (block store, S3 fills per view and per
 * fill kind) for the metrics exporter. Loop thread only. */
#include <stdlib.h>
#include <unistd.h>

#include "fetch/base/procstat.h"
#include "fetch/cached/metrics.h"
#include "fetch/cached/server_impl.h"

/* Room for the exposition of the largest node (views are bounded). */
#define STATS_EXPOSITION_MAX (12u << 20)

static void fill_view(struct view *v, Lith__Cache__ViewStats *vs, Lith__Cache__KindStats *ks,
		      Lith__Cache__KindStats **kp)
{
	lith__cache__view_stats__init(vs);
	vs->view = v->id;
	vs->volume_id = v->volume_id ? v->volume_id : "";
	vs->bucket = "";
	vs->prefix = "";
	vs->hits = v->hits;
	vs->misses = v->misses;
	for (int k = 0; k < FILL_KIND__COUNT; k++) {
		const struct fill_kind_stats *s = &v->stats.kind[k];
		lith__cache__kind_stats__init(&ks[k]);
		ks[k].kind = (Lith__Cache__FillKind)k;
		ks[k].fills = s->fills;
		ks[k].bytes = s->bytes;
		ks[k].ttfb_seconds_sum = s->ttfb_sum;
		ks[k].fill_seconds_sum = s->seconds_sum;
		kp[k] = &ks[k];
	}
	vs->n_kinds = FILL_KIND__COUNT;
	vs->kinds = kp;
}

/* Non-zero (op, status) counters; rows/ptrs have room for all of them. */
static size_t fill_s3(const struct s3stats *st, Lith__Cache__S3Requests *rows,
		      Lith__Cache__S3Requests **ptrs, uint64_t *ret_get, uint64_t *ret_head,
		      uint64_t *ret_list)
{
	uint64_t *per_op[S3_OP__COUNT] = { ret_get, ret_head, ret_list };
	size_t n = 0;

	for (int op = 0; st && op < S3_OP__COUNT; op++)
		for (int i = 0; i < S3STATS_NSTATUS; i++) {
			uint64_t v = atomic_load_explicit(&st->count[op][i], memory_order_relaxed);
			if (!v)
				continue;
			*per_op[op] += v;
			lith__cache__s3_requests__init(&rows[n]);
			rows[n].op = (char *)s3_op_name((enum s3_op)op);
			rows[n].status = s3stats_status[i];
			rows[n].count = v;
			ptrs[n] = &rows[n];
			n++;
		}
	return n;
}

void stats_reply(struct conn *c, const Lith__Cache__Request *req)
{
	Lith__Cache__Reply rep = LITH__CACHE__REPLY__INIT;
	Lith__Cache__StatsReply sr = LITH__CACHE__STATS_REPLY__INIT;
	struct blockstore_stats bs;
	struct fill_sched_counters fc;
	size_t n = 0, i = 0;
	struct view *v;

	blockstore_get_stats(c->srv->cfg.store, &bs);
	fill_sched_counters(c->srv->cfg.fills, &fc);
	for (v = views_first(c->srv->cfg.views); v; v = v->next)
		n++;
	Lith__Cache__ViewStats *vs = calloc(n + 1, sizeof(*vs));
	Lith__Cache__ViewStats **vp = calloc(n + 1, sizeof(*vp));
	Lith__Cache__KindStats *ks = calloc((n + 1) * FILL_KIND__COUNT, sizeof(*ks));
	Lith__Cache__KindStats **kp = calloc((n + 1) * FILL_KIND__COUNT, sizeof(*kp));
	if (vs && vp && ks && kp)
		for (v = views_first(c->srv->cfg.views); v && i < n; v = v->next, i++) {
			fill_view(v, &vs[i], &ks[i * FILL_KIND__COUNT], &kp[i * FILL_KIND__COUNT]);
			vp[i] = &vs[i];
		}
	sr.capacity_bytes = bs.capacity_bytes;
	sr.used_bytes = bs.used_bytes;
	sr.hits = bs.hits;
	sr.misses = bs.misses;
	sr.evictions = bs.evictions;
	Lith__Cache__S3Requests rows[S3_OP__COUNT * S3STATS_NSTATUS];
	Lith__Cache__S3Requests *rowp[S3_OP__COUNT * S3STATS_NSTATUS];
	sr.n_s3_requests = fill_s3(c->srv->cfg.s3stats, rows, rowp, &sr.s3_get, &sr.s3_head,
				   &sr.s3_list);
	sr.s3_requests = rowp;
	sr.s3_errors = fc.get_errors;
	sr.s3_retries = c->srv->cfg.s3stats ? atomic_load(&c->srv->cfg.s3stats->retries) : 0;
	sr.n_views = i;
	sr.views = vp;
	struct procstat ps = { 0 };
	struct strbuf expo;
	strbuf_init(&expo, STATS_EXPOSITION_MAX);
	procstat_read(getpid(), &ps);
	sr.rss_bytes = ps.rss_bytes;
	sr.cpu_seconds = ps.cpu_seconds;
	if (req->get_stats && req->get_stats->exposition &&
	    cached_metrics_render(&c->srv->cfg, &expo) == 0 && expo.p)
		sr.exposition = expo.p;
	rep.id = req->id;
	rep.body_case = LITH__CACHE__REPLY__BODY_STATS;
	rep.stats = &sr;
	conn_reply(c, &rep, NULL, 0);
	free(vs);
	free(vp);
	free(ks);
	free(kp);
	strbuf_free(&expo);
}
