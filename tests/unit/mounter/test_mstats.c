// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the mounter's shared metrics region and its exposition. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "mounter/mstats.h"

static void test_shared_region(void)
{
	struct mstats *a = NULL, *b = NULL;
	int fd = -1;

	CHECK_INT(mstats_create(&fd, &a), 0);
	mstats_op(a, MSTATS_READ, 3000000, 0); /* 3 ms */
	mstats_op(a, MSTATS_READ, 20000, EIO);
	mstats_read(a, 131072);
	/* a successor mapping the same fd sees the counters and adds to them */
	CHECK_INT(mstats_map(fd, &b), 0);
	CHECK_INT(atomic_load(&b->read_bytes), 131072);
	mstats_read(b, 4096);
	CHECK_INT(atomic_load(&a->read_bytes), 135168);
	CHECK_INT(atomic_load(&a->errors[MSTATS_READ]), 1);
	mstats_unmap(b);
	mstats_unmap(a);
	close(fd);
}

static void test_bad_regions(void)
{
	struct mstats *m = NULL;
	int fd = memfd_create("x", MFD_CLOEXEC);
	char junk[sizeof(struct mstats)];

	CHECK_INT(ftruncate(fd, 100), 0); /* wrong size */
	CHECK_INT(mstats_map(fd, &m), -EBADMSG);
	memset(junk, 0x5a, sizeof(junk)); /* right size, not ours */
	CHECK_INT(ftruncate(fd, 0), 0);
	CHECK_INT(write(fd, junk, sizeof(junk)), (int)sizeof(junk));
	CHECK_INT(mstats_map(fd, &m), -EBADMSG);
	close(fd);
	CHECK_INT(mstats_map(-1, &m), 0); /* private */
	mstats_op(m, MSTATS_OP__COUNT, 1, 0); /* out of range: ignored */
	mstats_op(NULL, MSTATS_READ, 1, 0);
	mstats_unmap(m);
}

static void test_render(void)
{
	struct mstats_volume v[2];
	struct strbuf sb;

	for (int i = 0; i < 2; i++) {
		CHECK_INT(mstats_map(-1, (struct mstats **)&v[i].m), 0);
		prom_labels_init(&v[i].labels);
		prom_label(&v[i].labels, "volume_id", i ? "b" : "a");
	}
	mstats_op((struct mstats *)v[0].m, MSTATS_LOOKUP, 40000, ENOENT);
	mstats_read((struct mstats *)v[1].m, 65536);
	strbuf_init(&sb, 1 << 20);
	CHECK_INT(mstats_render(&sb, v, 2), 0);
	/* one header per family, ops only once used, every volume's samples */
	CHECK(strstr(sb.p, "# TYPE lith_fuse_op_seconds histogram\n") != NULL);
	CHECK(strstr(strstr(sb.p, "# TYPE lith_fuse_op_seconds") + 1, "# TYPE lith_fuse_op_seconds ") == NULL);
	CHECK(strstr(sb.p, "lith_fuse_op_seconds_bucket{volume_id=\"a\",op=\"lookup\",le=\"5e-05\"} 1\n") != NULL);
	CHECK(strstr(sb.p, "op=\"read\"") == NULL);
	CHECK(strstr(sb.p, "lith_fuse_errors_total{volume_id=\"a\",op=\"lookup\"} 1\n") != NULL);
	CHECK(strstr(sb.p, "lith_fuse_read_bytes_total{volume_id=\"b\"} 65536\n") != NULL);
	CHECK(strstr(sb.p, "lith_fuse_read_size_bytes_bucket{volume_id=\"b\",le=\"65536\"} 1\n") != NULL);
	CHECK(strstr(sb.p, "lith_fuse_open_handles{volume_id=\"a\"} 0\n") != NULL);
	strbuf_free(&sb);
	for (int i = 0; i < 2; i++)
		mstats_unmap((struct mstats *)v[i].m);
}

int main(void)
{
	test_shared_region();
	test_bad_regions();
	test_render();
	return check_done();
}
