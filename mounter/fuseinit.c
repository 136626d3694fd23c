// SPDX-License-Identifier: Apache-2.0
/*
 * The saved FUSE_INIT request and the RESEND notification (see
 * fuseinit.h). The file holds the request's bytes and nothing else; it is
 * checked again when loaded (a truncated or foreign file is refused, never
 * replayed).
 */
#include "mounter/fuseinit.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fetch/base/fdio.h"

#define INIT_MIN (sizeof(struct fuse_in_header) + 8) /* major, minor */

int fuseinit_check(const void *buf, size_t len)
{
	struct fuse_in_header in;

	if (len < sizeof(in))
		return -EBADMSG;
	memcpy(&in, buf, sizeof(in));
	if (in.len != len)
		return -EBADMSG;
	if (in.opcode != FUSE_INIT)
		return -EPROTO;
	return len < INIT_MIN || len > FUSEINIT_MAX ? -EBADMSG : 0;
}

int fuseinit_save(const char *path, const void *buf, size_t len)
{
	char tmp[4200];
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
	if (fd < 0)
		return -errno;
	r = fdio_write_all(fd, buf, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int fuseinit_load(const char *path, void *buf, size_t cap, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap);
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r == 0 && (size_t)n == cap)
		r = -EFBIG;
	if (r == 0)
		r = fuseinit_check(buf, (size_t)n) < 0 ? -EBADMSG : 0;
	if (r == 0)
		*ret_len = (size_t)n;
	return r;
}

void fuseinit_set_unique(void *buf, uint64_t unique)
{
	struct fuse_in_header in;

	memcpy(&in, buf, sizeof(in));
	in.unique = unique;
	memcpy(buf, &in, sizeof(in));
}

int fuseinit_resend(int fuse_fd)
{
	struct fuse_out_header h = { .len = sizeof(h), .error = FUSE_NOTIFY_RESEND, .unique = 0 };
	ssize_t n;

	do
		n = write(fuse_fd, &h, sizeof(h));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(h) ? 0 : -EIO;
}
