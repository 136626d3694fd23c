// SPDX-License-Identifier: Apache-2.0
/*
 * The Node service's small calls: NodeGetInfo, NodeGetCapabilities,
 * NodeGetVolumeStats (usage = the dataset's bytes and key count, as the
 * mounter's statfs reports them from the index; condition abnormal when
 * the mounter has exited). Stage/Unstage are not advertised and not in
 * the method table (UNIMPLEMENTED). Call threads.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "csi/plugin.h"

void csi_node_info(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol)
{
	struct csi_plugin *p = ctx;
	Csi__V1__NodeGetInfoResponse r = CSI__V1__NODE_GET_INFO_RESPONSE__INIT;
	Csi__V1__Topology topo = CSI__V1__TOPOLOGY__INIT;
	Csi__V1__Topology__SegmentsEntry seg = CSI__V1__TOPOLOGY__SEGMENTS_ENTRY__INIT, *sp = &seg;

	(void)in; (void)len; (void)vol;
	r.node_id = (char *)p->cfg.node_id;
	seg.key = CSI_TOPOLOGY_KEY;
	seg.value = (char *)p->cfg.node_id;
	topo.n_segments = 1;
	topo.segments = &sp;
	r.accessible_topology = &topo;
	csi_reply_pack(out, &r.base);
}

void csi_node_caps(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol)
{
	static const int types[] = {
		CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME_STATS,
		CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION,
		CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_MOUNT_GROUP,
	};
	Csi__V1__NodeGetCapabilitiesResponse r = CSI__V1__NODE_GET_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__NodeServiceCapability caps[3], *cp[3];
	Csi__V1__NodeServiceCapability__RPC rpc[3];

	(void)ctx; (void)in; (void)len; (void)vol;
	for (int i = 0; i < 3; i++) {
		csi__v1__node_service_capability__init(&caps[i]);
		csi__v1__node_service_capability__rpc__init(&rpc[i]);
		rpc[i].type = types[i];
		caps[i].type_case = CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC;
		caps[i].rpc = &rpc[i];
		cp[i] = &caps[i];
	}
	r.n_capabilities = 3;
	r.capabilities = cp;
	csi_reply_pack(out, &r.base);
}

static void usage(Csi__V1__VolumeUsage *u, int unit, long long n)
{
	csi__v1__volume_usage__init(u);
	u->unit = unit;
	u->total = n;
	u->used = n;
}

static void stats_reply(struct csi_reply *out, const struct statvfs *sv, bool abnormal,
			const char *why)
{
	Csi__V1__NodeGetVolumeStatsResponse r = CSI__V1__NODE_GET_VOLUME_STATS_RESPONSE__INIT;
	Csi__V1__VolumeCondition cond = CSI__V1__VOLUME_CONDITION__INIT;
	Csi__V1__VolumeUsage u[2], *up[2] = { &u[0], &u[1] };

	usage(&u[0], CSI__V1__VOLUME_USAGE__UNIT__BYTES,
	      (long long)(sv->f_blocks * (unsigned long long)sv->f_frsize));
	usage(&u[1], CSI__V1__VOLUME_USAGE__UNIT__INODES, (long long)sv->f_files);
	cond.abnormal = abnormal;
	cond.message = (char *)why;
	r.n_usage = sv->f_blocks || sv->f_files ? 2 : 0;
	r.usage = up;
	r.volume_condition = &cond;
	csi_reply_pack(out, &r.base);
}

static void volume_stats(struct csi_plugin *p, const char *id, const char *path,
			 struct csi_reply *out)
{
	struct vlock *l = csi_volume_lock(p, id);
	struct pub *pub = l ? csi_pub_find(p, path) : NULL;
	struct statvfs sv = { 0 };
	char why[640] = "";
	bool bad = false;

	if (!l) {
		csi_reply_fail(out, -ENOMEM, "out of memory");
		return;
	}
	if (!pub || strcmp(pub->v.volume_id, id)) {
		csi_reply_fail(out, -ENOENT, "volume %s is not published at %s", id, path);
	} else {
		bad = pub->unhealthy || mounter_exited(&pub->proc);
		if (bad)
			snprintf(why, sizeof(why), "%s", pub->condition[0] ? pub->condition :
				 "the mounter of this volume has exited");
		else if (statvfs(path, &sv) < 0)
			bad = snprintf(why, sizeof(why), "statfs: %s", strerror(errno)) > 0;
		stats_reply(out, &sv, bad, why);
	}
	csi_volume_unlock(p, l);
}

void csi_node_stats(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol)
{
	Csi__V1__NodeGetVolumeStatsRequest *req =
		csi__v1__node_get_volume_stats_request__unpack(NULL, len, in);
	char msg[256];

	if (!req) {
		csi_reply_fail(out, -EBADMSG, "cannot decode NodeGetVolumeStatsRequest");
		return;
	}
	snprintf(vol, CSI_VOLUME_LOG_MAX, "%s", req->volume_id);
	if (!*req->volume_id)
		csi_reply_fail(out, -EINVAL, "volume_id is required");
	else if (volctx_check_path(req->volume_path, msg, sizeof(msg)) < 0)
		csi_reply_fail(out, -EINVAL, "volume_path: %s", msg);
	else
		volume_stats(ctx, req->volume_id, req->volume_path, out);
	csi__v1__node_get_volume_stats_request__free_unpacked(req, NULL);
}
