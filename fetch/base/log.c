// SPDX-License-Identifier: Apache-2.0
/*
 * Structured line logger (see log.h). The level is read once from LITH_LOG
 * on first use unless log_set_level() was called.
 */
#include "fetch/base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int current_level = -1;
static const char *const level_names[] = { "error", "warn", "info", "debug" };

static int level_from_env(void)
{
	const char *v = getenv("LITH_LOG");
	for (int i = 0; v && i <= LOG_DEBUG; i++)
		if (strcasecmp(v, level_names[i]) == 0)
			return i;
	return LOG_INFO;
}

void log_set_level(enum log_level level) { current_level = (int)level; }

bool log_enabled(enum log_level level)
{
	if (current_level < 0)
		current_level = level_from_env();
	return (int)level <= current_level;
}

void log_emit(enum log_level level, const char *msg, const char *fmt, ...)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	size_t n;

	if (!log_enabled(level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ldZ level=%s msg=\"%s\"",
			      ts.tv_nsec / 1000000, level_names[level], msg);
	if (fmt && n < sizeof(line) - 2) {
		va_list ap;
		line[n++] = ' ';
		va_start(ap, fmt);
		int w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		va_end(ap);
		if (w > 0)
			n += (size_t)w;
	}
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t unused = write(STDERR_FILENO, line, n);
	(void)unused;
}
