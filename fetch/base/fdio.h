/* SPDX-License-Identifier: Apache-2.0 */
/* Whole-buffer write to a file descriptor, retrying EINTR and short writes. */
#ifndef LITH_BASE_FDIO_H
#define LITH_BASE_FDIO_H

#include <stddef.h>

/* 0 once all n bytes are written, or -errno. */
int fdio_write_all(int fd, const void *buf, size_t n);

#endif
