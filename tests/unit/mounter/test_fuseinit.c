// SPDX-License-Identifier: Apache-2.0
/* Unit tests for mounter/fuseinit: a FUSE_INIT request survives the trip
 * through its file byte for byte (mode 0600, no temporary left behind);
 * other requests, truncated or oversized files are refused; the replay
 * unique is set; RESEND writes the 16-byte notification. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "mounter/fuseinit.h"

struct init_req {
	struct fuse_in_header h;
	struct fuse_init_in in;
};

static char tmpdir[64];

static struct init_req make_init(void)
{
	struct init_req r = { .h = { .len = sizeof(r), .opcode = FUSE_INIT, .unique = 2 },
			      .in = { .major = 7, .minor = 41, .max_readahead = 131072 } };
	return r;
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n);
	close(fd);
}

static void test_round_trip(void)
{
	struct init_req r = make_init(), back;
	char path[128], big[FUSEINIT_MAX];
	struct stat st;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/init", tmpdir);
	CHECK_INT(fuseinit_check(&r, sizeof(r)), 0);
	CHECK_INT(fuseinit_save(path, &r, sizeof(r)), 0);
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_mode & 0777, 0600);
	CHECK_INT(fuseinit_load(path, big, sizeof(big), &n), 0);
	CHECK_INT(n, sizeof(r));
	CHECK(memcmp(big, &r, sizeof(r)) == 0);
	fuseinit_set_unique(big, FUSEINIT_REPLAY_UNIQUE);
	memcpy(&back, big, sizeof(back));
	CHECK_INT(back.h.unique, 1);
	CHECK_INT(back.in.minor, 41);
	unlink(path);
}

static void test_refusals(void)
{
	struct init_req r = make_init();
	char path[128], buf[FUSEINIT_MAX];
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/bad", tmpdir);
	CHECK_INT(fuseinit_check(&r, sizeof(r) - 1), -EBADMSG);   /* header length differs */
	r.h.opcode = FUSE_GETATTR;
	CHECK_INT(fuseinit_check(&r, sizeof(r)), -EPROTO);
	write_file(path, &r, sizeof(r));
	CHECK_INT(fuseinit_load(path, buf, sizeof(buf), &n), -EBADMSG);
	r = make_init();
	write_file(path, &r, sizeof(r) / 2);                        /* truncated */
	CHECK_INT(fuseinit_load(path, buf, sizeof(buf), &n), -EBADMSG);
	CHECK_INT(n, 0);
	unlink(path);
	CHECK_INT(fuseinit_load(path, buf, sizeof(buf), &n), -ENOENT);
}

static void test_resend(void)
{
	char raw[sizeof(struct fuse_out_header) + 8];
	struct fuse_out_header h;
	int p[2];

	CHECK_INT(pipe(p), 0);
	CHECK_INT(fuseinit_resend(p[1]), 0);
	CHECK_INT(read(p[0], raw, sizeof(raw)), sizeof(h)); /* one write of 16 bytes */
	memcpy(&h, raw, sizeof(h));
	CHECK_INT(h.len, 16);
	CHECK_INT(h.error, 7);
	CHECK_INT(h.unique, 0);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lith-fuseinit-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	test_round_trip();
	test_refusals();
	test_resend();
	CHECK_INT(rmdir(tmpdir), 0);                                /* no temporary left */
	return check_done();
}
