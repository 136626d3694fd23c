/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one place where -errno becomes a gRPC status code, and the reply of
 * one CSI call (payload or status + message). Handlers fail with
 * csi_reply_fail(out, -errno, "what to fix ..."); the table decides the
 * code kubelet sees. Messages never contain secrets.
 */
#ifndef LITH_CSI_STATUS_H
#define LITH_CSI_STATUS_H

#include <stddef.h>
#include <stdint.h>

#define CSI_MSG_MAX 1024

struct csi_reply {
	uint8_t *buf;            /* packed response (malloc'd), NULL on failure */
	size_t len;
	int code;                /* grpc_status_code; 0 = OK */
	char msg[CSI_MSG_MAX];
};

/* gRPC status code for -err (err <= 0; 0 → OK, unknown → INTERNAL). */
int csi_status_of(int err);
/* Name of a gRPC status code ("INVALID_ARGUMENT"), for logs. */
const char *csi_status_name(int code);
/* Sets out->code from -err and out->msg from fmt. */
void csi_reply_fail(struct csi_reply *out, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
