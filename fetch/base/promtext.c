// SPDX-License-Identifier: Apache-2.0
/* Prometheus text exposition writer (see promtext.h). */
#include "fetch/base/promtext.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void prom_labels_init(struct prom_labels *l)
{
	l->s[0] = '\0';
	l->len = 0;
}

/* Appends `name="value"`; a label that does not fit is dropped whole. */
void prom_label(struct prom_labels *l, const char *name, const char *value)
{
	char tmp[sizeof(l->s)];
	size_t n = 0, cap = sizeof(tmp) - 2;
	int w = snprintf(tmp, sizeof(tmp), "%s%s=\"", l->len ? "," : "", name);

	if (w < 0 || (size_t)w >= cap)
		return;
	n = (size_t)w;
	for (const char *p = value ? value : ""; *p && n + 2 < cap; p++) {
		const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
		if (esc) {
			tmp[n++] = esc[0];
			tmp[n++] = esc[1];
		} else {
			tmp[n++] = *p;
		}
	}
	tmp[n++] = '"';
	if (l->len + n >= sizeof(l->s))
		return;
	memcpy(l->s + l->len, tmp, n);
	l->len += n;
	l->s[l->len] = '\0';
}

void prom_labelu(struct prom_labels *l, const char *name, uint64_t value)
{
	char v[24];

	snprintf(v, sizeof(v), "%" PRIu64, value);
	prom_label(l, name, v);
}

struct prom_labels prom_labels_with(const struct prom_labels *base, const char *name,
				    const char *value)
{
	struct prom_labels l = *base;

	prom_label(&l, name, value);
	return l;
}

int prom_family(struct strbuf *sb, const char *name, const char *type, const char *help)
{
	return strbuf_appendf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Shortest exact-enough form; Prometheus spells the specials +Inf/-Inf/NaN. */
static void fmt_value(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	else if (v == (double)(int64_t)v && fabs(v) < 9e15)
		snprintf(buf, len, "%" PRId64, (int64_t)v);
	else
		snprintf(buf, len, "%.9g", v);
}

int prom_sample(struct strbuf *sb, const char *name, const struct prom_labels *l, double v)
{
	char val[40];

	fmt_value(val, sizeof(val), v);
	if (l && l->len)
		return strbuf_appendf(sb, "%s{%s} %s\n", name, l->s, val);
	return strbuf_appendf(sb, "%s %s\n", name, val);
}

static int bucket_line(struct strbuf *sb, const char *name, const struct prom_labels *l,
		       const char *le, uint64_t cum)
{
	return strbuf_appendf(sb, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", name, l ? l->s : "",
			      l && l->len ? "," : "", le, cum);
}

int prom_histogram(struct strbuf *sb, const char *name, const struct prom_labels *l,
		   const double *bounds, const uint64_t *counts, size_t n, double sum)
{
	char le[40], metric[160];
	uint64_t cum = 0;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		cum += counts[i];
		fmt_value(le, sizeof(le), bounds[i]);
		r = bucket_line(sb, name, l, le, cum);
	}
	cum += counts[n];
	if (r == 0)
		r = bucket_line(sb, name, l, "+Inf", cum);
	snprintf(metric, sizeof(metric), "%s_sum", name);
	if (r == 0)
		r = prom_sample(sb, metric, l, sum);
	snprintf(metric, sizeof(metric), "%s_count", name);
	if (r == 0)
		r = prom_sample(sb, metric, l, (double)cum);
	return r;
}

size_t prom_bucket(const double *bounds, size_t n, double v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v <= bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}
