/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `lith mount --status-fd N`: the start-up verdict for a program (lith csi)
 * instead of a person: one line "ERRNO<TAB>MESSAGE\n" (ERRNO 0 once the
 * root is served, else the positive errno of the failure; MESSAGE has no
 * tab or newline), then the fd is closed. Written at most once.
 * Threads: any; the caller makes sure it is called once.
 */
#ifndef LITH_MOUNTER_STATUSFD_H
#define LITH_MOUNTER_STATUSFD_H

/* err: 0 or -errno. A negative fd is ignored. */
void statusfd_write(int fd, int err, const char *msg);

#endif
