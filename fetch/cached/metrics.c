// SPDX-License-Identifier: Apache-2.0
/* The daemon's Prometheus exposition (see metrics.h). */
#include "fetch/cached/metrics.h"

#include <time.h>

#include "fetch/base/promtext.h"
#include "fetch/index/normalize.h"

/* ---- per view ------------------------------------------------------- */

typedef int (*view_fn)(struct strbuf *sb, const struct view *v, const char *name);

static int each_view(struct strbuf *sb, const struct server_config *cfg, const char *name,
		     const char *type, const char *help, view_fn fn)
{
	int r = prom_family(sb, name, type, help);

	for (const struct view *v = views_first(cfg->views); v && r == 0; v = v->next)
		r = fn(sb, v, name);
	return r;
}

static int v_fill_seconds(struct strbuf *sb, const struct view *v, const char *name)
{
	int r = 0;

	for (int k = 0; k < FILL_KIND__COUNT && r == 0; k++) {
		const struct fill_kind_stats *s = &v->stats.kind[k];
		struct prom_labels l = prom_labels_with(&v->labels, "kind", fill_kind_name(k));
		r = prom_histogram(sb, name, &l, fill_seconds_bounds, s->hist, FILL_HIST_N,
				   s->hist_sum);
	}
	return r;
}

static int v_floor(struct strbuf *sb, const struct view *v, const char *name)
{
	double f = fill_stats_floor(&v->stats);

	return f < 0 ? 0 : prom_sample(sb, name, &v->labels, f);
}

static int v_kind_counter(struct strbuf *sb, const struct view *v, const char *name, bool bytes)
{
	int r = 0;

	for (int k = 0; k < FILL_KIND__COUNT && r == 0; k++) {
		const struct fill_kind_stats *s = &v->stats.kind[k];
		struct prom_labels l = prom_labels_with(&v->labels, "kind", fill_kind_name(k));
		r = prom_sample(sb, name, &l, (double)(bytes ? s->bytes : s->errors));
	}
	return r;
}

static int v_fill_bytes(struct strbuf *sb, const struct view *v, const char *name)
{
	return v_kind_counter(sb, v, name, true);
}

static int v_fill_errors(struct strbuf *sb, const struct view *v, const char *name)
{
	return v_kind_counter(sb, v, name, false);
}

static int v_hits(struct strbuf *sb, const struct view *v, const char *name)
{
	return prom_sample(sb, name, &v->labels, (double)v->hits);
}

static int v_misses(struct strbuf *sb, const struct view *v, const char *name)
{
	return prom_sample(sb, name, &v->labels, (double)v->misses);
}

/* ---- the index a view reads ------------------------------------------ */

static int index_value(struct strbuf *sb, const struct view *v, const char *name, int which)
{
	struct index_stats st;
	double val;

	index_get_stats(view_index(v), &st);
	switch (which) {
	case 0: val = (double)st.entries; break;
	case 1: val = (double)st.total_bytes; break;
	case 2: val = (double)st.build_usec / 1e6; break;
	default: val = st.build_time ? (double)(time(NULL) - st.build_time) : 0; break;
	}
	return prom_sample(sb, name, &v->labels, val < 0 ? 0 : val);
}

static int v_entries(struct strbuf *sb, const struct view *v, const char *n) { return index_value(sb, v, n, 0); }
static int v_dataset(struct strbuf *sb, const struct view *v, const char *n) { return index_value(sb, v, n, 1); }
static int v_build(struct strbuf *sb, const struct view *v, const char *n) { return index_value(sb, v, n, 2); }
static int v_age(struct strbuf *sb, const struct view *v, const char *n) { return index_value(sb, v, n, 3); }

static int v_skipped(struct strbuf *sb, const struct view *v, const char *name)
{
	struct index_stats st;
	int r = 0;

	index_get_stats(view_index(v), &st);
	for (int k = 1; k < INDEX_SKIP__COUNT && r == 0; k++) {
		struct prom_labels l = prom_labels_with(&v->labels, "reason", index_skip_name(k));
		r = prom_sample(sb, name, &l, (double)st.skipped[k]);
	}
	return r;
}

/* Every per-view family, in exposition order. */
static const struct view_family {
	const char *name, *type, *help;
	view_fn fn;
} view_families[] = {
	{ "lith_fill_seconds", "histogram",
	  "Time from a fill being made to its first byte, by why it was made.", v_fill_seconds },
	{ "lith_ttfb_floor_seconds", "gauge",
	  "Low quantile of the endpoint's own first-byte time over recent fills.", v_floor },
	{ "lith_fill_bytes_total", "counter", "Bytes fetched from S3 by fills, by kind.",
	  v_fill_bytes },
	{ "lith_fill_errors_total", "counter", "Fills that failed, by kind.", v_fill_errors },
	{ "lith_cache_hits_total", "counter", "Blocks a read found in the cache.", v_hits },
	{ "lith_cache_misses_total", "counter", "Blocks a read had to wait for a fill.", v_misses },
	{ "lith_index_entries", "gauge", "Files and directories in the volume's namespace index.",
	  v_entries },
	{ "lith_index_dataset_bytes", "gauge", "Bytes of all objects in the index.", v_dataset },
	{ "lith_index_build_seconds", "gauge", "How long building the index took.", v_build },
	{ "lith_index_age_seconds", "gauge", "Seconds since the index was built.", v_age },
	{ "lith_index_skipped_keys", "gauge",
	  "Keys that cannot be files, left out of the index, by reason.", v_skipped },
};

static int per_view(struct strbuf *sb, const struct server_config *c)
{
	int r = 0;

	for (size_t i = 0; i < sizeof(view_families) / sizeof(view_families[0]) && r == 0; i++)
		r = each_view(sb, c, view_families[i].name, view_families[i].type,
			      view_families[i].help, view_families[i].fn);
	return r;
}

/* ---- node-wide -------------------------------------------------------- */

static int one(struct strbuf *sb, const char *name, const char *type, const char *help,
	       double v)
{
	int r = prom_family(sb, name, type, help);

	return r ? r : prom_sample(sb, name, NULL, v);
}

static int s3_requests(struct strbuf *sb, const struct s3stats *st)
{
	int r = prom_family(sb, "lith_s3_requests_total", "counter",
			    "S3 requests sent (retries included), by op and HTTP status "
			    "(0: no response, 999: other).");

	for (int op = 0; st && op < S3_OP__COUNT && r == 0; op++)
		for (int i = 0; i < S3STATS_NSTATUS && r == 0; i++) {
			uint64_t v = atomic_load_explicit(&st->count[op][i], memory_order_relaxed);
			struct prom_labels l;
			if (!v)
				continue;
			prom_labels_init(&l);
			prom_label(&l, "op", s3_op_name((enum s3_op)op));
			prom_labelu(&l, "status", s3stats_status[i]);
			r = prom_sample(sb, "lith_s3_requests_total", &l, (double)v);
		}
	if (r == 0)
		r = one(sb, "lith_s3_retries_total", "counter", "S3 attempts that were retried.",
			st ? (double)atomic_load(&st->retries) : 0);
	if (r == 0)
		r = one(sb, "lith_s3_fetched_bytes_total", "counter",
			"Object bytes received from S3 (fills and exact reads).",
			st ? (double)atomic_load(&st->get_bytes) : 0);
	return r;
}

/* One unlabelled sample per family. */
struct single {
	const char *name, *type, *help;
	double value;
};

static int singles(struct strbuf *sb, const struct single *s, size_t n)
{
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++)
		r = one(sb, s[i].name, s[i].type, s[i].help, s[i].value);
	return r;
}

static int queued(struct strbuf *sb, const struct fill_sched_counters *fc)
{
	struct prom_labels l;
	int r = prom_family(sb, "lith_fills_queued", "gauge", "Fills waiting, by queue.");

	prom_labels_init(&l);
	prom_label(&l, "queue", "demand");
	if (r == 0)
		r = prom_sample(sb, "lith_fills_queued", &l, (double)fc->queued_demand);
	prom_labels_init(&l);
	prom_label(&l, "queue", "prefetch");
	return r ? r : prom_sample(sb, "lith_fills_queued", &l, (double)fc->queued_prefetch);
}

/* The fetch scheduler and the block cache. */
static int node_wide(struct strbuf *sb, const struct fill_sched_counters *fc,
		     const struct blockstore_stats *bs)
{
	const struct single s[] = {
		{ "lith_fills_in_flight", "gauge", "Fills with a GET in flight.",
		  (double)fc->inflight_fills },
		{ "lith_fill_inflight_bytes", "gauge", "Bytes of the fills in flight.",
		  (double)fc->inflight_bytes },
		{ "lith_fill_budget_bytes", "gauge", "In-flight byte budget of fills.",
		  (double)fc->budget_bytes },
		{ "lith_prefetch_dropped_total", "counter",
		  "Prefetches dropped because the prefetch queue was full.",
		  (double)fc->prefetch_dropped },
		{ "lith_fill_joined_total", "counter",
		  "Block reads that joined a fill already in flight (single flight).",
		  (double)fc->joined },
		{ "lith_cache_evictions_total", "counter", "Cached blocks evicted.",
		  (double)bs->evictions },
		{ "lith_cache_used_bytes", "gauge", "Bytes of cached blocks.",
		  (double)bs->used_bytes },
		{ "lith_cache_capacity_bytes", "gauge", "Bytes the block cache can hold.",
		  (double)bs->capacity_bytes },
		{ "lith_cache_checksum_failures_total", "counter",
		  "Cached blocks dropped because their bytes no longer matched.",
		  (double)bs->checksum_failures },
	};
	int r = singles(sb, s, sizeof(s) / sizeof(s[0]));

	return r ? r : queued(sb, fc);
}

static int device(struct strbuf *sb, const struct blkdev_info *d)
{
	struct prom_labels l;
	int r;

	if (!d)
		return 0;
	r = prom_family(sb, "lith_cache_device_info", "gauge",
			"The device behind the cache directory.");
	prom_labels_init(&l);
	prom_label(&l, "device", d->disk[0] ? d->disk : d->fstype);
	prom_label(&l, "model", d->model);
	prom_label(&l, "kind", blkdev_kind_name(d->kind));
	prom_label(&l, "network_attached",
		   d->network < 0 ? "unknown" : d->network ? "true" : "false");
	prom_label(&l, "rotational", d->rotational < 0 ? "unknown" : d->rotational ? "true" : "false");
	return r ? r : prom_sample(sb, "lith_cache_device_info", &l, 1);
}

int cached_metrics_render(const struct server_config *cfg, struct strbuf *sb)
{
	struct blockstore_stats bs;
	struct fill_sched_counters fc;
	int r = per_view(sb, cfg);

	blockstore_get_stats(cfg->store, &bs);
	fill_sched_counters(cfg->fills, &fc);
	if (r == 0)
		r = s3_requests(sb, cfg->s3stats);
	if (r == 0)
		r = node_wide(sb, &fc, &bs);
	if (r == 0)
		r = device(sb, cfg->device);
	return r;
}
