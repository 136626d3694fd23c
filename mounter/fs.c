// SPDX-License-Identifier: Apache-2.0
/*
 * The filesystem object and its dispatch table (see fs.h): which libfuse
 * operation goes to which fs_*.c function, and the INIT negotiation.
 * INIT runs once, on a worker thread (or the main thread when the session
 * answers or replays it itself, session.h); everything else in fs_*.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fetch/base/macro.h"
#include "mounter/fs_impl.h"

#define DEFAULT_TIMEOUT_S 86400.0
#define DEFAULT_MAX_READ (1u << 20)
#define DEFAULT_BACKGROUND 64u
#define DEFAULT_STALL_US 2000u

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct lithfs *fs = userdata;

	conn->max_read = fs->cfg.max_read;          /* must match -o max_read */
	conn->max_readahead = fs->cfg.max_readahead; /* the kernel keeps the minimum */
	conn->max_background = fs->cfg.max_background;
	conn->congestion_threshold = fs->cfg.max_background * 3 / 4;
	conn->want |= conn->capable & (FUSE_CAP_ASYNC_READ | FUSE_CAP_PARALLEL_DIROPS |
				       FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
	/* no splice (slower here than copying), and nothing ever changes */
	conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				  FUSE_CAP_SPLICE_MOVE | FUSE_CAP_AUTO_INVAL_DATA |
				  FUSE_CAP_WRITEBACK_CACHE);
	pthread_mutex_lock(&fs->init_lock);
	fs->init_done = true;
	pthread_cond_broadcast(&fs->init_cond);
	pthread_mutex_unlock(&fs->init_lock);
}

static struct fuse_lowlevel_ops ops;
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

static void build_ops(void)
{
	ops.init = fs_init;
	ops.forget = fs_forget;
	ops.forget_multi = fs_forget_multi;
	ops.flush = fs_flush;
	fs_timed_fill(&ops);
	fs_rofs_fill(&ops);
}

const struct fuse_lowlevel_ops *lithfs_ops(void)
{
	pthread_once(&ops_once, build_ops);
	return &ops;
}

static void defaults(struct lithfs_config *c)
{
	if (c->timeout <= 0)
		c->timeout = DEFAULT_TIMEOUT_S;
	if (!c->max_read)
		c->max_read = DEFAULT_MAX_READ;
	if (!c->max_readahead)
		c->max_readahead = c->max_read;
	if (!c->max_background)
		c->max_background = DEFAULT_BACKGROUND;
	if (!c->stall_us)
		c->stall_us = DEFAULT_STALL_US;
	ra_config_normalize(&c->ra);
}

int lithfs_new(const struct lithfs_config *cfg, const struct index *idx, struct cachelink *link,
	       struct lithfs **ret)
{
	struct lithfs *fs = calloc(1, sizeof(*fs));

	if (!fs)
		return -ENOMEM;
	fs->cfg = *cfg;
	defaults(&fs->cfg);
	fs->idx = idx;
	fs->link = link;
	index_get_stats(idx, &fs->ist);
	pthread_mutex_init(&fs->init_lock, NULL);
	pthread_cond_init(&fs->init_cond, NULL);
	pthread_mutex_init(&fs->handles_lock, NULL);
	pthread_mutex_init(&fs->sib_lock, NULL);
	*ret = fs;
	return 0;
}

void lithfs_free(struct lithfs *fs)
{
	if (!fs)
		return;
	fs_free_handles(fs);
	pthread_mutex_destroy(&fs->handles_lock);
	pthread_mutex_destroy(&fs->sib_lock);
	pthread_mutex_destroy(&fs->init_lock);
	pthread_cond_destroy(&fs->init_cond);
	free(fs);
}

int lithfs_wait_init(struct lithfs *fs, unsigned timeout_ms)
{
	struct timespec ts;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&fs->init_lock);
	while (!fs->init_done && r == 0)
		r = pthread_cond_timedwait(&fs->init_cond, &fs->init_lock, &ts);
	r = fs->init_done ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&fs->init_lock);
	return r;
}

void lithfs_get_stats(struct lithfs *fs, struct lithfs_stats *ret)
{
	*ret = (struct lithfs_stats){
		.opens = fs->opens, .reads = fs->reads, .read_bytes = fs->read_bytes,
		.read_errors = fs->read_errors, .stalls = fs->stalls,
		.prefetches = fs->prefetches,
	};
}
