// SPDX-License-Identifier: Apache-2.0
/*
 * Blocking wrappers over s3_submit for tools and tests: submit, then wait on
 * a condition variable until the engine thread completes the request. Must
 * not be called from the engine thread (the done callback).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "fetch/s3/s3.h"

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void wake(struct s3_request *req)
{
	struct waiter *w = req->ctx;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int s3_run(struct s3_engine *e, struct s3_request *req)
{
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	int r;

	req->done = wake;
	req->ctx = &w;
	r = s3_submit(e, req);
	if (r < 0) {
		req->res.err = r;
		return r;
	}
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return req->res.err;
}

int s3_head(struct s3_engine *e, struct s3_bucket *b, const char *key, struct s3_result *ret)
{
	struct s3_request req = { .op = S3_OP_HEAD, .bucket = b, .key = key };
	int r = s3_run(e, &req);

	*ret = req.res;
	return r;
}

int s3_get(struct s3_engine *e, struct s3_bucket *b, const char *key, uint64_t offset,
	   uint64_t length, const char *if_match, void *buf, size_t cap,
	   struct s3_result *ret)
{
	struct s3_request req = { .op = S3_OP_GET, .bucket = b, .key = key, .offset = offset,
				  .length = length, .if_match = if_match, .buf = buf,
				  .cap = cap };
	int r = s3_run(e, &req);

	*ret = req.res;
	return r;
}

int s3_list(struct s3_engine *e, struct s3_bucket *b, const struct s3_list_args *args,
	    struct s3_list_page *ret_page, struct s3_result *ret)
{
	struct s3_request req = { .op = S3_OP_LIST, .bucket = b, .list = *args };
	int r = s3_run(e, &req);

	*ret = req.res;
	if (r == 0)
		*ret_page = req.page;
	return r;
}
