/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What lith needs of /proc/PID/stat: state and start time (tells a live
 * process from a zombie and from a reused pid) and resident memory and CPU
 * time (the per-process metrics). The command name may hold anything,
 * so fields are counted from its closing parenthesis.
 */
#ifndef LITH_BASE_PROCSTAT_H
#define LITH_BASE_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

struct procstat {
	char state;                    /* 'R', 'S', 'Z', ... */
	unsigned long long start;      /* start time, clock ticks after boot */
	uint64_t rss_bytes;
	double cpu_seconds;            /* user + system */
};

/* 0, -ENOENT when the process is gone, -EBADMSG on an unparseable line. */
int procstat_read(pid_t pid, struct procstat *ret);
/* Parses one /proc/PID/stat line (exposed for tests). */
int procstat_parse(const char *line, long ticks_per_s, long page_size, struct procstat *ret);

#endif
