/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Structured logging: one line per event, `level=... msg="..." key=value`.
 * Libraries log at debug only; daemons log errors once at the top. The level
 * comes from LITH_LOG (error|warn|info|debug), default info. Thread-safe:
 * each line is formatted then written with one write(2) to stderr.
 */
#ifndef LITH_BASE_LOG_H
#define LITH_BASE_LOG_H

#include <stdbool.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level level);
bool log_enabled(enum log_level level);
/* fmt produces the key=value fields after msg; may be NULL. */
void log_emit(enum log_level level, const char *msg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_error(msg, ...) log_emit(LOG_ERROR, msg, __VA_ARGS__)
#define log_warn(msg, ...) log_emit(LOG_WARN, msg, __VA_ARGS__)
#define log_info(msg, ...) log_emit(LOG_INFO, msg, __VA_ARGS__)
#define log_debug(msg, ...)                                      \
	do {                                                     \
		if (log_enabled(LOG_DEBUG))                      \
			log_emit(LOG_DEBUG, msg, __VA_ARGS__);   \
	} while (0)

#endif
