// SPDX-License-Identifier: Apache-2.0
/*
 * Unix stream sockets and framed messages with fd passing (see usock.h).
 * Every recvmsg() asks for SCM_RIGHTS with MSG_CMSG_CLOEXEC and stashes the
 * fds in the frame being read before anything else is checked, so that no
 * error path can leak them. No global state; callers serialise per socket.
 */
#include "fetch/base/usock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fetch/base/clock.h"
#include "fetch/base/macro.h"

#define NO_DEADLINE UINT64_MAX

/* ---- addresses, listen, accept, connect ------------------------------- */

static int addr_fill(const char *path, struct sockaddr_un *sa, socklen_t *ret_len)
{
	size_t n;

	if (!path || !*path)
		return -EINVAL;
	n = strlen(path);
	if (n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n);
	*ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	return 0;
}

/* 0: nobody answers (stale), -EADDRINUSE: a listener is there. */
static int probe_listener(const struct sockaddr_un *sa, socklen_t len)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, len) == 0)
		return -EADDRINUSE;
	if (errno == EAGAIN || errno == EINPROGRESS)
		return -EADDRINUSE; /* alive, backlog full */
	if (errno == ECONNREFUSED)
		return 0;
	return -errno;
}

static int remove_stale(const char *path, const struct sockaddr_un *sa, socklen_t len)
{
	struct stat st;
	int r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	r = probe_listener(sa, len);
	if (r < 0)
		return r;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/*
 * chmod of the path just bound, refusing to follow a symlink planted in its
 * place. glibc needs /proc for AT_SYMLINK_NOFOLLOW; without it, check with
 * lstat that the path is still a socket and chmod it.
 */
static int set_mode(const char *path, mode_t mode)
{
	struct stat st;

	if (fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS && errno != ENOENT)
		return -errno;
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EPERM;
	return chmod(path, mode) < 0 ? -errno : 0;
}

int usock_listen(const char *path, mode_t mode, int *ret_fd)
{
	struct sockaddr_un sa;
	socklen_t len;
	int fd, r;

	r = addr_fill(path, &sa, &len);
	if (r < 0)
		return r;
	r = remove_stale(path, &sa, len);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, len) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	/* Nobody can connect before listen(): set the mode first. */
	r = set_mode(path, mode ? mode : USOCK_MODE_DEFAULT);
	if (r == 0 && listen(fd, SOMAXCONN) < 0)
		r = -errno;
	if (r < 0) {
		unlink(path);
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

int usock_accept(int listen_fd, int flags, int *ret_fd)
{
	int sflags = SOCK_CLOEXEC | ((flags & USOCK_NONBLOCK) ? SOCK_NONBLOCK : 0);
	int fd;

	do
		fd = accept4(listen_fd, NULL, NULL, sflags);
	while (fd < 0 && (errno == EINTR || errno == ECONNABORTED));
	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	*ret_fd = fd;
	return 0;
}

/* A connect() interrupted by a signal completes in the background. */
static int connect_finish(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t sl = sizeof(int);
	int err = 0;

	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
		return -errno;
	return -err;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int usock_connect(const char *path, int flags, int *ret_fd)
{
	struct sockaddr_un sa;
	socklen_t len;
	_cleanup_close_ int fd = -1;
	int r;

	r = addr_fill(path, &sa, &len);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&sa, len) < 0 ? -errno : 0;
	if (r == -EINTR)
		r = connect_finish(fd);
	if (r == 0 && (flags & USOCK_NONBLOCK))
		r = set_nonblock(fd);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int usock_peer_cred(int fd, pid_t *ret_pid, uid_t *ret_uid, gid_t *ret_gid)
{
	struct ucred uc;
	socklen_t sl = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &sl) < 0)
		return -errno;
	if (sl != sizeof(uc))
		return -EIO;
	if (ret_pid)
		*ret_pid = uc.pid;
	if (ret_uid)
		*ret_uid = uc.uid;
	if (ret_gid)
		*ret_gid = uc.gid;
	return 0;
}

/* ---- waiting ----------------------------------------------------------- */

static uint64_t deadline_from(int timeout_ms)
{
	if (timeout_ms < 0)
		return NO_DEADLINE;
	return clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* Waits for events on fd until the deadline: 0 ready, -ETIMEDOUT. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int ms, n;

	for (;;) {
		uint64_t now = clock_mono_ns();
		if (deadline == NO_DEADLINE)
			ms = -1;
		else if (now >= deadline)
			return -ETIMEDOUT;
		else
			ms = (int)MIN((deadline - now + 999999) / 1000000, (uint64_t)INT32_MAX);
		n = poll(&p, 1, ms);
		if (n > 0)
			return (p.revents & POLLNVAL) ? -EBADF : 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* ---- frames: common -------------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void usock_frame_release(struct usock_frame *f)
{
	if (!f)
		return;
	free(f->data);
	for (unsigned i = 0; i < f->nfds && i < USOCK_MAX_FDS; i++)
		if (f->fds[i] >= 0)
			close(f->fds[i]);
	memset(f, 0, sizeof(*f));
}

/* ---- sending --------------------------------------------------------------- */

union fd_cmsg {
	struct cmsghdr h;
	char b[CMSG_SPACE(sizeof(int) * USOCK_MAX_FDS)];
};

static void attach_fds(struct msghdr *mh, union fd_cmsg *cm, const int *fds, size_t nfds)
{
	struct cmsghdr *c;

	memset(cm, 0, sizeof(*cm));
	mh->msg_control = cm->b;
	mh->msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
}

/* One sendmsg() of bytes [off, 4+len) of the frame; fds only with byte 0. */
static ssize_t send_part(int fd, const uint8_t *hdr, const void *buf, size_t len, size_t off,
			 const int *fds, size_t nfds)
{
	union fd_cmsg cm;
	struct iovec iov[2];
	struct msghdr mh = { .msg_iov = iov };
	ssize_t n;

	if (off < USOCK_HDR_LEN)
		iov[mh.msg_iovlen++] = (struct iovec){ (void *)(hdr + off), USOCK_HDR_LEN - off };
	if (len > 0) {
		size_t skip = off > USOCK_HDR_LEN ? off - USOCK_HDR_LEN : 0;
		iov[mh.msg_iovlen++] = (struct iovec){ (uint8_t *)buf + skip, len - skip };
	}
	if (off == 0 && nfds > 0)
		attach_fds(&mh, &cm, fds, nfds);
	do
		n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

int usock_send_frame(int fd, const void *buf, size_t len, const int *fds, size_t nfds,
		     int timeout_ms)
{
	uint64_t deadline = deadline_from(timeout_ms);
	uint8_t hdr[USOCK_HDR_LEN];
	size_t off = 0;

	if (len > USOCK_FRAME_MAX)
		return -EMSGSIZE;
	if (nfds > USOCK_MAX_FDS || (nfds && !fds) || (len && !buf))
		return -EINVAL;
	put_le32(hdr, (uint32_t)len);
	while (off < USOCK_HDR_LEN + len) {
		ssize_t n = send_part(fd, hdr, buf, len, off, fds, nfds);
		if (n == -EAGAIN) {
			int r = wait_fd(fd, POLLOUT, deadline);
			if (r < 0)
				return r;
			continue;
		}
		if (n < 0)
			return (int)n;
		off += (size_t)n;
	}
	return 0;
}

/* ---- receiving ------------------------------------------------------------- */

void usock_reader_init(struct usock_reader *r, size_t max_len, unsigned max_fds)
{
	memset(r, 0, sizeof(*r));
	r->max_len = MIN(max_len, (size_t)USOCK_FRAME_MAX);
	r->max_fds = MIN(max_fds, USOCK_MAX_FDS);
}

static void reader_clear(struct usock_reader *r)
{
	usock_frame_release(&r->cur);
	r->hdr_have = 0;
	r->have = 0;
	r->ready = false;
}

void usock_reader_reset(struct usock_reader *r)
{
	reader_clear(r);
	r->error = 0;
}

static int reader_fail(struct usock_reader *r, int err)
{
	reader_clear(r);
	r->error = err;
	return err;
}

/* Keeps up to max_fds of the fds in mh, closes the rest. */
static void stash_fds(struct usock_reader *r, struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (r->cur.nfds < r->max_fds) {
				r->cur.fds[r->cur.nfds++] = fd;
			} else {
				close(fd);
				r->cur.dropped_fds++;
			}
		}
	}
}

/* One recvmsg() of at most want bytes into dst: bytes read, or -errno. */
static ssize_t recv_part(struct usock_reader *r, int fd, void *dst, size_t want)
{
	union fd_cmsg cm;
	struct iovec iov = { dst, want };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b) };
	ssize_t n;

	do
		n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	stash_fds(r, &mh);
	if (mh.msg_flags & MSG_CTRUNC)
		return -ETOOMANYREFS;
	return n;
}

/* The header is complete: check the length, allocate the payload. */
static int reader_start_payload(struct usock_reader *r)
{
	uint32_t len = get_le32(r->hdr);

	if (len > r->max_len)
		return -EMSGSIZE;
	r->cur.len = len;
	if (len == 0) {
		r->ready = true;
		return 0;
	}
	r->cur.data = malloc((size_t)len + 1);
	if (!r->cur.data)
		return -ENOMEM;
	r->cur.data[len] = '\0';
	return 0;
}

/* One read step: >0 progress, USOCK_AGAIN, USOCK_EOF, or -errno. */
static int reader_step(struct usock_reader *r, int fd)
{
	bool in_hdr = r->hdr_have < USOCK_HDR_LEN;
	ssize_t n;

	if (in_hdr)
		n = recv_part(r, fd, r->hdr + r->hdr_have, USOCK_HDR_LEN - r->hdr_have);
	else
		n = recv_part(r, fd, r->cur.data + r->have, r->cur.len - r->have);
	if (n == -EAGAIN)
		return USOCK_AGAIN;
	if (n < 0)
		return (int)n;
	if (n == 0)
		return (in_hdr && r->hdr_have == 0 && r->cur.nfds == 0) ? USOCK_EOF : -EBADMSG;
	if (!in_hdr) {
		r->have += (size_t)n;
		r->ready = r->have == r->cur.len;
		return 1;
	}
	r->hdr_have += (size_t)n;
	if (r->hdr_have < USOCK_HDR_LEN)
		return 1;
	int e = reader_start_payload(r);
	return e < 0 ? e : 1;
}

int usock_reader_feed(struct usock_reader *r, int fd)
{
	if (r->error)
		return r->error;
	while (!r->ready) {
		int s = reader_step(r, fd);
		if (s < 0)
			return reader_fail(r, s);
		if (s == USOCK_AGAIN || s == USOCK_EOF)
			return s;
	}
	return USOCK_FRAME;
}

int usock_reader_next(struct usock_reader *r, struct usock_frame *ret)
{
	if (!r->ready)
		return -EAGAIN;
	*ret = r->cur;
	memset(&r->cur, 0, sizeof(r->cur));
	reader_clear(r);
	return 0;
}

int usock_recv_frame(int fd, size_t max_len, unsigned max_fds, int timeout_ms,
		     struct usock_frame *ret)
{
	uint64_t deadline = deadline_from(timeout_ms);
	struct usock_reader r;
	int s;

	usock_reader_init(&r, max_len, max_fds);
	for (;;) {
		s = usock_reader_feed(&r, fd);
		if (s == USOCK_FRAME)
			return usock_reader_next(&r, ret);
		if (s == USOCK_EOF)
			s = -ECONNRESET;
		else if (s == USOCK_AGAIN)
			s = wait_fd(fd, POLLIN, deadline);
		if (s < 0) {
			usock_reader_reset(&r);
			return s;
		}
	}
}
