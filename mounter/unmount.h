/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `lith umount`: detach a lith mount and see its mounter gone.
 *  - Default: umount2(path, 0) (fusermount3 -u when not root). A mount in
 *    use (open files, a cwd inside) is refused with -EBUSY and keeps
 *    serving. Once unmounted, the kernel ends the FUSE connection, the
 *    mounter unwinds (stopping its private cache daemon) and exits; we
 *    wait up to timeout_ms for that.
 *  - Lazy (MNT_DETACH, fusermount3 -uz): the path is detached at once;
 *    files already open keep reading until closed, and the mounter exits
 *    when the last one is closed. We do not wait for it.
 * Threads: any; no shared state.
 */
#ifndef LITH_MOUNTER_UNMOUNT_H
#define LITH_MOUNTER_UNMOUNT_H

#include <stdbool.h>
#include <stddef.h>

/* -EBUSY in use; -EINVAL not a mount point; -ETIMEDOUT the mounter did not
 * exit in time (the mount itself is gone). msg says what happened. */
int unmount_path(const char *mountpoint, bool lazy, unsigned timeout_ms, char *msg,
		 size_t msglen);

#endif
