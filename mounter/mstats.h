/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A mounter's FUSE metrics, kept in a shared memory region so that lith csi
 * can export them without asking the mounter anything: lith csi creates the
 * region (a memfd), hands it to each mounter it spawns (`--stats-fd`), and
 * reads it at scrape time. A restarted mounter gets the same region, so the
 * counters stay monotonic across restarts. Standalone `lith mount` uses a
 * private anonymous region.
 * Writers use relaxed atomics; a reader sees each counter whole (not a
 * consistent snapshot across counters, which Prometheus does not need).
 */
#ifndef LITH_MOUNTER_MSTATS_H
#define LITH_MOUNTER_MSTATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fetch/base/promtext.h"
#include "fetch/base/strbuf.h"

enum mstats_op {
	MSTATS_LOOKUP, MSTATS_GETATTR, MSTATS_OPEN, MSTATS_OPENDIR, MSTATS_READ,
	MSTATS_READDIR, MSTATS_RELEASE, MSTATS_RELEASEDIR, MSTATS_STATFS,
	MSTATS_READLINK, MSTATS_GETXATTR, MSTATS_LISTXATTR, MSTATS_OP__COUNT
};

#define MSTATS_LAT_N 18
#define MSTATS_SIZE_N 9
#define MSTATS_MAGIC 0x74736d6cu
#define MSTATS_VERSION 1u

struct mstats {
	uint32_t magic, version;
	uint64_t size;                       /* sizeof(struct mstats) */
	_Atomic uint64_t lat[MSTATS_OP__COUNT][MSTATS_LAT_N + 1];
	_Atomic uint64_t lat_sum_ns[MSTATS_OP__COUNT];
	_Atomic uint64_t errors[MSTATS_OP__COUNT];
	_Atomic uint64_t read_bytes;
	_Atomic uint64_t read_size[MSTATS_SIZE_N + 1];
	_Atomic uint64_t read_size_sum;
	_Atomic int64_t open_handles;
	_Atomic uint64_t ra_window;          /* the latest read's readahead window */
};

/* fd >= 0: map that region (initialised if it is new, i.e. all zero; -EBADMSG
 * if it holds something else); fd < 0: a private anonymous region. */
int mstats_map(int fd, struct mstats **ret);
/* A new shared region for a mounter: memfd (close-on-exec) and its mapping. */
int mstats_create(int *ret_fd, struct mstats **ret);
void mstats_unmap(struct mstats *m);

void mstats_op(struct mstats *m, enum mstats_op op, uint64_t ns, int err);
void mstats_read(struct mstats *m, uint64_t bytes);

/* One exported volume: its region and its labels (volume_id, namespace, pod). */
struct mstats_volume {
	const struct mstats *m;
	struct prom_labels labels;
};
/* The FUSE families for every volume, each family's header once. */
int mstats_render(struct strbuf *sb, const struct mstats_volume *v, size_t n);

#endif
