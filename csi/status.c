// SPDX-License-Identifier: Apache-2.0
/*
 * errno → gRPC status (see status.h). The CSI spec's codes for the node
 * service: INVALID_ARGUMENT for bad requests, NOT_FOUND for a missing
 * bucket, ALREADY_EXISTS for a target published with other arguments,
 * PERMISSION_DENIED for rejected credentials, UNAVAILABLE for an endpoint
 * or daemon that does not answer. Pure functions, any thread.
 */
#include "csi/status.h"

#include <errno.h>
#include <grpc/status.h>
#include <stdarg.h>
#include <stdio.h>

static const struct {
	int err;
	grpc_status_code code;
} table[] = {
	{ EINVAL, GRPC_STATUS_INVALID_ARGUMENT },
	{ ENAMETOOLONG, GRPC_STATUS_INVALID_ARGUMENT },
	{ ELOOP, GRPC_STATUS_INVALID_ARGUMENT },
	{ ENOTDIR, GRPC_STATUS_INVALID_ARGUMENT },
	{ ENOENT, GRPC_STATUS_NOT_FOUND },
	{ ENOKEY, GRPC_STATUS_NOT_FOUND },
	{ EEXIST, GRPC_STATUS_ALREADY_EXISTS },
	{ EACCES, GRPC_STATUS_PERMISSION_DENIED },
	{ EPERM, GRPC_STATUS_PERMISSION_DENIED },
	{ ECONNREFUSED, GRPC_STATUS_UNAVAILABLE },
	{ EHOSTUNREACH, GRPC_STATUS_UNAVAILABLE },
	{ ENETUNREACH, GRPC_STATUS_UNAVAILABLE },
	{ EHOSTDOWN, GRPC_STATUS_UNAVAILABLE },
	{ ECONNRESET, GRPC_STATUS_UNAVAILABLE },
	{ EAGAIN, GRPC_STATUS_UNAVAILABLE },
	{ ETIMEDOUT, GRPC_STATUS_DEADLINE_EXCEEDED },
	{ ENOSYS, GRPC_STATUS_UNIMPLEMENTED },
	{ EOPNOTSUPP, GRPC_STATUS_UNIMPLEMENTED },
	{ ENOMEM, GRPC_STATUS_RESOURCE_EXHAUSTED },
	{ EMFILE, GRPC_STATUS_RESOURCE_EXHAUSTED },
	{ ENOSPC, GRPC_STATUS_RESOURCE_EXHAUSTED },
	{ EUSERS, GRPC_STATUS_RESOURCE_EXHAUSTED },
	{ EBUSY, GRPC_STATUS_ABORTED },
	{ ENOTCONN, GRPC_STATUS_FAILED_PRECONDITION },
	{ EBADMSG, GRPC_STATUS_INVALID_ARGUMENT },
};

static const char *const names[] = {
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
	"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
};

int csi_status_of(int err)
{
	if (err >= 0)
		return GRPC_STATUS_OK;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].err == -err)
			return table[i].code;
	return GRPC_STATUS_INTERNAL;
}

const char *csi_status_name(int code)
{
	if (code < 0 || (size_t)code >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[code];
}

void csi_reply_fail(struct csi_reply *out, int err, const char *fmt, ...)
{
	va_list ap;

	out->code = csi_status_of(err < 0 ? err : -EIO);
	va_start(ap, fmt);
	vsnprintf(out->msg, sizeof(out->msg), fmt, ap);
	va_end(ap);
}
