/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's Prometheus families (text format), rendered on the loop
 * thread for GetStats{exposition}: per view (labels volume_id, namespace,
 * pod) fill histograms by kind, the first-byte floor, cache hits and misses,
 * the index; node-wide S3 requests by op and status, the fetch scheduler,
 * the block cache and the cache device. lith csi serves them on its metrics
 * endpoint next to its own and the mounters' (the process families, which
 * must be one block, are lith csi's: StatsReply carries this process's).
 */
#ifndef LITH_CACHED_METRICS_H
#define LITH_CACHED_METRICS_H

#include "fetch/base/strbuf.h"
#include "fetch/cached/server.h"

int cached_metrics_render(const struct server_config *cfg, struct strbuf *sb);

#endif
