/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gRPC server of `lith csi` on gRPC C core: no generated service code,
 * each call is dispatched on its method path ("/csi.v1.Node/NodeGetInfo")
 * through a table; a path not in the table answers UNIMPLEMENTED. Each call
 * runs on its own short-lived thread (at most CSI_SERVER_MAX_CALLS at once;
 * beyond that RESOURCE_EXHAUSTED), so a slow publish of one volume does not
 * hold up calls about others; serialization per volume is the handlers'
 * business. Every call is logged once: method, volume id, duration, code.
 *
 * Threads: csi_server_run on one thread; csi_server_stop from any thread;
 * handlers on call threads.
 */
#ifndef LITH_CSI_SERVER_H
#define LITH_CSI_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "csi/status.h"

#define CSI_SERVER_MAX_CALLS 64
#define CSI_SERVER_MAX_MSG (4u << 20)
#define CSI_VOLUME_LOG_MAX 256

/* Decodes `in`, fills `out` (payload or failure) and copies the request's
 * volume id (if any) into vol for the call's log line. */
typedef void (*csi_method_fn)(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out,
			      char vol[CSI_VOLUME_LOG_MAX]);

struct csi_method {
	const char *path;       /* "/csi.v1.Identity/Probe" */
	csi_method_fn fn;
};

struct csi_server;

/* Listens on endpoint ("unix:///path"; a stale socket file is removed).
 * methods (borrowed) must outlive the server. */
int csi_server_new(const char *endpoint, const struct csi_method *methods, size_t n,
		   void *ctx, struct csi_server **ret);
/* Serves until csi_server_stop; returns once every call has finished. */
int csi_server_run(struct csi_server *s);
void csi_server_stop(struct csi_server *s);
void csi_server_free(struct csi_server *s);

#endif
