// SPDX-License-Identifier: Apache-2.0
/* Process RSS and CPU time from /proc/PID/stat (see procstat.h). */
#include "fetch/base/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fields after the comm's closing parenthesis, counted from field 3
 * (state): utime is field 14, stime 15, starttime 22, rss 24 (proc(5)). */
int procstat_parse(const char *line, long ticks_per_s, long page_size, struct procstat *ret)
{
	const char *p = strrchr(line, ')');
	unsigned long long utime = 0, stime = 0, start = 0;
	long long rss = -1;
	char state = 0;
	int field = 2;

	if (!p || ticks_per_s <= 0 || page_size <= 0)
		return -EBADMSG;
	for (p++; *p && field < 24;) {
		while (*p == ' ')
			p++;
		field++;
		if (field == 3)
			state = *p;
		else if (field == 14)
			utime = strtoull(p, NULL, 10);
		else if (field == 15)
			stime = strtoull(p, NULL, 10);
		else if (field == 22)
			start = strtoull(p, NULL, 10);
		else if (field == 24)
			rss = strtoll(p, NULL, 10);
		p = strchr(p, ' ');
		if (!p)
			break;
	}
	if (field < 24 || rss < 0 || !state)
		return -EBADMSG;
	*ret = (struct procstat){ .state = state, .start = start,
				  .rss_bytes = (uint64_t)rss * (uint64_t)page_size,
				  .cpu_seconds = (double)(utime + stime) / (double)ticks_per_s };
	return 0;
}

int procstat_read(pid_t pid, struct procstat *ret)
{
	char path[64], line[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EBADMSG;
	line[n] = '\0';
	return procstat_parse(line, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), ret);
}
