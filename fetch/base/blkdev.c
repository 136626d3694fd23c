// SPDX-License-Identifier: Apache-2.0
/*
 * Describe the storage under a directory and probe its write throughput
 * (see blkdev.h). Reads sysfs attributes only (never writes), walks stacked
 * devices through slaves/ with fixed depth and leaf bounds, and leaves the
 * output untouched on failure. Threads: no shared state.
 */
#include "fetch/base/blkdev.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fetch/base/clock.h"
#include "fetch/base/macro.h"

#define MAX_STACK_DEPTH 4
#define MAX_LEAVES 16
#define PROBE_CHUNK (1u << 20)
#define PROBE_SLACK (64ull << 20)

/* Bounded copy, always NUL-terminated (truncates). */
static void scopy(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; i + 1 < len && src[i]; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

/* ---- filesystems ------------------------------------------------------------ */

static const struct fs_magic {
	uint32_t magic;
	const char *name;
	bool network;
} fs_table[] = {
	{ 0xEF53, "ext2/3/4", false },      { 0x58465342, "xfs", false },
	{ 0x9123683E, "btrfs", false },     { 0xF2F52010, "f2fs", false },
	{ 0x2FC12FC1, "zfs", false },       { 0xCA451A4E, "bcachefs", false },
	{ 0x01021994, "tmpfs", false },     { 0x858458F6, "ramfs", false },
	{ 0x794C7630, "overlay", false },   { 0x65735546, "fuse", false },
	{ 0x73717368, "squashfs", false },  { 0x4D44, "vfat", false },
	{ 0x2011BAB0, "exfat", false },     { 0x5346544E, "ntfs", false },
	{ 0x3153464A, "jfs", false },       { 0x52654973, "reiserfs", false },
	{ 0x6969, "nfs", true },            { 0xFF534D42, "cifs", true },
	{ 0xFE534D42, "smb2", true },       { 0x00C36400, "ceph", true },
	{ 0x01021997, "9p", true },         { 0x0BD00BD0, "lustre", true },
	{ 0x5346414F, "afs", true },        { 0x6B414653, "afs", true },
};

static void fs_identify(uint32_t magic, struct blkdev_info *info)
{
	for (size_t i = 0; i < ARRAY_SIZE(fs_table); i++)
		if (fs_table[i].magic == magic) {
			scopy(info->fstype, sizeof(info->fstype), fs_table[i].name);
			info->fs_network = fs_table[i].network;
			return;
		}
	snprintf(info->fstype, sizeof(info->fstype), "0x%x", magic);
}

/* ---- sysfs helpers ---------------------------------------------------------- */

static const char *sysfs_root(const char *arg)
{
	const char *env = getenv("LITH_SYSFS_ROOT");

	if (arg && *arg)
		return arg;
	return env && *env ? env : "/sys";
}

static void trim(char *s)
{
	size_t n = strlen(s), lead = strspn(s, " \t\n");

	while (n > lead && strchr(" \t\n", s[n - 1]))
		n--;
	memmove(s, s + lead, n - lead);
	s[n - lead] = '\0';
}

/* Reads <dir>/<name> (at most len-1 bytes), trimmed. */
static int read_attr(const char *dir, const char *name, char *buf, size_t len)
{
	char p[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	trim(buf);
	return 0;
}

static bool has_entry(const char *dir, const char *name)
{
	char p[PATH_MAX];

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return false;
	return access(p, F_OK) == 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Resolves a device path to its whole disk's directory (PATH_MAX bytes). */
static int resolve_disk(const char *path, char *ret_disk)
{
	char p[PATH_MAX];

	if (!realpath(path, p))
		return -errno;
	if (has_entry(p, "partition")) {
		char *slash = strrchr(p, '/');
		if (!slash || slash == p)
			return -ENODEV;
		*slash = '\0';
	}
	memcpy(ret_disk, p, strlen(p) + 1);
	return 0;
}

/* ---- classification ---------------------------------------------------------- */

static const struct {
	const char *prefix;
	enum blkdev_kind kind;
	const char *transport;
} name_table[] = {
	{ "nvme", BLKDEV_KIND_NVME, NULL },     { "dm-", BLKDEV_KIND_DM, "dm" },
	{ "md", BLKDEV_KIND_MD, "md" },         { "loop", BLKDEV_KIND_LOOP, "loop" },
	{ "nbd", BLKDEV_KIND_NBD, "nbd" },      { "rbd", BLKDEV_KIND_RBD, "rbd" },
	{ "zram", BLKDEV_KIND_ZRAM, "ram" },    { "ram", BLKDEV_KIND_RAM, "ram" },
	{ "xvd", BLKDEV_KIND_XEN, "xen" },      { "vd", BLKDEV_KIND_VIRTIO, "virtio" },
	{ "mmcblk", BLKDEV_KIND_MMC, "mmc" },   { "sd", BLKDEV_KIND_SCSI, NULL },
};

/* sd*: the host path says how the disk is attached. */
static enum blkdev_kind scsi_transport(const char *disk, char *t, size_t tlen)
{
	static const struct {
		const char *marker, *name;
	} tab[] = { { "/session", "iscsi" }, { "/rport-", "fc" }, { "/usb", "usb" },
		    { "/virtio", "virtio-scsi" } };

	for (size_t i = 0; i < ARRAY_SIZE(tab); i++)
		if (strstr(disk, tab[i].marker)) {
			scopy(t, tlen, tab[i].name);
			return i == 0 ? BLKDEV_KIND_ISCSI : BLKDEV_KIND_SCSI;
		}
	snprintf(t, tlen, "sata/sas");
	return BLKDEV_KIND_SCSI;
}

/*
 * An NVMe namespace's controller says "pcie", "tcp", "rdma", "fc", "loop".
 * With native multipath the namespace hangs off the subsystem instead: ask
 * the controller of its first path.
 */
static void nvme_transport(const char *disk, char *t, size_t tlen)
{
	char dir[PATH_MAX], p[PATH_MAX + 300];
	struct dirent *de;
	DIR *d;

	if (read_attr(disk, "device/transport", t, tlen) == 0)
		return;
	scopy(t, tlen, "unknown");
	if ((size_t)snprintf(dir, sizeof(dir), "%s/multipath", disk) >= sizeof(dir) ||
	    !(d = opendir(dir)))
		return;
	while ((de = readdir(d)) && de->d_name[0] == '.')
		;
	if (de) {
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		(void)read_attr(p, "device/transport", t, tlen);
	}
	closedir(d);
}

static enum blkdev_kind classify(const char *disk, char *t, size_t tlen)
{
	const char *name = base_name(disk);

	t[0] = '\0';
	if (has_entry(disk, "dm"))
		return snprintf(t, tlen, "dm"), BLKDEV_KIND_DM;
	if (has_entry(disk, "md"))
		return snprintf(t, tlen, "md"), BLKDEV_KIND_MD;
	for (size_t i = 0; i < ARRAY_SIZE(name_table); i++) {
		if (strncmp(name, name_table[i].prefix, strlen(name_table[i].prefix)) != 0)
			continue;
		if (name_table[i].kind == BLKDEV_KIND_SCSI)
			return scsi_transport(disk, t, tlen);
		if (name_table[i].transport)
			scopy(t, tlen, name_table[i].transport);
		else
			nvme_transport(disk, t, tlen);
		return name_table[i].kind;
	}
	return BLKDEV_KIND_UNKNOWN;
}

/* Cloud volume model strings (sysfs pads them with spaces: trimmed first). */
static const struct {
	const char *prefix;
	int network;
	const char *why;
} model_table[] = {
	{ "Amazon Elastic Block Store", 1, "AWS EBS" },
	{ "Amazon EC2 NVMe Instance Storage", 0, "AWS instance store" },
	{ "nvme_card-pd", 1, "GCP Persistent Disk" },
	{ "nvme_card", 0, "GCP Local SSD" },
	{ "PersistentDisk", 1, "GCP Persistent Disk" },
	{ "EphemeralDisk", 0, "GCP Local SSD" },
	{ "MSFT NVMe Accelerator", 1, "Azure remote disk" },
	{ "Microsoft NVMe Direct Disk", 0, "Azure local NVMe" },
};

static int leaf_network(enum blkdev_kind k, const char *t, const char *model, const char **why)
{
	for (size_t i = 0; i < ARRAY_SIZE(model_table); i++)
		if (strncmp(model, model_table[i].prefix, strlen(model_table[i].prefix)) == 0) {
			*why = model_table[i].why;
			return model_table[i].network;
		}
	if (k == BLKDEV_KIND_NVME && (!strcmp(t, "tcp") || !strcmp(t, "rdma") || !strcmp(t, "fc")))
		return *why = "nvme-over-fabrics", 1;
	if (k == BLKDEV_KIND_SCSI && !strcmp(t, "fc"))
		return *why = "fibre channel SAN", 1;
	if (k == BLKDEV_KIND_NBD || k == BLKDEV_KIND_RBD || k == BLKDEV_KIND_ISCSI)
		return *why = blkdev_kind_name(k), 1;
	if (k == BLKDEV_KIND_NVME)
		return !strcmp(t, "pcie") || !strcmp(t, "loop") ? 0 : -1;
	if (k == BLKDEV_KIND_SCSI || k == BLKDEV_KIND_MMC ||
	    k == BLKDEV_KIND_ZRAM || k == BLKDEV_KIND_RAM)
		return 0;
	return -1; /* virtio, xen, loop, unknown: sysfs cannot tell */
}

static int read_tristate(const char *disk, const char *attr)
{
	char b[16];

	if (read_attr(disk, attr, b, sizeof(b)) < 0)
		return -1;
	return !strcmp(b, "1") ? 1 : !strcmp(b, "0") ? 0 : -1;
}

/* 1 if either is 1, else -1 if either is unknown, else 0. */
static int combine(int a, int b)
{
	return (a == 1 || b == 1) ? 1 : (a < 0 || b < 0) ? -1 : 0;
}

/* ---- walking the stack --------------------------------------------------------- */

static void leaf_first(struct blkdev_info *info, enum blkdev_kind k, const char *disk,
		       const char *t)
{
	char b[128];

	info->leaf_kind = k;
	scopy(info->transport, sizeof(info->transport), t);
	if (read_attr(disk, "device/model", b, sizeof(b)) == 0)
		scopy(info->model, sizeof(info->model), b);
	if (read_attr(disk, "device/vendor", b, sizeof(b)) == 0 ||
	    read_attr(disk, "device/device/vendor", b, sizeof(b)) == 0)
		scopy(info->vendor, sizeof(info->vendor), b);
}

static void leaf_merge(struct blkdev_info *info, const char *disk, unsigned nleaf)
{
	char t[16], model[128] = "";
	const char *why = NULL;
	enum blkdev_kind k = classify(disk, t, sizeof(t));
	int rot = read_tristate(disk, "queue/rotational"), net;
	bool trusted = k != BLKDEV_KIND_VIRTIO && k != BLKDEV_KIND_XEN;
	size_t off = strlen(info->leaves);

	if (nleaf == 0)
		leaf_first(info, k, disk, t);
	(void)read_attr(disk, "device/model", model, sizeof(model));
	net = leaf_network(k, t, model, &why);
	info->rotational = nleaf ? combine(info->rotational, rot) : rot;
	info->rotational_trusted = (nleaf ? info->rotational_trusted : true) && trusted;
	if (net == 1 && info->network != 1)
		scopy(info->network_why, sizeof(info->network_why), why);
	info->network = nleaf ? combine(info->network, net) : net;
	if (off < sizeof(info->leaves) - 1)
		snprintf(info->leaves + off, sizeof(info->leaves) - off, "%s%s", off ? "," : "",
			 base_name(disk));
}

static void walk(const char *disk, unsigned depth, struct blkdev_info *info, unsigned *nleaf);

/* Walks the slaves of a dm/md device; returns how many were walked. */
static unsigned walk_slaves(const char *disk, unsigned depth, struct blkdev_info *info,
			    unsigned *nleaf)
{
	char dir[PATH_MAX], p[PATH_MAX], child[PATH_MAX];
	unsigned n = 0;
	struct dirent *de;
	DIR *d;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/slaves", disk) >= sizeof(dir))
		return 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && *nleaf < MAX_LEAVES) {
		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >= sizeof(p) ||
		    resolve_disk(p, child) < 0)
			continue;
		walk(child, depth + 1, info, nleaf);
		n++;
	}
	closedir(d);
	return n;
}

static void walk(const char *disk, unsigned depth, struct blkdev_info *info, unsigned *nleaf)
{
	char t[16];
	enum blkdev_kind k = classify(disk, t, sizeof(t));

	if ((k == BLKDEV_KIND_DM || k == BLKDEV_KIND_MD) && depth < MAX_STACK_DEPTH &&
	    walk_slaves(disk, depth, info, nleaf) > 0)
		return;
	if (*nleaf < MAX_LEAVES)
		leaf_merge(info, disk, (*nleaf)++);
}

/* ---- describe ------------------------------------------------------------------- */

const char *blkdev_kind_name(enum blkdev_kind kind)
{
	static const char *const names[] = {
		[BLKDEV_KIND_UNKNOWN] = "unknown", [BLKDEV_KIND_NONE] = "none",
		[BLKDEV_KIND_NVME] = "nvme",       [BLKDEV_KIND_SCSI] = "scsi",
		[BLKDEV_KIND_ISCSI] = "iscsi",     [BLKDEV_KIND_VIRTIO] = "virtio",
		[BLKDEV_KIND_XEN] = "xen",         [BLKDEV_KIND_MMC] = "mmc",
		[BLKDEV_KIND_LOOP] = "loop",       [BLKDEV_KIND_DM] = "dm",
		[BLKDEV_KIND_MD] = "md",           [BLKDEV_KIND_NBD] = "nbd",
		[BLKDEV_KIND_RBD] = "rbd",         [BLKDEV_KIND_ZRAM] = "zram",
		[BLKDEV_KIND_RAM] = "ram",
	};
	return (unsigned)kind < ARRAY_SIZE(names) ? names[kind] : "unknown";
}

static void info_init(struct blkdev_info *info)
{
	memset(info, 0, sizeof(*info));
	info->rotational = -1;
	info->network = -1;
}

/* Fills the device part of info. */
static int describe_dev(const char *root, unsigned major, unsigned minor, struct blkdev_info *info)
{
	char link[PATH_MAX], dev[PATH_MAX], disk[PATH_MAX], t[16], b[32];
	unsigned nleaf = 0;
	uint64_t sectors;
	int r;

	if ((size_t)snprintf(link, sizeof(link), "%s/dev/block/%u:%u", root, major, minor) >=
	    sizeof(link))
		return -ENAMETOOLONG;
	if (!realpath(link, dev))
		return errno == ENOENT ? -ENODEV : -errno;
	r = resolve_disk(dev, disk);
	if (r < 0)
		return r;
	info->has_device = true;
	info->major = major;
	info->minor = minor;
	scopy(info->dev, sizeof(info->dev), base_name(dev));
	scopy(info->disk, sizeof(info->disk), base_name(disk));
	info->kind = classify(disk, t, sizeof(t));
	if (read_attr(disk, "size", b, sizeof(b)) == 0 && sscanf(b, "%" SCNu64, &sectors) == 1)
		info->size_bytes = sectors * 512;
	walk(disk, 0, info, &nleaf);
	return 0;
}

int blkdev_describe_devnum(const char *sysfs_root_arg, unsigned major, unsigned minor,
			   struct blkdev_info *ret)
{
	struct blkdev_info info;
	int r;

	info_init(&info);
	r = describe_dev(sysfs_root(sysfs_root_arg), major, minor, &info);
	if (r < 0)
		return r;
	*ret = info;
	return 0;
}

/* st_dev with major 0 (btrfs, ...): the mount source, if it is a /dev node. */
static bool mount_source_dev(dev_t anon, dev_t *ret)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, src[256];
	size_t cap = 0;
	bool found = false;
	struct stat st;

	while (f && !found && getline(&line, &cap, f) > 0) {
		unsigned ma, mi;
		char *sep = strstr(line, " - ");
		if (sscanf(line, "%*u %*u %u:%u", &ma, &mi) != 2 || makedev(ma, mi) != anon || !sep)
			continue;
		if (sscanf(sep + 3, "%*s %255s", src) == 1 && strncmp(src, "/dev/", 5) == 0 &&
		    stat(src, &st) == 0 && S_ISBLK(st.st_mode)) {
			*ret = st.st_rdev;
			found = true;
		}
		break;
	}
	free(line);
	if (f)
		fclose(f);
	return found;
}

static void fs_only(struct blkdev_info *info)
{
	info->kind = BLKDEV_KIND_NONE;
	if (info->fs_network) {
		info->network = 1;
		scopy(info->network_why, sizeof(info->network_why), info->fstype);
	} else if (!strcmp(info->fstype, "tmpfs") || !strcmp(info->fstype, "ramfs")) {
		info->network = 0;
	}
}

int blkdev_describe(const char *dir, const char *sysfs_root_arg, struct blkdev_info *ret)
{
	struct blkdev_info info;
	struct statfs sf;
	struct stat st;
	dev_t dev;
	int r;

	if (statfs(dir, &sf) < 0 || stat(dir, &st) < 0)
		return -errno;
	info_init(&info);
	scopy(info.path, sizeof(info.path), dir);
	fs_identify((uint32_t)sf.f_type, &info);
	dev = st.st_dev;
	if (info.fs_network || (major(dev) == 0 && !mount_source_dev(dev, &dev))) {
		fs_only(&info);
	} else {
		r = describe_dev(sysfs_root(sysfs_root_arg), major(dev), minor(dev), &info);
		if (r < 0 && r != -ENODEV)
			return r;
	}
	*ret = info;
	return 0;
}

/* ---- write probe -------------------------------------------------------------- */

/* An already-unlinked file in dir. */
static int probe_open(const char *dir, int *ret_fd)
{
	char p[PATH_MAX];
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

	if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	if (fd < 0) {
		if ((size_t)snprintf(p, sizeof(p), "%s/.lith-probe-XXXXXX", dir) >= sizeof(p))
			return -ENAMETOOLONG;
		fd = mkostemp(p, O_CLOEXEC);
		if (fd < 0)
			return -errno;
		unlink(p);
	}
	*ret_fd = fd;
	return 0;
}

static bool set_direct(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return false;
	return fcntl(fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT) == 0;
}

/* Incompressible pseudo-random bytes, generated once before timing. */
static void fill_random(uint8_t *buf, size_t n)
{
	uint64_t x = clock_mono_ns() | 1;

	for (size_t i = 0; i + 8 <= n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
}

/* Stamps every 4 KiB block, so no two chunks dedupe (cheap inside timing). */
static void stamp_chunk(uint8_t *buf, size_t n, uint64_t chunk)
{
	for (size_t i = 0; i + 8 <= n; i += 4096)
		memcpy(buf + i, &chunk, 8);
}

static int write_all(int fd, const uint8_t *buf, size_t n, bool *direct)
{
	size_t off = 0;

	while (off < n) {
		ssize_t w = write(fd, buf + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EINVAL && *direct) { /* alignment refused: go buffered */
			*direct = !set_direct(fd, false);
			if (*direct)
				return -EINVAL;
			continue;
		}
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		off += (size_t)w;
	}
	return 0;
}

static int probe_run(int fd, uint8_t *buf, uint64_t bytes, unsigned max_ms,
		     struct blkdev_probe *p)
{
	uint64_t start = clock_mono_ns(), stop = start + (uint64_t)max_ms * 1000000ull;
	int r;

	p->direct = set_direct(fd, true);
	while (p->bytes < bytes) {
		size_t n = (size_t)MIN((uint64_t)PROBE_CHUNK, bytes - p->bytes);
		if (clock_mono_ns() >= stop) {
			p->truncated = true;
			break;
		}
		stamp_chunk(buf, PROBE_CHUNK, p->bytes / PROBE_CHUNK);
		r = write_all(fd, buf, n, &p->direct);
		if (r < 0)
			return r;
		p->bytes += n;
	}
	if (fdatasync(fd) < 0)
		return -errno;
	p->ns = clock_mono_ns() - start;
	p->mb_per_s = p->ns ? (double)p->bytes * 1000.0 / (double)p->ns : 0.0;
	return 0;
}

int blkdev_probe_write(const char *dir, uint64_t bytes, unsigned max_ms,
		       struct blkdev_probe *ret)
{
	struct blkdev_probe p = { 0 };
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *buf = NULL;
	struct statvfs sv;
	int r;

	bytes = bytes ? bytes : BLKDEV_PROBE_BYTES_DEFAULT;
	max_ms = max_ms ? max_ms : BLKDEV_PROBE_MS_DEFAULT;
	if (statvfs(dir, &sv) < 0)
		return -errno;
	if ((uint64_t)sv.f_bavail * sv.f_frsize < bytes + PROBE_SLACK)
		return -ENOSPC;
	r = probe_open(dir, &fd);
	if (r < 0)
		return r;
	if (posix_memalign((void **)&buf, 4096, PROBE_CHUNK) != 0)
		return -ENOMEM;
	fill_random(buf, PROBE_CHUNK);
	r = probe_run(fd, buf, bytes, max_ms, &p);
	if (r < 0)
		return r;
	*ret = p;
	return 0;
}

/* ---- verdict and summary ---------------------------------------------------------- */

static void where(const struct blkdev_info *info, char *b, size_t len)
{
	if (!info->has_device)
		snprintf(b, len, "a %s filesystem", info->fstype);
	else if (info->model[0])
		snprintf(b, len, "%s (%s \"%s\")", info->disk, blkdev_kind_name(info->leaf_kind),
			 info->model);
	else
		snprintf(b, len, "%s (%s)", info->disk, blkdev_kind_name(info->leaf_kind));
}

const char *blkdev_verdict(const struct blkdev_info *info, const struct blkdev_probe *probe,
			   double min_mb_s, char *buf, size_t len)
{
	char dev[160], why[256] = "";
	size_t off = 0;

	min_mb_s = min_mb_s > 0 ? min_mb_s : BLKDEV_MIN_MBPS_DEFAULT;
	if (info->network == 1)
		off += (size_t)snprintf(why + off, sizeof(why) - off, "network-attached (%s)",
					info->network_why);
	if (info->rotational == 1 && info->rotational_trusted && off < sizeof(why))
		off += (size_t)snprintf(why + off, sizeof(why) - off, "%srotational",
					off ? ", " : "");
	if (probe && probe->bytes > 0 && probe->mb_per_s < min_mb_s && off < sizeof(why))
		off += (size_t)snprintf(why + off, sizeof(why) - off,
					"%swrites at %.0f MB/s (< %.0f MB/s)", off ? ", " : "",
					probe->mb_per_s, min_mb_s);
	if (off == 0 || !buf || len == 0)
		return NULL;
	where(info, dev, sizeof(dev));
	snprintf(buf, len,
		 "cache dir %s is on %s: %s; S3 fills will be capped by this device, "
		 "put the cache on fast local disk (e.g. NVMe instance storage)",
		 info->path, dev, why);
	return buf;
}

static const char *tristate(int v)
{
	return v == 1 ? "yes" : v == 0 ? "no" : "unknown";
}

const char *blkdev_format(const struct blkdev_info *info, const struct blkdev_probe *probe,
			  char *buf, size_t len)
{
	int n = snprintf(buf, len,
			 "dir=%s fs=%s dev=%s disk=%s kind=%s leaves=%s leaf_kind=%s "
			 "transport=%s model=\"%s\" vendor=\"%s\" size=%" PRIu64
			 " rotational=%s%s network=%s network_why=\"%s\"",
			 info->path, info->fstype, info->has_device ? info->dev : "none",
			 info->has_device ? info->disk : "none", blkdev_kind_name(info->kind),
			 info->leaves[0] ? info->leaves : "none",
			 blkdev_kind_name(info->leaf_kind), info->transport[0] ? info->transport : "-",
			 info->model, info->vendor, info->size_bytes, tristate(info->rotational),
			 info->rotational >= 0 && !info->rotational_trusted ? "(untrusted)" : "", tristate(info->network),
			 info->network_why);
	if (probe && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " write_mbps=%.0f write_bytes=%" PRIu64
			 " direct=%d%s", probe->mb_per_s, probe->bytes, probe->direct,
			 probe->truncated ? " truncated=1" : "");
	return buf;
}
