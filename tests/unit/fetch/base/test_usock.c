// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for fetch/base/usock: framing over socketpairs (oversized
 * lengths, truncation, byte-by-byte feeding, partial writes from a thread),
 * fd passing (CLOEXEC, extra fds closed, MSG_CTRUNC), timeouts, EPIPE, and
 * listen/accept/connect/peer credentials on a real path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "fetch/base/clock.h"
#include "fetch/base/usock.h"


/* Open descriptors, to catch leaks (the DIR's own fd counts both times). */
static void pair(int sv[2], bool nonblock)
{
	int t = SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0);
	if (socketpair(AF_UNIX, t, 0, sv) < 0)
		abort();
}

static void closepair(int sv[2])
{
	close(sv[0]);
	close(sv[1]);
}

static void write_raw(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		abort();
}

static void test_roundtrip(void)
{
	int sv[2];
	struct usock_frame f = { 0 };
	size_t big = 100000;
	char *buf = malloc(big);

	pair(sv, false);
	for (size_t i = 0; i < big; i++)
		buf[i] = (char)(i * 7);
	CHECK_INT(usock_send_frame(sv[0], "", 0, NULL, 0, 1000), 0);
	CHECK_INT(usock_send_frame(sv[0], "hello", 5, NULL, 0, 1000), 0);
	CHECK_INT(usock_send_frame(sv[0], buf, big, NULL, 0, 1000), 0);
	CHECK_INT(usock_recv_frame(sv[1], 1 << 20, 0, 1000, &f), 0);
	CHECK_INT(f.len, 0);
	CHECK(f.data == NULL);
	usock_frame_release(&f);
	CHECK_INT(usock_recv_frame(sv[1], 1 << 20, 0, 1000, &f), 0);
	CHECK_INT(f.len, 5);
	CHECK_STR((char *)f.data, "hello");
	usock_frame_release(&f);
	CHECK_INT(usock_recv_frame(sv[1], 1 << 20, 0, 1000, &f), 0);
	CHECK_INT(f.len, big);
	CHECK(f.data && memcmp(f.data, buf, big) == 0);
	usock_frame_release(&f);
	close(sv[0]);
	CHECK_INT(usock_recv_frame(sv[1], 1 << 20, 0, 1000, &f), -ECONNRESET);
	close(sv[1]);
	free(buf);
}

static void test_oversized(void)
{
	int sv[2];
	struct usock_frame f = { .len = 77 };
	struct usock_reader r;
	uint8_t hdr[4] = { 0xff, 0xff, 0xff, 0xff };
	uint8_t hdr2[4] = { 0x01, 0x10, 0x00, 0x00 }; /* 4097 */

	pair(sv, false);
	write_raw(sv[0], hdr, 4);
	CHECK_INT(usock_recv_frame(sv[1], 1 << 20, 0, 1000, &f), -EMSGSIZE);
	CHECK_INT(f.len, 77); /* untouched */
	closepair(sv);

	pair(sv, true);
	usock_reader_init(&r, 4096, 0);
	write_raw(sv[0], hdr2, 4);
	CHECK_INT(usock_reader_feed(&r, sv[1]), -EMSGSIZE);
	CHECK(r.cur.data == NULL); /* nothing allocated on the peer's say-so */
	CHECK_INT(usock_reader_feed(&r, sv[1]), -EMSGSIZE); /* sticky */
	usock_reader_reset(&r);
	closepair(sv);

	pair(sv, false);
	CHECK_INT(usock_send_frame(sv[0], "x", USOCK_FRAME_MAX + 1, NULL, 0, 0), -EMSGSIZE);
	int fds[USOCK_MAX_FDS + 1] = { 0 };
	CHECK_INT(usock_send_frame(sv[0], "x", 1, fds, USOCK_MAX_FDS + 1, 0), -EINVAL);
	closepair(sv);
}

static void test_truncated(void)
{
	int sv[2];
	struct usock_frame f = { 0 };
	uint8_t hdr[4] = { 100, 0, 0, 0 };
	char half[50] = { 0 };

	pair(sv, false);
	write_raw(sv[0], hdr, 4);
	write_raw(sv[0], half, sizeof(half));
	close(sv[0]);
	CHECK_INT(usock_recv_frame(sv[1], 4096, 0, 1000, &f), -EBADMSG);
	close(sv[1]);

	pair(sv, false);
	write_raw(sv[0], hdr, 2); /* half a header */
	close(sv[0]);
	CHECK_INT(usock_recv_frame(sv[1], 4096, 0, 1000, &f), -EBADMSG);
	close(sv[1]);
}

static void test_feed_bytewise(void)
{
	int sv[2];
	struct usock_reader r;
	struct usock_frame f = { 0 };
	uint8_t wire[4 + 6 + 4 + 3] = { 6, 0, 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', 3, 0, 0, 0,
				       'x', 'y', 'z' };

	pair(sv, true);
	usock_reader_init(&r, 64, 0);
	CHECK_INT(usock_reader_next(&r, &f), -EAGAIN);
	CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_AGAIN);
	for (size_t i = 0; i < 9; i++) {
		write_raw(sv[0], wire + i, 1);
		CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_AGAIN);
	}
	write_raw(sv[0], wire + 9, sizeof(wire) - 9); /* rest of 1st + all of 2nd */
	CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_FRAME);
	CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_FRAME); /* still ready */
	CHECK_INT(usock_reader_next(&r, &f), 0);
	CHECK_STR((char *)f.data, "abcdef");
	usock_frame_release(&f);
	CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_FRAME);
	CHECK_INT(usock_reader_next(&r, &f), 0);
	CHECK_STR((char *)f.data, "xyz");
	usock_frame_release(&f);
	CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_AGAIN);
	close(sv[0]);
	CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_EOF);
	usock_reader_reset(&r);
	close(sv[1]);
}

static bool is_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);
	return fl >= 0 && (fl & FD_CLOEXEC);
}

/* True when every write end of the pipe is closed (read gives EOF). */
static bool pipe_all_writers_closed(int rfd)
{
	char c;
	int fl = fcntl(rfd, F_GETFL);

	fcntl(rfd, F_SETFL, fl | O_NONBLOCK);
	return read(rfd, &c, 1) == 0;
}

static void test_fd_passing(void)
{
	int sv[2], p[2];
	struct usock_frame f = { 0 };
	char c = 0;

	pair(sv, false);
	if (pipe(p) < 0)
		abort();
	CHECK_INT(usock_send_frame(sv[0], "fd", 2, &p[1], 1, 1000), 0);
	CHECK_INT(usock_recv_frame(sv[1], 64, 4, 1000, &f), 0);
	CHECK_INT(f.nfds, 1);
	CHECK_INT(f.dropped_fds, 0);
	CHECK(f.nfds == 1 && is_cloexec(f.fds[0]));
	CHECK(f.nfds == 1 && write(f.fds[0], "!", 1) == 1);
	CHECK(read(p[0], &c, 1) == 1 && c == '!');
	close(p[1]);
	usock_frame_release(&f); /* closes the received write end */
	CHECK(pipe_all_writers_closed(p[0]));
	close(p[0]);
	closepair(sv);
}

static void test_extra_fds_closed(void)
{
	int sv[2], p[2];
	struct usock_frame f = { 0 };

	pair(sv, false);
	if (pipe(p) < 0)
		abort();
	int three[3] = { p[1], p[1], p[1] };
	CHECK_INT(usock_send_frame(sv[0], "x", 1, three, 3, 1000), 0);
	CHECK_INT(usock_send_frame(sv[0], "y", 1, three, 3, 1000), 0);
	close(p[1]);
	CHECK_INT(usock_recv_frame(sv[1], 64, 1, 1000, &f), 0); /* wants 1 */
	CHECK_INT(f.nfds, 1);
	CHECK_INT(f.dropped_fds, 2);
	usock_frame_release(&f);
	CHECK_INT(usock_recv_frame(sv[1], 64, 0, 1000, &f), 0); /* wants none */
	CHECK_INT(f.nfds, 0);
	CHECK_INT(f.dropped_fds, 3);
	CHECK_STR((char *)f.data, "y");
	usock_frame_release(&f);
	CHECK(pipe_all_writers_closed(p[0]));
	close(p[0]);
	closepair(sv);
}

/* More fds than the receiver's control buffer holds: MSG_CTRUNC. */
static void test_ctrunc(void)
{
	enum { N = 20 };
	int sv[2], p[2], fds[N];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * N)];
	} cm;
	uint8_t wire[5] = { 1, 0, 0, 0, 'z' };
	struct iovec iov = { wire, sizeof(wire) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b) };
	struct usock_frame f = { 0 };

	pair(sv, false);
	if (pipe(p) < 0)
		abort();
	for (int i = 0; i < N; i++)
		fds[i] = p[1];
	memset(&cm, 0, sizeof(cm));
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * N);
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	CHECK(sendmsg(sv[0], &mh, 0) == (ssize_t)sizeof(wire));
	close(p[1]);
	CHECK_INT(usock_recv_frame(sv[1], 64, USOCK_MAX_FDS, 1000, &f), -ETOOMANYREFS);
	CHECK_INT(f.nfds, 0);
	CHECK(pipe_all_writers_closed(p[0]));
	close(p[0]);
	closepair(sv);
}

/* fds sent with frame 2 must not be attributed to frame 1. */
static void test_fd_attribution(void)
{
	int sv[2], p[2];
	struct usock_reader r;
	struct usock_frame f = { 0 };

	pair(sv, true);
	if (pipe(p) < 0)
		abort();
	CHECK_INT(usock_send_frame(sv[0], "one", 3, NULL, 0, 1000), 0);
	CHECK_INT(usock_send_frame(sv[0], "two", 3, &p[0], 1, 1000), 0);
	usock_reader_init(&r, 64, 4);
	CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_FRAME);
	CHECK_INT(usock_reader_next(&r, &f), 0);
	CHECK_INT(f.nfds, 0);
	usock_frame_release(&f);
	CHECK_INT(usock_reader_feed(&r, sv[1]), USOCK_FRAME);
	CHECK_INT(usock_reader_next(&r, &f), 0);
	CHECK_INT(f.nfds, 1);
	CHECK_STR((char *)f.data, "two");
	usock_frame_release(&f);
	close(p[0]);
	close(p[1]);
	closepair(sv);
}

struct big_send {
	int fd;
	uint8_t *buf;
	size_t len;
	int r;
};

static void *big_sender(void *arg)
{
	struct big_send *b = arg;
	b->r = usock_send_frame(b->fd, b->buf, b->len, NULL, 0, 5000);
	return NULL;
}

/* A 4 MiB frame over non-blocking sockets: partial writes and reads. */
static void test_partial_io_thread(void)
{
	int sv[2];
	pthread_t t;
	struct big_send b = { .len = 4u << 20 };
	struct usock_frame f = { 0 };

	pair(sv, true);
	b.fd = sv[0];
	b.buf = malloc(b.len);
	for (size_t i = 0; i < b.len; i++)
		b.buf[i] = (uint8_t)(i ^ (i >> 11));
	pthread_create(&t, NULL, big_sender, &b);
	CHECK_INT(usock_recv_frame(sv[1], 8u << 20, 0, 5000, &f), 0);
	pthread_join(t, NULL);
	CHECK_INT(b.r, 0);
	CHECK(f.len == b.len && memcmp(f.data, b.buf, b.len) == 0);
	usock_frame_release(&f);
	free(b.buf);
	closepair(sv);
}

static void test_timeouts_and_epipe(void)
{
	int sv[2];
	struct usock_frame f = { 0 };
	size_t len = 8u << 20;
	uint8_t *buf = calloc(1, len);
	uint64_t t0;

	pair(sv, false);
	t0 = clock_mono_ns();
	CHECK_INT(usock_recv_frame(sv[1], 64, 0, 50, &f), -ETIMEDOUT);
	CHECK(clock_mono_ns() - t0 >= 45000000ull);
	CHECK_INT(usock_send_frame(sv[0], buf, len, NULL, 0, 50), -ETIMEDOUT); /* peer not reading */
	close(sv[1]);
	CHECK_INT(usock_send_frame(sv[0], "x", 1, NULL, 0, 50), -EPIPE); /* no SIGPIPE */
	close(sv[0]);
	free(buf);
}

static void sock_path(char *out, size_t len, const char *dir, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

static void test_listen_connect(const char *dir)
{
	char path[256];
	int lfd = -1, lfd2 = -1, cfd = -1, afd = -1;
	struct stat st;
	pid_t pid = 0;
	uid_t uid = 99;
	gid_t gid = 99;

	sock_path(path, sizeof(path), dir, "a.sock");
	CHECK_INT(usock_listen(path, 0, &lfd), 0);
	CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0660);
	CHECK(is_cloexec(lfd));
	CHECK_INT(usock_accept(lfd, 0, &afd), -EAGAIN);
	CHECK_INT(usock_listen(path, 0, &lfd2), -EADDRINUSE); /* live listener kept */
	/* The liveness probe left one connection that is already closed. */
	CHECK_INT(usock_accept(lfd, 0, &afd), 0);
	struct usock_frame f = { 0 };
	CHECK_INT(usock_recv_frame(afd, 64, 0, 1000, &f), -ECONNRESET);
	close(afd);
	CHECK_INT(usock_connect(path, USOCK_NONBLOCK, &cfd), 0);
	CHECK(is_cloexec(cfd) && (fcntl(cfd, F_GETFL) & O_NONBLOCK));
	CHECK_INT(usock_accept(lfd, USOCK_NONBLOCK, &afd), 0);
	CHECK(is_cloexec(afd) && (fcntl(afd, F_GETFL) & O_NONBLOCK));
	CHECK_INT(usock_peer_cred(afd, &pid, &uid, &gid), 0);
	CHECK_INT(pid, getpid());
	CHECK_INT(uid, getuid());
	CHECK_INT(gid, getgid());
	CHECK_INT(usock_peer_cred(cfd, NULL, &uid, NULL), 0);
	CHECK_INT(usock_send_frame(cfd, "ping", 4, NULL, 0, 1000), 0);
	CHECK_INT(usock_recv_frame(afd, 64, 0, 1000, &f), 0);
	CHECK_STR((char *)f.data, "ping");
	usock_frame_release(&f);
	close(afd);
	close(cfd);
	close(lfd); /* leaves a stale socket file behind */
	CHECK(stat(path, &st) == 0);
	CHECK_INT(usock_connect(path, 0, &cfd), -ECONNREFUSED);
	CHECK_INT(usock_listen(path, 0600, &lfd), 0); /* stale one replaced */
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	close(lfd);
	unlink(path);
}

static void test_listen_refuses(const char *dir)
{
	char path[256], longp[200];
	int fd = -1;
	struct stat st;

	sock_path(path, sizeof(path), dir, "regular");
	write_raw(fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), "keep", 4);
	close(fd);
	fd = -1;
	CHECK_INT(usock_listen(path, 0, &fd), -EEXIST);
	CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 4);
	CHECK_INT(fd, -1);
	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	longp[0] = '/';
	CHECK_INT(usock_listen(longp, 0, &fd), -ENAMETOOLONG);
	CHECK_INT(usock_connect(longp, 0, &fd), -ENAMETOOLONG);
	CHECK_INT(usock_listen("", 0, &fd), -EINVAL);
	sock_path(path, sizeof(path), dir, "nobody.sock");
	CHECK_INT(usock_connect(path, 0, &fd), -ENOENT);
	CHECK_INT(fd, -1);
	sock_path(path, sizeof(path), dir, "regular");
	unlink(path);
}

int main(void)
{
	char dir[] = "/tmp/lith-usock-XXXXXX";
	int fds0 = check_count_fds();

	signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill the test */
	if (!mkdtemp(dir))
		return 2;
	test_roundtrip();
	test_oversized();
	test_truncated();
	test_feed_bytewise();
	test_fd_passing();
	test_extra_fds_closed();
	test_ctrunc();
	test_fd_attribution();
	test_partial_io_thread();
	test_timeouts_and_epipe();
	test_listen_connect(dir);
	test_listen_refuses(dir);
	rmdir(dir);
	CHECK_INT(check_count_fds(), fds0); /* nothing leaked */
	return check_done();
}
