// SPDX-License-Identifier: Apache-2.0
/*
 * The status line of `lith mount --status-fd` (see statusfd.h): tabs and
 * newlines in the message become spaces, so the reader splits one line on
 * the first tab.
 */
#include "mounter/statusfd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void statusfd_write(int fd, int err, const char *msg)
{
	char text[1000], line[1100];
	int n;

	if (fd < 0)
		return;
	snprintf(text, sizeof(text), "%s", msg && msg[0] ? msg : err ? strerror(-err) : "ok");
	for (char *p = text; *p; p++)
		if (*p == '\t' || *p == '\n' || *p == '\r')
			*p = ' ';
	n = snprintf(line, sizeof(line), "%d\t%s\n", err < 0 ? -err : err, text);
	while (write(fd, line, (size_t)n) < 0 && errno == EINTR)
		;
	close(fd);
}
