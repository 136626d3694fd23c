// SPDX-License-Identifier: Apache-2.0
/*
 * Views, targets and datasets (see views.h). A registration is a small
 * state machine driven by completions posted to the loop thread:
 *   probe LIST → dataset ready? → (load from disk | build on a worker) → view
 * Index builds run on a detached worker thread that owns its job struct and
 * posts it back; the dataset records waiters meanwhile.
 */
#include "fetch/cached/views.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fetch/base/log.h"
#include "fetch/base/macro.h"
#include "fetch/cached/tenancy.h"
#include "fetch/index/build.h"

enum ds_state { DS_EMPTY, DS_BUILDING, DS_READY };

struct reg;

struct target {
	struct views *vs;
	uint64_t match;     /* everything that makes two targets the same */
	uint64_t identity;  /* who: endpoint + credentials */
	char *endpoint;     /* "" for AWS */
	struct s3_bucket *b;
	int refs;
	struct target *next;
};

struct dataset {
	char *endpoint, *bucket, *prefix;
	char path[PATH_MAX];
	enum ds_state state;
	struct index *idx;
	int fd;
	uint64_t bytes;
	int refs;
	struct reg *waiters;
	struct dataset *next;
};

struct reg {
	struct views *vs;
	struct target *t;
	struct dataset *ds;
	struct s3_request req;
	char prefix[1100];
	void *owner;
	views_ready_fn ready;
	void *ctx;
	char *volume_id;
	struct prom_labels labels;
	bool refresh;
	int err;
	char msg[256];
	struct reg *next;
};

struct build_job {
	struct views *vs;
	struct dataset *ds;
	struct target *t;
	int err;
	char msg[256];
	struct index_build_stats stats;
};

struct views {
	struct views_config cfg;  /* cfg.index_dir points at index_dir */
	char index_dir[PATH_MAX];
	struct target *targets;
	struct dataset *datasets;
	struct view *views;
	unsigned nviews;
	uint64_t next_id;
};

/* ---- targets -------------------------------------------------------- */

static void target_hold(void *owner, int delta)
{
	struct target *t = owner, **pp;

	t->refs += delta;
	if (t->refs > 0)
		return;
	for (pp = &t->vs->targets; *pp && *pp != t; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = t->next;
	s3_bucket_free(t->b);
	free(t->endpoint);
	free(t);
}

static uint64_t target_match(const struct view_spec *s)
{
	char flags[8] = { '0' + s->path_style, '0' + s->virtual_host, '0' + s->anonymous,
			  '0' + s->requester_pays, 0 };
	char extra[600];

	snprintf(extra, sizeof(extra), "%s|%s|%s|%s", s->bucket, s->region ? s->region : "",
		 flags, s->ca_file ? s->ca_file : "");
	return tenancy_identity(extra, s->access_key, s->secret_key, s->session_token) ^
	       tenancy_identity(s->endpoint, NULL, NULL, NULL);
}

static int target_make(struct views *vs, const struct view_spec *s, struct target **ret,
		       char *msg, size_t msglen)
{
	struct s3_bucket_config bc = {
		.bucket = s->bucket, .endpoint = s->endpoint, .region = s->region,
		.addressing = s->path_style ? S3_ADDR_PATH
			      : s->virtual_host ? S3_ADDR_VIRTUAL : S3_ADDR_AUTO,
		.requester_pays = s->requester_pays, .anonymous = s->anonymous,
		.ca_file = s->ca_file && *s->ca_file ? s->ca_file : NULL,
	};
	struct s3_creds_cache *creds = NULL;
	struct target *t = calloc(1, sizeof(*t));
	int r;

	if (!t || !(t->endpoint = strdup(s->endpoint ? s->endpoint : "")))
		goto nomem;
	if (!s->anonymous) {
		struct s3_cred_provider *p = s3_creds_static_new(s->access_key, s->secret_key,
								  s->session_token);
		creds = p ? s3_creds_cache_new(p, 300, NULL) : NULL;
		if (!creds)
			goto nomem;
	}
	r = s3_bucket_new(&bc, creds, &t->b, msg, msglen);
	if (r < 0) {
		s3_creds_cache_free(creds);
		free(t->endpoint);
		free(t);
		return r;
	}
	t->vs = vs;
	t->match = target_match(s);
	t->identity = s->anonymous ? tenancy_identity(t->endpoint, NULL, NULL, NULL)
				   : tenancy_identity(t->endpoint, s->access_key, s->secret_key,
						      s->session_token);
	*ret = t;
	return 0;
nomem:
	if (t)
		free(t->endpoint);
	free(t);
	snprintf(msg, msglen, "out of memory");
	return -ENOMEM;
}

static int target_get(struct views *vs, const struct view_spec *s, struct target **ret,
		      char *msg, size_t msglen)
{
	uint64_t m = target_match(s);
	int r;

	for (struct target *t = vs->targets; t; t = t->next)
		if (t->match == m) {
			t->refs++;
			*ret = t;
			return 0;
		}
	r = target_make(vs, s, ret, msg, msglen);
	if (r < 0)
		return r;
	(*ret)->refs = 1;
	(*ret)->next = vs->targets;
	vs->targets = *ret;
	return 0;
}

/* ---- datasets ------------------------------------------------------- */

static void dataset_drop_index(struct dataset *ds)
{
	index_close(ds->idx);
	ds->idx = NULL;
	if (ds->fd >= 0)
		close(ds->fd);
	ds->fd = -1;
	ds->bytes = 0;
	ds->state = DS_EMPTY;
}

static void dataset_unref(struct views *vs, struct dataset *ds)
{
	struct dataset **pp;

	if (--ds->refs > 0 || ds->state == DS_BUILDING)
		return;
	for (pp = &vs->datasets; *pp && *pp != ds; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = ds->next;
	dataset_drop_index(ds);
	free(ds->endpoint);
	free(ds->bucket);
	free(ds->prefix);
	free(ds);
}

static struct dataset *dataset_get(struct views *vs, const char *endpoint, const char *bucket,
				   const char *prefix)
{
	struct dataset *ds;
	char name[32];

	for (ds = vs->datasets; ds; ds = ds->next)
		if (!strcmp(ds->endpoint, endpoint) && !strcmp(ds->bucket, bucket) &&
		    !strcmp(ds->prefix, prefix)) {
			ds->refs++;
			return ds;
		}
	ds = calloc(1, sizeof(*ds));
	if (!ds)
		return NULL;
	ds->fd = -1;
	ds->endpoint = strdup(endpoint);
	ds->bucket = strdup(bucket);
	ds->prefix = strdup(prefix);
	if (!ds->endpoint || !ds->bucket || !ds->prefix) {
		free(ds->endpoint);
		free(ds->bucket);
		free(ds->prefix);
		free(ds);
		return NULL;
	}
	snprintf(name, sizeof(name), "%016llx",
		 (unsigned long long)tenancy_identity(endpoint, bucket, prefix, "index"));
	snprintf(ds->path, sizeof(ds->path), "%s/%s.lidx", vs->cfg.index_dir, name);
	ds->refs = 1;
	ds->next = vs->datasets;
	vs->datasets = ds;
	return ds;
}

static bool source_matches(const struct dataset *ds, const struct index_stats *st)
{
	return st->endpoint_len == strlen(ds->endpoint) &&
	       !memcmp(st->endpoint, ds->endpoint, st->endpoint_len) &&
	       st->bucket_len == strlen(ds->bucket) &&
	       !memcmp(st->bucket, ds->bucket, st->bucket_len) &&
	       st->prefix_len == strlen(ds->prefix) &&
	       !memcmp(st->prefix, ds->prefix, st->prefix_len);
}

/* Opens the index file if it is valid, ours, and young enough. */
static int dataset_load(struct views *vs, struct dataset *ds)
{
	struct index_stats st;
	struct stat sb;
	int fd = open(ds->path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = fstat(fd, &sb) < 0 ? -errno : index_open_fd(fd, &ds->idx);
	if (r == 0) {
		index_get_stats(ds->idx, &st);
		if (!source_matches(ds, &st))
			r = -ESTALE;
		else if (vs->cfg.max_age_s && time(NULL) - st.build_time > (int64_t)vs->cfg.max_age_s)
			r = -ESTALE;
	}
	if (r < 0) {
		index_close(ds->idx);
		ds->idx = NULL;
		close(fd);
		if (r == -EBADMSG)
			log_warn("index file corrupt, rebuilding", "path=%s", ds->path);
		return r;
	}
	ds->fd = fd;
	ds->bytes = (uint64_t)sb.st_size;
	ds->state = DS_READY;
	return 0;
}

/* ---- registration --------------------------------------------------- */

static void reg_free(struct reg *g)
{
	if (g->t)
		target_hold(g->t, -1);
	if (g->ds)
		dataset_unref(g->vs, g->ds);
	free(g->volume_id);
	free(g);
}

static void reg_fail(struct reg *g, int err, const char *msg)
{
	g->ready(g->ctx, err, msg, NULL);
	reg_free(g);
}

static void reg_finish(struct reg *g)
{
	struct views *vs = g->vs;
	struct view *v = calloc(1, sizeof(*v));

	if (!v) {
		reg_fail(g, -ENOMEM, "out of memory");
		return;
	}
	v->id = ++vs->next_id;
	v->owner = g->owner;
	v->target = TAKE_PTR(g->t);
	v->ds = TAKE_PTR(g->ds);
	v->volume_id = TAKE_PTR(g->volume_id);
	v->labels = g->labels;
	v->next = vs->views;
	vs->views = v;
	vs->nviews++;
	log_info("view registered", "view=%llu volume=%s bucket=%s prefix=%s keys_bytes=%llu",
		 (unsigned long long)v->id, v->volume_id ? v->volume_id : "-",
		 v->ds->bucket, v->ds->prefix, (unsigned long long)v->ds->bytes);
	g->ready(g->ctx, 0, "", v);
	reg_free(g);
}

/* Keys that cannot be files were skipped: say how many, why, and a few. */
static void log_skipped(const struct dataset *ds)
{
	struct index_stats st;
	enum index_skip why;
	const char *key;
	size_t len;

	index_get_stats(ds->idx, &st);
	for (int r = 1; r < INDEX_SKIP__COUNT; r++)
		if (st.skipped[r])
			log_warn("keys skipped", "bucket=%s prefix=%s reason=%s count=%llu",
				 ds->bucket, ds->prefix, index_skip_name((enum index_skip)r),
				 (unsigned long long)st.skipped[r]);
	for (size_t i = 0; i < st.samples && i < 8; i++)
		if (index_sample(ds->idx, i, &why, &key, &len) == 0)
			log_warn("skipped key sample", "bucket=%s reason=%s key=\"%.*s\"",
				 ds->bucket, index_skip_name(why), (int)MIN(len, 200), key);
}

/* Index files take at most index_budget bytes: drop files no live dataset
 * uses (oldest first), and stale temporaries; -ENOSPC if still too big. */
static int index_dir_trim(struct views *vs)
{
	struct { char name[64]; time_t mtime; uint64_t bytes; } c[256];
	size_t n = 0;
	uint64_t total = 0;
	DIR *d = opendir(vs->index_dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[PATH_MAX];
		struct stat sb;
		bool live = false;

		if (e->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", vs->index_dir, e->d_name) >=
			    (int)sizeof(path) || stat(path, &sb) < 0)
			continue;
		for (struct dataset *ds = vs->datasets; ds; ds = ds->next)
			live |= ds->state != DS_EMPTY && !strcmp(ds->path, path);
		total += (uint64_t)sb.st_blocks * 512;
		if (!live && n < 256 && strlen(e->d_name) < sizeof(c[0].name)) {
			memcpy(c[n].name, e->d_name, strlen(e->d_name) + 1);
			c[n].mtime = sb.st_mtime;
			c[n++].bytes = (uint64_t)sb.st_blocks * 512;
		}
	}
	if (d)
		closedir(d);
	while (total > vs->cfg.index_budget && n) {
		size_t old = 0;
		char path[PATH_MAX];
		for (size_t i = 1; i < n; i++)
			if (c[i].mtime < c[old].mtime)
				old = i;
		if (snprintf(path, sizeof(path), "%s/%s", vs->index_dir, c[old].name) <
			    (int)sizeof(path) && unlink(path) == 0)
			total -= c[old].bytes;
		c[old] = c[--n];
	}
	return total > vs->cfg.index_budget ? -ENOSPC : 0;
}

static void build_done(struct evloop *loop, void *arg)
{
	struct build_job *job = arg;
	struct dataset *ds = job->ds;
	struct reg *g, *next;
	int err = job->err;

	(void)loop;
	ds->state = DS_EMPTY;
	if (err == 0)
		err = dataset_load(job->vs, ds);
	if (err == 0 && index_dir_trim(job->vs) < 0) {
		dataset_drop_index(ds);
		unlink(ds->path);
		err = -ENOSPC;
		snprintf(job->msg, sizeof(job->msg),
			 "index of %s/%s does not fit the cache's index budget (%llu bytes)",
			 ds->bucket, ds->prefix, (unsigned long long)job->vs->cfg.index_budget);
	}
	if (err == 0)
		log_skipped(ds);
	if (err == 0)
		log_info("index built", "bucket=%s prefix=%s seconds=%.3f requests=%llu bytes=%llu",
			 ds->bucket, ds->prefix, job->stats.seconds,
			 (unsigned long long)job->stats.requests, (unsigned long long)ds->bytes);
	else if (!job->msg[0])
		snprintf(job->msg, sizeof(job->msg), "index: %s", strerror(-err));
	for (g = TAKE_PTR(ds->waiters); g; g = next) {
		next = g->next;
		if (err == 0)
			reg_finish(g);
		else
			reg_fail(g, err, job->msg);
	}
	target_hold(job->t, -1);
	ds->refs++;               /* balance: dataset_unref may free it now */
	dataset_unref(job->vs, ds);
	free(job);
}

static void *build_main(void *arg)
{
	struct build_job *job = arg;
	struct index_build_config bc = {
		.engine = job->vs->cfg.engine, .bucket = job->t->b,
		.endpoint = job->ds->endpoint, .prefix = job->ds->prefix,
		.concurrency = job->vs->cfg.index_concurrency,
	};

	job->err = index_build(&bc, job->ds->path, &job->stats, job->msg, sizeof(job->msg));
	while (evloop_post(job->vs->cfg.loop, build_done, job) == -EAGAIN)
		usleep(1000);
	return NULL;
}

static int dataset_build(struct views *vs, struct dataset *ds, struct target *t)
{
	struct build_job *job = calloc(1, sizeof(*job));
	pthread_attr_t attr;
	pthread_t th;
	int r;

	if (!job)
		return -ENOMEM;
	*job = (struct build_job){ .vs = vs, .ds = ds, .t = t };
	t->refs++;
	dataset_drop_index(ds);
	ds->state = DS_BUILDING;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&th, &attr, build_main, job);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		ds->state = DS_EMPTY;
		target_hold(t, -1);
		free(job);
	}
	return r;
}

/* A refresh must not pull an index from under the views that use it
 * (their entry numbers would name other objects): the old dataset leaves
 * the shared list and lives on, with its mapping and fd, until its last
 * view is gone; the refresh builds a new one. Takes over the caller's
 * reference to old. */
static struct dataset *dataset_renew(struct views *vs, struct dataset *old)
{
	struct dataset **pp, *ds;

	if (old->refs == 1) {
		dataset_drop_index(old);
		return old;
	}
	for (pp = &vs->datasets; *pp && *pp != old; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = old->next;
	old->next = NULL;
	ds = dataset_get(vs, old->endpoint, old->bucket, old->prefix);
	dataset_unref(vs, old);
	return ds;
}

static void reg_dataset(struct reg *g)
{
	struct dataset *ds = g->ds;
	int r;

	if (ds->state == DS_READY && g->refresh) {
		ds = dataset_renew(g->vs, ds);
		if (!ds) {
			reg_fail(g, -ENOMEM, "out of memory");
			return;
		}
		g->ds = ds;
	}
	if (ds->state == DS_EMPTY && !g->refresh)
		dataset_load(g->vs, ds);
	if (ds->state == DS_READY) {
		reg_finish(g);
		return;
	}
	if (ds->state == DS_EMPTY) {
		r = dataset_build(g->vs, ds, g->t);
		if (r < 0) {
			reg_fail(g, r, "cannot start the index build");
			return;
		}
	}
	g->next = ds->waiters;
	ds->waiters = g;
}

static void probe_done(struct evloop *loop, void *arg)
{
	struct reg *g = arg;
	const char *ep;

	(void)loop;
	s3_list_page_free(&g->req.page);
	if (g->req.res.err < 0) {
		snprintf(g->msg, sizeof(g->msg), "%s", g->req.res.errmsg);
		reg_fail(g, g->req.res.err, g->msg);
		return;
	}
	ep = g->t->endpoint;
	g->ds = dataset_get(g->vs, ep, s3_bucket_name(g->t->b), g->prefix);
	if (!g->ds) {
		reg_fail(g, -ENOMEM, "out of memory");
		return;
	}
	reg_dataset(g);
}

static void on_probe(struct s3_request *req)
{
	struct reg *g = req->ctx;

	while (evloop_post(g->vs->cfg.loop, probe_done, g) == -EAGAIN)
		usleep(1000);
}

static int spec_check(const struct views *vs, const struct view_spec *s, char *msg,
		      size_t msglen)
{
	if (vs->nviews >= vs->cfg.max_views) {
		snprintf(msg, msglen, "too many views (%u)", vs->cfg.max_views);
		return -EMFILE;
	}
	if (!s->bucket || !*s->bucket) {
		snprintf(msg, msglen, "bucket is required");
		return -EINVAL;
	}
	if (!s->anonymous && (!s->access_key || !*s->access_key || !s->secret_key ||
			      !*s->secret_key)) {
		snprintf(msg, msglen, "credentials are required unless anonymous");
		return -EINVAL;
	}
	return 0;
}

int views_register(struct views *vs, const struct view_spec *s, void *owner,
		   views_ready_fn ready, void *ctx, char *msg, size_t msglen)
{
	struct reg *g;
	int r = spec_check(vs, s, msg, msglen);

	if (r < 0)
		return r;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	*g = (struct reg){ .vs = vs, .owner = owner, .ready = ready, .ctx = ctx,
			   .refresh = s->refresh_index };
	r = index_prefix_normalize(s->prefix ? s->prefix : "", g->prefix, sizeof(g->prefix));
	if (r < 0)
		snprintf(msg, msglen, "prefix too long");
	if (r == 0 && s->volume_id && !(g->volume_id = strdup(s->volume_id)))
		r = -ENOMEM;
	prom_labels_init(&g->labels);
	prom_label(&g->labels, "volume_id", s->volume_id);
	prom_label(&g->labels, "namespace", s->pod_namespace);
	prom_label(&g->labels, "pod", s->pod_name);
	if (r == 0)
		r = target_get(vs, s, &g->t, msg, msglen);
	if (r < 0) {
		reg_free(g);
		return r;
	}
	g->req = (struct s3_request){ .op = S3_OP_LIST, .bucket = g->t->b,
				      .list = { .prefix = g->prefix, .max_keys = 1 },
				      .done = on_probe, .ctx = g };
	r = s3_submit(vs->cfg.engine, &g->req);
	if (r < 0) {
		snprintf(msg, msglen, "S3 engine busy");
		reg_free(g);
	}
	return r;
}

/* ---- views ---------------------------------------------------------- */

struct view *views_find(struct views *vs, uint64_t id)
{
	for (struct view *v = vs->views; v; v = v->next)
		if (v->id == id)
			return v;
	return NULL;
}

struct view *views_first(struct views *vs) { return vs->views; }

void views_release(struct views *vs, struct view *v)
{
	struct view **pp;

	for (pp = &vs->views; *pp && *pp != v; pp = &(*pp)->next)
		;
	if (!*pp)
		return;
	*pp = v->next;
	vs->nviews--;
	target_hold(v->target, -1);
	dataset_unref(vs, v->ds);
	free(v->volume_id);
	free(v);
}

const struct index *view_index(const struct view *v) { return v->ds->idx; }
int view_index_fd(const struct view *v) { return v->ds->fd; }
uint64_t view_index_bytes(const struct view *v) { return v->ds->bytes; }

int view_object(const struct view *v, uint64_t ino, char *keybuf, size_t keycap,
		char *etagbuf, size_t etagcap, struct fill_object *obj)
{
	struct index_attr a;
	int r = index_getattr(v->ds->idx, ino, &a);

	if (r < 0)
		return r;
	if (a.is_dir)
		return -EISDIR;
	r = index_key(v->ds->idx, ino, keybuf, keycap);
	if (r >= 0)
		r = index_etag(v->ds->idx, ino, etagbuf, etagcap);
	if (r < 0)
		return r;
	*obj = (struct fill_object){
		.bucket = v->target->b, .endpoint = v->target->endpoint,
		.bucket_name = s3_bucket_name(v->target->b), .key = keybuf, .etag = etagbuf,
		.size = a.size, .identity = v->target->identity,
		.hold = target_hold, .owner = v->target,
	};
	return 0;
}

int views_new(const struct views_config *cfg, struct views **ret)
{
	struct views *vs = calloc(1, sizeof(*vs));

	if (!vs)
		return -ENOMEM;
	vs->cfg = *cfg;
	if (snprintf(vs->index_dir, sizeof(vs->index_dir), "%s", cfg->index_dir) >=
	    (int)sizeof(vs->index_dir)) {
		free(vs);
		return -ENAMETOOLONG;
	}
	vs->cfg.index_dir = vs->index_dir;
	if (!vs->cfg.max_views)
		vs->cfg.max_views = 4096;
	if (mkdir(vs->index_dir, 0700) < 0 && errno != EEXIST) {
		free(vs);
		return -errno;
	}
	index_dir_trim(vs); /* a smaller cache than last time: old indexes go */
	*ret = vs;
	return 0;
}

void views_free(struct views *vs)
{
	if (!vs)
		return;
	while (vs->views)
		views_release(vs, vs->views);
	free(vs);
}
