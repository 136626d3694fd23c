/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a running mount leaves its traces, keyed by a hash of its
 * mountpoint: RUNDIR/mounts/HASH.pid ("pid starttime\nmountpoint\n") so
 * `lith umount` can wait for the right process, and RUNDIR/mounts/HASH.log
 * for the background mounter's log. RUNDIR is /run/lith for root, else
 * $XDG_RUNTIME_DIR/lith (or /tmp/lith-UID). The pid file is checked against
 * the process's start time, so a recycled pid is never mistaken for it.
 * Also the default private cache directory of a mount.
 *
 * Threads: plain file operations, no shared state.
 */
#ifndef LITH_MOUNTER_MOUNTREG_H
#define LITH_MOUNTER_MOUNTREG_H

#include <stddef.h>
#include <sys/types.h>

/* 16 hex digits of FNV-1a 64 over s, NUL-terminated. */
void mountreg_hash(const char *s, char out[17]);
/* RUNDIR/mounts/HASH.SUFFIX for mountpoint; creates RUNDIR/mounts. */
int mountreg_path(const char *mountpoint, const char *suffix, char *buf, size_t cap);
/* The default private cache dir: /var/cache/lith-private/HASH for root,
 * else $XDG_CACHE_HOME (or ~/.cache)/lith-private/HASH. */
int mountreg_cache_dir(const char *key, char *buf, size_t cap);
/* Records this process as the mounter of mountpoint. */
int mountreg_add(const char *mountpoint);
void mountreg_remove(const char *mountpoint);
/* Removes the pid file of a mounter that died without cleaning up (the
 * log stays). */
void mountreg_forget_dead(const char *mountpoint);
/* The live mounter of mountpoint: -ENOENT when none is recorded or it is
 * gone. */
int mountreg_lookup(const char *mountpoint, pid_t *ret);
/* Whether pid still runs (not a zombie). */
int mountreg_alive(pid_t pid);

#endif
