/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-buffer reads and writes on a file descriptor, retrying EINTR and
 * short transfers: the one loop every module uses.
 */
#ifndef LITH_BASE_FDIO_H
#define LITH_BASE_FDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* 0 once all n bytes are written, or -errno (-EIO if nothing moves). */
int fdio_write_all(int fd, const void *buf, size_t n);
int fdio_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);
/* Bytes read: n, or fewer at end of file; -errno on an error. */
ssize_t fdio_read_full(int fd, void *buf, size_t n);
ssize_t fdio_pread_full(int fd, void *buf, size_t n, uint64_t off);

#endif
