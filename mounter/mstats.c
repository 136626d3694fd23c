// SPDX-License-Identifier: Apache-2.0
/* The mounter's shared FUSE metrics region and its exposition (mstats.h). */
#include "mounter/mstats.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const double lat_bounds[MSTATS_LAT_N] = {
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,
};
static const double size_bounds[MSTATS_SIZE_N] = {
	4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576,
};
static const char *const op_names[MSTATS_OP__COUNT] = {
	"lookup", "getattr", "open", "opendir", "read", "readdir", "release",
	"releasedir", "statfs", "readlink", "getxattr", "listxattr",
};

static int adopt(struct mstats *m)
{
	if (m->magic == 0 && m->version == 0 && m->size == 0) {
		m->size = sizeof(*m);
		m->version = MSTATS_VERSION;
		m->magic = MSTATS_MAGIC;
		return 0;
	}
	return m->magic == MSTATS_MAGIC && m->version == MSTATS_VERSION &&
			       m->size == sizeof(*m) ? 0 : -EBADMSG;
}

int mstats_map(int fd, struct mstats **ret)
{
	int flags = fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED;
	struct mstats *m;
	off_t end = fd < 0 ? 0 : lseek(fd, 0, SEEK_END);

	if (fd >= 0 && end != (off_t)sizeof(*m))
		return end < 0 ? -errno : -EBADMSG;
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, flags, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	if (adopt(m) < 0) {
		munmap(m, sizeof(*m));
		return -EBADMSG;
	}
	*ret = m;
	return 0;
}

int mstats_create(int *ret_fd, struct mstats **ret)
{
	int fd = memfd_create("lith-mstats", MFD_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = ftruncate(fd, sizeof(struct mstats)) < 0 ? -errno : mstats_map(fd, ret);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

void mstats_unmap(struct mstats *m)
{
	if (m)
		munmap(m, sizeof(*m));
}

#define ADD(field, v) atomic_fetch_add_explicit(&(field), (v), memory_order_relaxed)
#define LOAD(field) atomic_load_explicit(&(field), memory_order_relaxed)

void mstats_op(struct mstats *m, enum mstats_op op, uint64_t ns, int err)
{
	if (!m || op >= MSTATS_OP__COUNT)
		return;
	ADD(m->lat[op][prom_bucket(lat_bounds, MSTATS_LAT_N, (double)ns / 1e9)], 1);
	ADD(m->lat_sum_ns[op], ns);
	if (err)
		ADD(m->errors[op], 1);
}

void mstats_read(struct mstats *m, uint64_t bytes)
{
	if (!m)
		return;
	ADD(m->read_bytes, bytes);
	ADD(m->read_size[prom_bucket(size_bounds, MSTATS_SIZE_N, (double)bytes)], 1);
	ADD(m->read_size_sum, bytes);
}

static uint64_t op_count(const struct mstats *m, int op)
{
	uint64_t n = 0;

	for (int b = 0; b <= MSTATS_LAT_N; b++)
		n += LOAD(((struct mstats *)m)->lat[op][b]);
	return n;
}

static void snapshot(_Atomic uint64_t *src, uint64_t *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = LOAD(src[i]);
}

static int render_ops(struct strbuf *sb, const struct mstats_volume *v, size_t n)
{
	uint64_t counts[MSTATS_LAT_N + 1];
	int r = prom_family(sb, "lith_fuse_op_seconds", "histogram",
			    "FUSE operations by op: time from request to reply.");

	for (size_t i = 0; i < n && r == 0; i++)
		for (int op = 0; op < MSTATS_OP__COUNT && r == 0; op++) {
			struct mstats *m = (struct mstats *)v[i].m;
			struct prom_labels l = prom_labels_with(&v[i].labels, "op", op_names[op]);
			if (!op_count(m, op))
				continue;
			snapshot(m->lat[op], counts, MSTATS_LAT_N + 1);
			r = prom_histogram(sb, "lith_fuse_op_seconds", &l, lat_bounds, counts,
					   MSTATS_LAT_N, (double)LOAD(m->lat_sum_ns[op]) / 1e9);
		}
	if (r == 0)
		r = prom_family(sb, "lith_fuse_errors_total", "counter",
				"FUSE operations answered with an error, by op.");
	for (size_t i = 0; i < n && r == 0; i++)
		for (int op = 0; op < MSTATS_OP__COUNT && r == 0; op++) {
			struct prom_labels l = prom_labels_with(&v[i].labels, "op", op_names[op]);
			if (op_count(v[i].m, op))
				r = prom_sample(sb, "lith_fuse_errors_total", &l,
						(double)LOAD(((struct mstats *)v[i].m)->errors[op]));
		}
	return r;
}

typedef double (*mstats_value_fn)(struct mstats *m);
static double v_read_bytes(struct mstats *m) { return (double)LOAD(m->read_bytes); }
static double v_handles(struct mstats *m) { return (double)LOAD(m->open_handles); }
static double v_window(struct mstats *m) { return (double)LOAD(m->ra_window); }

static int render_simple(struct strbuf *sb, const struct mstats_volume *v, size_t n,
			 const char *name, const char *type, const char *help, mstats_value_fn fn)
{
	int r = prom_family(sb, name, type, help);

	for (size_t i = 0; i < n && r == 0; i++)
		r = prom_sample(sb, name, &v[i].labels, fn((struct mstats *)v[i].m));
	return r;
}

static int render_sizes(struct strbuf *sb, const struct mstats_volume *v, size_t n)
{
	uint64_t counts[MSTATS_SIZE_N + 1];
	int r = prom_family(sb, "lith_fuse_read_size_bytes", "histogram",
			    "Sizes of the reads the kernel sent.");

	for (size_t i = 0; i < n && r == 0; i++) {
		struct mstats *m = (struct mstats *)v[i].m;
		snapshot(m->read_size, counts, MSTATS_SIZE_N + 1);
		r = prom_histogram(sb, "lith_fuse_read_size_bytes", &v[i].labels, size_bounds,
				   counts, MSTATS_SIZE_N, (double)LOAD(m->read_size_sum));
	}
	return r;
}

int mstats_render(struct strbuf *sb, const struct mstats_volume *v, size_t n)
{
	int r = render_ops(sb, v, n);

	if (r == 0)
		r = render_simple(sb, v, n, "lith_fuse_read_bytes_total", "counter",
				  "Bytes returned to FUSE reads.", v_read_bytes);
	if (r == 0)
		r = render_sizes(sb, v, n);
	if (r == 0)
		r = render_simple(sb, v, n, "lith_fuse_open_handles", "gauge",
				  "Files open through the mount.", v_handles);
	if (r == 0)
		r = render_simple(sb, v, n, "lith_readahead_window_bytes", "gauge",
				  "Readahead window of the latest read's stream.", v_window);
	return r;
}
