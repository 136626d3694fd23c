// SPDX-License-Identifier: Apache-2.0
/*
 * The FUSE session (see session.h): builds libfuse's argument vector,
 * mounts, runs fuse_session_loop_mt, unmounts. Main thread only, except
 * session_exit.
 */
#include "mounter/session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fetch/base/strbuf.h"
#include "mounter/fuseinit.h"

#define DEFAULT_MAX_THREADS 64u
#define DEFAULT_IDLE_THREADS 16u

struct session {
	struct fuse_session *se;
	struct fuse_loop_config *loop;
	bool handlers;
	bool mounted;
};

/* fsname with libfuse's option separators escaped. */
static void append_escaped(struct strbuf *b, const char *s)
{
	for (; *s; s++)
		strbuf_appendf(b, "%s%c", *s == ',' || *s == '\\' ? "\\" : "", *s);
}

static char *mount_options(const struct session_config *cfg)
{
	struct strbuf b;

	strbuf_init(&b, 4096);
	strbuf_appendf(&b, "ro,default_permissions,subtype=lith,max_read=%u,fsname=",
		       cfg->max_read);
	append_escaped(&b, cfg->fsname ? cfg->fsname : "lith");
	if (cfg->allow_other)
		strbuf_appendf(&b, ",allow_other");
	return strbuf_steal(&b);
}

static int create(struct session *s, const struct session_config *cfg,
		  const struct fuse_lowlevel_ops *ops, void *userdata)
{
	char *opts = mount_options(cfg);
	char *argv[] = { "lith", "-o", opts, cfg->debug ? "-d" : NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(cfg->debug ? 4 : 3, argv);

	if (!opts)
		return -ENOMEM;
	s->se = fuse_session_new(&args, ops, sizeof(*ops), userdata);
	fuse_opt_free_args(&args);
	free(opts);
	return s->se ? 0 : -EINVAL;
}

static int do_mount(struct session *s, const struct session_config *cfg)
{
	char fdpath[32];

	if (cfg->fuse_fd >= 0) {
		/* ours from now on; children must not keep the connection alive */
		fcntl(cfg->fuse_fd, F_SETFD, FD_CLOEXEC);
		snprintf(fdpath, sizeof(fdpath), "/dev/fd/%d", cfg->fuse_fd);
		return fuse_session_mount(s->se, fdpath) == 0 ? 0 : -EINVAL;
	}
	if (fuse_session_mount(s->se, cfg->mountpoint) != 0)
		return -EINVAL;
	s->mounted = true;
	return 0;
}

static int make_loop(struct session *s, const struct session_config *cfg)
{
	s->loop = fuse_loop_cfg_create();
	if (!s->loop)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(s->loop, 0);
	fuse_loop_cfg_set_max_threads(s->loop, cfg->max_threads ? cfg->max_threads
								: DEFAULT_MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(s->loop, cfg->max_idle_threads ? cfg->max_idle_threads
								      : DEFAULT_IDLE_THREADS);
	return 0;
}

int session_new(const struct session_config *cfg, const struct fuse_lowlevel_ops *ops,
		void *userdata, struct session **ret, char *msg, size_t msglen)
{
	struct session *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	r = create(s, cfg, ops, userdata);
	if (r < 0)
		snprintf(msg, msglen, "bad FUSE options");
	if (r == 0 && fuse_set_signal_handlers(s->se) == 0)
		s->handlers = true;
	if (r == 0 && (r = do_mount(s, cfg)) < 0)
		snprintf(msg, msglen, "mount failed (see the messages above)");
	if (r == 0)
		r = make_loop(s, cfg);
	if (r < 0) {
		session_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* ---- taking over (fuseinit.h) ---- */

/* The first request into buf (*n bytes); -EINTR when told to exit while
 * waiting. */
static int receive_first(struct session *s, struct fuse_buf *buf, size_t *n)
{
	int r;

	do
		r = fuse_session_receive_buf(s->se, buf);
	while (r == -EINTR && !fuse_session_exited(s->se));
	if (r < 0)
		return r;
	if (r == 0 || fuse_session_exited(s->se))
		return -EINTR;
	*n = (size_t)r;
	return 0;
}

int session_capture_init(struct session *s, const char *path, char *msg, size_t msglen)
{
	struct fuse_buf buf = { .mem = NULL };
	size_t n = 0;
	int r = receive_first(s, &buf, &n);

	if (r < 0)
		snprintf(msg, msglen, "no INIT from the kernel: %s", strerror(-r));
	if (r == 0 && (r = fuseinit_check(buf.mem, n)) == -EPROTO) {
		fuseinit_resend(fuse_session_fd(s->se)); /* give the request back */
		snprintf(msg, msglen, "the connection is already initialised (use --takeover)");
	} else if (r < 0 && n) {
		snprintf(msg, msglen, "malformed INIT request (%zu bytes)", n);
	}
	if (r == 0 && (r = fuseinit_save(path, buf.mem, n)) < 0)
		snprintf(msg, msglen, "cannot save the INIT request to %s: %s", path,
			 strerror(-r));
	if (r == 0)
		fuse_session_process_buf(s->se, &buf);
	free(buf.mem);
	return r;
}

int session_replay_init(struct session *s, const char *path, char *msg, size_t msglen)
{
	char req[FUSEINIT_MAX];
	struct fuse_buf buf = { .mem = req };
	int r = fuseinit_load(path, req, sizeof(req), &buf.size);

	if (r < 0) {
		snprintf(msg, msglen, "cannot use the saved INIT request %s: %s", path,
			 strerror(-r));
		return r;
	}
	/* the reply goes to the kernel, which refuses it (ENOENT): harmless */
	fuseinit_set_unique(req, FUSEINIT_REPLAY_UNIQUE);
	fuse_session_process_buf(s->se, &buf);
	return 0;
}

int session_resend(struct session *s) { return fuseinit_resend(fuse_session_fd(s->se)); }

int session_run(struct session *s)
{
	int r = fuse_session_loop_mt(s->se, s->loop);

	return r < 0 ? r : r > 0 ? -EINTR : 0; /* > 0: ended by a signal */
}

void session_exit(struct session *s) { fuse_session_exit(s->se); }

void session_free(struct session *s)
{
	if (!s)
		return;
	if (s->mounted)
		fuse_session_unmount(s->se);
	if (s->handlers)
		fuse_remove_signal_handlers(s->se);
	if (s->se)
		fuse_session_destroy(s->se);
	if (s->loop)
		fuse_loop_cfg_destroy(s->loop);
	free(s);
}

int session_tune_readahead(const char *mountpoint, unsigned kb)
{
	char path[96], val[16];
	struct stat st;
	int fd, n;

	if (stat(mountpoint, &st) < 0)
		return -errno;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
		 minor(st.st_dev));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(val, sizeof(val), "%u", kb);
	n = (int)write(fd, val, (size_t)n);
	close(fd);
	return n < 0 ? -errno : 0;
}
