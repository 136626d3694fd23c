// SPDX-License-Identifier: Apache-2.0
/* One scrape of the whole node (see nodemetrics.h). */
#include "csi/nodemetrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csi/callstats.h"
#include "fetch/base/procstat.h"
#include "fetch/base/promtext.h"
#include "mounter/cacheclient.h"

#define MAX_VOLUMES 4096

/* What one scrape knows about one published volume. */
struct volrow {
	struct prom_labels labels;
	double restarts, abnormal;
	pid_t pid;
};

static const char *label_value(const struct volctx *v, const char *key)
{
	for (size_t i = 0; i < v->n_labels; i++)
		if (!strcmp(v->labels[i].key, key))
			return v->labels[i].value;
	return "";
}

static void volume_labels(const struct volctx *v, struct prom_labels *l)
{
	prom_labels_init(l);
	prom_label(l, "volume_id", v->volume_id);
	prom_label(l, "namespace", label_value(v, "pod.namespace"));
	prom_label(l, "pod", label_value(v, "pod.name"));
}

static int render_rows(struct strbuf *sb, const struct volrow *rows, size_t n)
{
	int r = prom_family(sb, "lith_mounter_restarts_total", "counter",
			    "Times lith csi restarted the volume's mounter.");

	for (size_t i = 0; i < n && r == 0; i++)
		r = prom_sample(sb, "lith_mounter_restarts_total", &rows[i].labels, rows[i].restarts);
	if (r == 0)
		r = prom_family(sb, "lith_volume_condition_abnormal", "gauge",
				"1 while the volume's mounter is down or given up "
				"(NodeGetVolumeStats condition).");
	for (size_t i = 0; i < n && r == 0; i++)
		r = prom_sample(sb, "lith_volume_condition_abnormal", &rows[i].labels,
				rows[i].abnormal);
	if (r == 0)
		r = prom_family(sb, "lith_volumes_published", "gauge", "Published targets.");
	return r ? r : prom_sample(sb, "lith_volumes_published", NULL, (double)n);
}

/* Under p->lock: the volumes' rows (*ret_rows, the caller frees) and the
 * mounters' FUSE families (the regions are unmapped only when a pub is
 * freed, which needs the lock). */
static int render_volumes(struct csi_plugin *p, struct strbuf *sb, struct volrow **ret_rows,
			  size_t *nrows)
{
	struct mstats_volume *mv = NULL;
	struct volrow *rows = NULL;
	size_t n = 0, nm = 0, count = 0;
	int r = -ENOMEM;

	pthread_mutex_lock(&p->lock);
	for (struct pub *pub = p->pubs; pub && count < MAX_VOLUMES; pub = pub->next)
		count++;
	rows = calloc(count + 1, sizeof(*rows));
	mv = calloc(count + 1, sizeof(*mv));
	for (struct pub *pub = p->pubs; rows && mv && pub && n < count; pub = pub->next, n++) {
		volume_labels(&pub->v, &rows[n].labels);
		rows[n].restarts = (double)pub->restarts_total;
		rows[n].abnormal = pub->unhealthy || pub->fd < 0 || pub->condition[0];
		rows[n].pid = pub->proc.pidfd >= 0 ? pub->proc.pid : 0;
		if (pub->mstats)
			mv[nm++] = (struct mstats_volume){ pub->mstats, rows[n].labels };
	}
	if (rows && mv)
		r = render_rows(sb, rows, n);
	if (r == 0)
		r = mstats_render(sb, mv, nm);
	pthread_mutex_unlock(&p->lock);
	free(mv);
	*ret_rows = rows;
	*nrows = n;
	return r;
}

static int process_sample(struct strbuf *sb, const char *process, const struct prom_labels *vol,
			  double rss, double cpu, bool want_rss)
{
	struct prom_labels none, l;

	prom_labels_init(&none);
	l = prom_labels_with(vol ? vol : &none, "process", process);
	return want_rss ? prom_sample(sb, "lith_process_resident_memory_bytes", &l, rss)
			: prom_sample(sb, "lith_process_cpu_seconds_total", &l, cpu);
}

/* Both process families, each one block: csi, cached (when it answered)
 * and every mounter still running. */
static int render_processes(struct strbuf *sb, const struct cache_proc *cached,
			    const struct volrow *rows, size_t n)
{
	struct procstat self = { 0 }, *ms = calloc(n + 1, sizeof(*ms));
	int r = ms ? 0 : -ENOMEM;

	procstat_read(getpid(), &self);
	for (size_t i = 0; ms && i < n; i++)
		if (!rows[i].pid || procstat_read(rows[i].pid, &ms[i]) < 0)
			ms[i].rss_bytes = UINT64_MAX; /* gone */
	for (int pass = 0; pass < 2 && r == 0; pass++) {
		bool rss = pass == 0;
		r = rss ? prom_family(sb, "lith_process_resident_memory_bytes", "gauge",
				      "Resident memory of each lith process.")
			: prom_family(sb, "lith_process_cpu_seconds_total", "counter",
				      "CPU time (user + system) of each lith process.");
		if (r == 0)
			r = process_sample(sb, "csi", NULL, (double)self.rss_bytes, self.cpu_seconds, rss);
		if (r == 0 && cached)
			r = process_sample(sb, "cached", NULL, (double)cached->rss_bytes,
					   cached->cpu_seconds, rss);
		for (size_t i = 0; i < n && r == 0; i++)
			if (ms[i].rss_bytes != UINT64_MAX)
				r = process_sample(sb, "mounter", &rows[i].labels,
						   (double)ms[i].rss_bytes, ms[i].cpu_seconds, rss);
	}
	free(ms);
	return r;
}

/* lith cached's own families, and whether it answered. */
static int render_cached(struct csi_plugin *p, struct strbuf *sb, struct cache_proc *proc)
{
	struct cache_client *c = NULL;
	char *text = NULL;
	int up = cache_client_connect(p->cfg.cache_socket, "lith csi metrics", &c) == 0 &&
		 cache_client_exposition(c, &text, proc) == 0;
	int r;

	cache_client_free(c);
	r = prom_family(sb, "lith_cached_up", "gauge",
			"1 when lith cached answered this scrape.");
	if (r == 0)
		r = prom_sample(sb, "lith_cached_up", NULL, up);
	if (r == 0 && text)
		r = strbuf_appends(sb, text);
	free(text);
	return r < 0 ? r : up;
}

int csi_node_metrics(struct csi_plugin *p, struct strbuf *sb)
{
	struct volrow *rows = NULL;
	struct cache_proc cached = { 0 };
	struct prom_labels l;
	size_t n = 0;
	int r, up;

	prom_labels_init(&l);
	prom_label(&l, "version", LITH_VERSION);
	r = prom_family(sb, "lith_build_info", "gauge", "The running lith's version.");
	if (r == 0)
		r = prom_sample(sb, "lith_build_info", &l, 1);
	if (r == 0)
		r = csi_callstats_render(sb);
	if (r == 0)
		r = render_volumes(p, sb, &rows, &n);
	up = r == 0 ? render_cached(p, sb, &cached) : r;
	r = up < 0 ? up : render_processes(sb, up ? &cached : NULL, rows, n);
	free(rows);
	return r;
}
