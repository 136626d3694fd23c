/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prometheus text exposition (format 0.0.4): family headers, samples,
 * histograms and label sets with value escaping. Writes into a strbuf; every
 * function returns 0 or the strbuf's -errno (E2BIG when the cap is reached),
 * and a caller may check only the last call: an append after a failure fails
 * the same way.
 */
#ifndef LITH_BASE_PROMTEXT_H
#define LITH_BASE_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "fetch/base/strbuf.h"

/* A rendered label set: `a="x",b="y"` (no braces). Values are escaped
 * (backslash, double quote, newline); empty values are kept, which Prometheus
 * treats as an absent label. Silently truncated at a label boundary. */
struct prom_labels {
	char s[768];
	size_t len;
};

void prom_labels_init(struct prom_labels *l);
void prom_label(struct prom_labels *l, const char *name, const char *value);
void prom_labelu(struct prom_labels *l, const char *name, uint64_t value);
/* A copy of `base` plus one more label. */
struct prom_labels prom_labels_with(const struct prom_labels *base, const char *name,
				    const char *value);

/* "# HELP" and "# TYPE" lines; type is counter, gauge or histogram. */
int prom_family(struct strbuf *sb, const char *name, const char *type, const char *help);
int prom_sample(struct strbuf *sb, const char *name, const struct prom_labels *l, double v);

/* A histogram's _bucket/_sum/_count samples. counts[i] is the number of
 * observations <= bounds[i] and > bounds[i-1] (not cumulative); counts[n] is
 * the overflow above bounds[n-1]. */
int prom_histogram(struct strbuf *sb, const char *name, const struct prom_labels *l,
		   const double *bounds, const uint64_t *counts, size_t n, double sum);

/* Index of the bucket an observation falls in (0..n; n = overflow). */
size_t prom_bucket(const double *bounds, size_t n, double v);

#endif
