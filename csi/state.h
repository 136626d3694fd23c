/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Durable state under --state-dir: one record per published target
 * (`pub-<hash of target>.state`), so that a restarted lith csi can re-adopt
 * the running mounters and clean what is stale. A record holds the volume
 * id, the target, the publish arguments compared for idempotency and
 * needed to restart the mounter, whether lith csi created the target
 * directory, the mounter's pid and start time (pid reuse) and the number
 * of the FUSE fd inside the mounter (for pidfd_getfd).
 *
 * Never secrets: they live only in memory (and in the mounter's own
 * environment, from which a restarted lith csi reads them back). Files
 * are 0600 in a 0700 directory, written atomically (temp file, fsync,
 * rename, fsync of the directory). Text, one `key\tvalue` per line; a
 * reader ignores keys it does not know. Any thread; no shared state.
 */
#ifndef LITH_CSI_STATE_H
#define LITH_CSI_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "csi/mounter.h"
#include "csi/volctx.h"

struct state_rec {
	struct volctx v;              /* secrets empty */
	bool created;
	bool has_secrets;             /* the publish carried credentials (not them) */
	pid_t pid;
	unsigned long long start;
	int fuse_fd;                  /* fd number inside the mounter */
};

/* DIR/PREFIX-<hash of target>.EXT into buf. */
void state_path(const char *dir, const char *target, const char *prefix, const char *ext,
		char *buf, size_t len);
/* Makes dir (0700, fixing the mode of an existing one). */
int state_dir_init(const char *dir);
int state_save(const char *dir, const struct state_rec *r);
/* Removes the record of target and its INIT file. Absent → 0. */
int state_remove(const char *dir, const char *target);
/* Calls fn for every readable record (unreadable ones are removed). */
int state_load(const char *dir, void (*fn)(void *ctx, struct state_rec *r), void *ctx);

#endif
