// SPDX-License-Identifier: Apache-2.0
/*
 * `lith index build|inspect`: builds a namespace index file from a bucket
 * (hybrid fan-out then flat listing by default, or --fanout-all, or
 * --serial; see fetch/index/build.h) and prints what an index file holds,
 * for operators. Output is line-oriented text: build prints one key=value
 * summary line; inspect prints "name: value" lines ("build mode: fanout"
 * for both fan-out strategies: the file records only serial or not), and
 * with --list one tab-separated line per entry. Keys and paths are printed with
 * C-style escapes for control bytes and backslash (bytes >= 0x80 verbatim),
 * so one entry is always one line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fetch/base/parse.h"
#include "fetch/index/build.h"
#include "fetch/index/index.h"
#include "fetch/s3/s3uri.h"
#include "tools/lith/cmd.h"
#include "tools/lith/s3opts.h"

static const char usage_text[] =
	"usage: lith index build s3://bucket[/prefix] -o FILE [--serial | --fanout-all]\n"
	"                        [--concurrency N] [--flat-at N] [--max-keys N]\n"
	"                        [--page-keys N] [S3 options]\n"
	"       lith index inspect FILE [--list]\n"
	"build options:\n"
	"  -o, --output FILE    where to write the index (atomically)\n"
	"  (default: fan out over common prefixes until there is enough parallel\n"
	"  work, then list each remaining prefix's whole subtree without delimiter)\n"
	"  --serial             one LIST walk without delimiter, page after page\n"
	"  --fanout-all         list every common prefix with the delimiter\n"
	"  --concurrency N      LIST requests in flight when fanning out (default 32)\n"
	"  --flat-at N          default mode: list new prefixes flat once N work items\n"
	"                       are outstanding (default: concurrency / 2)\n"
	"  --max-keys N         refuse listings with more keys, prefixes or entries\n"
	"                       (default 50000000)\n"
	"  --page-keys N        max-keys per LIST request (default: server's, 1000)\n"
	S3OPTS_HELP
	"inspect options:\n"
	"  --list               print every entry: f|d TAB size TAB etag TAB path\n";

struct build_args {
	struct s3opts o;
	struct s3_uri uri;
	const char *output;
	struct index_build_config cfg;
	bool strategy_set;
};

/* ---- printing ------------------------------------------------------------ */

static void put_escaped(FILE *f, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\')
			fputs("\\\\", f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

/* ---- build --------------------------------------------------------------- */

static int parse_count(const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *ret)
{
	uint64_t v;

	if (parse_u64(arg, &v) < 0 || v < lo || v > hi) {
		fprintf(stderr, "lith index: %s %s: expected %llu..%llu\n", opt, arg,
			(unsigned long long)lo, (unsigned long long)hi);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int set_strategy(struct build_args *a, enum index_strategy s)
{
	if (a->strategy_set && a->cfg.strategy != s) {
		fprintf(stderr, "lith index: --serial and --fanout-all exclude each other\n");
		return -EINVAL;
	}
	a->strategy_set = true;
	a->cfg.strategy = s;
	return 0;
}

static int build_option(struct build_args *a, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'o': a->output = arg; return 0;
	case 's': return set_strategy(a, INDEX_STRATEGY_SERIAL);
	case 'F': return set_strategy(a, INDEX_STRATEGY_FANOUT);
	case 'f':
		if (parse_count("--flat-at", arg, 1, INDEX_MAX_CONCURRENCY, &v) < 0)
			return -EINVAL;
		a->cfg.flat_at = (unsigned)v;
		return 0;
	case 'c':
		if (parse_count("--concurrency", arg, 1, INDEX_MAX_CONCURRENCY, &v) < 0)
			return -EINVAL;
		a->cfg.concurrency = (unsigned)v;
		return 0;
	case 'm':
		return parse_count("--max-keys", arg, 1, INDEX_MAX_ENTRIES_LIMIT, &a->cfg.max_keys);
	case 'p':
		if (parse_count("--page-keys", arg, 1, 1000, &v) < 0)
			return -EINVAL;
		a->cfg.page_keys = (unsigned)v;
		return 0;
	case 'h': fputs(usage_text, stdout); exit(0);
	default: fputs(usage_text, stderr); return -EINVAL;
	}
}

static int parse_build(struct build_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		S3OPTS_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "serial", no_argument, NULL, 's' },
		{ "fanout-all", no_argument, NULL, 'F' },
		{ "flat-at", required_argument, NULL, 'f' },
		{ "concurrency", required_argument, NULL, 'c' },
		{ "max-keys", required_argument, NULL, 'm' },
		{ "page-keys", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char err[256];
	int opt;

	while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1)
		if (!s3opts_handle(&a->o, opt, optarg) && build_option(a, opt, optarg) < 0)
			return -EINVAL;
	if (optind + 1 != argc || !a->output) {
		fputs(usage_text, stderr);
		return -EINVAL;
	}
	if (s3_uri_parse(argv[optind], &a->uri, err, sizeof(err)) < 0) {
		fprintf(stderr, "lith index: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

static void print_build(const struct build_args *a, const struct index_build_stats *st)
{
	const struct index_tree_counts *c = &st->counts;
	bool serial = a->cfg.strategy == INDEX_STRATEGY_SERIAL;

	printf("lith index build: file=%s mode=%s concurrency=%u keys_listed=%llu files=%llu "
	       "dirs=%llu total_bytes=%llu skipped=%llu requests=%llu prefixes=%llu flat=%llu "
	       "retries=%llu max_inflight=%u seconds=%.3f\n",
	       a->output, index_strategy_name(a->cfg.strategy),
	       serial ? 1 : a->cfg.concurrency, (unsigned long long)c->keys_listed,
	       (unsigned long long)c->files, (unsigned long long)c->dirs,
	       (unsigned long long)c->total_bytes, (unsigned long long)c->skipped[0],
	       (unsigned long long)st->requests, (unsigned long long)st->prefixes,
	       (unsigned long long)st->flat, (unsigned long long)st->retries,
	       st->max_inflight, st->seconds);
}

static int run_build(struct build_args *a)
{
	unsigned conns = a->cfg.strategy == INDEX_STRATEGY_SERIAL ? 1 : a->cfg.concurrency;
	struct s3_engine_config ec = { .max_connections = conns, .max_queued = conns + 16 };
	struct index_build_stats st;
	char err[512] = "";
	int r;

	if (s3opts_bucket(&a->o, a->uri.bucket, &a->cfg.bucket) < 0)
		return 1;
	r = s3_engine_new(&ec, &a->cfg.engine);
	if (r < 0) {
		fprintf(stderr, "lith index: cannot start the S3 engine: %s\n", strerror(-r));
		s3_bucket_free(a->cfg.bucket);
		return 1;
	}
	a->cfg.endpoint = a->o.endpoint;
	a->cfg.prefix = a->uri.key;
	r = index_build(&a->cfg, a->output, &st, err, sizeof(err));
	s3_engine_free(a->cfg.engine);
	s3_bucket_free(a->cfg.bucket);
	if (r < 0) {
		fprintf(stderr, "lith index build s3://%s/%s: %s\n", a->uri.bucket, a->uri.key,
			err[0] ? err : strerror(-r));
		return 1;
	}
	print_build(a, &st);
	return 0;
}

static int cmd_build(int argc, char **argv)
{
	struct build_args a = { .cfg.concurrency = INDEX_DEFAULT_CONCURRENCY };

	s3opts_init(&a.o);
	if (parse_build(&a, argc, argv) < 0)
		return 2;
	return run_build(&a);
}

/* ---- inspect ------------------------------------------------------------- */

static void print_samples(const struct index *idx, const struct index_stats *st,
			  enum index_skip reason)
{
	for (size_t i = 0; i < st->samples; i++) {
		enum index_skip r;
		const char *key;
		size_t len;

		if (index_sample(idx, i, &r, &key, &len) < 0 || r != reason)
			continue;
		fputs("    ", stdout);
		put_escaped(stdout, key, len);
		fputc('\n', stdout);
	}
}

static void print_when(const struct index_stats *st)
{
	char date[32] = "?";
	struct tm tm;
	time_t t = (time_t)st->build_time;

	if (gmtime_r(&t, &tm))
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("built: %s (unix %lld)\n", date, (long long)st->build_time);
	printf("build seconds: %.3f\n", (double)st->build_usec / 1e6);
	printf("build mode: %s\n", st->serial ? "serial" : "fanout");
	printf("concurrency: %u\n", st->concurrency);
	printf("list requests: %llu\n", (unsigned long long)st->list_requests);
}

static void print_summary(const char *path, const struct index *idx)
{
	struct index_stats st;

	index_get_stats(idx, &st);
	printf("file: %s\nfile bytes: %llu\nformat version: %u\n", path,
	       (unsigned long long)st.file_size, st.version);
	printf("source: s3://%.*s/", (int)st.bucket_len, st.bucket);
	put_escaped(stdout, st.prefix, st.prefix_len);
	printf("\nendpoint: %.*s\n", (int)st.endpoint_len, st.endpoint);
	print_when(&st);
	printf("keys listed: %llu\nfiles: %llu\ndirectories: %llu\nmarkers: %llu\n"
	       "total bytes: %llu\nskipped: %llu\n",
	       (unsigned long long)st.keys_listed, (unsigned long long)st.files,
	       (unsigned long long)st.dirs, (unsigned long long)st.markers,
	       (unsigned long long)st.total_bytes, (unsigned long long)st.skipped[0]);
	for (int r = 1; r < INDEX_SKIP__COUNT; r++) {
		if (!st.skipped[r])
			continue;
		printf("  %s: %llu\n", index_skip_name((enum index_skip)r),
		       (unsigned long long)st.skipped[r]);
		print_samples(idx, &st, (enum index_skip)r);
	}
}

static void print_entry(const struct index *idx, uint64_t ino, char *path, size_t cap)
{
	struct index_attr at;
	char etag[INDEX_ETAG_MAX + 1] = "-";
	int len = index_path(idx, ino, path, cap);

	if (len < 0 || index_getattr(idx, ino, &at) < 0)
		return;
	if (!at.is_dir && index_etag(idx, ino, etag, sizeof(etag)) == 0)
		strcpy(etag, "-");
	if (at.is_dir)
		fputs("d\t-\t-\t", stdout);
	else
		printf("f\t%llu\t%s\t", (unsigned long long)at.size, etag);
	put_escaped(stdout, path, (size_t)len);
	fputs(at.is_dir ? "/\n" : "\n", stdout);
}

static int print_list(const struct index *idx)
{
	struct index_stats st;
	size_t cap = 1 << 20;
	char *path = malloc(cap);

	if (!path) {
		fprintf(stderr, "lith index: out of memory\n");
		return 1;
	}
	index_get_stats(idx, &st);
	for (uint64_t ino = INDEX_ROOT_INO + 1; ino <= st.entries; ino++)
		print_entry(idx, ino, path, cap);
	free(path);
	return 0;
}

static int cmd_inspect(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct index *idx;
	bool list = false;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "lh", longopts, NULL)) != -1) {
		if (opt == 'l')
			list = true;
		else {
			fputs(usage_text, opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind + 1 != argc) {
		fputs(usage_text, stderr);
		return 2;
	}
	r = index_open(argv[optind], &idx);
	if (r < 0) {
		fprintf(stderr, "lith index inspect %s: %s\n", argv[optind],
			r == -EBADMSG ? "not a valid index file (corrupt, truncated or another "
					"format version)" : strerror(-r));
		return 1;
	}
	r = list ? print_list(idx) : (print_summary(argv[optind], idx), 0);
	index_close(idx);
	return r;
}

int cmd_index(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "build"))
		return cmd_build(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "inspect"))
		return cmd_inspect(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	fputs(usage_text, stderr);
	return 2;
}
