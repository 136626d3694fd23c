// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for fetch/index/build.c against an in-process fake S3 that
 * answers ListObjectsV2 (prefix, delimiter, continuation-token, max-keys,
 * encoding-type=url) from a sorted key list, on 127.0.0.1, over keep-alive
 * HTTP/1.1. The hybrid (default), pure fan-out and serial walks must give
 * the same index with the request counts the listing predicts; hostile
 * listings (a common prefix that does not descend, a common prefix in a
 * listing without delimiter, a truncated page without or with a repeated
 * token, endless empty pages, keys outside the prefix, too many keys,
 * errors) must end in a clear error or a counted skip, never a hang or a
 * crash.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"
#include "fetch/base/strbuf.h"
#include "fetch/index/build.h"
#include "fetch/index/format.h"
#include "fetch/index/index.h"

/* ---- the fake server --------------------------------------------------- */

enum mode { M_OK, M_LOOP, M_FLAT_CP, M_NO_TOKEN, M_SAME_TOKEN, M_EMPTY, M_403, M_OUTSIDE };

#define MAX_CONNS 128

static struct {
	char **keys;
	size_t nkeys;
	enum mode mode;
	int lfd, port;
	int stop_pipe[2];
	atomic_uint requests;
	atomic_uint in_flight_max;
	pthread_t thread;
} srv;

struct conn {
	int fd;
	char buf[16384];
	size_t len;
};

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static void url_encode(struct strbuf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-_.~/", c))
			strbuf_append(b, s, 1);
		else
			strbuf_appendf(b, "%%%02X", c);
	}
}

static void url_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '%' && s[1] && s[2]) {
			char hex[3] = { s[1], s[2], 0 };
			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

struct query {
	char prefix[2048], delim[8], token[64];
	unsigned max_keys;
};

static void parse_query(char *q, struct query *out)
{
	*out = (struct query){ .max_keys = 1000 };
	for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			continue;
		*eq = '\0';
		url_decode(eq + 1);
		if (!strcmp(kv, "prefix"))
			snprintf(out->prefix, sizeof(out->prefix), "%s", eq + 1);
		else if (!strcmp(kv, "delimiter"))
			snprintf(out->delim, sizeof(out->delim), "%s", eq + 1);
		else if (!strcmp(kv, "continuation-token"))
			snprintf(out->token, sizeof(out->token), "%s", eq + 1);
		else if (!strcmp(kv, "max-keys"))
			out->max_keys = (unsigned)atoi(eq + 1);
	}
}

static size_t lower_bound(const char *s)
{
	size_t lo = 0, hi = srv.nkeys;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(srv.keys[mid], s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Size: the key's length; 0 for "dir/" markers except "mdata/". */
static void put_object(struct strbuf *b, const char *key)
{
	size_t len = strlen(key);
	size_t size = key[len - 1] == '/' && strcmp(key, "mdata/") ? 0 : len;

	strbuf_appends(b, "<Contents><Key>");
	url_encode(b, key);
	strbuf_appendf(b, "</Key><LastModified>2024-05-06T07:08:09.000Z</LastModified>"
		       "<ETag>&quot;%032zx&quot;</ETag><Size>%zu</Size></Contents>", len, size);
}

/* One ListObjectsV2 page, the way S3 computes it. */
static void list_page(const struct query *q, struct strbuf *b)
{
	size_t i = q->token[0] == 't' ? (size_t)atol(q->token + 1) : 0, count = 0;
	char last_cp[2048] = "";

	i = i > lower_bound(q->prefix) ? i : lower_bound(q->prefix);
	while (i < srv.nkeys && starts(srv.keys[i], q->prefix) && count < q->max_keys) {
		const char *k = srv.keys[i];
		const char *d = q->delim[0] ? strstr(k + strlen(q->prefix), q->delim) : NULL;
		if (d) {
			size_t n = (size_t)(d - k) + 1;
			memcpy(last_cp, k, n);
			last_cp[n] = '\0';
			strbuf_appends(b, "<CommonPrefixes><Prefix>");
			url_encode(b, last_cp);
			strbuf_appends(b, "</Prefix></CommonPrefixes>");
			while (i < srv.nkeys && starts(srv.keys[i], last_cp))
				i++;
		} else {
			put_object(b, k);
			i++;
		}
		count++;
	}
	if (i < srv.nkeys && starts(srv.keys[i], q->prefix))
		strbuf_appendf(b, "<IsTruncated>true</IsTruncated>"
			       "<NextContinuationToken>t%zu</NextContinuationToken>", i);
	else
		strbuf_appends(b, "<IsTruncated>false</IsTruncated>");
}

static void hostile_page(const struct query *q, struct strbuf *b)
{
	static atomic_uint empties;

	switch (srv.mode) {
	case M_LOOP:
		list_page(q, b);
		if (q->prefix[0] && q->delim[0])
			strbuf_appendf(b, "<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>",
				       q->prefix);
		break;
	case M_FLAT_CP:
		list_page(q, b);
		if (!q->delim[0])
			strbuf_appendf(b, "<CommonPrefixes><Prefix>%szz/</Prefix></CommonPrefixes>",
				       q->prefix);
		break;
	case M_NO_TOKEN:
		strbuf_appends(b, "<IsTruncated>true</IsTruncated>");
		break;
	case M_SAME_TOKEN:
		put_object(b, "same");
		strbuf_appends(b, "<IsTruncated>true</IsTruncated>"
			       "<NextContinuationToken>same</NextContinuationToken>");
		break;
	case M_EMPTY:
		strbuf_appendf(b, "<IsTruncated>true</IsTruncated>"
			       "<NextContinuationToken>e%u</NextContinuationToken>", ++empties);
		break;
	case M_OUTSIDE:
		list_page(q, b);
		if (q->prefix[0])
			put_object(b, "zz-outside");
		break;
	default:
		list_page(q, b);
	}
}

static void respond(int fd, char *target)
{
	struct strbuf b;
	struct query q;
	char head[256];
	char *qs = strchr(target, '?');
	int status = srv.mode == M_403 ? 403 : 200;

	strbuf_init(&b, 64u << 20);
	parse_query(qs ? qs + 1 : (char *)"", &q);
	if (status == 403) {
		strbuf_appends(&b, "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code>"
			       "<Message>denied</Message></Error>");
	} else {
		strbuf_appends(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult "
			       "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
			       "<EncodingType>url</EncodingType>");
		hostile_page(&q, &b);
		strbuf_appends(&b, "</ListBucketResult>");
	}
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\n"
			 "Content-Length: %zu\r\n\r\n", status, status == 200 ? "OK" : "Forbidden",
			 b.len);
	/* one write: a separate head and body would meet Nagle + delayed ACK */
	struct iovec iov[2] = { { head, (size_t)n }, { b.p, b.len } };
	if (writev(fd, iov, 2) != (ssize_t)(n + b.len))
		fprintf(stderr, "fake s3: short write\n");
	strbuf_free(&b);
	atomic_fetch_add(&srv.requests, 1);
}

/* Reads what is there; answers every complete request. false: close. */
static bool serve_conn(struct conn *c)
{
	ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	char *end;

	if (n <= 0)
		return false;
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	while ((end = strstr(c->buf, "\r\n\r\n"))) {
		char method[16], target[8192];
		size_t used = (size_t)(end + 4 - c->buf);
		if (sscanf(c->buf, "%15s %8191s", method, target) == 2)
			respond(c->fd, target);
		memmove(c->buf, c->buf + used, c->len - used + 1);
		c->len -= used;
	}
	return c->len < sizeof(c->buf) - 1;
}

static void *server_main(void *arg)
{
	struct conn *conns = calloc(MAX_CONNS, sizeof(*conns));
	struct pollfd pfd[MAX_CONNS + 2];
	size_t nconns = 0;

	(void)arg;
	for (;;) {
		pfd[0] = (struct pollfd){ .fd = srv.lfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = srv.stop_pipe[0], .events = POLLIN };
		for (size_t i = 0; i < nconns; i++)
			pfd[i + 2] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
		if (poll(pfd, nconns + 2, -1) < 0)
			continue;
		if (pfd[1].revents)
			break;
		for (size_t i = nconns; i-- > 0;)
			if (pfd[i + 2].revents && !serve_conn(&conns[i])) {
				close(conns[i].fd);
				conns[i] = conns[--nconns];
			}
		if ((pfd[0].revents & POLLIN) && nconns < MAX_CONNS) {
			int fd = accept4(srv.lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				conns[nconns++] = (struct conn){ .fd = fd };
		}
	}
	for (size_t i = 0; i < nconns; i++)
		close(conns[i].fd);
	free(conns);
	return NULL;
}

static void server_start(char **keys, size_t n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	qsort(keys, n, sizeof(*keys), key_cmp);
	srv.keys = keys;
	srv.nkeys = n;
	srv.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bind(srv.lfd, (struct sockaddr *)&a, sizeof(a));
	listen(srv.lfd, 256);
	getsockname(srv.lfd, (struct sockaddr *)&a, &alen);
	srv.port = ntohs(a.sin_port);
	if (pipe2(srv.stop_pipe, O_CLOEXEC) < 0)
		abort();
	pthread_create(&srv.thread, NULL, server_main, NULL);
}

static void server_stop(void)
{
	if (write(srv.stop_pipe[1], "x", 1) != 1)
		abort();
	pthread_join(srv.thread, NULL);
	close(srv.lfd);
	close(srv.stop_pipe[0]);
	close(srv.stop_pipe[1]);
}

/* ---- the data set ------------------------------------------------------ */

static char **dataset(size_t *ret_n)
{
	static const char *hostile[] = {
		"./dot", "a/../b", "a//b", "//lead", "x", "x/y", "d1/", "d1/in", "empty/", "mdata/",
		"sp ace/+%?#&=;.txt", "ünïcode/ファイル", "top",
	};
	size_t cap = 2000, n = 0;
	char **keys = calloc(cap, sizeof(*keys));
	char buf[400];

	for (int d = 0; d < 12; d++)
		for (int f = 0; f < 25; f++) {
			snprintf(buf, sizeof(buf), "dir%02d/%sfile%02d", d, f % 5 ? "" : "sub/", f);
			keys[n++] = strdup(buf);
		}
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++)
		keys[n++] = strdup(hostile[i]);
	memset(buf, 'L', 300);
	memcpy(buf, "long/", 5);
	buf[300] = '\0';
	keys[n++] = strdup(buf);
	*ret_n = n;
	return keys;
}

/* ---- the tests --------------------------------------------------------- */

struct client {
	struct s3_engine *engine;
	struct s3_bucket *bucket;
};

static void client_open(struct client *c, unsigned conns)
{
	char endpoint[64], err[256];
	struct s3_engine_config ec = { .max_connections = conns, .max_attempts = 2,
				       .backoff_base_ms = 1 };
	struct s3_bucket_config bc = { .bucket = "b", .endpoint = endpoint,
				       .addressing = S3_ADDR_PATH, .anonymous = true };

	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", srv.port);
	CHECK_INT(s3_bucket_new(&bc, NULL, &c->bucket, err, sizeof(err)), 0);
	CHECK_INT(s3_engine_new(&ec, &c->engine), 0);
}

static void client_close(struct client *c)
{
	s3_engine_free(c->engine);
	s3_bucket_free(c->bucket);
}

/* What a build asks for; zeroes are the builder's defaults (hybrid). */
struct opts {
	enum index_strategy strategy;
	unsigned conc, flat_at, page;
	uint64_t max;
	const char *prefix;
};

static int build(const char *path, struct opts o, struct index_build_stats *st, char *err,
		 size_t errlen)
{
	struct client c;
	int r;

	client_open(&c, o.conc ? o.conc : 32);
	r = index_build(&(struct index_build_config){
				.engine = c.engine, .bucket = c.bucket, .endpoint = "fake",
				.prefix = o.prefix, .strategy = o.strategy, .concurrency = o.conc,
				.flat_at = o.flat_at, .page_keys = o.page, .max_keys = o.max },
			path, st, err, errlen);
	client_close(&c);
	return r;
}

/* Requests a pure fan-out walk must make: one page run per listed prefix. */
static uint64_t expected_fanout(const char *prefix, unsigned page)
{
	uint64_t requests = 0;
	size_t items = 0;
	char last[2048] = "";

	for (size_t i = lower_bound(prefix); i < srv.nkeys && starts(srv.keys[i], prefix);) {
		const char *d = strchr(srv.keys[i] + strlen(prefix), '/');
		items++;
		if (!d) {
			i++;
			continue;
		}
		size_t n = (size_t)(d - srv.keys[i]) + 1;
		memcpy(last, srv.keys[i], n);
		last[n] = '\0';
		requests += expected_fanout(last, page);
		while (i < srv.nkeys && starts(srv.keys[i], last))
			i++;
	}
	return requests + (items ? (items + page - 1) / page : 1);
}

/* Requests a flat listing of prefix makes: its keys, `page` per page. */
static uint64_t expected_flat(const char *prefix, unsigned page)
{
	size_t i = lower_bound(prefix), n = 0;

	while (i + n < srv.nkeys && starts(srv.keys[i + n], prefix))
		n++;
	return n ? (n + page - 1) / page : 1;
}

/* Index and common prefix (into cp) of the listing item at keys[i] below
 * prefix; returns the index of the next item. cp is "" for an object. */
static size_t next_item(const char *prefix, size_t i, char *cp)
{
	const char *d = strchr(srv.keys[i] + strlen(prefix), '/');
	size_t n;

	cp[0] = '\0';
	if (!d)
		return i + 1;
	n = (size_t)(d - srv.keys[i]) + 1;
	memcpy(cp, srv.keys[i], n);
	cp[n] = '\0';
	while (i < srv.nkeys && starts(srv.keys[i], cp))
		i++;
	return i;
}

/* Requests a hybrid walk makes, with the builder's rule applied to what
 * each delimited page alone shows (its new prefixes, plus one when it is
 * truncated): exact whenever the work pending or in flight elsewhere does
 * not change a decision, as in the tests below (the root's pages reach
 * flat_at on their own, or nothing else is outstanding). *flat counts the
 * prefixes listed flat. */
static uint64_t expected_hybrid(const char *prefix, unsigned page, unsigned flat_at,
				uint64_t *flat)
{
	char (*cps)[2048] = calloc(page, sizeof(*cps));
	uint64_t requests = 0;
	size_t i = lower_bound(prefix);
	bool more = true;

	while (more) {
		size_t items = 0, ncp = 0;

		for (; items < page && i < srv.nkeys && starts(srv.keys[i], prefix); items++) {
			i = next_item(prefix, i, cps[ncp]);
			ncp += cps[ncp][0] != '\0';
		}
		more = i < srv.nkeys && starts(srv.keys[i], prefix);
		for (size_t k = 0; k < ncp; k++)
			requests += ncp + more >= flat_at ? expected_flat(cps[k], page)
				    : expected_hybrid(cps[k], page, flat_at, flat);
		*flat += ncp + more >= flat_at ? ncp : 0;
		requests++;
	}
	free(cps);
	return requests;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(*len);
	if (fread(buf, 1, *len, f) != *len) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static bool same_tree(const char *a, const char *b)
{
	size_t al = 0, bl = 0;
	uint8_t *ab = slurp(a, &al), *bb = slurp(b, &bl);
	bool same = ab && bb && al == bl &&
		    memcmp(ab + INDEX_HEADER_SIZE, bb + INDEX_HEADER_SIZE, al - INDEX_HEADER_SIZE) == 0;

	free(ab);
	free(bb);
	return same;
}

/* Builds; checks the server saw exactly the requests the builder counted. */
static void build_counted(const char *path, struct opts o, struct index_build_stats *st)
{
	char err[512] = "";
	unsigned before = atomic_load(&srv.requests);

	CHECK_INT(build(path, o, st, err, sizeof(err)), 0);
	CHECK_INT(atomic_load(&srv.requests) - before, st->requests);
}

static void check_counts(const struct index_build_stats *st)
{
	CHECK_INT(st->counts.keys_listed, srv.nkeys);
	CHECK_INT(st->counts.skipped[INDEX_SKIP_DOT_COMPONENT], 2);
	CHECK_INT(st->counts.skipped[INDEX_SKIP_EMPTY_COMPONENT], 2);
	CHECK_INT(st->counts.skipped[INDEX_SKIP_NAME_TOO_LONG], 1);
	CHECK_INT(st->counts.skipped[INDEX_SKIP_SHADOWED], 1);
	CHECK_INT(st->counts.skipped[INDEX_SKIP_MARKER_DATA], 1);
	CHECK_INT(st->counts.skipped[0], 7);
	CHECK_INT(st->counts.markers, 2);
	CHECK_INT(st->counts.files, srv.nkeys - 9);
}

/* Hybrid (default), pure fan-out and serial: same tree, byte for byte past
 * the header's provenance, each with the requests its strategy predicts. */
static void test_strategies_agree(void)
{
	static const char *hyb = "/tmp/lith-test-build-hyb.idx",
			  *fan = "/tmp/lith-test-build-fan.idx",
			  *ser = "/tmp/lith-test-build-ser.idx";
	struct index_build_stats h, f, s;
	uint64_t flat = 0;

	build_counted(hyb, (struct opts){ .conc = 4, .page = 10 }, &h);
	CHECK_INT(h.requests, expected_hybrid("", 10, 2, &flat));
	CHECK_INT(h.flat, flat);
	CHECK_INT(h.flat, 22);                /* every common prefix of the root */
	CHECK(h.requests < expected_fanout("", 10));
	CHECK(h.max_inflight >= 2 && h.max_inflight <= 4);
	build_counted(fan, (struct opts){ .strategy = INDEX_STRATEGY_FANOUT, .conc = 4,
					  .page = 10 }, &f);
	CHECK_INT(f.requests, expected_fanout("", 10));
	CHECK_INT(f.flat, 0);
	CHECK(f.max_inflight >= 2 && f.max_inflight <= 4);
	build_counted(ser, (struct opts){ .strategy = INDEX_STRATEGY_SERIAL, .page = 10 }, &s);
	CHECK_INT(s.requests, (srv.nkeys + 9) / 10);
	CHECK_INT(s.max_inflight, 1);
	CHECK_INT(s.prefixes, 0);
	check_counts(&h);
	check_counts(&f);
	check_counts(&s);
	CHECK(memcmp(h.counts.skipped, s.counts.skipped, sizeof(h.counts.skipped)) == 0);
	CHECK(memcmp(f.counts.skipped, s.counts.skipped, sizeof(f.counts.skipped)) == 0);
	CHECK(same_tree(hyb, ser));
	CHECK(same_tree(fan, ser));
	unlink(hyb);
	unlink(fan);
	unlink(ser);
}

/* The threshold: 1 sends everything below the root flat (one connection);
 * out of reach, the hybrid walk is the pure fan-out walk. */
static void test_hybrid_threshold(void)
{
	static const char *path = "/tmp/lith-test-build-thr.idx";
	struct index_build_stats st;
	uint64_t flat = 0;

	build_counted(path, (struct opts){ .conc = 1, .page = 10 }, &st);
	CHECK_INT(st.requests, expected_hybrid("", 10, 1, &flat));
	CHECK_INT(st.flat, flat);
	CHECK_INT(st.max_inflight, 1);
	check_counts(&st);
	build_counted(path, (struct opts){ .conc = 8, .flat_at = 1000, .page = 10 }, &st);
	CHECK_INT(st.requests, expected_fanout("", 10));
	CHECK_INT(st.flat, 0);
	check_counts(&st);
	/* dir00/: 20 files then "sub/" on its last page, alone in the build:
	 * one outstanding item, below 2, reaching 1 */
	for (unsigned at = 1; at <= 2; at++) {
		flat = 0;
		build_counted(path, (struct opts){ .conc = 8, .flat_at = at, .page = 10,
						   .prefix = "dir00" }, &st);
		CHECK_INT(st.requests, expected_hybrid("dir00/", 10, at, &flat));
		CHECK_INT(st.requests, 4);    /* three pages of dir00/, one of sub/ */
		CHECK_INT(st.flat, flat);
		CHECK_INT(st.flat, at == 1);
	}
	unlink(path);
}

static void test_prefix(void)
{
	struct index_build_stats st;
	struct index *idx = NULL;
	char err[512] = "", key[64];
	uint64_t ino;

	/* "dir03" means "dir03/" */
	CHECK_INT(build("/tmp/lith-test-build-pfx.idx", (struct opts){ .conc = 8,
								       .prefix = "dir03" },
			&st, err, sizeof(err)), 0);
	CHECK_INT(st.counts.files, 25);
	CHECK_INT(st.requests, 2);
	CHECK_INT(st.flat, 0);                /* one prefix, nothing else to do */
	CHECK_INT(index_open("/tmp/lith-test-build-pfx.idx", &idx), 0);
	if (idx) {
		CHECK_INT(index_lookup(idx, INDEX_ROOT_INO, "file01", 6, &ino), 0);
		CHECK_INT(index_key(idx, ino, key, sizeof(key)), 12);
		CHECK_STR(key, "dir03/file01");
		index_close(idx);
	}
	unlink("/tmp/lith-test-build-pfx.idx");
}

static void expect_failure(enum mode m, struct opts o, int err_expect, const char *needle)
{
	struct index_build_stats st = { .requests = 777 };
	char err[512] = "";

	srv.mode = m;
	o.conc = 8;
	o.page = 10;
	CHECK_INT(build("/tmp/lith-test-build-bad.idx", o, &st, err, sizeof(err)), err_expect);
	CHECK(strstr(err, needle) != NULL);
	if (!strstr(err, needle))
		fprintf(stderr, "  error was: %s\n", err);
	CHECK_INT(st.requests, 777); /* untouched on failure */
	CHECK(access("/tmp/lith-test-build-bad.idx", F_OK) < 0);
	srv.mode = M_OK;
}

static void test_hostile(void)
{
	const struct opts hyb = { 0 }, fan = { .strategy = INDEX_STRATEGY_FANOUT },
			  ser = { .strategy = INDEX_STRATEGY_SERIAL },
			  delimited = { .flat_at = 1000 };
	struct index_build_stats st;
	char err[512] = "";

	expect_failure(M_LOOP, fan, -EPROTO, "common prefix");
	expect_failure(M_LOOP, delimited, -EPROTO, "common prefix");
	expect_failure(M_FLAT_CP, hyb, -EPROTO, "without delimiter");
	expect_failure(M_FLAT_CP, ser, -EPROTO, "without delimiter");
	/* s3xml already refuses this page; the builder checks it again */
	expect_failure(M_NO_TOKEN, ser, -EBADMSG, "NextContinuationToken");
	expect_failure(M_SAME_TOKEN, ser, -EPROTO, "repeated");
	expect_failure(M_SAME_TOKEN, hyb, -EPROTO, "repeated");
	expect_failure(M_EMPTY, hyb, -EPROTO, "empty truncated pages");
	expect_failure(M_EMPTY, fan, -EPROTO, "empty truncated pages");
	expect_failure(M_403, hyb, -EACCES, "LIST ''");
	expect_failure(M_OK, (struct opts){ .max = 100 }, -E2BIG, "max keys");
	expect_failure(M_OK, (struct opts){ .strategy = INDEX_STRATEGY_FANOUT, .max = 100 },
		       -E2BIG, "max keys");
	expect_failure(M_OK, (struct opts){ .strategy = INDEX_STRATEGY_SERIAL, .max = 100 },
		       -E2BIG, "max keys");
	/* keys outside the prefix listed: flat listings (hybrid) and delimited */
	srv.mode = M_OUTSIDE;
	for (int i = 0; i < 2; i++) {
		struct opts o = { .strategy = i ? INDEX_STRATEGY_FANOUT : INDEX_STRATEGY_HYBRID,
				  .conc = 8 };

		CHECK_INT(build("/tmp/lith-test-build-out.idx", o, &st, err, sizeof(err)), 0);
		CHECK(st.counts.skipped[INDEX_SKIP_OUTSIDE_PREFIX] > 10);
		CHECK_INT(st.counts.files, srv.nkeys - 9);
	}
	srv.mode = M_OK;
	unlink("/tmp/lith-test-build-out.idx");
}

static void test_config_errors(void)
{
	struct index_build_stats st;
	char err[256] = "";
	char longp[1100];

	CHECK_INT(index_build(&(struct index_build_config){ 0 }, "/tmp/x", &st, err, sizeof(err)),
		  -EINVAL);
	memset(longp, 'p', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	CHECK_INT(build("/tmp/lith-test-build-x.idx", (struct opts){ .conc = 1, .prefix = longp },
			&st, err, sizeof(err)), -ENAMETOOLONG);
	CHECK_INT(build("/nonexistent-dir/x.idx", (struct opts){ .conc = 4 }, &st, err,
			sizeof(err)), -ENOENT);
	CHECK(strstr(err, "writing") != NULL);
	CHECK_INT(index_build(&(struct index_build_config){ .engine = (void *)1,
							    .bucket = (void *)1,
							    .strategy = 7 },
			      "/tmp/x", &st, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "strategy") != NULL);
}

static void test_prefix_normalize(void)
{
	char out[8];

	CHECK_INT(index_prefix_normalize(NULL, out, sizeof(out)), 0);
	CHECK_STR(out, "");
	CHECK_INT(index_prefix_normalize("a", out, sizeof(out)), 0);
	CHECK_STR(out, "a/");
	CHECK_INT(index_prefix_normalize("a/", out, sizeof(out)), 0);
	CHECK_STR(out, "a/");
	CHECK_INT(index_prefix_normalize("abcdefg", out, sizeof(out)), -ENAMETOOLONG);
}

int main(void)
{
	size_t n;
	char **keys = dataset(&n);

	server_start(keys, n);
	test_strategies_agree();
	test_hybrid_threshold();
	test_prefix();
	test_hostile();
	test_config_errors();
	test_prefix_normalize();
	server_stop();
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return check_done();
}
