// SPDX-License-Identifier: Apache-2.0
/*
 * FUSE mounts by lith csi (see fusemount.h). The mount options are the
 * ones libfuse would pass for `lith mount`: the mounter in --fuse-fd mode
 * does not mount, it serves what was mounted here.
 */
#include "csi/fusemount.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUSE_MAX_READ (1u << 20)

static int check_parent(const char *target, char *msg, size_t len)
{
	char copy[PATH_MAX], real[PATH_MAX];
	char *parent;

	snprintf(copy, sizeof(copy), "%s", target);
	parent = dirname(copy);
	if (!realpath(parent, real)) {
		snprintf(msg, len, "the parent of target_path %s: %s", target, strerror(errno));
		return errno == ENOENT ? -EINVAL : -errno;
	}
	if (strcmp(real, parent)) {
		snprintf(msg, len, "target_path %s goes through a symbolic link (%s resolves to %s)",
			 target, parent, real);
		return -EINVAL;
	}
	return 0;
}

int fusemount_prepare(const char *target, bool *created, char *msg, size_t len)
{
	struct stat st;
	int r = check_parent(target, msg, len);

	*created = false;
	if (r < 0)
		return r;
	if (lstat(target, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		snprintf(msg, len, "target_path %s exists and is not a directory%s", target,
			 S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
		return -EINVAL;
	}
	if (errno != ENOENT || mkdir(target, 0750) < 0) {
		snprintf(msg, len, "cannot create target_path %s: %s", target, strerror(errno));
		return -errno;
	}
	*created = true;
	return 0;
}

int fusemount_mount(const char *target, const char *bucket, bool noexec, char *msg, size_t len)
{
	unsigned long flags = MS_RDONLY | MS_NOSUID | MS_NODEV | (noexec ? MS_NOEXEC : 0);
	char opts[256], source[128];
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		snprintf(msg, len, "cannot open /dev/fuse: %s", strerror(errno));
		return -errno;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,"
		 "default_permissions,max_read=%u", fd, FUSE_MAX_READ);
	snprintf(source, sizeof(source), "lith:%s", bucket);
	if (mount(source, target, "fuse.lith", flags, opts) < 0) {
		int e = errno;
		snprintf(msg, len, "mount of %s failed: %s", target, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

int fusemount_unmount(const char *target)
{
	if (umount2(target, UMOUNT_NOFOLLOW) == 0)
		return 0;
	if (errno == EBUSY && umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
		return 0;
	if (errno == EINVAL || errno == ENOENT)
		return 0; /* not a mount point (any more), or gone */
	return -errno;
}

/* mountinfo escapes ' ', '\t', '\n' and '\\' as \ooo. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

int fusemount_is_mounted(const char *target)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[PATH_MAX * 2], mp[PATH_MAX * 2];
	int found = 0;

	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		unescape(mp);
		found = !strcmp(mp, target);
	}
	fclose(f);
	return found;
}
