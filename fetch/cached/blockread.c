// SPDX-License-Identifier: Apache-2.0
/*
 * Reader side of the block cache (see blockread.h): maps a generation file
 * read-only and reads block bytes with the seqlock re-check. Runs in mounter
 * processes (any thread); self-contained so a reader links nothing of the
 * store. Ordering: load gen (acquire) → pread → acquire fence → load gen.
 * Correctness rests on the second load alone: generations only grow, and
 * the location's generation is fixed, so any writer activity on the slot
 * after the daemon issued the location leaves the generation different for
 * good. If the writer's odd store is not visible to the second load, none of
 * its new bytes can have been seen by our pread (it stores odd, fences, then
 * writes). The first load only skips a pointless pread. Pinned down by
 * test_reader_race (signal-driven recycling between the load and the pread).
 */
#include "fetch/base/fdio.h"
#include "fetch/cached/blockread.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct blockread_gens {
	const _Atomic uint64_t *gen;
	uint32_t nslots;
	void *map;
	size_t map_len;
};

static int header_ok(const uint8_t *h, uint32_t nslots)
{
	uint32_t version;
	uint64_t n;

	memcpy(&version, h + 8, 4);
	memcpy(&n, h + 16, 8);
	return memcmp(h, BLOCKREAD_GEN_MAGIC, 8) == 0 && version == BLOCKREAD_GEN_VERSION &&
	       n == nslots;
}

int blockread_map_gens(int gen_fd, uint32_t nslots, struct blockread_gens **ret)
{
	struct blockread_gens *g;
	struct stat st;
	uint64_t need = BLOCKREAD_GEN_HEADER_BYTES + (uint64_t)nslots * 8;
	void *m;

	if (gen_fd < 0 || nslots == 0 || !ret)
		return -EINVAL;
	if (fstat(gen_fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < need)
		return -EINVAL;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, gen_fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	g = malloc(sizeof(*g));
	if (!g || !header_ok(m, nslots)) {
		munmap(m, (size_t)st.st_size);
		free(g);
		return g ? -EINVAL : -ENOMEM;
	}
	*g = (struct blockread_gens){
		.gen = (const _Atomic uint64_t *)((const char *)m + BLOCKREAD_GEN_HEADER_BYTES),
		.nslots = nslots, .map = m, .map_len = (size_t)st.st_size,
	};
	*ret = g;
	return 0;
}

void blockread_unmap_gens(struct blockread_gens *g)
{
	if (!g)
		return;
	munmap(g->map, g->map_len);
	free(g);
}

static uint64_t gen_load(const struct blockread_gens *g, uint32_t slot)
{
	return atomic_load_explicit(&g->gen[slot], memory_order_acquire);
}

static int loc_ok(const struct blockread_gens *g, const struct blockread_loc *loc)
{
	return g && loc && loc->slot < g->nslots && !(loc->generation & 1) &&
	       loc->offset <= UINT64_MAX - loc->len;
}

int blockread_check(const struct blockread_gens *g, const struct blockread_loc *loc)
{
	if (!loc_ok(g, loc))
		return -EINVAL;
	return gen_load(g, loc->slot) == loc->generation ? 0 : -ESTALE;
}

static ssize_t pread_all(int fd, char *buf, size_t len, uint64_t off)
{
	ssize_t n = fdio_pread_full(fd, buf, len, off);

	return n >= 0 && (size_t)n < len ? -EIO : n; /* the data file is shorter than the slot */
}

ssize_t blockread_pread(int data_fd, const struct blockread_gens *gens,
			const struct blockread_loc *loc, void *buf, uint64_t off,
			size_t len)
{
	ssize_t n;
	size_t want;

	if (!loc_ok(gens, loc) || (!buf && len))
		return -EINVAL;
	if (off >= loc->len)
		return 0;
	want = len < loc->len - off ? len : (size_t)(loc->len - off);
	if (gen_load(gens, loc->slot) != loc->generation)
		return -ESTALE;
	n = pread_all(data_fd, buf, want, loc->offset + off);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&gens->gen[loc->slot], memory_order_relaxed) != loc->generation)
		return -ESTALE;
	return n;
}
