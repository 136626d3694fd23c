/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resident memory and CPU time of a process, from /proc/PID/stat, for the
 * per-process metrics of every lith process.
 */
#ifndef LITH_BASE_PROCSTAT_H
#define LITH_BASE_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

struct procstat {
	uint64_t rss_bytes;
	double cpu_seconds; /* user + system */
};

/* 0, -ENOENT when the process is gone, -EBADMSG on an unparseable line. */
int procstat_read(pid_t pid, struct procstat *ret);
/* Parses one /proc/PID/stat line (exposed for tests). */
int procstat_parse(const char *line, long ticks_per_s, long page_size, struct procstat *ret);

#endif
