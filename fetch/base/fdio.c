// SPDX-License-Identifier: Apache-2.0
/* Whole-buffer reads and writes (see fdio.h). off < 0: the file position. */
#include "fetch/base/fdio.h"

#include <errno.h>
#include <unistd.h>

static int write_at(int fd, const char *p, size_t n, int64_t off)
{
	while (n) {
		ssize_t w = off < 0 ? write(fd, p, n) : pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

static ssize_t read_at(int fd, char *p, size_t n, int64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = off < 0 ? read(fd, p + done, n - done)
				    : pread(fd, p + done, n - done, (off_t)(off + (int64_t)done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

int fdio_write_all(int fd, const void *buf, size_t n)
{
	return write_at(fd, buf, n, -1);
}

int fdio_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	return write_at(fd, buf, n, (int64_t)off);
}

ssize_t fdio_read_full(int fd, void *buf, size_t n)
{
	return read_at(fd, buf, n, -1);
}

ssize_t fdio_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	return read_at(fd, buf, n, (int64_t)off);
}
