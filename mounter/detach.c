// SPDX-License-Identifier: Apache-2.0
/*
 * Daemonizing after the mount is ready (see detach.h). The status message
 * on the pipe is "<errno> <text>"; end of file without one means the child
 * died during start-up.
 */
#include "mounter/detach.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define STATUS_MAX 1024

static int parent_wait(struct detach *d, int fd, pid_t child)
{
	char buf[STATUS_MAX + 1];
	size_t have = 0;
	ssize_t n;
	int err;

	while (have < STATUS_MAX && (n = read(fd, buf + have, STATUS_MAX - have)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		have += (size_t)n;
	}
	close(fd);
	buf[have] = '\0';
	if (have == 0 || sscanf(buf, "%d", &err) != 1) {
		waitpid(child, NULL, WNOHANG);
		fprintf(stderr, "lith mount: the mounter exited during start-up\n");
		d->exit_code = 1;
	} else {
		if (err)
			fprintf(stderr, "lith mount: %s\n", strchr(buf, ' ') ? strchr(buf, ' ') + 1 : "failed");
		d->exit_code = err ? 1 : 0;
	}
	return DETACH_PARENT;
}

int detach_begin(struct detach *d, bool foreground)
{
	int p[2];
	pid_t pid;

	*d = (struct detach){ .fd = -1, .background = !foreground };
	if (foreground)
		return 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid > 0) {
		close(p[1]);
		return parent_wait(d, p[0], pid);
	}
	close(p[0]);
	d->fd = p[1];
	setsid();
	if (chdir("/") < 0)
		return -errno;
	return 0;
}

static void redirect_stdio(const char *log_path)
{
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int out = open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		       0600);

	if (in >= 0) {
		dup2(in, STDIN_FILENO);
		close(in);
	}
	if (out >= 0) {
		dup2(out, STDOUT_FILENO);
		dup2(out, STDERR_FILENO);
		close(out);
	}
}

void detach_done(struct detach *d, int err, const char *msg, const char *log_path)
{
	char buf[STATUS_MAX];
	int n;

	if (!d->background) {
		if (err)
			fprintf(stderr, "lith mount: %s\n", msg ? msg : strerror(-err));
		return;
	}
	if (d->fd < 0)
		return;
	if (err == 0)
		redirect_stdio(log_path);
	n = snprintf(buf, sizeof(buf), "%d %s", -err, msg ? msg : strerror(-err));
	if (n > 0) {
		size_t len = (size_t)n > sizeof(buf) - 1 ? sizeof(buf) - 1 : (size_t)n;
		ssize_t w = write(d->fd, buf, len); /* < 0: the parent is gone */
		(void)w;
	}
	close(d->fd);
	d->fd = -1;
}
