/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Taking over a live FUSE connection (DESIGN.md "Taking over a live FUSE
 * connection"): the kernel sends FUSE_INIT once per connection, so a
 * successor server cannot be initialised by the kernel again. The first
 * server keeps the raw INIT request (fuse_in_header + fuse_init_in, exactly
 * as read from /dev/fuse) in a file; a successor replays it into its own
 * libfuse session (same request, same init callback: same negotiated
 * parameters) with an odd unique the kernel does not know, so the reply is
 * refused with ENOENT and the kernel's state is untouched.
 * FUSE_NOTIFY_RESEND (Linux 6.9+) makes the kernel queue again every request
 * a server had read but not answered; their unique gets bit 63 and is
 * answered unchanged.
 *
 * Pure functions and file I/O; any thread. Nothing here logs.
 */
#ifndef LITH_MOUNTER_FUSEINIT_H
#define LITH_MOUNTER_FUSEINIT_H

#include <stddef.h>
#include <stdint.h>

/* Debian's linux/fuse.h is 7.38; the kernel has it since 7.40. */
#ifndef FUSE_NOTIFY_RESEND
#define FUSE_NOTIFY_RESEND 7
#endif

#define FUSEINIT_MAX 4096u        /* a saved INIT is far smaller */
#define FUSEINIT_REPLAY_UNIQUE 1u /* odd: never a request the kernel waits on */

/* 0 when buf is a whole FUSE_INIT request (header length == len);
 * -EPROTO when it is another request, -EBADMSG when malformed. */
int fuseinit_check(const void *buf, size_t len);
/* Writes the request to path atomically (temporary file, fsync, rename),
 * mode 0600. */
int fuseinit_save(const char *path, const void *buf, size_t len);
/* Reads and checks a saved request into buf (cap >= FUSEINIT_MAX). */
int fuseinit_load(const char *path, void *buf, size_t cap, size_t *ret_len);
/* Sets the request's unique (for the replay). */
void fuseinit_set_unique(void *buf, uint64_t unique);
/* Writes fuse_out_header{16, FUSE_NOTIFY_RESEND, 0} to the connection.
 * -EINVAL from kernels without it; -ENODEV once the connection is gone. */
int fuseinit_resend(int fuse_fd);

#endif
