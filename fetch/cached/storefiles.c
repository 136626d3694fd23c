// SPDX-License-Identifier: Apache-2.0
/*
 * Block store files: lock, attach or create, preallocate, map (see
 * storefiles.h). Creation order: the metadata header is written last, so a
 * crash during creation leaves no valid header and the next open starts over.
 * Runs in the thread calling blockstore_open().
 */
#include "fetch/cached/storefiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fetch/base/fdio.h"
#include "fetch/base/macro.h"
#include "fetch/cached/slotio.h"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Everything but the directory lock. */
static void close_files(struct storefiles *f)
{
	if (f->gen_map)
		munmap(f->gen_map, f->gen_map_len);
	f->gen_map = NULL;
	f->gens = NULL;
	close_fd(&f->data_fd);
	close_fd(&f->meta_fd);
	close_fd(&f->gen_fd);
	close_fd(&f->data_ro_fd);
	close_fd(&f->gen_ro_fd);
}

static int lock_dir(const char *dir, int *ret_fd)
{
	_cleanup_close_ int fd = -1;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Opens name read-write if it is a regular file of exactly size bytes
 * (size 0: any size). */
static int open_sized(int dir_fd, const char *name, uint64_t size, int *ret_fd)
{
	_cleanup_close_ int fd = openat(dir_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (size && (uint64_t)st.st_size != size))
		return -EBADMSG;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* A second, read-only open of the same inode, for passing to readers. */
static int open_ro(int dir_fd, const char *name, int rw_fd, int *ret_fd)
{
	_cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat a, b;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &a) < 0 || fstat(rw_fd, &b) < 0)
		return -errno;
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return -ESTALE;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static int map_gens(struct storefiles *f)
{
	void *m = mmap(NULL, f->geo.gen_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       f->gen_fd, 0);

	if (m == MAP_FAILED)
		return -errno;
	f->gen_map = m;
	f->gen_map_len = f->geo.gen_bytes;
	f->gens = (_Atomic uint64_t *)((char *)m + BLOCKREAD_GEN_HEADER_BYTES);
	return 0;
}

static void gen_header_encode(uint64_t nslots, uint64_t store_id,
			      uint8_t out[BLOCKREAD_GEN_HEADER_BYTES])
{
	uint32_t version = BLOCKREAD_GEN_VERSION;

	memset(out, 0, BLOCKREAD_GEN_HEADER_BYTES);
	memcpy(out, BLOCKREAD_GEN_MAGIC, 8);
	memcpy(out + 8, &version, 4);
	memcpy(out + 16, &nslots, 8);
	memcpy(out + 24, &store_id, 8);
}

static bool gen_header_matches(const struct storefiles *f)
{
	uint8_t want[BLOCKREAD_GEN_HEADER_BYTES];

	gen_header_encode(f->geo.nslots, f->store_id, want);
	return memcmp(f->gen_map, want, sizeof(want)) == 0;
}

static bool header_matches(const struct slotmeta_header *h, const struct slotmeta_geometry *g)
{
	return h->block_size == g->block_size && h->record_bytes == SLOTMETA_RECORD_BYTES &&
	       h->nslots == g->nslots && h->data_bytes == g->data_bytes;
}

static const char *attach_meta(struct storefiles *f)
{
	uint8_t raw[SLOTMETA_HEADER_USED];
	struct slotmeta_header h;
	struct stat st;

	if (open_sized(f->dir_fd, STOREFILES_META, 0, &f->meta_fd) < 0)
		return "metadata file unreadable";
	if (fdio_pread_full(f->meta_fd, raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
	    slotmeta_header_decode(raw, &h) < 0)
		return "metadata header corrupt or truncated";
	if (!header_matches(&h, &f->geo))
		return "geometry changed (block size or cache size)";
	if (fstat(f->meta_fd, &st) < 0 || (uint64_t)st.st_size != f->geo.meta_bytes)
		return "metadata file truncated";
	f->store_id = h.store_id;
	return NULL;
}

/* NULL when attached, else why the files cannot be used (all closed). */
static const char *attach(struct storefiles *f)
{
	const char *why = attach_meta(f);

	if (!why && open_sized(f->dir_fd, STOREFILES_DATA, f->geo.data_bytes, &f->data_fd) < 0)
		why = "data file missing or wrong size";
	if (!why && open_sized(f->dir_fd, STOREFILES_GEN, f->geo.gen_bytes, &f->gen_fd) < 0)
		why = "generation file missing or wrong size";
	if (!why && map_gens(f) < 0)
		why = "generation file cannot be mapped";
	if (!why && !gen_header_matches(f))
		why = "generation file does not belong to the metadata";
	if (!why && (open_ro(f->dir_fd, STOREFILES_DATA, f->data_fd, &f->data_ro_fd) < 0 ||
		     open_ro(f->dir_fd, STOREFILES_GEN, f->gen_fd, &f->gen_ro_fd) < 0))
		why = "files changed while opening";
	if (why)
		close_files(f);
	return why;
}

static int write_zeros(int fd, uint64_t size)
{
	static const uint8_t zero[SLOTMETA_PAGE];

	for (uint64_t off = 0; off < size; off += sizeof(zero)) {
		int r = fdio_pwrite_all(fd, zero, MIN(sizeof(zero), size - off), off);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Allocates every byte up front, so the budget holds from the start and
 * mapped pages cannot fault on a full disk. Without fallocate support the
 * small files are written with zeros and the data file stays sparse (its
 * allocation then only grows toward the same apparent size). */
static int preallocate(int fd, uint64_t size, bool small)
{
	if (fallocate(fd, 0, 0, (off_t)size) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	if (small)
		return write_zeros(fd, size);
	return ftruncate(fd, (off_t)size) < 0 ? -errno : 0;
}

static int create_file(int dir_fd, const char *name, uint64_t size, bool small,
		       int *ret_fd)
{
	_cleanup_close_ int fd = openat(dir_fd, name,
					O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	int r;

	if (fd < 0)
		return -errno;
	r = preallocate(fd, size, small);
	if (r < 0) {
		unlinkat(dir_fd, name, 0);
		return r;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static uint64_t new_store_id(void)
{
	uint64_t id;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) == (ssize_t)sizeof(id))
		return id;
	return (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
}

static int unlink_all(int dir_fd)
{
	static const char *const names[] = { STOREFILES_META, STOREFILES_GEN, STOREFILES_DATA };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (unlinkat(dir_fd, names[i], 0) < 0 && errno != ENOENT)
			return -errno;
	return 0;
}

static int create_gen(struct storefiles *f)
{
	uint8_t hdr[BLOCKREAD_GEN_HEADER_BYTES];
	int r = create_file(f->dir_fd, STOREFILES_GEN, f->geo.gen_bytes, true, &f->gen_fd);

	if (r < 0)
		return r;
	gen_header_encode(f->geo.nslots, f->store_id, hdr);
	r = fdio_pwrite_all(f->gen_fd, hdr, sizeof(hdr), 0);
	return r < 0 ? r : map_gens(f);
}

static int create_meta(struct storefiles *f)
{
	struct slotmeta_header h = {
		.block_size = f->geo.block_size,
		.record_bytes = SLOTMETA_RECORD_BYTES,
		.nslots = f->geo.nslots,
		.data_bytes = f->geo.data_bytes,
		.store_id = f->store_id,
	};
	uint8_t raw[SLOTMETA_HEADER_USED];
	int r = create_file(f->dir_fd, STOREFILES_META, f->geo.meta_bytes, true, &f->meta_fd);

	if (r < 0)
		return r;
	slotmeta_header_encode(&h, raw);
	return fdio_pwrite_all(f->meta_fd, raw, sizeof(raw), 0);
}

static int create(struct storefiles *f)
{
	int r = unlink_all(f->dir_fd);

	f->store_id = new_store_id();
	if (r >= 0)
		r = create_gen(f);
	if (r >= 0)
		r = create_file(f->dir_fd, STOREFILES_DATA, f->geo.data_bytes, false, &f->data_fd);
	if (r >= 0)
		r = create_meta(f); /* header last */
	if (r >= 0)
		r = open_ro(f->dir_fd, STOREFILES_DATA, f->data_fd, &f->data_ro_fd);
	if (r >= 0)
		r = open_ro(f->dir_fd, STOREFILES_GEN, f->gen_fd, &f->gen_ro_fd);
	if (r < 0) {
		close_files(f);
		unlink_all(f->dir_fd); /* no half-created store left to cost disk */
	}
	return r;
}

static bool any_exists(int dir_fd)
{
	static const char *const names[] = { STOREFILES_META, STOREFILES_GEN, STOREFILES_DATA };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (faccessat(dir_fd, names[i], F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			return true;
	return false;
}

int storefiles_open(struct storefiles *f, const char *dir,
		    const struct slotmeta_geometry *geo)
{
	int r;

	*f = (struct storefiles){ .dir_fd = -1, .data_fd = -1, .meta_fd = -1, .gen_fd = -1,
				  .data_ro_fd = -1, .gen_ro_fd = -1, .geo = *geo };
	r = lock_dir(dir, &f->dir_fd);
	if (r < 0)
		return r;
	if (any_exists(f->dir_fd)) {
		f->reset_reason = attach(f);
		if (!f->reset_reason)
			return 0;
	}
	r = create(f);
	if (r < 0)
		storefiles_close(f);
	return r;
}

void storefiles_close(struct storefiles *f)
{
	close_files(f);
	close_fd(&f->dir_fd);
}
