/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a NodePublishVolume asks for, validated before anything is done:
 * the volume id, the target path (absolute, normalised, no symlinked
 * ancestor), the capability (mount access only; a writer mode only with
 * readonly), mount flags, volume_context keys and secrets. Unknown
 * volume_context keys are rejected by name (typos must not pass);
 * keys under csi.storage.k8s.io/ are kept as labels. Values are bounded and
 * free of control characters so they can be stored and logged safely.
 *
 * Pure parsing: no side effects, any thread. Owns nothing on the heap.
 */
#ifndef LITH_CSI_VOLCTX_H
#define LITH_CSI_VOLCTX_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto/csi.pb-c.h"

#define VOLCTX_ID_MAX 128
#define VOLCTX_VALUE_MAX 1024
#define VOLCTX_LABELS_MAX 8
#define VOLCTX_SECRET_MAX 4096

struct volctx_label {
	char key[64];     /* without the csi.storage.k8s.io/ prefix */
	char value[256];
};

struct volctx {
	char volume_id[VOLCTX_ID_MAX + 1];
	char target[PATH_MAX];
	char bucket[64];
	char prefix[VOLCTX_VALUE_MAX];
	char endpoint[VOLCTX_VALUE_MAX];
	char region[64];
	bool path_style, virtual_host, no_sign, requester_pays, exec, noexec;
	long long uid, gid;          /* -1: not set */
	char tuning[5][32];          /* smallFile readaheadMin readaheadMax maxThreads attrTimeout */
	char access_key[VOLCTX_SECRET_MAX];
	char secret_key[VOLCTX_SECRET_MAX];
	char session_token[VOLCTX_SECRET_MAX];
	struct volctx_label labels[VOLCTX_LABELS_MAX];
	size_t n_labels;
};

#define VOLCTX_TUNING_N 5
extern const char *const volctx_tuning_keys[VOLCTX_TUNING_N];
extern const char *const volctx_tuning_opts[VOLCTX_TUNING_N];

/* Fills v from req; on failure returns -EINVAL with msg saying what to
 * fix. Does not touch the filesystem. */
int volctx_parse(const Csi__V1__NodePublishVolumeRequest *req, struct volctx *v, char *msg,
		 size_t msglen);
/* Checks a target or volume path: absolute, no "." / ".." / "//"
 * components, no trailing '/', shorter than PATH_MAX. */
int volctx_check_path(const char *path, char *msg, size_t msglen);
/* True when a and b publish the same thing (labels ignored). */
bool volctx_same(const struct volctx *a, const struct volctx *b);
/* Wipes the secrets. */
void volctx_clear_secrets(struct volctx *v);

#endif
