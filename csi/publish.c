// SPDX-License-Identifier: Apache-2.0
/*
 * NodePublishVolume and NodeUnpublishVolume. Publish validates everything,
 * then (under the volume's lock): idempotency check, target directory,
 * FUSE mount with our own fd, the mounter on a dup of it, and OK only once
 * the target serves its root, then the durable record (state.c). A
 * failure undoes every step: no mount, no process, no record, no INIT
 * file. Unpublish unmounts (lazily if busy), stops the mounter, closes our
 * fd, removes the record and the directory if we made it; absent or
 * unmounted targets are OK. Call threads.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csi/fusemount.h"
#include "csi/plugin.h"
#include "csi/state.h"

#define READY_TIMEOUT_MS 120000u
#define STOP_GRACE_MS 10000u

static void undo(struct csi_plugin *p, struct pub *pub)
{
	state_remove(p->cfg.state_dir, pub->v.target);
	mounter_stop(&pub->proc, 0);
	if (pub->fd >= 0) {
		fusemount_unmount(pub->v.target);
		close(pub->fd);
		pub->fd = -1;
	}
	if (pub->created)
		rmdir(pub->v.target);
}

static int start(struct csi_plugin *p, struct pub *pub, char *msg, size_t len)
{
	char logp[PATH_MAX], initp[PATH_MAX];
	struct mounter_args ma = { p->cfg.cache_socket, logp, initp, false, -1 };
	int r = fusemount_prepare(pub->v.target, &pub->created, msg, len);

	if (r == 0 && (r = mstats_create(&pub->stats_fd, &pub->mstats)) < 0)
		snprintf(msg, len, "cannot create the metrics region: %s", strerror(-r));
	ma.stats_fd = pub->stats_fd;

	if (r == 0 && (r = fusemount_mount(pub->v.target, pub->v.bucket, pub->v.noexec, msg, len)) >= 0) {
		pub->fd = r;
		r = 0;
	}
	csi_pub_log_path(p, pub->v.target, logp, sizeof(logp));
	csi_pub_init_path(p, pub->v.target, initp, sizeof(initp));
	unlink(initp);
	if (r == 0 && (r = mounter_spawn(&pub->v, pub->fd, &ma, &pub->proc)) < 0)
		snprintf(msg, len, "cannot start the mounter: %s", strerror(-r));
	if (r == 0)
		r = mounter_wait_ready(&pub->proc, pub->v.target, logp, READY_TIMEOUT_MS, msg, len);
	if (r == 0 && (r = csi_pub_save(p, pub)) < 0)
		snprintf(msg, len, "cannot write the state of the volume under %s: %s",
			 p->cfg.state_dir, strerror(-r));
	if (r < 0)
		undo(p, pub);
	pub->up_since = csi_now_ms();
	return r;
}

/* Same publish arguments. Credentials count only when we know them (a
 * restarted lith csi whose mounter's environment could not be read). */
static bool same_args(const struct pub *have, const struct volctx *want)
{
	if (have->secrets_known)
		return volctx_same(&have->v, want);
	return memcmp(&have->v, want, offsetof(struct volctx, access_key)) == 0;
}

/* Under the volume lock: already there, in conflict, or start it. */
static void publish_locked(struct csi_plugin *p, struct pub *pub, struct csi_reply *out)
{
	struct pub *have = csi_pub_find(p, pub->v.target);
	int r;

	if (have) {
		if (!same_args(have, &pub->v))
			csi_reply_fail(out, -EEXIST, "target_path %s is already published with other "
				       "arguments (volume %s)", pub->v.target, have->v.volume_id);
		csi_pub_free(pub);
		return;
	}
	if (fusemount_is_mounted(pub->v.target) == 1) {
		csi_reply_fail(out, -EEXIST, "target_path %s is already a mount point not made by "
			       "lith.csi; unmount it first", pub->v.target);
		csi_pub_free(pub);
		return;
	}
	r = start(p, pub, out->msg, sizeof(out->msg));
	if (r < 0) {
		char msg[CSI_MSG_MAX];
		snprintf(msg, sizeof(msg), "%s", out->msg);
		csi_reply_fail(out, r, "volume %s (bucket %s): %s", pub->v.volume_id, pub->v.bucket,
			       msg);
		volctx_clear_secrets(&pub->v);
		csi_pub_free(pub);
		return;
	}
	pub->secrets_known = true;
	csi_pub_add(p, pub);
}

void csi_node_publish(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol)
{
	Csi__V1__NodePublishVolumeRequest *req =
		csi__v1__node_publish_volume_request__unpack(NULL, len, in);
	struct pub *pub = calloc(1, sizeof(*pub));
	struct vlock *l;

	if (!req || !pub) {
		csi_reply_fail(out, req ? -ENOMEM : -EBADMSG, "cannot decode NodePublishVolumeRequest");
		goto end;
	}
	snprintf(vol, CSI_VOLUME_LOG_MAX, "%s", req->volume_id);
	pub->fd = pub->stats_fd = -1;
	pub->proc.pidfd = pub->proc.status_fd = -1;
	if (volctx_parse(req, &pub->v, out->msg, sizeof(out->msg)) < 0) {
		out->code = csi_status_of(-EINVAL);
		goto end;
	}
	l = csi_volume_lock(ctx, pub->v.volume_id);
	if (!l) {
		csi_reply_fail(out, -ENOMEM, "out of memory");
		goto end;
	}
	publish_locked(ctx, pub, out);
	pub = NULL;
	csi_volume_unlock(ctx, l);
	if (!out->code)
		csi_reply_pack(out, &(Csi__V1__NodePublishVolumeResponse)
			       CSI__V1__NODE_PUBLISH_VOLUME_RESPONSE__INIT.base);
end:
	csi_pub_free(pub);
	if (req)
		csi__v1__node_publish_volume_request__free_unpacked(req, NULL);
}

static int unpublish_locked(struct csi_plugin *p, const char *target, char *msg, size_t len)
{
	struct pub *pub = csi_pub_find(p, target);
	int r = fusemount_unmount(target);

	if (r < 0) {
		snprintf(msg, len, "cannot unmount %s: %s", target, strerror(-r));
		return r;
	}
	if (!pub)
		return 0;
	mounter_stop(&pub->proc, STOP_GRACE_MS);
	if (pub->fd >= 0)
		close(pub->fd);
	if (pub->created)
		rmdir(target);
	csi_pub_remove(p, pub);
	state_remove(p->cfg.state_dir, target);
	csi_pub_free(pub);
	return 0;
}

void csi_node_unpublish(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out,
			char *vol)
{
	Csi__V1__NodeUnpublishVolumeRequest *req =
		csi__v1__node_unpublish_volume_request__unpack(NULL, len, in);
	char msg[512];
	struct vlock *l;
	int r;

	if (!req) {
		csi_reply_fail(out, -EBADMSG, "cannot decode NodeUnpublishVolumeRequest");
		return;
	}
	snprintf(vol, CSI_VOLUME_LOG_MAX, "%s", req->volume_id);
	if (!*req->volume_id) {
		csi_reply_fail(out, -EINVAL, "volume_id is required");
	} else if (volctx_check_path(req->target_path, msg, sizeof(msg)) < 0) {
		csi_reply_fail(out, -EINVAL, "%s", msg);
	} else if (!(l = csi_volume_lock(ctx, req->volume_id))) {
		csi_reply_fail(out, -ENOMEM, "out of memory");
	} else {
		r = unpublish_locked(ctx, req->target_path, msg, sizeof(msg));
		csi_volume_unlock(ctx, l);
		if (r < 0)
			csi_reply_fail(out, r, "%s", msg);
		else
			csi_reply_pack(out, &(Csi__V1__NodeUnpublishVolumeResponse)
				       CSI__V1__NODE_UNPUBLISH_VOLUME_RESPONSE__INIT.base);
	}
	csi__v1__node_unpublish_volume_request__free_unpacked(req, NULL);
}
