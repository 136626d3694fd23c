// SPDX-License-Identifier: Apache-2.0
/*
 * NodePublishVolume validation (see volctx.h): a table of volume_context
 * keys, each with its parser; secrets; capability and mount flags.
 */
#include "csi/volctx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/base/parse.h"

#define K8S_PREFIX "csi.storage.k8s.io/"

const char *const volctx_tuning_keys[VOLCTX_TUNING_N] = {
	"smallFile", "readaheadMin", "readaheadMax", "maxThreads", "attrTimeout",
};
const char *const volctx_tuning_opts[VOLCTX_TUNING_N] = {
	"--small-file", "--readahead-min", "--readahead-max", "--max-threads", "--attr-timeout",
};

static int fail(char *msg, size_t len, const char *fmt, const char *a, const char *b)
{
	snprintf(msg, len, fmt, a, b);
	return -EINVAL;
}

static bool clean(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static int copy(char *dst, size_t size, const char *key, const char *val, char *msg,
		size_t len)
{
	if (strlen(val) >= size)
		return fail(msg, len, "volume attribute %s is too long (%s)", key, "max length exceeded");
	if (!clean(val))
		return fail(msg, len, "volume attribute %s contains control characters%s", key, "");
	strcpy(dst, val);
	return 0;
}

static int ctx_bool(const char *key, const char *val, bool *ret, char *msg, size_t len)
{
	if (!strcmp(val, "true") || !strcmp(val, "True") || !strcmp(val, "1"))
		*ret = true;
	else if (!strcmp(val, "false") || !strcmp(val, "False") || !strcmp(val, "0") || !*val)
		*ret = false;
	else
		return fail(msg, len, "volume attribute %s must be true or false, not '%s'", key, val);
	return 0;
}

static int ctx_id(const char *key, const char *val, long long *ret, char *msg, size_t len)
{
	uint64_t v;

	if (parse_u64(val, &v) < 0 || v >= UINT32_MAX)
		return fail(msg, len, "volume attribute %s must be a numeric id, not '%s'", key, val);
	*ret = (long long)v;
	return 0;
}

static int ctx_mode(const char *key, const char *val, struct volctx *v, char *msg, size_t len)
{
	bool file = !strcmp(key, "fileMode");

	if (!strcmp(val, "0555") || !strcmp(val, "555"))
		v->exec = v->exec || file;
	else if (!(file && (!strcmp(val, "0444") || !strcmp(val, "444"))))
		return fail(msg, len, "volume attribute %s: lith volumes are read-only; "
			    "supported values are 0444 or 0555 for files, 0555 for directories, not '%s'",
			    key, val);
	return 0;
}

static int parse_bucket(const char *val, struct volctx *v, char *msg, size_t len)
{
	size_t n = strlen(val);

	if (n < 3 || n > 63 || strspn(val, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != n)
		return fail(msg, len, "volume attribute bucket: '%s' is not a valid S3 bucket name%s",
			    val, "");
	strcpy(v->bucket, val);
	return 0;
}

static int tuning(const char *key, const char *val, struct volctx *v, char *msg, size_t len)
{
	for (int i = 0; i < VOLCTX_TUNING_N; i++) {
		if (strcmp(key, volctx_tuning_keys[i]))
			continue;
		if (!*val || strlen(val) >= sizeof(v->tuning[i]) ||
		    strspn(val, "0123456789KMGiB") != strlen(val))
			return fail(msg, len, "volume attribute %s: bad value '%s'", key, val);
		strcpy(v->tuning[i], val);
		return 0;
	}
	return 1;
}

static int label(const char *key, const char *val, struct volctx *v, char *msg, size_t len)
{
	struct volctx_label *l;

	if (v->n_labels >= VOLCTX_LABELS_MAX)
		return 0; /* more pod info than we keep: accepted, not kept */
	l = &v->labels[v->n_labels];
	if (strlen(key) >= sizeof(l->key) || strlen(val) >= sizeof(l->value) || !clean(val))
		return fail(msg, len, "volume attribute %s%s is too long or not printable", K8S_PREFIX, key);
	strcpy(l->key, key);
	strcpy(l->value, val);
	v->n_labels++;
	return 0;
}

/* One volume_context entry; 1 when the key is unknown. */
static int context_key(const char *k, const char *val, struct volctx *v, char *msg, size_t len)
{
	int r;

	if (!strncmp(k, K8S_PREFIX, strlen(K8S_PREFIX)))
		return label(k + strlen(K8S_PREFIX), val, v, msg, len);
	if (!strcmp(k, "bucket"))
		return parse_bucket(val, v, msg, len);
	if (!strcmp(k, "prefix"))
		return copy(v->prefix, sizeof(v->prefix), k, val, msg, len);
	if (!strcmp(k, "endpoint"))
		return copy(v->endpoint, sizeof(v->endpoint), k, val, msg, len);
	if (!strcmp(k, "region"))
		return copy(v->region, sizeof(v->region), k, val, msg, len);
	if (!strcmp(k, "pathStyle")) {
		r = ctx_bool(k, val, &v->path_style, msg, len);
		v->virtual_host = r == 0 && !v->path_style && *val;
		return r;
	}
	if (!strcmp(k, "noSignRequest"))
		return ctx_bool(k, val, &v->no_sign, msg, len);
	if (!strcmp(k, "requesterPays"))
		return ctx_bool(k, val, &v->requester_pays, msg, len);
	if (!strcmp(k, "exec"))
		return ctx_bool(k, val, &v->exec, msg, len);
	if (!strcmp(k, "uid"))
		return ctx_id(k, val, &v->uid, msg, len);
	if (!strcmp(k, "gid"))
		return ctx_id(k, val, &v->gid, msg, len);
	if (!strcmp(k, "fileMode") || !strcmp(k, "dirMode"))
		return ctx_mode(k, val, v, msg, len);
	return tuning(k, val, v, msg, len);
}

static int parse_context(const Csi__V1__NodePublishVolumeRequest *req, struct volctx *v,
			 char *msg, size_t len)
{
	char unknown[512] = "";
	size_t used = 0;
	int r;

	for (size_t i = 0; i < req->n_volume_context; i++) {
		const char *k = req->volume_context[i]->key, *val = req->volume_context[i]->value;

		r = context_key(k, val ? val : "", v, msg, len);
		if (r < 0)
			return r;
		if (r > 0 && used < sizeof(unknown) - 1)
			used += (size_t)snprintf(unknown + used, sizeof(unknown) - used, "%s%s",
						 used ? ", " : "", clean(k) ? k : "(unprintable)");
	}
	if (used)
		return fail(msg, len, "unknown volume attributes: %s (known: bucket, prefix, endpoint, "
			    "region, pathStyle, noSignRequest, requesterPays, uid, gid, fileMode, "
			    "dirMode, exec, smallFile, readaheadMin, readaheadMax, maxThreads, "
			    "attrTimeout)%s", unknown, "");
	if (!v->bucket[0])
		return fail(msg, len, "volume attribute bucket is required (the S3 bucket to mount)%s%s",
			    "", "");
	return 0;
}

static int parse_secrets(const Csi__V1__NodePublishVolumeRequest *req, struct volctx *v,
			 char *msg, size_t len)
{
	for (size_t i = 0; i < req->n_secrets; i++) {
		const char *k = req->secrets[i]->key, *val = req->secrets[i]->value;
		char *dst = !strcmp(k, "accessKeyID") ? v->access_key
			  : !strcmp(k, "secretAccessKey") ? v->secret_key
			  : !strcmp(k, "sessionToken") ? v->session_token : NULL;

		if (!dst)
			return fail(msg, len, "unknown secret key '%s' (known: accessKeyID, "
				    "secretAccessKey, sessionToken)%s", clean(k) ? k : "?", "");
		if (!val || strlen(val) >= VOLCTX_SECRET_MAX || !clean(val))
			return fail(msg, len, "secret %s is too long or not printable%s", k, "");
		strcpy(dst, val);
	}
	if (!v->access_key[0] != !v->secret_key[0])
		return fail(msg, len, "secrets must hold both accessKeyID and secretAccessKey%s%s",
			    "", "");
	return 0;
}

static bool writer(int mode)
{
	return mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER ||
	       mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_SINGLE_WRITER ||
	       mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER ||
	       mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_SINGLE_WRITER ||
	       mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_MULTI_WRITER;
}

static int parse_flags(const Csi__V1__VolumeCapability__MountVolume *m, struct volctx *v,
		       char *msg, size_t len)
{
	static const char *const ok[] = { "ro", "allow_other", "nosuid", "nodev", "noatime",
					   "relatime", "default_permissions", "noexec", NULL };

	for (size_t i = 0; i < m->n_mount_flags; i++) {
		const char *f = m->mount_flags[i];
		size_t j = 0;

		while (ok[j] && strcmp(ok[j], f))
			j++;
		if (!ok[j])
			return fail(msg, len, "mount option '%s' is not supported by lith volumes "
				    "(supported: ro, allow_other, nosuid, nodev, noexec, noatime)%s",
				    clean(f) ? f : "?", "");
		v->noexec = v->noexec || !strcmp(f, "noexec");
	}
	if (m->fs_type && *m->fs_type && strcmp(m->fs_type, "fuse") && strcmp(m->fs_type, "lith") &&
	    strcmp(m->fs_type, "fuse.lith"))
		return fail(msg, len, "fsType '%s' is not supported: leave it empty or use fuse%s",
			    clean(m->fs_type) ? m->fs_type : "?", "");
	return 0;
}

static int parse_group(const char *g, struct volctx *v, char *msg, size_t len)
{
	long long gid;

	if (!g || !*g)
		return 0;
	if (ctx_id("volume_mount_group", g, &gid, msg, len) < 0)
		return -EINVAL;
	if (v->gid >= 0 && v->gid != gid)
		return fail(msg, len, "fsGroup %s conflicts with volume attribute gid %s", g, "");
	v->gid = gid;
	return 0;
}

static int parse_capability(const Csi__V1__NodePublishVolumeRequest *req, struct volctx *v,
			    char *msg, size_t len)
{
	const Csi__V1__VolumeCapability *c = req->volume_capability;

	if (!c || !c->access_mode)
		return fail(msg, len, "volume_capability with an access mode is required%s%s", "", "");
	if (c->access_type_case != CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT)
		return fail(msg, len, "lith volumes are filesystems: use volumeMode Filesystem "
			    "(access type mount), not %s%s",
			    c->access_type_case == CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK
				    ? "block" : "none", "");
	if (c->access_mode->mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__UNKNOWN)
		return fail(msg, len, "volume_capability.access_mode is required%s%s", "", "");
	if (writer(c->access_mode->mode) && !req->readonly)
		return fail(msg, len, "lith volumes are read-only: use accessModes [ReadOnlyMany] "
			    "or set readOnly: true on the volume%s%s", "", "");
	if (parse_flags(c->mount, v, msg, len) < 0)
		return -EINVAL;
	return parse_group(c->mount->volume_mount_group, v, msg, len);
}

int volctx_check_path(const char *p, char *msg, size_t len)
{
	size_t n = strlen(p);

	if (!n)
		return fail(msg, len, "target_path is required%s%s", "", "");
	if (n >= PATH_MAX || !clean(p))
		return fail(msg, len, "target_path is too long or has control characters%s%s", "", "");
	if (p[0] != '/' || (n > 1 && p[n - 1] == '/') || strstr(p, "//") || strstr(p, "/./") ||
	    strstr(p, "/../") || (n >= 2 && !strcmp(p + n - 2, "/.")) ||
	    (n >= 3 && !strcmp(p + n - 3, "/..")) || n == 1)
		return fail(msg, len, "target_path '%s' must be an absolute, normalised path "
			    "(no '.', '..' or empty components)%s", p, "");
	return 0;
}

int volctx_parse(const Csi__V1__NodePublishVolumeRequest *req, struct volctx *v, char *msg,
		 size_t len)
{
	memset(v, 0, sizeof(*v));
	v->uid = v->gid = -1;
	if (!req->volume_id || !*req->volume_id)
		return fail(msg, len, "volume_id is required%s%s", "", "");
	if (strlen(req->volume_id) > VOLCTX_ID_MAX || !clean(req->volume_id))
		return fail(msg, len, "volume_id is longer than 128 bytes or not printable%s%s", "", "");
	strcpy(v->volume_id, req->volume_id);
	if (volctx_check_path(req->target_path ? req->target_path : "", msg, len) < 0)
		return -EINVAL;
	strcpy(v->target, req->target_path);
	if (parse_capability(req, v, msg, len) < 0 || parse_context(req, v, msg, len) < 0)
		return -EINVAL;
	return parse_secrets(req, v, msg, len);
}

bool volctx_same(const struct volctx *a, const struct volctx *b)
{
	size_t off = offsetof(struct volctx, labels);

	return memcmp(a, b, off) == 0;
}

void volctx_clear_secrets(struct volctx *v)
{
	explicit_bzero(v->access_key, sizeof(v->access_key));
	explicit_bzero(v->secret_key, sizeof(v->secret_key));
	explicit_bzero(v->session_token, sizeof(v->session_token));
}
