/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unix stream sockets for the cache daemon and its clients: listen on a
 * path, accept, connect, peer credentials, and framed messages with fd
 * passing.
 *
 * Frame on the wire: a 4-byte little-endian payload length, then the payload.
 * Up to USOCK_MAX_FDS descriptors ride along with a frame (SCM_RIGHTS, sent
 * with the frame's first byte).
 *
 * Invariants:
 *  - Every fd this module creates or receives is O_CLOEXEC (received fds via
 *    MSG_CMSG_CLOEXEC).
 *  - Nothing is allocated on the peer's say-so beyond the caller's maximum
 *    frame size: a larger declared length fails with -EMSGSIZE before any
 *    allocation. After any receive error the stream is out of sync: the
 *    caller must drop the connection.
 *  - Received descriptors are never leaked: beyond the caller's limit they
 *    are closed (and counted in dropped_fds); on truncated control data
 *    (MSG_CTRUNC) or any error, all of that frame's fds are closed.
 *  - I/O uses MSG_DONTWAIT, so the same calls work on blocking and
 *    non-blocking sockets; waiting is done with poll() under a timeout.
 *    SIGPIPE is never raised (MSG_NOSIGNAL).
 *
 * Threads: no global state; a socket or reader is used by one thread at a
 * time.
 */
#ifndef LITH_BASE_USOCK_H
#define LITH_BASE_USOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Hard ceilings; callers pick their own, smaller, frame maximum. */
#define USOCK_MAX_FDS 8u
#define USOCK_FRAME_MAX (16u << 20)
#define USOCK_HDR_LEN 4u
#define USOCK_MODE_DEFAULT 0660

/* Flags for usock_accept/usock_connect. */
#define USOCK_NONBLOCK 0x1

/*
 * Listens on `path` (mode 0 → 0660; permissions are set before listen(), so
 * nobody connects through a wider mode). An existing socket file is removed
 * only if nothing answers on it (ECONNREFUSED); a live listener gives
 * -EADDRINUSE and a non-socket file -EEXIST (the liveness probe connects
 * once: a live listener sees a client that hangs up at once). Between the
 * probe and bind another process may win the path: bind then fails with
 * -EADDRINUSE. The parent directory must exist (and should not be writable
 * by others: the mode is set by path).
 * The returned fd is O_CLOEXEC|O_NONBLOCK (for an event loop).
 */
int usock_listen(const char *path, mode_t mode, int *ret_fd);
/* -EAGAIN when no connection is pending. EINTR is retried. */
int usock_accept(int listen_fd, int flags, int *ret_fd);
int usock_connect(const char *path, int flags, int *ret_fd);
/* SO_PEERCRED at connect time; any output may be NULL. */
int usock_peer_cred(int fd, pid_t *ret_pid, uid_t *ret_uid, gid_t *ret_gid);

/* A received frame. The caller owns `data` and `fds` until release. */
struct usock_frame {
	uint8_t *data;          /* len bytes + a NUL (not counted); NULL if len == 0 */
	size_t len;
	int fds[USOCK_MAX_FDS]; /* O_CLOEXEC */
	unsigned nfds;
	unsigned dropped_fds;   /* fds beyond the reader's max_fds, already closed */
};
/* Frees data, closes fds, zeroes the frame. Accepts a zeroed frame. */
void usock_frame_release(struct usock_frame *f);

/*
 * Sends one frame: len <= USOCK_FRAME_MAX (else -EMSGSIZE), nfds <=
 * USOCK_MAX_FDS (else -EINVAL). The fds stay owned by the caller. Waits up
 * to timeout_ms (< 0: forever) for socket space; -ETIMEDOUT after a partial
 * write leaves the stream broken. -EPIPE when the peer is gone.
 */
int usock_send_frame(int fd, const void *buf, size_t len, const int *fds, size_t nfds,
		     int timeout_ms);

/*
 * Incremental frame reader for an event loop. Reads never go past the end
 * of the current frame, so fds received while reading a frame belong to it
 * and one busy peer cannot monopolise a loop iteration.
 */
struct usock_reader {
	size_t max_len;
	unsigned max_fds;
	uint8_t hdr[USOCK_HDR_LEN];
	size_t hdr_have;
	struct usock_frame cur;
	size_t have;
	bool ready;
	int error;             /* sticky: the first error, re-reported */
};

enum {
	USOCK_AGAIN = 0, /* no complete frame yet: wait for readability */
	USOCK_FRAME = 1, /* a frame is ready: take it with usock_reader_next */
	USOCK_EOF = 2,   /* peer closed cleanly between frames */
};

/* max_len is clamped to USOCK_FRAME_MAX, max_fds to USOCK_MAX_FDS. */
void usock_reader_init(struct usock_reader *r, size_t max_len, unsigned max_fds);
/* Frees a partial frame and closes its fds; the reader can be reused. */
void usock_reader_reset(struct usock_reader *r);
/*
 * Reads what is available from fd. Returns USOCK_AGAIN/FRAME/EOF or:
 * -EMSGSIZE declared length > max_len; -EBADMSG EOF inside a frame;
 * -ETOOMANYREFS control data truncated (peer sent more than USOCK_MAX_FDS
 * fds at once); other -errno from recvmsg. Errors are sticky.
 */
int usock_reader_feed(struct usock_reader *r, int fd);
/* Moves the ready frame into *ret (-EAGAIN if none ready). */
int usock_reader_next(struct usock_reader *r, struct usock_frame *ret);

/*
 * Blocking receive of one frame (any socket mode), waiting up to timeout_ms
 * (< 0: forever) in total. EOF before any byte: -ECONNRESET. Other errors as
 * for usock_reader_feed, -ETIMEDOUT on timeout.
 */
int usock_recv_frame(int fd, size_t max_len, unsigned max_fds, int timeout_ms,
		     struct usock_frame *ret);

#endif
