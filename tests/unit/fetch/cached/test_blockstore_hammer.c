// SPDX-License-Identifier: Apache-2.0
/*
 * The data-plane hammer: eight readers read random blocks while a writer
 * thread keeps evicting slots and refilling them with other blocks.
 *   - 4 reader threads ask the store directly (blockstore_lookup);
 *   - 4 fork()ed reader processes get the read-only data and generation fds
 *     over a Unix socket (SCM_RIGHTS), ask a "daemon" thread of this process
 *     for locations over the socket, and read with blockread_pread().
 * Block content is a pure function of its id, so every reader verifies every
 * byte it gets. Readers read a block in small chunks with yields between
 * them and re-read old locations, so slots get recycled under them. Pass:
 * no wrong byte anywhere, stale reads detected (> 0), no false checksum
 * failures in the store. As a control, readers also pread a recycled
 * location without the generation check and count how often that would have
 * returned wrong bytes. LITH_HAMMER_SECONDS sets the duration (default 3).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "bstest.h"
#include "check.h"
#include "fetch/base/clock.h"
#include "fetch/cached/blockread.h"
#include "fetch/cached/blockstore.h"

#define NTHREADS 4
#define NPROCS 4
#define UNIVERSE 256u      /* distinct blocks, ~8x the slots */
#define BS (64u << 10)
#define CAP (2ull << 20)   /* ~30 slots */

struct counters {
	uint64_t lookups, misses, reads, bytes, stale, wrong, errors;
	uint64_t raw_checked, raw_wrong; /* control: reads without the gen check */
};

struct hello {
	uint32_t nslots;
	uint64_t deadline_ns;
};

struct request {
	uint32_t id;
};

struct reply {
	int32_t rc;
	struct blockread_loc loc;
};

static uint8_t *content; /* UNIVERSE * BS bytes, block id at id * BS */
static struct blockstore *store;
static atomic_bool stop;

static uint64_t rng_next(uint64_t *st)
{
	*st ^= *st << 13;
	*st ^= *st >> 7;
	*st ^= *st << 17;
	return *st;
}

/* ---- fd passing ---------------------------------------------------------- */

static int send_fds(int sock, const int fds[2], const void *data, size_t len)
{
	char ctl[CMSG_SPACE(2 * sizeof(int))] = { 0 };
	struct iovec iov = { (void *)data, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(2 * sizeof(int));
	memcpy(CMSG_DATA(c), fds, 2 * sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

static int recv_fds(int sock, int fds[2], void *data, size_t len)
{
	char ctl[CMSG_SPACE(2 * sizeof(int))] = { 0 };
	struct iovec iov = { data, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != (ssize_t)len)
		return -EPROTO;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
		return -EPROTO;
	memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
	return 0;
}

/* ---- the reader loop, shared by threads and processes -------------------- */

typedef int (*lookup_fn)(void *ctx, uint32_t id, struct blockread_loc *loc);

struct reader {
	int data_fd;
	const struct blockread_gens *gens;
	lookup_fn lookup;
	void *ctx;
	uint64_t rng;
	struct counters c;
	uint8_t buf[BS];
};

/* Control: read a location without the generation protocol. */
static void raw_read(struct reader *r, uint32_t id, const struct blockread_loc *loc)
{
	ssize_t n = pread(r->data_fd, r->buf, loc->len, (off_t)loc->offset);

	r->c.raw_checked++;
	if (n != (ssize_t)loc->len || memcmp(r->buf, content + (size_t)id * BS, loc->len) != 0)
		r->c.raw_wrong++;
}

/* Reads the block in random chunks, yielding between them. */
static void read_block(struct reader *r, uint32_t id, const struct blockread_loc *loc)
{
	uint64_t off = rng_next(&r->rng) % (loc->len / 2 + 1);

	while (off < loc->len) {
		/* Half the time the rest of the block in one pread: long enough
		 * for the writer's pwrite to overlap it. */
		size_t want = rng_next(&r->rng) % 2 ? BS : 1 + rng_next(&r->rng) % (16u << 10);
		ssize_t n = blockread_pread(r->data_fd, r->gens, loc, r->buf, off, want);

		if (n == -ESTALE) {
			r->c.stale++;
			if (rng_next(&r->rng) % 4 == 0)
				raw_read(r, id, loc);
			return;
		}
		if (n <= 0) {
			r->c.errors++;
			return;
		}
		r->c.reads++;
		r->c.bytes += (uint64_t)n;
		if (memcmp(r->buf, content + (size_t)id * BS + off, (size_t)n) != 0)
			r->c.wrong++;
		off += (uint64_t)n;
		sched_yield();
	}
}

static void reader_loop(struct reader *r, uint64_t deadline_ns)
{
	struct blockread_loc old = { 0 };
	uint32_t old_id = UINT32_MAX;

	while (clock_mono_ns() < deadline_ns && !atomic_load(&stop)) {
		uint32_t id = (uint32_t)(rng_next(&r->rng) % UNIVERSE);
		struct blockread_loc loc;
		int rc = r->lookup(r->ctx, id, &loc);

		r->c.lookups++;
		if (rc == -ENOENT) {
			r->c.misses++;
			continue;
		}
		if (rc < 0 || loc.len != bstest_len(id, BS)) {
			r->c.errors++;
			continue;
		}
		read_block(r, id, &loc);
		if (old_id != UINT32_MAX && rng_next(&r->rng) % 4 == 0)
			read_block(r, old_id, &old); /* a location kept for a while */
		old = loc;
		old_id = id;
	}
}

/* ---- reader threads ------------------------------------------------------ */

static int direct_lookup(void *ctx, uint32_t id, struct blockread_loc *loc)
{
	struct blockstore_key k = bstest_key(id);

	(void)ctx;
	return blockstore_lookup(store, &k, loc);
}

struct thread_arg {
	struct reader *r;
	uint64_t deadline_ns;
};

static void *reader_thread(void *p)
{
	struct thread_arg *a = p;

	reader_loop(a->r, a->deadline_ns);
	return NULL;
}

/* ---- reader processes ---------------------------------------------------- */

static int socket_lookup(void *ctx, uint32_t id, struct blockread_loc *loc)
{
	int sock = *(int *)ctx;
	struct request q = { id };
	struct reply a;

	if (send(sock, &q, sizeof(q), MSG_NOSIGNAL) != sizeof(q) ||
	    recv(sock, &a, sizeof(a), 0) != sizeof(a))
		return -EPIPE;
	if (a.rc == 0)
		*loc = a.loc;
	return a.rc;
}

static void child_main(int sock, struct counters *out, uint64_t seed)
{
	static struct reader r;
	struct blockread_gens *gens = NULL;
	struct hello h;
	int fds[2];

	if (recv_fds(sock, fds, &h, sizeof(h)) < 0 || blockread_map_gens(fds[1], h.nslots, &gens) < 0)
		_exit(2);
	close(fds[1]); /* the mapping stays */
	r = (struct reader){ .data_fd = fds[0], .gens = gens, .lookup = socket_lookup,
			     .ctx = &sock, .rng = seed };
	reader_loop(&r, h.deadline_ns);
	*out = r.c;
	blockread_unmap_gens(gens);
	_exit(0);
}

/* The "daemon" side for the children: answers location requests. */
static void *server_thread(void *p)
{
	int *socks = p;
	struct pollfd pfd[NPROCS];
	int open_socks = NPROCS;

	for (int i = 0; i < NPROCS; i++)
		pfd[i] = (struct pollfd){ .fd = socks[i], .events = POLLIN };
	while (open_socks > 0 && poll(pfd, NPROCS, 1000) >= 0) {
		for (int i = 0; i < NPROCS; i++) {
			struct request q;
			struct reply a = { 0 };
			struct blockstore_key k;

			if (!(pfd[i].revents & (POLLIN | POLLHUP)))
				continue;
			if (recv(pfd[i].fd, &q, sizeof(q), 0) != sizeof(q)) {
				pfd[i].fd = -1;
				open_socks--;
				continue;
			}
			k = bstest_key(q.id % UNIVERSE);
			a.rc = blockstore_lookup(store, &k, &a.loc);
			send(pfd[i].fd, &a, sizeof(a), MSG_NOSIGNAL);
		}
	}
	return NULL;
}

/* ---- the writer ---------------------------------------------------------- */

static uint64_t fills, aborts;

static void *writer_thread(void *p)
{
	uint64_t rng = 0x2545f4914f6cdd1dull;

	(void)p;
	while (!atomic_load(&stop)) {
		uint32_t id = (uint32_t)(rng_next(&rng) % UNIVERSE), slot;
		struct blockstore_key k = bstest_key(id);

		if (blockstore_reserve(store, &k, &slot) < 0)
			continue;
		if (rng_next(&rng) % 16 == 0) {
			blockstore_abort(store, slot);
			aborts++;
			continue;
		}
		if (blockstore_commit(store, slot, content + (size_t)id * BS, bstest_len(id, BS)) == 0)
			fills++;
	}
	return NULL;
}

/* ---- the test ------------------------------------------------------------ */

static void add(struct counters *t, const struct counters *c)
{
	t->lookups += c->lookups;
	t->misses += c->misses;
	t->reads += c->reads;
	t->bytes += c->bytes;
	t->stale += c->stale;
	t->wrong += c->wrong;
	t->errors += c->errors;
	t->raw_checked += c->raw_checked;
	t->raw_wrong += c->raw_wrong;
}

static void print(const char *who, const struct counters *c)
{
	printf("%-9s lookups %8llu misses %8llu reads %9llu (%6.1f MiB) stale %6llu wrong %llu "
	       "errors %llu | control: unchecked reads of recycled slots %llu, wrong %llu\n",
	       who, (unsigned long long)c->lookups, (unsigned long long)c->misses,
	       (unsigned long long)c->reads, (double)c->bytes / 1048576.0,
	       (unsigned long long)c->stale, (unsigned long long)c->wrong,
	       (unsigned long long)c->errors, (unsigned long long)c->raw_checked,
	       (unsigned long long)c->raw_wrong);
}

static void make_content(void)
{
	content = malloc((size_t)UNIVERSE * BS);
	if (!content)
		abort();
	for (uint32_t id = 0; id < UNIVERSE; id++)
		bstest_fill(id, content + (size_t)id * BS, 0, BS);
}

static pid_t spawn_child(int *parent_sock, struct counters *out, uint64_t seed)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		child_main(sv[1], out, seed);
	}
	close(sv[1]);
	*parent_sock = sv[0];
	return pid;
}

static void run_threads(uint64_t deadline, int socks[NPROCS], struct reader *readers,
			const struct blockread_gens *gens)
{
	pthread_t w, srv, rt[NTHREADS];
	struct thread_arg args[NTHREADS];

	pthread_create(&w, NULL, writer_thread, NULL);
	pthread_create(&srv, NULL, server_thread, socks);
	for (int i = 0; i < NTHREADS; i++) {
		readers[i] = (struct reader){ .data_fd = blockstore_data_fd(store), .gens = gens,
					      .lookup = direct_lookup, .rng = 0x9e37u + (uint64_t)i };
		args[i] = (struct thread_arg){ &readers[i], deadline };
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&rt[i], NULL, reader_thread, &args[i]);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(rt[i], NULL);
	pthread_join(srv, NULL); /* ends when the children have hung up */
	atomic_store(&stop, true);
	pthread_join(w, NULL);
}

int main(void)
{
	const char *env = getenv("LITH_HAMMER_SECONDS");
	double secs = env ? atof(env) : 3.0;
	char *dir = bstest_mkdtemp("/dev/shm");
	struct blockstore_config cfg = { .dir = dir, .cache_bytes = CAP, .block_size = BS };
	struct counters *shared, threads = { 0 }, procs = { 0 };
	static struct reader readers[NTHREADS];
	struct blockread_gens *gens = NULL;
	struct blockstore_stats st;
	int socks[NPROCS], status, bad_exit = 0;
	pid_t pids[NPROCS];
	uint64_t deadline;

	make_content();
	/* Children first, before any thread exists and before the store is
	 * open (they must not inherit its directory lock). */
	shared = mmap(NULL, sizeof(*shared) * NPROCS, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shared != MAP_FAILED);
	for (int i = 0; i < NPROCS; i++)
		pids[i] = spawn_child(&socks[i], &shared[i], 0xabcdefu + (uint64_t)i * 7919);
	CHECK_INT(blockstore_open(&cfg, &store), 0);
	CHECK_INT(blockread_map_gens(blockstore_gen_fd(store), blockstore_nslots(store), &gens), 0);
	for (uint32_t id = 0; id < blockstore_nslots(store); id++)
		bstest_put(store, id);

	deadline = clock_mono_ns() + (uint64_t)(secs * 1e9);
	for (int i = 0; i < NPROCS; i++) {
		struct hello h = { blockstore_nslots(store), deadline };
		int fds[2] = { blockstore_data_fd(store), blockstore_gen_fd(store) };
		CHECK_INT(send_fds(socks[i], fds, &h, sizeof(h)), 0);
	}
	run_threads(deadline, socks, readers, gens);
	for (int i = 0; i < NPROCS; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			bad_exit++;
		close(socks[i]);
		add(&procs, &shared[i]);
	}
	for (int i = 0; i < NTHREADS; i++)
		add(&threads, &readers[i].c);

	blockstore_get_stats(store, &st);
	print("threads", &threads);
	print("processes", &procs);
	printf("writer: %llu fills, %llu aborts; store: %llu evictions, %llu hits, %llu misses, "
	       "%llu checksum failures\n", (unsigned long long)fills, (unsigned long long)aborts,
	       (unsigned long long)st.evictions, (unsigned long long)st.hits,
	       (unsigned long long)st.misses, (unsigned long long)st.checksum_failures);

	CHECK_INT(bad_exit, 0);
	CHECK_INT(threads.wrong, 0);
	CHECK_INT(procs.wrong, 0);
	CHECK_INT(threads.errors, 0);
	CHECK_INT(procs.errors, 0);
	CHECK(threads.reads > 100);
	CHECK(procs.reads > 100);
	CHECK(threads.stale + procs.stale > 0); /* the pressure was real */
	CHECK(procs.stale > 0);                  /* cross-process detection too */
	/* Without the generation check those reads would have been wrong: the
	 * test can see the failure it guards against. */
	CHECK(threads.raw_wrong + procs.raw_wrong > 0);
	CHECK(st.evictions > 100);
	CHECK_INT(st.checksum_failures, 0); /* recycling during verify is a miss */

	blockread_unmap_gens(gens);
	blockstore_free(store);
	bstest_rmtree(dir);
	free(content);
	return check_done();
}
