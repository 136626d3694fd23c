/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel side of a publish: the target directory, the FUSE mount made
 * with an fd lith csi opened itself (the fd is the mount: as long as some
 * lith process holds it the connection lives), and unmounting (lazily
 * when busy). Paths are checked against symlink tricks: the target's
 * parent must resolve to itself and the target must not be a symlink.
 * Any thread; no state.
 */
#ifndef LITH_CSI_FUSEMOUNT_H
#define LITH_CSI_FUSEMOUNT_H

#include <stdbool.h>
#include <stddef.h>

/* Makes sure target is a plain directory (creating it: *created). */
int fusemount_prepare(const char *target, bool *created, char *msg, size_t msglen);
/* Opens /dev/fuse and mounts it read-only, nosuid, nodev (and noexec on
 * request), allow_other, on target. Returns the fd (O_CLOEXEC). */
int fusemount_mount(const char *target, const char *bucket, bool noexec, char *msg,
		    size_t msglen);
/* Unmounts target; lazily when busy. Not mounted → 0. */
int fusemount_unmount(const char *target);
/* 1 when target is a mount point in this namespace, 0 if not. */
int fusemount_is_mounted(const char *target);

#endif
