// SPDX-License-Identifier: Apache-2.0
/*
 * proto/csi.proto against the CSI wire vectors (a copy of
 * ../shared/csi-wire-vectors in tests/unit/csi/vectors, CSI_VECTORS): every
 * request decodes to the values of its .json; every response built from
 * its .json values packs to exactly the .bin bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "proto/csi.pb-c.h"

static uint8_t *load(const char *name, size_t *len)
{
	const char *dir = getenv("CSI_VECTORS") ? getenv("CSI_VECTORS") : CSI_VECTORS;
	char path[1024];
	uint8_t *buf = malloc(1 << 16);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "rb");
	CHECK(f != NULL);
	*len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

static void same_bytes(const char *name, const ProtobufCMessage *m)
{
	size_t len, n = protobuf_c_message_get_packed_size(m);
	uint8_t *want = load(name, &len), *got = malloc(n + 1);

	CHECK_INT(protobuf_c_message_pack(m, got), len);
	CHECK(memcmp(got, want, len) == 0);
	free(got);
	free(want);
}

static const char *map_get(void **entries, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		Csi__V1__Topology__SegmentsEntry *e = entries[i]; /* every map entry: key, value */
		if (!strcmp(e->key, key))
			return e->value;
	}
	return NULL;
}

static void test_publish_request(void)
{
	size_t len;
	uint8_t *b = load("NodePublishVolumeRequest", &len);
	Csi__V1__NodePublishVolumeRequest *r = csi__v1__node_publish_volume_request__unpack(NULL, len, b);

	CHECK(r != NULL);
	CHECK_STR(r->volume_id, "s3-dataset-1kg");
	CHECK_STR(r->target_path, "/var/lib/kubelet/pods/0b5c2a1e-1111-2222-3333-444455556666/volumes/kubernetes.io~csi/pv-1kg/mount");
	CHECK_INT(r->n_publish_context, 1);
	CHECK_STR(map_get((void **)r->publish_context, 1, "k"), "v");
	CHECK(r->volume_capability->access_type_case == CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT);
	CHECK_STR(r->volume_capability->mount->fs_type, "fuse");
	CHECK_INT(r->volume_capability->mount->n_mount_flags, 2);
	CHECK_STR(r->volume_capability->mount->mount_flags[0], "allow_other");
	CHECK_STR(r->volume_capability->mount->mount_flags[1], "ro");
	CHECK_STR(r->volume_capability->mount->volume_mount_group, "2000");
	CHECK_INT(r->volume_capability->access_mode->mode,
		  CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY);
	CHECK(r->readonly);
	CHECK_INT(r->n_secrets, 2);
	CHECK_STR(map_get((void **)r->secrets, 2, "accessKeyID"), "AKIDEXAMPLE");
	CHECK_STR(map_get((void **)r->secrets, 2, "secretAccessKey"), "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
	CHECK_INT(r->n_volume_context, 8);
	CHECK_STR(map_get((void **)r->volume_context, 8, "bucket"), "1000genomes");
	CHECK_STR(map_get((void **)r->volume_context, 8, "prefix"), "changelog_details/");
	CHECK_STR(map_get((void **)r->volume_context, 8, "endpoint"), "http://127.0.0.1:9000");
	CHECK_STR(map_get((void **)r->volume_context, 8, "csi.storage.k8s.io/pod.name"), "job-7x2");
	CHECK_STR(map_get((void **)r->volume_context, 8, "csi.storage.k8s.io/pod.namespace"), "genomics");
	CHECK_STR(map_get((void **)r->volume_context, 8, "csi.storage.k8s.io/pod.uid"), "0b5c2a1e-1111-2222-3333-444455556666");
	CHECK_STR(map_get((void **)r->volume_context, 8, "csi.storage.k8s.io/serviceAccount.name"), "default");
	CHECK_STR(map_get((void **)r->volume_context, 8, "csi.storage.k8s.io/ephemeral"), "false");
	csi__v1__node_publish_volume_request__free_unpacked(r, NULL);
	free(b);
}

static void test_stage_request(void)
{
	size_t len;
	uint8_t *b = load("NodeStageVolumeRequest", &len);
	Csi__V1__NodeStageVolumeRequest *r = csi__v1__node_stage_volume_request__unpack(NULL, len, b);

	CHECK(r != NULL);
	CHECK_STR(r->volume_id, "v");
	CHECK_STR(map_get((void **)r->publish_context, r->n_publish_context, "device"), "/dev/mock");
	CHECK_STR(r->staging_target_path, "/var/lib/kubelet/plugins/kubernetes.io/csi/lith.csi/abc/globalmount");
	CHECK_STR(r->volume_capability->mount->volume_mount_group, "2000");
	CHECK_INT(r->volume_capability->mount->n_mount_flags, 2);
	CHECK_INT(r->volume_capability->access_mode->mode, 3);
	CHECK_STR(map_get((void **)r->secrets, r->n_secrets, "a"), "b");
	CHECK_STR(map_get((void **)r->volume_context, r->n_volume_context, "bucket"), "b");
	csi__v1__node_stage_volume_request__free_unpacked(r, NULL);
	free(b);
}

static void test_small_requests(void)
{
	size_t len;
	uint8_t *b = load("NodeUnpublishVolumeRequest", &len);
	Csi__V1__NodeUnpublishVolumeRequest *u = csi__v1__node_unpublish_volume_request__unpack(NULL, len, b);
	Csi__V1__NodeGetVolumeStatsRequest *s;

	CHECK(u != NULL);
	CHECK_STR(u->volume_id, "s3-dataset-1kg");
	CHECK_STR(u->target_path, "/var/lib/kubelet/pods/0b5c2a1e-1111-2222-3333-444455556666/volumes/kubernetes.io~csi/pv-1kg/mount");
	csi__v1__node_unpublish_volume_request__free_unpacked(u, NULL);
	free(b);
	b = load("NodeGetVolumeStatsRequest", &len);
	s = csi__v1__node_get_volume_stats_request__unpack(NULL, len, b);
	CHECK(s != NULL);
	CHECK_STR(s->volume_id, "s3-dataset-1kg");
	CHECK_STR(s->volume_path, "/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/pv-1kg/mount");
	CHECK_STR(s->staging_target_path, "");
	csi__v1__node_get_volume_stats_request__free_unpacked(s, NULL);
	free(b);
}

static void test_identity_responses(void)
{
	Csi__V1__GetPluginInfoResponse info = CSI__V1__GET_PLUGIN_INFO_RESPONSE__INIT;
	Csi__V1__GetPluginInfoResponse__ManifestEntry e = CSI__V1__GET_PLUGIN_INFO_RESPONSE__MANIFEST_ENTRY__INIT, *ep = &e;
	Csi__V1__GetPluginCapabilitiesResponse caps = CSI__V1__GET_PLUGIN_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__PluginCapability c = CSI__V1__PLUGIN_CAPABILITY__INIT, *cp = &c;
	Csi__V1__PluginCapability__Service svc = CSI__V1__PLUGIN_CAPABILITY__SERVICE__INIT;
	Csi__V1__ProbeResponse probe = CSI__V1__PROBE_RESPONSE__INIT;
	Csi__V1__BoolValue yes = CSI__V1__BOOL_VALUE__INIT;

	info.name = "lith.csi";
	info.vendor_version = "0.1.0";
	e.key = "commit";
	e.value = "abc123";
	info.n_manifest = 1;
	info.manifest = &ep;
	same_bytes("GetPluginInfoResponse", &info.base);
	svc.type = CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__VOLUME_ACCESSIBILITY_CONSTRAINTS;
	c.type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE;
	c.service = &svc;
	caps.n_capabilities = 1;
	caps.capabilities = &cp;
	same_bytes("GetPluginCapabilitiesResponse", &caps.base);
	yes.value = 1;
	probe.ready = &yes;
	same_bytes("ProbeResponse", &probe.base);
}

static void test_node_responses(void)
{
	Csi__V1__NodeGetInfoResponse info = CSI__V1__NODE_GET_INFO_RESPONSE__INIT;
	Csi__V1__Topology topo = CSI__V1__TOPOLOGY__INIT;
	Csi__V1__Topology__SegmentsEntry seg = CSI__V1__TOPOLOGY__SEGMENTS_ENTRY__INIT, *sp = &seg;
	Csi__V1__NodeGetCapabilitiesResponse caps = CSI__V1__NODE_GET_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__NodeServiceCapability nc[3], *ncp[3];
	Csi__V1__NodeServiceCapability__RPC rpc[3];
	Csi__V1__NodeGetVolumeStatsResponse st = CSI__V1__NODE_GET_VOLUME_STATS_RESPONSE__INIT;
	Csi__V1__VolumeUsage u[2], *up[2] = { &u[0], &u[1] };
	Csi__V1__VolumeCondition cond = CSI__V1__VOLUME_CONDITION__INIT;
	const int types[3] = { 2, 4, 6 };

	info.node_id = "ip-10-0-1-17.ec2.internal";
	seg.key = "topology.lith.csi/node";
	seg.value = "ip-10-0-1-17.ec2.internal";
	topo.n_segments = 1;
	topo.segments = &sp;
	info.accessible_topology = &topo;
	same_bytes("NodeGetInfoResponse", &info.base);
	for (int i = 0; i < 3; i++) {
		csi__v1__node_service_capability__init(&nc[i]);
		csi__v1__node_service_capability__rpc__init(&rpc[i]);
		rpc[i].type = types[i];
		nc[i].type_case = CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC;
		nc[i].rpc = &rpc[i];
		ncp[i] = &nc[i];
	}
	caps.n_capabilities = 3;
	caps.capabilities = ncp;
	same_bytes("NodeGetCapabilitiesResponse", &caps.base);
	for (int i = 0; i < 2; i++)
		csi__v1__volume_usage__init(&u[i]);
	u[0].total = u[0].used = 1206000000000LL;
	u[0].unit = CSI__V1__VOLUME_USAGE__UNIT__BYTES;
	u[1].total = u[1].used = 48211;
	u[1].unit = CSI__V1__VOLUME_USAGE__UNIT__INODES;
	cond.abnormal = 1;
	cond.message = "mounter for volume s3-dataset-1kg exited; restarting";
	st.n_usage = 2;
	st.usage = up;
	st.volume_condition = &cond;
	same_bytes("NodeGetVolumeStatsResponse", &st.base);
}

int main(void)
{
	test_publish_request();
	test_stage_request();
	test_small_requests();
	test_identity_responses();
	test_node_responses();
	return check_done();
}
