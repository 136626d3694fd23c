// SPDX-License-Identifier: Apache-2.0
/*
 * `lith s3 ls|head|get|bench`: direct S3 access for operators and for
 * measuring the transport ceiling. Each subcommand parses its options,
 * builds one engine and one bucket, and prints results on stdout; errors go
 * to stderr with the S3 message.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fetch/base/parse.h"
#include "fetch/s3/s3uri.h"
#include "tools/lith/cmd.h"
#include "tools/lith/s3opts.h"
#include "tools/lith/transfer.h"

struct s3cmd {
	struct s3opts o;
	struct s3_uri uri;
	struct s3_engine *engine;
	struct s3_bucket *bucket;
	/* subcommand options */
	const char *range;
	const char *output;
	const char *if_match;
	uint64_t part_size;
	unsigned concurrency;
	bool recursive;
};

static const char usage_text[] =
	"usage: lith s3 ls    s3://bucket[/prefix] [--recursive]\n"
	"       lith s3 head  s3://bucket/key\n"
	"       lith s3 get   s3://bucket/key [--range A-B] [-o FILE] [--if-match ETAG]\n"
	"       lith s3 bench s3://bucket/key [--concurrency N] [--part-size SIZE]\n"
	"options:\n" S3OPTS_HELP
	"  --concurrency N      parallel ranged GETs (get: 8, bench: 16)\n"
	"  --part-size SIZE     bytes per ranged GET (default 8MiB)\n"
	"credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY[/AWS_SESSION_TOKEN], or a profile\n";

static int parse_args(struct s3cmd *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		S3OPTS_LONGOPTS,
		{ "range", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "concurrency", required_argument, NULL, 'c' },
		{ "part-size", required_argument, NULL, 'p' },
		{ "recursive", no_argument, NULL, 'R' },
		{ "if-match", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	char err[256];
	int opt;

	while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if (s3opts_handle(&c->o, opt, optarg))
			continue;
		switch (opt) {
		case 'r': c->range = optarg; break;
		case 'o': c->output = optarg; break;
		case 'R': c->recursive = true; break;
		case 'E': c->if_match = optarg; break;
		case 'c':
			if (parse_u64(optarg, &v) < 0 || v < 1 || v > 1024) {
				fprintf(stderr, "lith s3: --concurrency %s: expected 1..1024\n", optarg);
				return -EINVAL;
			}
			c->concurrency = (unsigned)v;
			break;
		case 'p':
			if (parse_size(optarg, &v) < 0 || v < 4096 || v > (1ull << 30)) {
				fprintf(stderr, "lith s3: --part-size %s: expected 4KiB..1GiB\n", optarg);
				return -EINVAL;
			}
			c->part_size = v;
			break;
		case 'h': fputs(usage_text, stdout); exit(0);
		default: fputs(usage_text, stderr); return -EINVAL;
		}
	}
	if (optind + 1 != argc) {
		fputs(usage_text, stderr);
		return -EINVAL;
	}
	if (s3_uri_parse(argv[optind], &c->uri, err, sizeof(err)) < 0) {
		fprintf(stderr, "lith s3: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

static int open_client(struct s3cmd *c)
{
	struct s3_engine_config ec = { .max_connections = c->concurrency ? c->concurrency : 8 };
	int r = s3opts_bucket(&c->o, c->uri.bucket, &c->bucket);

	if (r < 0)
		return r;
	r = s3_engine_new(&ec, &c->engine);
	if (r < 0)
		fprintf(stderr, "lith s3: cannot start the S3 engine: %s\n", strerror(-r));
	return r;
}

static int report(const char *what, const struct s3cmd *c, const struct s3_result *res)
{
	fprintf(stderr, "lith s3 %s s3://%s/%s: %s [%s]\n", what, c->uri.bucket, c->uri.key,
		res->errmsg[0] ? res->errmsg : strerror(-res->err), strerror(-res->err));
	return 1;
}

static void print_object(const struct s3_object *o)
{
	char date[32];
	struct tm tm;
	time_t t = (time_t)o->mtime;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s %12llu %s\n", date, (unsigned long long)o->size, o->key);
}

static int do_ls(struct s3cmd *c)
{
	struct s3_list_args a = { .prefix = c->uri.key, .delimiter = c->recursive ? NULL : "/" };
	struct s3_list_page page;
	struct s3_result res;
	char *token = NULL;
	int r;

	do {
		a.continuation_token = token;
		r = s3_list(c->engine, c->bucket, &a, &page, &res);
		free(token);
		token = NULL;
		if (r < 0)
			return report("ls", c, &res);
		for (size_t i = 0; i < page.nprefixes; i++)
			printf("%31s %s\n", "PRE", page.prefixes[i]);
		for (size_t i = 0; i < page.nobjects; i++)
			print_object(&page.objects[i]);
		if (page.truncated && page.next_token)
			token = strdup(page.next_token);
		s3_list_page_free(&page);
	} while (token);
	return 0;
}

static int do_head(struct s3cmd *c)
{
	struct s3_result res;

	if (s3_head(c->engine, c->bucket, c->uri.key, &res) < 0)
		return report("head", c, &res);
	printf("size=%llu etag=%s mtime=%lld\n", (unsigned long long)res.object_size, res.etag,
	       (long long)res.mtime);
	return 0;
}

static int resolve_range(struct s3cmd *c, const struct s3_result *head, uint64_t *first,
			 uint64_t *last)
{
	if (!c->range) {
		*first = 0;
		*last = head->object_size - 1;
		return head->object_size ? 0 : 1; /* 1: empty object */
	}
	if (parse_range(c->range, first, last) < 0) {
		fprintf(stderr, "lith s3 get: --range %s: expected FIRST-LAST (inclusive)\n",
			c->range);
		return -EINVAL;
	}
	if (*first >= head->object_size) {
		fprintf(stderr, "lith s3 get: range starts past the end (%llu bytes)\n",
			(unsigned long long)head->object_size);
		return -ERANGE;
	}
	if (*last >= head->object_size)
		*last = head->object_size - 1;
	return 0;
}

static int run_transfer(struct s3cmd *c, int out_fd, struct transfer_stats *st)
{
	struct transfer_spec spec = { .key = c->uri.key, .part_size = c->part_size,
				      .concurrency = c->concurrency, .out_fd = out_fd };
	struct s3_result head;
	int r;

	if (s3_head(c->engine, c->bucket, c->uri.key, &head) < 0)
		return report("head", c, &head);
	spec.etag = c->if_match ? c->if_match : head.etag;
	r = resolve_range(c, &head, &spec.first, &spec.last);
	if (r != 0)
		return r < 0 ? 1 : 0;
	return transfer_run(c->engine, c->bucket, &spec, st) < 0 ? 1 : 0;
}

static int do_get(struct s3cmd *c)
{
	struct transfer_stats st;
	int fd = STDOUT_FILENO, r;

	if (c->output) {
		fd = open(c->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			fprintf(stderr, "lith s3 get: %s: %s\n", c->output, strerror(errno));
			return 1;
		}
	}
	r = run_transfer(c, fd, &st);
	if (c->output && close(fd) < 0 && r == 0) {
		fprintf(stderr, "lith s3 get: %s: %s\n", c->output, strerror(errno));
		r = 1;
	}
	if (r && c->output)
		unlink(c->output); /* never leave a partial file that looks complete */
	return r;
}

static int do_bench(struct s3cmd *c)
{
	struct transfer_stats st = { 0 };
	int r = run_transfer(c, -1, &st);

	if (r)
		return r;
	printf("lith s3 bench: bytes=%llu seconds=%.3f MB/s=%.1f concurrency=%u "
	       "part_size=%llu requests=%u retries=%u mean_ttfb_ms=%.1f\n",
	       (unsigned long long)st.bytes, st.seconds,
	       st.seconds > 0 ? (double)st.bytes / 1e6 / st.seconds : 0.0, c->concurrency,
	       (unsigned long long)c->part_size, st.requests, st.retries,
	       st.requests ? st.ttfb_sum_s * 1000 / st.requests : 0.0);
	return 0;
}

int cmd_s3(int argc, char **argv)
{
	static const struct { const char *name; int (*run)(struct s3cmd *); unsigned conc; }
		subs[] = { { "ls", do_ls, 4 }, { "head", do_head, 1 },
			   { "get", do_get, 8 }, { "bench", do_bench, 16 } };
	struct s3cmd c = { .part_size = 8ull << 20 };
	int r = 2;

	if (argc < 2) {
		fputs(usage_text, stderr);
		return 2;
	}
	s3opts_init(&c.o);
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (strcmp(argv[1], subs[i].name) != 0)
			continue;
		c.concurrency = subs[i].conc;
		if (parse_args(&c, argc - 1, argv + 1) < 0)
			return 2;
		if (subs[i].run != do_ls && !c.uri.key[0]) {
			fprintf(stderr, "lith s3 %s: a key is required (s3://bucket/key)\n",
				subs[i].name);
			return 2;
		}
		r = open_client(&c) < 0 ? 1 : subs[i].run(&c);
		s3_engine_free(c.engine);
		s3_bucket_free(c.bucket);
		return r;
	}
	fprintf(stderr, "lith s3: unknown subcommand '%s'\n", argv[1]);
	fputs(usage_text, stderr);
	return 2;
}
