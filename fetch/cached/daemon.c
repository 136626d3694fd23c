// SPDX-License-Identifier: Apache-2.0
/*
 * lith cached main (see daemon.h). Start-up order: cache dir → device
 * report → block store → S3 engine → loop → scheduler, tenancy, views →
 * socket → server. Disk budget: index files get 1/16 of --cache-size (at
 * most 1 GiB) and the tenancy proofs 1/256, the block store the rest, so
 * everything under the cache dir stays within --cache-size.
 */
#include "fetch/cached/daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/base/blkdev.h"
#include "fetch/base/log.h"
#include "fetch/base/usock.h"
#include "fetch/cached/blockstore.h"
#include "fetch/cached/fill.h"
#include "fetch/cached/s3stats.h"
#include "fetch/cached/server.h"
#include "fetch/cached/tenancy.h"
#include "fetch/cached/views.h"

struct daemon {
	const struct cached_config *cfg;
	struct blockstore *store;
	struct s3_engine *engine;
	struct evloop *loop;
	struct fill_sched *fills;
	struct tenancy *tenancy;
	struct views *views;
	struct server *server;
	char path[600];
	char proofs[600];
	struct s3stats s3stats;
	struct blkdev_info device;
	bool have_device;
};

static uint64_t index_budget(const struct cached_config *c)
{
	uint64_t b = c->cache_size / 16;
	return b > (1ull << 30) ? 1ull << 30 : b;
}

static void report_device(const struct cached_config *c, struct daemon *d)
{
	struct blkdev_info info;
	struct blkdev_probe probe;
	char line[512], warn[512];
	bool probed;

	if (blkdev_describe(c->cache_dir, NULL, &info) < 0) {
		log_warn("cannot tell which device backs the cache", "cache_dir=%s", c->cache_dir);
		return;
	}
	probed = c->probe_bytes && blkdev_probe_write(c->cache_dir, c->probe_bytes, 5000,
						       &probe) == 0;
	log_info("cache device", "cache_dir=%s %s", c->cache_dir,
		 blkdev_format(&info, probed ? &probe : NULL, line, sizeof(line)));
	if (blkdev_verdict(&info, probed ? &probe : NULL, (double)c->min_device_mbps, warn,
			   sizeof(warn)))
		log_warn("slow or network-attached cache device", "cache_dir=%s detail=\"%s\"",
			 c->cache_dir, warn);
	d->device = info;
	d->have_device = true;
}

static int open_store(struct daemon *d)
{
	struct blockstore_config bc = { .dir = d->path,
					.cache_bytes = d->cfg->cache_size - index_budget(d->cfg) -
						       d->cfg->cache_size / 256,
					.block_size = d->cfg->block_size };
	struct blockstore_stats st;
	int r;

	snprintf(d->path, sizeof(d->path), "%s/blocks", d->cfg->cache_dir);
	r = blockstore_open(&bc, &d->store);
	if (r < 0) {
		log_error("cannot open the block cache", "dir=%s err=\"%s\"", d->path, strerror(-r));
		return r;
	}
	blockstore_get_stats(d->store, &st);
	log_info("block cache open", "dir=%s slots=%llu block_size=%u blocks_loaded=%llu%s%s",
		 d->path, (unsigned long long)st.slots_total, d->cfg->block_size,
		 (unsigned long long)st.records_loaded, st.reset_reason ? " reset=" : "",
		 st.reset_reason ? st.reset_reason : "");
	return 0;
}

/* The proofs file takes cache_size / 256 bytes (8 bytes a slot). */
static uint32_t proof_slots_log2(uint64_t cache_size)
{
	uint32_t l = 12;

	while (l < 22 && (8ull << (l + 1)) <= cache_size / 256)
		l++;
	return l;
}

static void on_proof(void *ctx, uint64_t identity, const struct fill_object *o)
{
	struct daemon *d = ctx;

	tenancy_add(d->tenancy, identity, o->endpoint, o->bucket_name, o->key, o->etag);
}

static void save_proofs(struct evloop *loop, uint64_t id, void *data)
{
	struct daemon *d = data;

	(void)loop;
	(void)id;
	if (tenancy_dirty(d->tenancy))
		tenancy_save(d->tenancy, d->proofs);
}

static int start_core(struct daemon *d)
{
	const struct cached_config *c = d->cfg;
	struct s3_engine_config ec = { .max_connections = c->max_connections,
				       .report = s3stats_report, .attempt = s3stats_attempt,
				       .report_ctx = &d->s3stats };
	struct fill_sched_config fc = {
		.max_coalesce_blocks = (uint32_t)(c->max_coalesce / c->block_size),
		.budget_bytes = c->inflight_budget ? c->inflight_budget : cached_default_budget(NULL),
		.max_gets = c->max_connections,
	};
	struct views_config vc = { .index_budget = index_budget(c), .max_age_s = c->index_max_age_s,
				   .index_concurrency = c->index_concurrency };
	char idx[600];
	int r;

	r = s3_engine_new(&ec, &d->engine);
	if (r == 0)
		r = evloop_new(1024, 8192, &d->loop);
	if (r == 0)
		r = fill_sched_new(&fc, d->store, d->engine, d->loop, &d->fills);
	if (r == 0)
		r = tenancy_new(proof_slots_log2(c->cache_size), &d->tenancy);
	if (r < 0)
		return r;
	snprintf(d->proofs, sizeof(d->proofs), "%s/proofs", c->cache_dir);
	tenancy_load(d->tenancy, d->proofs);
	fill_sched_on_proof(d->fills, on_proof, d);
	evloop_timer_add(d->loop, 5000000000ull, 5000000000ull, save_proofs, d, NULL);
	snprintf(idx, sizeof(idx), "%s/index", c->cache_dir);
	vc.loop = d->loop;
	vc.engine = d->engine;
	vc.index_dir = idx;
	log_info("fetch scheduler", "budget_bytes=%llu max_coalesce=%llu max_gets=%u",
		 (unsigned long long)fc.budget_bytes, (unsigned long long)c->max_coalesce,
		 fc.max_gets);
	return views_new(&vc, &d->views);
}

static int start_server(struct daemon *d)
{
	struct server_config sc = {
		.loop = d->loop, .store = d->store, .fills = d->fills, .views = d->views,
		.tenancy = d->tenancy, .engine = d->engine, .s3stats = &d->s3stats,
		.device = d->have_device ? &d->device : NULL,
		.allowed_uid = d->cfg->allow_uid < 0 ? (uid_t)-1 : (uid_t)d->cfg->allow_uid,
	};
	int fd, r = usock_listen(d->cfg->socket, d->cfg->allow_uid < 0 ? 0600 : 0666, &fd);

	if (r < 0) {
		log_error("cannot listen", "socket=%s err=\"%s\"", d->cfg->socket, strerror(-r));
		return r;
	}
	r = server_new(&sc, fd, &d->server);
	if (r < 0)
		close(fd);
	return r;
}

static void on_signal(struct evloop *loop, int signo, pid_t sender, void *data)
{
	(void)data;
	log_info("stopping", "signal=%d sender=%d", signo, (int)sender);
	evloop_stop(loop);
}

static void teardown(struct daemon *d)
{
	server_free(d->server);
	if (d->tenancy && tenancy_dirty(d->tenancy))
		tenancy_save(d->tenancy, d->proofs);
	s3_engine_free(d->engine); /* cancels in flight; their posts are dropped */
	fill_sched_free(d->fills);
	views_free(d->views);
	tenancy_free(d->tenancy);
	blockstore_free(d->store);
	evloop_free(d->loop);
	if (d->server)
		unlink(d->cfg->socket);
}

int cached_run(const struct cached_config *cfg)
{
	struct daemon d = { .cfg = cfg };
	sigset_t set;
	int r;

	if (mkdir(cfg->cache_dir, 0700) < 0 && errno != EEXIST) {
		log_error("cannot create the cache dir", "cache_dir=%s err=\"%s\"", cfg->cache_dir,
			  strerror(errno));
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL); /* before any thread starts */
	signal(SIGPIPE, SIG_IGN);
	report_device(cfg, &d);
	r = open_store(&d);
	if (r == 0)
		r = start_core(&d);
	if (r == 0)
		r = evloop_signals(d.loop, &set, on_signal, &d);
	if (r == 0)
		r = start_server(&d);
	if (r == 0) {
		log_info("lith cached ready", "socket=%s cache_dir=%s cache_size=%llu",
			 cfg->socket, cfg->cache_dir, (unsigned long long)cfg->cache_size);
		r = evloop_run(d.loop);
	} else {
		log_error("lith cached failed to start", "err=\"%s\"", strerror(-r));
	}
	teardown(&d);
	return r < 0 ? 1 : 0;
}
