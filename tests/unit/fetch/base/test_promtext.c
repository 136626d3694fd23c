// SPDX-License-Identifier: Apache-2.0
/* Unit tests for the Prometheus exposition writer and /proc/PID/stat parsing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fetch/base/procstat.h"
#include "fetch/base/promtext.h"

static void test_labels(void)
{
	struct prom_labels l, m;
	char big[2000];

	prom_labels_init(&l);
	prom_label(&l, "volume_id", "vol \"1\"\\x\ny");
	prom_labelu(&l, "n", 42);
	CHECK_STR(l.s, "volume_id=\"vol \\\"1\\\"\\\\x\\ny\",n=\"42\"");
	m = prom_labels_with(&l, "kind", "demand");
	CHECK(strstr(m.s, ",kind=\"demand\"") != NULL);
	CHECK(strstr(l.s, "kind") == NULL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	prom_label(&m, "huge", big); /* dropped whole, never cut mid-value */
	CHECK(strstr(m.s, "huge") == NULL);
	CHECK(m.len == strlen(m.s));
}

static void test_samples(void)
{
	struct strbuf sb;
	struct prom_labels l;

	strbuf_init(&sb, 1 << 16);
	prom_labels_init(&l);
	CHECK_INT(prom_family(&sb, "lith_x_total", "counter", "Things."), 0);
	CHECK_INT(prom_sample(&sb, "lith_x_total", &l, 3), 0);
	prom_label(&l, "op", "get");
	CHECK_INT(prom_sample(&sb, "lith_x_total", &l, 0.25), 0);
	CHECK_INT(prom_sample(&sb, "lith_y", NULL, 1.0 / 0.0), 0);
	CHECK_STR(sb.p, "# HELP lith_x_total Things.\n# TYPE lith_x_total counter\n"
			"lith_x_total 3\nlith_x_total{op=\"get\"} 0.25\nlith_y +Inf\n");
	strbuf_free(&sb);
}

static void test_histogram(void)
{
	static const double b[] = { 0.01, 0.1, 1 };
	uint64_t counts[4] = { 0 };
	struct strbuf sb;
	struct prom_labels l;
	double obs[] = { 0.005, 0.01, 0.05, 0.5, 7 };

	for (size_t i = 0; i < 5; i++)
		counts[prom_bucket(b, 3, obs[i])]++;
	CHECK_INT(counts[0], 2); /* le is inclusive */
	CHECK_INT(counts[3], 1);
	strbuf_init(&sb, 1 << 16);
	prom_labels_init(&l);
	prom_label(&l, "kind", "demand");
	CHECK_INT(prom_histogram(&sb, "lith_fill_seconds", &l, b, counts, 3, 7.565), 0);
	CHECK_STR(sb.p, "lith_fill_seconds_bucket{kind=\"demand\",le=\"0.01\"} 2\n"
			"lith_fill_seconds_bucket{kind=\"demand\",le=\"0.1\"} 3\n"
			"lith_fill_seconds_bucket{kind=\"demand\",le=\"1\"} 4\n"
			"lith_fill_seconds_bucket{kind=\"demand\",le=\"+Inf\"} 5\n"
			"lith_fill_seconds_sum{kind=\"demand\"} 7.565\n"
			"lith_fill_seconds_count{kind=\"demand\"} 5\n");
	strbuf_free(&sb);
	strbuf_init(&sb, 64); /* the cap is reported, never overrun */
	CHECK_INT(prom_histogram(&sb, "lith_fill_seconds", &l, b, counts, 3, 1), -E2BIG);
	CHECK(sb.len <= 64);
	strbuf_free(&sb);
}

static void test_procstat(void)
{
	struct procstat ps = { 0 };
	const char *line = "1234 (we ird) name) S 1 2 3 4 5 6 7 8 9 10 250 150 0 0 20 0 "
			   "3 0 99 1000000 256 18446744073709551615";

	CHECK_INT(procstat_parse(line, 100, 4096, &ps), 0);
	CHECK(ps.cpu_seconds > 3.99 && ps.cpu_seconds < 4.01);
	CHECK_INT(ps.rss_bytes, 256 * 4096);
	CHECK_INT(ps.state, 'S');
	CHECK_INT(ps.start, 99);
	CHECK_INT(procstat_parse("1234 (x) S 1 2 3", 100, 4096, &ps), -EBADMSG);
	CHECK_INT(procstat_parse("no paren", 100, 4096, &ps), -EBADMSG);
	CHECK_INT(procstat_read(getpid(), &ps), 0);
	CHECK(ps.rss_bytes > 0);
	CHECK_INT(procstat_read(-5, &ps), -ENOENT);
}

int main(void)
{
	test_labels();
	test_samples();
	test_histogram();
	test_procstat();
	return check_done();
}
