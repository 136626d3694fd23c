// SPDX-License-Identifier: Apache-2.0
/*
 * `lith mount` and `lith umount`: command-line parsing for mounter/lmount.h
 * and mounter/unmount.h.
 *   lith mount [options] s3://bucket[/prefix] MOUNTPOINT
 *   lith mount --fuse-fd N [options] s3://bucket[/prefix] [MOUNTPOINT]
 *   lith mount --fuse-fd N --takeover --init-file F [options] SOURCE [MOUNTPOINT]
 *   lith umount [--lazy] [--timeout SECS] MOUNTPOINT
 * Credentials come from the environment or a profile (as for every S3
 * command) and are handed to the cache daemon with the view; they are
 * loaded before the mounter goes to the background so a missing key is
 * reported to the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/base/parse.h"
#include "fetch/s3/creds.h"
#include "fetch/s3/s3uri.h"
#include "mounter/lmount.h"
#include "mounter/mstats.h"
#include "mounter/statusfd.h"
#include "mounter/unmount.h"
#include "tools/lith/cmd.h"
#include "tools/lith/s3opts.h"

#define MIB (1ull << 20)

static const char mount_usage[] =
	"usage: lith mount [options] s3://bucket[/prefix] MOUNTPOINT\n"
	"       lith mount --fuse-fd N [options] s3://bucket[/prefix] [MOUNTPOINT]\n"
	"Mounts an S3 prefix read-only. Returns once the mount serves its root (the\n"
	"mounter stays in the background until `lith umount`, SIGTERM or SIGINT).\n"
	"  --cache-socket PATH  node cache daemon (default " LMOUNT_DEFAULT_SOCKET ");\n"
	"                       when none answers, a private one is started\n"
	"  --private-cache      always start a private cache daemon\n"
	"  --no-private-cache   never: no daemon on --cache-socket is an error (a\n"
	"                       daemon that refuses the view always is one)\n"
	"  --cache-dir DIR      the private daemon's cache, kept across mounts (default:\n"
	"                       /var/cache/lith-private/HASH-OF-MOUNTPOINT, removed\n"
	"                       when the mount ends)\n"
	"  --cache-size SIZE    the private daemon's cache size (default 1GiB)\n"
	"  --uid N, --gid N     owner of every file (default: the caller)\n"
	"  --exec               files are 0555 instead of 0444 (directories: 0555)\n"
	"  --allow-other        let other users see the mount\n"
	"  --small-file SIZE    files up to SIZE are fetched whole on first read (4MiB)\n"
	"  --readahead-min SIZE first sequential prefetch window (8MiB)\n"
	"  --readahead-max SIZE largest window (256MiB)\n"
	"  --daemon-wait SECS   reads wait this long for a lost cache daemon, then\n"
	"                       fail with EIO (default 30)\n"
	"  --attr-timeout SECS  kernel attribute/entry cache (default 86400)\n"
	"  --max-threads N      FUSE worker threads (default 64)\n"
	"  --volume-id ID       volume id for the daemon's logs and metrics\n"
	"  --pod-namespace NS, --pod-name NAME\n"
	"                       the pod's, labels for the metrics (podInfoOnMount)\n"
	"  --stats-fd N         keep the FUSE metrics in this shared memory region\n"
	"                       (a memfd from lith csi; default: private)\n"
	"  --fuse-fd N          serve a FUSE connection already mounted by the caller\n"
	"  --init-file PATH     (with --fuse-fd) keep the connection's FUSE_INIT request\n"
	"                       in PATH (0600), so a successor can take over\n"
	"  --takeover           (with --fuse-fd, --init-file) serve a connection whose\n"
	"                       server died: replay PATH's INIT, have the kernel re-send\n"
	"                       the requests it had read; mounts nothing, waits for no\n"
	"                       INIT. Give the same options as the first server.\n"
	"  --status-fd N        write \"ERRNO<TAB>MESSAGE\\n\" to fd N once started (0\n"
	"                       once the root is served) and close it\n"
	"  --foreground, -f     stay in the foreground\n"
	"  --log-file PATH      the background mounter's log\n"
	"                       (default /run/lith/mounts/HASH.log)\n"
	"  --debug              libfuse's request trace (with --foreground)\n" S3OPTS_HELP;

static const char umount_usage[] =
	"usage: lith umount [--lazy] [--timeout SECS] MOUNTPOINT\n"
	"Unmounts a lith mount and waits for its mounter to exit. A mount in use\n"
	"(open files, a working directory inside) is refused; --lazy detaches it\n"
	"at once and lets open files read on until they are closed.\n";

struct mountopts {
	struct s3opts o;
	struct lmount_config lc;
	struct s3_uri uri;
	char source[1400];
	char mountpoint[PATH_MAX];
	char cache_dir[PATH_MAX], cache_socket[PATH_MAX], log_file[PATH_MAX];
	char init_file[PATH_MAX];
	int stats_fd;
};

enum {
	OPT_SOCKET = 0x200, OPT_PRIVATE, OPT_CACHE_DIR, OPT_CACHE_SIZE, OPT_UID, OPT_GID,
	OPT_EXEC, OPT_ALLOW_OTHER, OPT_SMALL, OPT_RA_MIN, OPT_RA_MAX, OPT_WAIT, OPT_ATTR,
	OPT_THREADS, OPT_VOLUME, OPT_FUSE_FD, OPT_LOG, OPT_DEBUG, OPT_NO_PRIVATE, OPT_INIT_FILE,
	OPT_TAKEOVER, OPT_STATUS_FD, OPT_STATS_FD, OPT_POD_NS, OPT_POD_NAME,
};

static int parse_uint(const char *s, uint64_t max, uint64_t *ret)
{
	uint64_t v;

	if (parse_u64(s, &v) < 0 || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* One mount-specific option; -EINVAL on a bad value. */
static int handle(struct mountopts *m, int opt, const char *arg)
{
	struct lmount_config *c = &m->lc;
	uint64_t v = 0;
	int r = 0;

	switch (opt) {
	case OPT_SOCKET: c->cache_socket = arg; break;
	case OPT_PRIVATE: c->private_daemon = true; break;
	case OPT_CACHE_DIR: c->cache_dir = arg; break;
	case OPT_CACHE_SIZE: r = parse_size(arg, &c->cache_size); break;
	case OPT_UID: r = parse_uint(arg, UINT32_MAX - 1, &v); c->fs.uid = (uid_t)v; break;
	case OPT_GID: r = parse_uint(arg, UINT32_MAX - 1, &v); c->fs.gid = (gid_t)v; break;
	case OPT_EXEC: c->fs.exec = true; break;
	case OPT_ALLOW_OTHER: c->allow_other = true; break;
	case OPT_SMALL: r = parse_size(arg, &c->fs.ra.small_file); break;
	case OPT_RA_MIN: r = parse_size(arg, &c->fs.ra.min_window); break;
	case OPT_RA_MAX: r = parse_size(arg, &c->fs.ra.max_window); break;
	case OPT_WAIT: r = parse_uint(arg, 86400, &v); c->daemon_wait_ms = (unsigned)v * 1000; break;
	case OPT_ATTR: r = parse_uint(arg, 1u << 30, &v); c->fs.timeout = v ? (double)v : 1e-9; break;
	case OPT_THREADS: r = parse_uint(arg, 1024, &v); c->max_threads = (unsigned)v; break;
	case OPT_VOLUME: c->spec.volume_id = arg; break;
	case OPT_FUSE_FD: r = parse_uint(arg, INT_MAX, &v); c->fuse_fd = (int)v; break;
	case OPT_LOG: c->log_file = arg; break;
	case OPT_DEBUG: c->debug = true; break;
	case OPT_NO_PRIVATE: c->no_private_daemon = true; break;
	case OPT_INIT_FILE: c->init_file = arg; break;
	case OPT_TAKEOVER: c->takeover = true; break;
	case OPT_STATUS_FD: r = parse_uint(arg, INT_MAX, &v); c->status_fd = (int)v; break;
	case OPT_STATS_FD: r = parse_uint(arg, INT_MAX, &v); m->stats_fd = (int)v; break;
	case OPT_POD_NS: c->spec.pod_namespace = arg; break;
	case OPT_POD_NAME: c->spec.pod_name = arg; break;
	case 'f': c->foreground = true; break;
	default: r = -EINVAL;
	}
	return r;
}

static int parse_opts(struct mountopts *m, int argc, char **argv)
{
	static const struct option longopts[] = {
		S3OPTS_LONGOPTS,
		{ "cache-socket", required_argument, NULL, OPT_SOCKET },
		{ "private-cache", no_argument, NULL, OPT_PRIVATE },
		{ "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
		{ "cache-size", required_argument, NULL, OPT_CACHE_SIZE },
		{ "uid", required_argument, NULL, OPT_UID },
		{ "gid", required_argument, NULL, OPT_GID },
		{ "exec", no_argument, NULL, OPT_EXEC },
		{ "allow-other", no_argument, NULL, OPT_ALLOW_OTHER },
		{ "small-file", required_argument, NULL, OPT_SMALL },
		{ "readahead-min", required_argument, NULL, OPT_RA_MIN },
		{ "readahead-max", required_argument, NULL, OPT_RA_MAX },
		{ "daemon-wait", required_argument, NULL, OPT_WAIT },
		{ "attr-timeout", required_argument, NULL, OPT_ATTR },
		{ "max-threads", required_argument, NULL, OPT_THREADS },
		{ "volume-id", required_argument, NULL, OPT_VOLUME },
		{ "fuse-fd", required_argument, NULL, OPT_FUSE_FD },
		{ "foreground", no_argument, NULL, 'f' },
		{ "log-file", required_argument, NULL, OPT_LOG },
		{ "debug", no_argument, NULL, OPT_DEBUG },
		{ "no-private-cache", no_argument, NULL, OPT_NO_PRIVATE },
		{ "init-file", required_argument, NULL, OPT_INIT_FILE },
		{ "takeover", no_argument, NULL, OPT_TAKEOVER },
		{ "status-fd", required_argument, NULL, OPT_STATUS_FD },
		{ "stats-fd", required_argument, NULL, OPT_STATS_FD },
		{ "pod-namespace", required_argument, NULL, OPT_POD_NS },
		{ "pod-name", required_argument, NULL, OPT_POD_NAME },
		{ 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "f", longopts, NULL)) != -1) {
		if (s3opts_handle(&m->o, opt, optarg))
			continue;
		if (handle(m, opt, optarg) < 0) {
			if (opt != '?')
				fprintf(stderr, "lith mount: bad value '%s'\n", optarg ? optarg : "");
			return -EINVAL;
		}
	}
	return 0;
}

/* The mounter works from "/" once in the background: paths given
 * relative to the caller's directory are made absolute first. */
static const char *absolute(const char *p, char *buf, size_t cap)
{
	char cwd[PATH_MAX];
	int n;

	if (!p || p[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return p;
	n = snprintf(buf, cap, "%s/%s", cwd, p);
	return n > 0 && (size_t)n < cap ? buf : p;
}

static void absolute_paths(struct mountopts *m)
{
	struct lmount_config *c = &m->lc;

	c->cache_dir = absolute(c->cache_dir, m->cache_dir, sizeof(m->cache_dir));
	c->cache_socket = absolute(c->cache_socket, m->cache_socket, sizeof(m->cache_socket));
	c->log_file = absolute(c->log_file, m->log_file, sizeof(m->log_file));
	c->init_file = absolute(c->init_file, m->init_file, sizeof(m->init_file));
}

/* Options that only make sense together. */
static int check_combination(const struct lmount_config *c)
{
	const char *bad = NULL;

	if ((c->init_file || c->takeover) && c->fuse_fd < 0)
		bad = "--init-file and --takeover need --fuse-fd";
	else if (c->takeover && !c->init_file)
		bad = "--takeover needs --init-file (the connection's saved INIT)";
	else if (c->private_daemon && c->no_private_daemon)
		bad = "--private-cache and --no-private-cache contradict each other";
	if (bad)
		fprintf(stderr, "lith mount: %s\n", bad);
	return bad ? -EINVAL : 0;
}

/* SOURCE and MOUNTPOINT (optional in fd mode), made absolute. */
static int parse_args(struct mountopts *m, int argc, char **argv)
{
	char err[256];
	int left = argc - optind;

	if (left < 1 || left > 2 || (left == 1 && m->lc.fuse_fd < 0)) {
		fputs(mount_usage, stderr);
		return -EINVAL;
	}
	if (s3_uri_parse(argv[optind], &m->uri, err, sizeof(err)) < 0) {
		fprintf(stderr, "lith mount: %s\n", err);
		return -EINVAL;
	}
	snprintf(m->source, sizeof(m->source), "%s", argv[optind]);
	if (left == 2 && !realpath(argv[optind + 1], m->mountpoint)) {
		fprintf(stderr, "lith mount: %s: %s\n", argv[optind + 1], strerror(errno));
		return -errno;
	}
	m->lc.mountpoint = left == 2 ? m->mountpoint : NULL;
	absolute_paths(m);
	return check_combination(&m->lc);
}

static void defaults(struct mountopts *m)
{
	struct lmount_config *c = &m->lc;

	s3opts_init(&m->o);
	c->fuse_fd = -1;
	c->status_fd = -1;
	m->stats_fd = -1;
	c->cache_socket = LMOUNT_DEFAULT_SOCKET;
	c->cache_size = LMOUNT_DEFAULT_CACHE_SIZE;
	c->daemon_wait_ms = LMOUNT_DEFAULT_WAIT_MS;
	c->fs.uid = getuid();
	c->fs.gid = getgid();
	c->fs.max_read = 1u << 20;
	c->fs.ra.small_file = 4 * MIB;
	c->readahead_kb = 1024;
}

static int load_creds(struct mountopts *m, struct s3_credentials *cr)
{
	struct s3_cred_provider *p;
	int r;

	if (m->o.anonymous)
		return 0;
	p = s3_creds_default_chain(m->o.profile);
	r = p ? p->load(p, cr) : -ENOMEM;
	s3_cred_provider_free(p);
	if (r < 0)
		fprintf(stderr, "lith mount: no credentials found (environment or profile); "
				"use --no-sign-request for a public bucket\n");
	return r;
}

/* The FUSE metrics region: lith csi's (--stats-fd, kept open so that a
 * restarted lith csi can take it back with pidfd_getfd) or a private one. */
static int map_stats(struct mountopts *m)
{
	int r;

	if (m->stats_fd >= 0)
		fcntl(m->stats_fd, F_SETFD, FD_CLOEXEC);
	r = mstats_map(m->stats_fd, &m->lc.fs.mstats);
	if (r < 0)
		fprintf(stderr, "lith mount: --stats-fd %d: %s\n", m->stats_fd, strerror(-r));
	return r;
}

static void fill_spec(struct mountopts *m, const struct s3_credentials *cr)
{
	struct view_spec *s = &m->lc.spec;

	s->endpoint = m->o.endpoint;
	s->region = m->o.region;
	s->bucket = m->uri.bucket;
	s->prefix = m->uri.key;
	s->path_style = m->o.addressing == S3_ADDR_PATH;
	s->virtual_host = m->o.addressing == S3_ADDR_VIRTUAL;
	s->anonymous = m->o.anonymous;
	s->requester_pays = m->o.requester_pays;
	s->access_key = cr->access_key;
	s->secret_key = cr->secret_key;
	s->session_token = cr->session_token;
	s->ca_file = m->o.ca_file;
	m->lc.source = m->source;
}

int cmd_mount(int argc, char **argv)
{
	struct mountopts *m = calloc(1, sizeof(*m));
	struct s3_credentials cr = { 0 };
	int rc = 2;

	if (!m)
		return 1;
	defaults(m);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(mount_usage, stdout);
		rc = 0;
	} else if (parse_opts(m, argc, argv) == 0 && parse_args(m, argc, argv) == 0) {
		rc = 1;
		if (m->lc.status_fd >= 0)
			fcntl(m->lc.status_fd, F_SETFD, FD_CLOEXEC); /* not for our children */
		if (map_stats(m) < 0) {
			statusfd_write(m->lc.status_fd, -EBADMSG, "--stats-fd is not a metrics region");
		} else if (load_creds(m, &cr) == 0) {
			fill_spec(m, &cr);
			rc = lmount_run(&m->lc);
		} else {
			statusfd_write(m->lc.status_fd, -ENOKEY, "no credentials found");
		}
	} else {
		statusfd_write(m->lc.status_fd, -EINVAL, "bad arguments (see the usage)");
	}
	s3_credentials_clear(&cr);
	mstats_unmap(m->lc.fs.mstats);
	free(m);
	return rc;
}

int cmd_umount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lazy", no_argument, NULL, 'l' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char path[PATH_MAX], msg[512] = "";
	uint64_t timeout = 30;
	bool lazy = false;
	int opt, r;

	while ((opt = getopt_long(argc, argv, "lh", longopts, NULL)) != -1) {
		if (opt == 'l')
			lazy = true;
		else if (opt == 't' && parse_uint(optarg, 3600, &timeout) == 0)
			continue;
		else {
			fputs(umount_usage, opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind + 1 != argc) {
		fputs(umount_usage, stderr);
		return 2;
	}
	if (!realpath(argv[optind], path))
		snprintf(path, sizeof(path), "%s", argv[optind]); /* a dead mount may not resolve */
	r = unmount_path(path, lazy, (unsigned)timeout * 1000, msg, sizeof(msg));
	if (r < 0)
		fprintf(stderr, "lith umount: %s\n", msg);
	return r < 0 ? 1 : 0;
}
