// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for fetch/base/blkdev. A fake sysfs tree in a temp dir holds
 * the shapes seen on real machines: NVMe EBS and NVMe instance storage (AWS
 * Nitro model strings), a rotational SATA disk, virtio, device-mapper over
 * NVMe (and over a mix of EBS and local), iSCSI, NVMe/TCP, a GCP PD, and a
 * dm slave cycle. Then the real thing: /dev/shm (tmpfs, no device) and a
 * write probe of /tmp, whose results are printed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fetch/base/blkdev.h"


/* Open descriptors, to catch leaks (the DIR's own fd counts both times). */
static char root[64];

static void mkdirs(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void parent_dirs(const char *rel, char *full, size_t len)
{
	char d[PATH_MAX];

	snprintf(full, len, "%s/%s", root, rel);
	snprintf(d, sizeof(d), "%s", full);
	*strrchr(d, '/') = '\0';
	mkdirs(d);
}

static void put(const char *rel, const char *content)
{
	char full[PATH_MAX];
	int fd;

	parent_dirs(rel, full, sizeof(full));
	fd = open(full, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t)strlen(content))
		abort();
	close(fd);
}

static void lnk(const char *rel, const char *target)
{
	char full[PATH_MAX];

	parent_dirs(rel, full, sizeof(full));
	if (symlink(target, full) < 0)
		abort();
}

#define PCI "devices/pci0000:00/"

/* An NVMe controller with one namespace (and optionally a partition). */
static void fake_nvme(const char *ctrl_dir, const char *ctrl, const char *model,
		      const char *transport, unsigned minor, bool part)
{
	char p[512], q[512];

	snprintf(p, sizeof(p), "%s/%s/model", ctrl_dir, ctrl);
	put(p, model);
	snprintf(p, sizeof(p), "%s/%s/transport", ctrl_dir, ctrl);
	put(p, transport);
	snprintf(p, sizeof(p), "%s/%s/%sn1/size", ctrl_dir, ctrl, ctrl);
	put(p, "16777216\n");
	snprintf(p, sizeof(p), "%s/%s/%sn1/queue/rotational", ctrl_dir, ctrl, ctrl);
	put(p, "0\n");
	snprintf(p, sizeof(p), "%s/%s/%sn1/device", ctrl_dir, ctrl, ctrl);
	snprintf(q, sizeof(q), "../../%s", ctrl);
	lnk(p, q);
	snprintf(p, sizeof(p), "dev/block/259:%u", minor);
	snprintf(q, sizeof(q), "../../%s/%s/%sn1", ctrl_dir, ctrl, ctrl);
	lnk(p, q);
	if (!part)
		return;
	snprintf(p, sizeof(p), "%s/%s/%sn1/%sn1p1/partition", ctrl_dir, ctrl, ctrl, ctrl);
	put(p, "1\n");
	snprintf(p, sizeof(p), "dev/block/259:%u", minor + 1);
	snprintf(q, sizeof(q), "../../%s/%s/%sn1/%sn1p1", ctrl_dir, ctrl, ctrl, ctrl);
	lnk(p, q);
}

#define SATA PCI "0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0"
#define ISCSI "devices/platform/host3/session1/target3:0:0/3:0:0:0"
#define VIRTIO PCI "0000:00:02.0/virtio1"

static void fake_scsi(const char *host, const char *name, unsigned minor, const char *vendor,
		      const char *model, const char *rot)
{
	char p[512], q[512];

	snprintf(p, sizeof(p), "%s/vendor", host);
	put(p, vendor);
	snprintf(p, sizeof(p), "%s/model", host);
	put(p, model);
	snprintf(p, sizeof(p), "%s/block/%s/size", host, name);
	put(p, "7814037168\n");
	snprintf(p, sizeof(p), "%s/block/%s/queue/rotational", host, name);
	put(p, rot);
	snprintf(p, sizeof(p), "%s/block/%s/device", host, name);
	snprintf(q, sizeof(q), "../../../%s", strrchr(host, '/') + 1);
	lnk(p, q);
	snprintf(p, sizeof(p), "%s/block/%s/%s1/partition", host, name, name);
	put(p, "1\n");
	snprintf(p, sizeof(p), "dev/block/8:%u", minor);
	snprintf(q, sizeof(q), "../../%s/block/%s", host, name);
	lnk(p, q);
	snprintf(p, sizeof(p), "dev/block/8:%u", minor + 1);
	snprintf(q, sizeof(q), "../../%s/block/%s/%s1", host, name, name);
	lnk(p, q);
}

static void fake_dm(const char *name, unsigned minor, const char *const *slaves,
		    const char *const *targets, size_t n)
{
	char p[512], q[512];

	snprintf(p, sizeof(p), "devices/virtual/block/%s/dm/name", name);
	put(p, "vg-cache\n");
	snprintf(p, sizeof(p), "devices/virtual/block/%s/size", name);
	put(p, "2097152\n");
	snprintf(p, sizeof(p), "devices/virtual/block/%s/queue/rotational", name);
	put(p, "0\n");
	for (size_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "devices/virtual/block/%s/slaves/%s", name, slaves[i]);
		lnk(p, targets[i]);
	}
	snprintf(p, sizeof(p), "dev/block/253:%u", minor);
	snprintf(q, sizeof(q), "../../devices/virtual/block/%s", name);
	lnk(p, q);
}

static void build_fake_sysfs(void)
{
	fake_nvme(PCI "0000:00:04.0/nvme", "nvme0", "Amazon Elastic Block Store              \n",
		  "pcie\n", 0, true);
	put(PCI "0000:00:04.0/nvme/nvme0/device/vendor", "0x1d0f\n");
	fake_nvme(PCI "0000:00:1f.0/nvme", "nvme1", "Amazon EC2 NVMe Instance Storage        \n",
		  "pcie\n", 2, true);
	fake_nvme("devices/virtual/nvme-fabrics/ctl", "nvme2", "Linux\n", "tcp\n", 4, false);
	fake_nvme(PCI "0000:00:05.0/nvme", "nvme3", "nvme_card-pd\n", "pcie\n", 6, false);
	fake_scsi(SATA, "sda", 0, "ATA     \n", "ST4000DM004-2CV104\n", "1\n");
	fake_scsi(ISCSI, "sdb", 16, "LIO-ORG \n", "cache-lun       \n", "0\n");
	/* NVMe/TCP with native multipath: the namespace hangs off the subsystem. */
#define SUBSYS "devices/virtual/nvme-subsystem/nvme-subsys5"
#define FABRIC "devices/virtual/nvme-fabrics/ctl/nvme5"
	put(SUBSYS "/model", "Linux\n");
	put(SUBSYS "/nvme5n1/size", "2048\n");
	put(SUBSYS "/nvme5n1/queue/rotational", "0\n");
	lnk(SUBSYS "/nvme5n1/device", "../../nvme-subsys5");
	lnk(SUBSYS "/nvme5n1/multipath/nvme5c5n1", "../../../../nvme-fabrics/ctl/nvme5/nvme5c5n1");
	put(FABRIC "/transport", "tcp\n");
	put(FABRIC "/nvme5c5n1/size", "2048\n");
	lnk(FABRIC "/nvme5c5n1/device", "../../nvme5");
	lnk("dev/block/259:10", "../../" SUBSYS "/nvme5n1");
	put(VIRTIO "/vendor", "0x1af4\n");
	put(VIRTIO "/block/vda/size", "536870912\n");
	put(VIRTIO "/block/vda/queue/rotational", "1\n");
	lnk(VIRTIO "/block/vda/device", "../../../virtio1");
	lnk("dev/block/254:0", "../../" VIRTIO "/block/vda");

	static const char *const s0[] = { "nvme1n1p1" };
	static const char *const t0[] = { "../../../../pci0000:00/0000:00:1f.0/nvme/nvme1/nvme1n1/nvme1n1p1" };
	fake_dm("dm-0", 0, s0, t0, 1);
	static const char *const s1[] = { "nvme0n1p1", "nvme1n1" };
	static const char *const t1[] = { "../../../../pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1/nvme0n1p1",
					  "../../../../pci0000:00/0000:00:1f.0/nvme/nvme1/nvme1n1" };
	fake_dm("dm-1", 1, s1, t1, 2);
	static const char *const s2[] = { "dm-3" };
	static const char *const t2[] = { "../../dm-3" };
	static const char *const s3[] = { "dm-2" };
	static const char *const t3[] = { "../../dm-2" };
	fake_dm("dm-2", 2, s2, t2, 1);
	fake_dm("dm-3", 3, s3, t3, 1);
}

static struct blkdev_info info;
static char line[1024];

static int describe(unsigned major, unsigned minor)
{
	memset(&info, 0, sizeof(info));
	snprintf(info.path, sizeof(info.path), "/cache");
	int r = blkdev_describe_devnum(root, major, minor, &info);
	snprintf(info.path, sizeof(info.path), "/cache");
	return r;
}

static const struct blkdev_probe fast = { .bytes = 64 << 20, .ns = 50000000, .mb_per_s = 1342.0 };
static const struct blkdev_probe slow = { .bytes = 64 << 20, .ns = 1342000000, .mb_per_s = 50.0 };

static const char *verdict(const struct blkdev_probe *p)
{
	return blkdev_verdict(&info, p, 0, line, sizeof(line));
}

static void test_nvme_ebs(void)
{
	CHECK_INT(describe(259, 1), 0);
	CHECK(info.has_device);
	CHECK_STR(info.dev, "nvme0n1p1");
	CHECK_STR(info.disk, "nvme0n1");
	CHECK_STR(info.leaves, "nvme0n1");
	CHECK_INT(info.kind, BLKDEV_KIND_NVME);
	CHECK_STR(info.model, "Amazon Elastic Block Store");
	CHECK_STR(info.vendor, "0x1d0f");
	CHECK_STR(info.transport, "pcie");
	CHECK_INT(info.rotational, 0);
	CHECK(info.rotational_trusted);
	CHECK_INT(info.network, 1);
	CHECK_STR(info.network_why, "AWS EBS");
	CHECK(info.size_bytes == 16777216ull * 512);
	CHECK(verdict(&fast) != NULL);
	CHECK(strstr(line, "nvme0n1 (nvme \"Amazon Elastic Block Store\"): network-attached "
		      "(AWS EBS)") != NULL);
	blkdev_format(&info, &fast, line, sizeof(line));
	CHECK(strstr(line, "model=\"Amazon Elastic Block Store\"") != NULL);
	CHECK(strstr(line, "network=yes network_why=\"AWS EBS\"") != NULL);
	CHECK(strstr(line, "write_mbps=1342") != NULL);
}

static void test_nvme_instance_store(void)
{
	CHECK_INT(describe(259, 2), 0);
	CHECK_STR(info.disk, "nvme1n1");
	CHECK_STR(info.dev, "nvme1n1");
	CHECK_STR(info.model, "Amazon EC2 NVMe Instance Storage");
	CHECK_INT(info.network, 0);
	CHECK(verdict(NULL) == NULL);
	CHECK(verdict(&fast) == NULL);
	CHECK(verdict(&slow) != NULL);
	CHECK(strstr(line, "writes at 50 MB/s (< 200 MB/s)") != NULL);
	CHECK(blkdev_verdict(&info, &slow, 40.0, line, sizeof(line)) == NULL);
}

static void test_nvme_fabrics_and_gcp(void)
{
	CHECK_INT(describe(259, 4), 0);
	CHECK_STR(info.transport, "tcp");
	CHECK_INT(info.network, 1);
	CHECK_STR(info.network_why, "nvme-over-fabrics");
	CHECK_INT(describe(259, 10), 0);
	CHECK_STR(info.disk, "nvme5n1");
	CHECK_STR(info.model, "Linux");
	CHECK_STR(info.transport, "tcp");
	CHECK_INT(info.network, 1);
	CHECK_INT(describe(259, 6), 0);
	CHECK_INT(info.network, 1);
	CHECK_STR(info.network_why, "GCP Persistent Disk");
}

static void test_sata_rotational(void)
{
	CHECK_INT(describe(8, 1), 0);
	CHECK_STR(info.dev, "sda1");
	CHECK_STR(info.disk, "sda");
	CHECK_INT(info.kind, BLKDEV_KIND_SCSI);
	CHECK_STR(info.transport, "sata/sas");
	CHECK_STR(info.vendor, "ATA");
	CHECK_STR(info.model, "ST4000DM004-2CV104");
	CHECK_INT(info.rotational, 1);
	CHECK(info.rotational_trusted);
	CHECK_INT(info.network, 0);
	CHECK(verdict(&fast) != NULL);
	CHECK(strstr(line, ": rotational;") != NULL);
	CHECK(info.size_bytes == 7814037168ull * 512);
}

static void test_iscsi(void)
{
	CHECK_INT(describe(8, 16), 0);
	CHECK_INT(info.kind, BLKDEV_KIND_ISCSI);
	CHECK_STR(info.transport, "iscsi");
	CHECK_INT(info.network, 1);
	CHECK(verdict(&fast) != NULL);
	CHECK(strstr(line, "network-attached (iscsi)") != NULL);
}

static void test_virtio(void)
{
	CHECK_INT(describe(254, 0), 0);
	CHECK_INT(info.kind, BLKDEV_KIND_VIRTIO);
	CHECK_STR(info.vendor, "0x1af4");
	CHECK_STR(info.model, "");
	CHECK_INT(info.rotational, 1);
	CHECK(!info.rotational_trusted); /* hypervisor default, not a spinning disk */
	CHECK_INT(info.network, -1);
	CHECK(verdict(&fast) == NULL);
	CHECK(verdict(&slow) != NULL);
	blkdev_format(&info, NULL, line, sizeof(line));
	CHECK(strstr(line, "rotational=yes(untrusted) network=unknown") != NULL);
}

static void test_dm(void)
{
	CHECK_INT(describe(253, 0), 0);
	CHECK_INT(info.kind, BLKDEV_KIND_DM);
	CHECK_STR(info.disk, "dm-0");
	CHECK_STR(info.leaves, "nvme1n1");
	CHECK_INT(info.leaf_kind, BLKDEV_KIND_NVME);
	CHECK_STR(info.model, "Amazon EC2 NVMe Instance Storage");
	CHECK_INT(info.network, 0);
	CHECK_INT(info.rotational, 0);
	CHECK(info.size_bytes == 2097152ull * 512);
	CHECK(verdict(&fast) == NULL);

	CHECK_INT(describe(253, 1), 0); /* striped over EBS and instance storage */
	CHECK(strstr(info.leaves, "nvme0n1") && strstr(info.leaves, "nvme1n1"));
	CHECK_INT(info.network, 1);
	CHECK_STR(info.network_why, "AWS EBS");
	CHECK(verdict(&fast) != NULL);

	CHECK_INT(describe(253, 2), 0); /* slave cycle: bounded walk */
	CHECK_INT(info.kind, BLKDEV_KIND_DM);
	CHECK(info.leaves[0] != '\0');
}

static void test_missing_and_env(void)
{
	struct blkdev_info keep = { .major = 4242 };

	CHECK_INT(blkdev_describe_devnum(root, 1, 99, &keep), -ENODEV);
	CHECK_INT(keep.major, 4242); /* untouched */
	setenv("LITH_SYSFS_ROOT", root, 1);
	CHECK_INT(blkdev_describe_devnum(NULL, 259, 0, &keep), 0);
	CHECK_STR(keep.model, "Amazon Elastic Block Store");
	unsetenv("LITH_SYSFS_ROOT");
	CHECK_INT(blkdev_describe("/nonexistent/dir", NULL, &keep), -ENOENT);
	CHECK_STR(blkdev_kind_name(BLKDEV_KIND_MD), "md");
	CHECK_STR(blkdev_kind_name((enum blkdev_kind)99), "unknown");
}

static void test_tmpfs(void)
{
	struct blkdev_probe p = { 0 };

	CHECK_INT(blkdev_describe("/dev/shm", NULL, &info), 0);
	CHECK_STR(info.fstype, "tmpfs");
	CHECK(!info.has_device);
	CHECK_INT(info.kind, BLKDEV_KIND_NONE);
	CHECK_INT(info.network, 0);
	CHECK_INT(blkdev_probe_write("/dev/shm", 8 << 20, 0, &p), 0);
	CHECK(p.bytes == 8 << 20 && p.mb_per_s > 0);
	printf("/dev/shm: %s\n", blkdev_format(&info, &p, line, sizeof(line)));
	CHECK(blkdev_verdict(&info, NULL, 0, line, sizeof(line)) == NULL);
	CHECK(blkdev_verdict(&info, &p, 1.0, line, sizeof(line)) == NULL); /* speed varies */
	memset(&p, 0, sizeof(p));
	CHECK_INT(blkdev_probe_write("/dev/shm", 1ull << 50, 0, &p), -ENOSPC);
	CHECK(p.bytes == 0);
}

/* The real cache-dir check, as the daemon would run it. */
static void test_real_tmp(void)
{
	struct blkdev_probe p = { 0 };
	const char *v;

	CHECK_INT(blkdev_describe("/tmp", NULL, &info), 0);
	CHECK(info.fstype[0] != '\0');
	CHECK_INT(blkdev_probe_write("/tmp", 0, 0, &p), 0);
	CHECK(p.bytes > 0 && p.ns > 0 && p.mb_per_s > 0);
	CHECK(p.truncated || p.bytes == BLKDEV_PROBE_BYTES_DEFAULT);
	printf("/tmp: %s\n", blkdev_format(&info, &p, line, sizeof(line)));
	v = blkdev_verdict(&info, &p, 0, line, sizeof(line));
	printf("/tmp verdict: %s\n", v ? v : "(none)");
}

int main(void)
{
	int fds0 = check_count_fds();

	snprintf(root, sizeof(root), "/tmp/lith-sysfs-XXXXXX");
	if (!mkdtemp(root))
		return 2;
	build_fake_sysfs();
	test_nvme_ebs();
	test_nvme_instance_store();
	test_nvme_fabrics_and_gcp();
	test_sata_rotational();
	test_iscsi();
	test_virtio();
	test_dm();
	test_missing_and_env();
	test_tmpfs();
	test_real_tmp();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", root);
	CHECK_INT(check_count_fds(), fds0); /* nothing leaked */
	return check_done();
}
