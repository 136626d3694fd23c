// SPDX-License-Identifier: Apache-2.0
/*
 * `lith cached`: runs the node cache daemon, plus two client commands for
 * operators and tests:
 *   lith cached --socket PATH --cache-dir DIR --cache-size BYTES [...]
 *   lith cached cat --socket PATH [S3 options] s3://bucket[/prefix] FILE [-o OUT]
 *   lith cached stats --socket PATH
 * `cat` registers a view with the credentials from the environment or a
 * profile, finds FILE in the view's index and reads it through the cache
 * (bytes come from the block file, not the socket).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fetch/base/fdio.h"
#include "fetch/base/parse.h"
#include "fetch/cached/config.h"
#include "fetch/cached/daemon.h"
#include "fetch/index/index.h"
#include "fetch/s3/s3uri.h"
#include "mounter/cacheclient.h"
#include "tools/lith/cmd.h"
#include "tools/lith/s3opts.h"

struct catopts {
	struct s3opts o;
	const char *socket;
	const char *output;
	const char *volume;
	uint64_t chunk;
	enum fill_kind kind;
	bool exact;
	struct s3_uri uri;
	const char *file;
};

static const char cat_usage[] =
	"usage: lith cached cat --socket PATH [options] s3://bucket[/prefix] FILE [-o OUT]\n"
	"  --chunk SIZE       bytes per read request (default 8MiB)\n"
	"  --kind K           demand|whole|prefetch-range (default whole)\n"
	"  --exact            read like a random reader's faults: a chunk with a\n"
	"                     missing block is fetched alone, uncached (chunk <= 1MiB)\n"
	"  --volume ID        volume id for the daemon's logs and metrics\n" S3OPTS_HELP;

static int parse_cat(struct catopts *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		S3OPTS_LONGOPTS,
		{ "socket", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "kind", required_argument, NULL, 'k' },
		{ "volume", required_argument, NULL, 'v' },
		{ "exact", no_argument, NULL, 'x' },
		{ 0 },
	};
	char err[256];
	int opt;

	while ((opt = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		if (s3opts_handle(&c->o, opt, optarg))
			continue;
		switch (opt) {
		case 's': c->socket = optarg; break;
		case 'o': c->output = optarg; break;
		case 'v': c->volume = optarg; break;
		case 'x': c->exact = true; break;
		case 'c':
			if (parse_size(optarg, &c->chunk) < 0 || !c->chunk || c->chunk > (256u << 20))
				return -EINVAL;
			break;
		case 'k':
			c->kind = !strcmp(optarg, "demand") ? FILL_KIND_DEMAND
				  : !strcmp(optarg, "prefetch-range") ? FILL_KIND_PREFETCH_RANGE
								       : FILL_KIND_WHOLE;
			break;
		default: return -EINVAL;
		}
	}
	if (!c->socket || optind + 2 != argc)
		return -EINVAL;
	if (s3_uri_parse(argv[optind], &c->uri, err, sizeof(err)) < 0) {
		fprintf(stderr, "lith cached cat: %s\n", err);
		return -EINVAL;
	}
	c->file = argv[optind + 1];
	return 0;
}

/* Walks FILE's components from the root of the index. */
static int resolve(const struct index *idx, const char *path, uint64_t *ret)
{
	uint64_t ino = INDEX_ROOT_INO;
	const char *p = path;

	while (*p) {
		size_t n = strcspn(p, "/");
		int r = n ? index_lookup(idx, ino, p, n, &ino) : 0;
		if (r < 0)
			return r;
		p += n;
		p += *p == '/';
	}
	*ret = ino;
	return 0;
}

static int load_creds(struct catopts *c, struct s3_credentials *cr)
{
	struct s3_cred_provider *p;
	int r;

	if (c->o.anonymous)
		return 0;
	p = s3_creds_default_chain(c->o.profile);
	r = p ? p->load(p, cr) : -ENOMEM;
	s3_cred_provider_free(p);
	if (r < 0)
		fprintf(stderr, "lith cached cat: no credentials found (environment or profile)\n");
	return r;
}

static int copy_out(struct cache_client *cl, uint64_t view, uint64_t ino, uint64_t size,
		    struct catopts *c, int fd)
{
	char *buf = malloc(c->chunk), msg[256] = "";
	int r = buf ? 0 : -ENOMEM;

	for (uint64_t off = 0; r == 0 && off < size;) {
		ssize_t n = cache_client_read(cl, view, ino, off, c->chunk, c->kind, c->exact, buf,
					      msg, sizeof(msg));
		if (n <= 0) {
			fprintf(stderr, "lith cached cat: read at %llu: %s [%s]\n",
				(unsigned long long)off, msg, strerror(n < 0 ? (int)-n : EIO));
			r = n < 0 ? (int)n : -EIO;
			break;
		}
		r = fdio_write_all(fd, buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
	return r;
}

static int cat_file(struct cache_client *cl, const struct cache_view_info *vi, struct catopts *c)
{
	struct index *idx = NULL;
	struct index_attr a;
	uint64_t ino;
	int fd = STDOUT_FILENO, r = index_open_fd(vi->index_fd, &idx);

	if (r == 0 && (r = resolve(idx, c->file, &ino)) < 0)
		fprintf(stderr, "lith cached cat: %s: %s\n", c->file, strerror(-r));
	if (r == 0 && (r = index_getattr(idx, ino, &a)) == 0 && a.is_dir)
		r = -EISDIR;
	if (r == 0 && c->output &&
	    (fd = open(c->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		r = -errno;
	if (r == 0)
		r = copy_out(cl, vi->view, ino, a.size, c, fd);
	if (c->output && fd >= 0 && fd != STDOUT_FILENO)
		close(fd);
	if (r < 0 && c->output)
		unlink(c->output);
	index_close(idx);
	return r;
}

static int do_cat(int argc, char **argv)
{
	struct catopts c = { .chunk = 8u << 20, .kind = FILL_KIND_WHOLE };
	struct s3_credentials cr = { 0 };
	struct cache_view_info vi = { .index_fd = -1 };
	struct cache_client *cl = NULL;
	char msg[256] = "";
	int r;

	s3opts_init(&c.o);
	if (parse_cat(&c, argc, argv) < 0) {
		fputs(cat_usage, stderr);
		return 2;
	}
	r = load_creds(&c, &cr);
	if (r == 0 && (r = cache_client_connect(c.socket, "lith cached cat", &cl)) < 0)
		fprintf(stderr, "lith cached cat: %s: %s\n", c.socket, strerror(-r));
	struct view_spec vs = {
		.endpoint = c.o.endpoint, .region = c.o.region, .bucket = c.uri.bucket,
		.prefix = c.uri.key, .path_style = c.o.addressing == S3_ADDR_PATH,
		.virtual_host = c.o.addressing == S3_ADDR_VIRTUAL, .anonymous = c.o.anonymous,
		.requester_pays = c.o.requester_pays, .access_key = cr.access_key,
		.secret_key = cr.secret_key, .session_token = cr.session_token,
		.volume_id = c.volume, .ca_file = c.o.ca_file,
	};
	if (r == 0 && (r = cache_client_register(cl, &vs, &vi, msg, sizeof(msg))) < 0)
		fprintf(stderr, "lith cached cat: register s3://%s/%s: %s [%s]\n", c.uri.bucket,
			c.uri.key, msg, strerror(-r));
	if (r == 0)
		r = cat_file(cl, &vi, &c);
	if (vi.index_fd >= 0)
		close(vi.index_fd);
	s3_credentials_clear(&cr);
	cache_client_free(cl);
	return r < 0 ? 1 : 0;
}

static int do_stats(int argc, char **argv)
{
	struct cache_client *cl;
	char *text;
	int r;

	bool prom = argc == 4 && !strcmp(argv[3], "--prometheus");

	if ((argc != 3 && !prom) || strcmp(argv[1], "--socket") != 0) {
		fprintf(stderr, "usage: lith cached stats --socket PATH [--prometheus]\n");
		return 2;
	}
	r = cache_client_connect(argv[2], "lith cached stats", &cl);
	if (r == 0) {
		r = prom ? cache_client_exposition(cl, &text, NULL) : cache_client_stats_text(cl, &text);
		if (r == 0)
			fputs(text, stdout);
		free(text);
		cache_client_free(cl);
	}
	if (r < 0)
		fprintf(stderr, "lith cached stats: %s\n", strerror(-r));
	return r < 0 ? 1 : 0;
}

/* A private daemon of `lith mount` (mounter/privd.h) names its parent in
 * LITH_CACHED_PARENT: it stops when that process is gone. */
static void follow_parent(void)
{
	const char *p = getenv("LITH_CACHED_PARENT");

	if (!p)
		return;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != (pid_t)atol(p))
		raise(SIGTERM);
}

/* Fills allocate buffers of up to --max-coalesce bytes. Past glibc's
 * dynamic mmap threshold each one is a fresh mmap whose pages all fault on
 * first write, then a munmap: on a cold 1 GiB read that was about a third
 * of the daemon's CPU, and this raised its cold throughput ~1.5x (measured
 * with `lith cached cat`, see tests/bench/mount_bench.py). Keep them on the
 * heap and let freed memory be reused. A buffer pool in the S3 engine
 * would make this unnecessary. */
static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

int cmd_cached(int argc, char **argv)
{
	struct cached_config cfg;
	char err[512] = "";

	if (argc >= 2 && !strcmp(argv[1], "cat"))
		return do_cat(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "stats"))
		return do_stats(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(cached_usage, stdout);
		return 0;
	}
	if (cached_config_parse(argc, argv, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "lith cached: %s\n%s", err, cached_usage);
		return 2;
	}
	follow_parent();
	tune_malloc();
	return cached_run(&cfg);
}
