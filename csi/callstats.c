// SPDX-License-Identifier: Apache-2.0
/* CSI calls by method and gRPC code (see callstats.h). */
#include "csi/callstats.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "csi/status.h"
#include "fetch/base/promtext.h"

#define NCODES 17 /* gRPC codes 0..16 */
#define NLAT 14

static const char *const methods[] = {
	"GetPluginInfo", "GetPluginCapabilities", "Probe", "NodeGetInfo",
	"NodeGetCapabilities", "NodeGetVolumeStats", "NodePublishVolume",
	"NodeUnpublishVolume", "NodeStageVolume", "NodeUnstageVolume",
	"NodeExpandVolume", "other",
};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

static const double lat_bounds[NLAT] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t calls[NMETHODS][NCODES];
static uint64_t lat[NMETHODS][NLAT + 1];
static double lat_sum[NMETHODS];

static size_t method_of(const char *path, size_t len)
{
	const char *slash = memrchr(path, '/', len);
	const char *name = slash ? slash + 1 : path;
	size_t n = len - (size_t)(name - path);

	for (size_t i = 0; i + 1 < NMETHODS; i++)
		if (strlen(methods[i]) == n && !memcmp(methods[i], name, n))
			return i;
	return NMETHODS - 1;
}

void csi_callstats_add(const char *path, size_t len, int code, double seconds)
{
	size_t m = method_of(path, len);

	pthread_mutex_lock(&lock);
	calls[m][code >= 0 && code < NCODES ? code : 2 /* UNKNOWN */]++;
	lat[m][prom_bucket(lat_bounds, NLAT, seconds)]++;
	lat_sum[m] += seconds;
	pthread_mutex_unlock(&lock);
}

static int render_calls(struct strbuf *sb)
{
	int r = prom_family(sb, "lith_csi_calls_total", "counter",
			    "CSI calls by method and gRPC status code.");

	for (size_t m = 0; m < NMETHODS && r == 0; m++)
		for (int c = 0; c < NCODES && r == 0; c++) {
			struct prom_labels l;
			if (!calls[m][c])
				continue;
			prom_labels_init(&l);
			prom_label(&l, "method", methods[m]);
			prom_label(&l, "code", csi_status_name(c));
			r = prom_sample(sb, "lith_csi_calls_total", &l, (double)calls[m][c]);
		}
	return r;
}

static int render_latency(struct strbuf *sb)
{
	int r = prom_family(sb, "lith_csi_call_seconds", "histogram",
			    "CSI call latency by method.");

	for (size_t m = 0; m < NMETHODS && r == 0; m++) {
		struct prom_labels l;
		uint64_t n = 0;
		for (int b = 0; b <= NLAT; b++)
			n += lat[m][b];
		if (!n)
			continue;
		prom_labels_init(&l);
		prom_label(&l, "method", methods[m]);
		r = prom_histogram(sb, "lith_csi_call_seconds", &l, lat_bounds, lat[m], NLAT,
				   lat_sum[m]);
	}
	return r;
}

int csi_callstats_render(struct strbuf *sb)
{
	int r;

	pthread_mutex_lock(&lock);
	r = render_calls(sb);
	if (r == 0)
		r = render_latency(sb);
	pthread_mutex_unlock(&lock);
	return r;
}
