/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CSI call accounting for the metrics endpoint: calls by method and gRPC
 * code, latency by method. Thread-safe (one mutex; gRPC calls are few).
 * Methods outside the CSI Identity/Node set are counted as "other", so the
 * label set stays bounded whatever a client sends.
 */
#ifndef LITH_CSI_CALLSTATS_H
#define LITH_CSI_CALLSTATS_H

#include <stddef.h>

#include "fetch/base/strbuf.h"

/* path: the gRPC method path, e.g. "/csi.v1.Node/NodePublishVolume". */
void csi_callstats_add(const char *path, size_t len, int code, double seconds);
int csi_callstats_render(struct strbuf *sb);

#endif
