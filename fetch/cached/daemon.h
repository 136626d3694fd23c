/* SPDX-License-Identifier: Apache-2.0 */
/* The lith cached process: wires the store, the S3 engine, the scheduler,
 * the views and the protocol server onto one event loop, runs until
 * SIGTERM/SIGINT, and tears everything down in order. */
#ifndef LITH_CACHED_DAEMON_H
#define LITH_CACHED_DAEMON_H

#include "fetch/cached/config.h"

/* Returns the process exit code. */
int cached_run(const struct cached_config *cfg);

#endif
