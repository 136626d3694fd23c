/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to fetch/s3: one request in flight (all its attempts). request.c
 * turns an attempt into a configured curl easy handle and judges the
 * outcome; engine.c schedules attempts. Runs on the engine thread only.
 */
#ifndef LITH_S3_XFER_H
#define LITH_S3_XFER_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "fetch/base/strbuf.h"
#include "fetch/s3/retry.h"
#include "fetch/s3/s3.h"

#define XFER_ERRBODY_MAX (64u << 10)

struct s3_xfer {
	struct s3_request *req;
	CURL *easy;
	struct curl_slist *headers;
	char *url;
	struct strbuf body;        /* LIST document or error body */
	uint64_t received;         /* GET bytes copied into req->buf or sunk */
	bool overflow;             /* body larger than req->cap */
	int sink_err;              /* req->sink refused the body (-errno) */
	long status;
	bool have_length;
	uint64_t content_length;
	char content_range[96];
	char etag[S3_ETAG_MAX];
	char region_hdr[64];
	char last_modified[64];
	char curl_err[CURL_ERROR_SIZE];
	unsigned attempt;          /* 1-based */
	unsigned connect_timeout_ms;
	unsigned stall_timeout_s;
	bool redirected;           /* one region redirect per request */
	uint64_t submit_ns;
	uint64_t retry_at_ns;
	struct s3_xfer *next;      /* ready/delayed/incoming queue link */
	struct s3_xfer *act_prev;  /* active list (in the multi handle) */
	struct s3_xfer *act_next;
};

enum xfer_outcome {
	XFER_DONE,     /* req->res is final (success or error) */
	XFER_RETRY,    /* back off, then retry (class in *ret_class) */
	XFER_REDIRECT, /* retry at once: the region changed */
};

/* Builds a fresh easy handle for the next attempt. */
int xfer_prepare(struct s3_xfer *x);
/* Judges a finished attempt (the easy handle is still attached). */
enum xfer_outcome xfer_finish(struct s3_xfer *x, CURLcode code, enum retry_class *ret_class);
void xfer_release(struct s3_xfer *x);

#endif
