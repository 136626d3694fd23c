/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What storage backs a directory (the cache dir), and how fast it writes.
 *
 * blkdev_describe: statfs → filesystem type; st_dev → /sys/dev/block/M:m →
 * whole disk (partitions resolved to their disk; device-mapper and md
 * followed through slaves/ to the physical leaves, depth <= 4, <= 16
 * leaves) → model, vendor, rotational, size, kind/transport, and whether
 * the storage is network-attached, which sysfs tells only sometimes:
 *   - NVMe model strings of cloud volumes: "Amazon Elastic Block Store"
 *     (AWS EBS on Nitro) vs "Amazon EC2 NVMe Instance Storage" (local);
 *     GCP "nvme_card-pd"/"PersistentDisk" vs "nvme_card*"/"EphemeralDisk";
 *     Azure "MSFT NVMe Accelerator" vs "Microsoft NVMe Direct Disk";
 *   - NVMe over fabrics (transport tcp/rdma/fc, also behind native
 *     multipath), nbd, rbd, iSCSI and FC SAN disks are network; so are
 *     network filesystems (nfs, cifs, ceph, 9p...). Other NVMe is local
 *     when its transport is pcie, unknown (-1) when it cannot be read.
 *   - virtio/xen disks cannot be told apart (network = -1), and their
 *     rotational flag is a hypervisor default, so it is not trusted.
 * A filesystem without a block device (tmpfs, overlay, ...) is reported as
 * such (has_device false, kind BLKDEV_KIND_NONE).
 *
 * The sysfs root is injectable (argument, else $LITH_SYSFS_ROOT, else
 * "/sys") so tests can describe fake trees.
 *
 * blkdev_probe_write: writes a temporary, already-unlinked file in the
 * directory (O_TMPFILE, else mkostemp + unlink) with O_DIRECT when the
 * filesystem allows it (else buffered + fdatasync), and measures MB/s.
 *
 * Threads: no shared state; the probe blocks for up to max_ms.
 */
#ifndef LITH_BASE_BLKDEV_H
#define LITH_BASE_BLKDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLKDEV_PROBE_BYTES_DEFAULT (64ull << 20)
#define BLKDEV_PROBE_MS_DEFAULT 10000u
#define BLKDEV_MIN_MBPS_DEFAULT 200.0

enum blkdev_kind {
	BLKDEV_KIND_UNKNOWN = 0,
	BLKDEV_KIND_NONE, /* the filesystem has no block device */
	BLKDEV_KIND_NVME,
	BLKDEV_KIND_SCSI, /* sd*: SATA, SAS, USB, virtio-scsi, FC */
	BLKDEV_KIND_ISCSI,
	BLKDEV_KIND_VIRTIO,
	BLKDEV_KIND_XEN,
	BLKDEV_KIND_MMC,
	BLKDEV_KIND_LOOP,
	BLKDEV_KIND_DM,
	BLKDEV_KIND_MD,
	BLKDEV_KIND_NBD,
	BLKDEV_KIND_RBD,
	BLKDEV_KIND_ZRAM,
	BLKDEV_KIND_RAM,
};

struct blkdev_info {
	char path[256];        /* the directory described (may be truncated) */
	char fstype[24];       /* "ext2/3/4", "xfs", "tmpfs", ... or "0x%x" */
	bool fs_network;       /* nfs, cifs/smb, ceph, 9p, lustre, afs */
	bool has_device;
	unsigned major, minor; /* the filesystem's device */
	char dev[32];          /* its node name: "nvme0n1p1", "dm-0" */
	char disk[32];         /* the whole disk or the stacked top: "nvme0n1", "dm-0" */
	char leaves[128];      /* physical disks, comma-separated: "nvme1n1,nvme2n1" */
	enum blkdev_kind kind; /* of disk */
	enum blkdev_kind leaf_kind;
	char model[64];        /* of the first leaf, trimmed; "" if sysfs has none */
	char vendor[32];
	char transport[16];    /* "pcie", "tcp", "sata/sas", "usb", "iscsi", "fc", "virtio"... */
	int rotational;        /* any leaf rotational: 1; all not: 0; unknown: -1 */
	bool rotational_trusted;
	int network;           /* 1 network-attached, 0 local, -1 cannot tell */
	char network_why[64];  /* e.g. "AWS EBS", "nvme-tcp", "nfs" */
	uint64_t size_bytes;   /* of disk */
};

struct blkdev_probe {
	uint64_t bytes;  /* written and synced */
	uint64_t ns;     /* elapsed, including the final fdatasync */
	double mb_per_s; /* 10^6 bytes per second */
	bool direct;     /* O_DIRECT was used */
	bool truncated;  /* stopped at max_ms before writing everything */
};

const char *blkdev_kind_name(enum blkdev_kind kind);

/* sysfs_root NULL: $LITH_SYSFS_ROOT or "/sys". -errno from stat/statfs. */
int blkdev_describe(const char *dir, const char *sysfs_root, struct blkdev_info *ret);
/* The device part alone, for a known device number. -ENODEV if unknown. */
int blkdev_describe_devnum(const char *sysfs_root, unsigned major, unsigned minor,
			   struct blkdev_info *ret);

/*
 * bytes 0: BLKDEV_PROBE_BYTES_DEFAULT; max_ms 0: BLKDEV_PROBE_MS_DEFAULT.
 * -ENOSPC if the filesystem lacks bytes + 64 MiB free (nothing written).
 */
int blkdev_probe_write(const char *dir, uint64_t bytes, unsigned max_ms,
		       struct blkdev_probe *ret);

/*
 * One-line warning when the cache sits on network-attached, rotational (and
 * trusted) or slow storage (probe below min_mb_s; <= 0: the default), else
 * NULL. probe may be NULL. Returns buf.
 */
const char *blkdev_verdict(const struct blkdev_info *info, const struct blkdev_probe *probe,
			   double min_mb_s, char *buf, size_t len);
/* key=value summary for a log line; probe may be NULL. Returns buf. */
const char *blkdev_format(const struct blkdev_info *info, const struct blkdev_probe *probe,
			  char *buf, size_t len);

#endif
