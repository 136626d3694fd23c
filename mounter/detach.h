/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Going to the background only once the mount works. detach_begin forks
 * before any thread exists; the parent waits on a pipe and exits with the
 * child's verdict (0 once the mount serves its root, 1 with the child's
 * message otherwise), so `lith mount` returns when the mount is usable.
 * The child starts a new session and, when it reports success, moves its
 * stdio to the log file: nothing keeps the caller's terminal or pipes.
 * In the foreground nothing forks and detach_done only reports.
 *
 * Threads: detach_begin before any thread is created; detach_done once,
 * from any thread.
 */
#ifndef LITH_MOUNTER_DETACH_H
#define LITH_MOUNTER_DETACH_H

#include <stdbool.h>

struct detach {
	bool background;
	int fd;          /* the child's end of the status pipe, or -1 */
	int exit_code;   /* the parent's, when detach_begin returned DETACH_PARENT */
};

#define DETACH_PARENT 1

/* 0: continue (the child, or in the foreground); DETACH_PARENT: the child
 * has reported, return d->exit_code; < 0: could not fork. */
int detach_begin(struct detach *d, bool foreground);
/* Reports the start-up verdict (err 0: ready; else msg says why). On
 * success in the background, stdin becomes /dev/null and stdout/stderr
 * log_path (appended; NULL: /dev/null). */
void detach_done(struct detach *d, int err, const char *msg, const char *log_path);

#endif
