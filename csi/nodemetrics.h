/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's whole Prometheus exposition, as one scrape of lith csi's
 * metrics endpoint serves it: lith csi's own families (build, CSI calls,
 * published volumes, mounter restarts, volume condition), every mounter's
 * FUSE families (from the regions of mstats.h), lith cached's families
 * (asked over its socket; lith_cached_up says whether that worked) and the
 * process families of all of them. Per-volume series carry volume_id,
 * namespace and pod (podInfoOnMount).
 */
#ifndef LITH_CSI_NODEMETRICS_H
#define LITH_CSI_NODEMETRICS_H

#include "csi/plugin.h"
#include "fetch/base/strbuf.h"

/* The exposition, NUL-terminated, in sb (0 or -E2BIG/-ENOMEM). */
int csi_node_metrics(struct csi_plugin *p, struct strbuf *sb);

#endif
