// SPDX-License-Identifier: Apache-2.0
/*
 * The Identity service: who we are (lith.csi, the project's version, the
 * commit), our capabilities (no controller service; volumes are
 * reachable per node), and readiness (the node's `lith cached` answers).
 * Call threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "csi/plugin.h"
#include "mounter/cacheclient.h"

void csi_reply_pack(struct csi_reply *out, const ProtobufCMessage *msg)
{
	size_t n = protobuf_c_message_get_packed_size(msg);

	out->buf = malloc(n ? n : 1);
	if (!out->buf) {
		csi_reply_fail(out, -ENOMEM, "out of memory");
		return;
	}
	out->len = protobuf_c_message_pack(msg, out->buf);
}

void csi_identity_info(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol)
{
	Csi__V1__GetPluginInfoResponse r = CSI__V1__GET_PLUGIN_INFO_RESPONSE__INIT;
	Csi__V1__GetPluginInfoResponse__ManifestEntry e =
		CSI__V1__GET_PLUGIN_INFO_RESPONSE__MANIFEST_ENTRY__INIT;
	Csi__V1__GetPluginInfoResponse__ManifestEntry *ep = &e;

	(void)ctx; (void)in; (void)len; (void)vol;
	r.name = CSI_PLUGIN_NAME;
	r.vendor_version = LITH_VERSION;
	e.key = "commit";
	e.value = LITH_COMMIT;
	r.n_manifest = 1;
	r.manifest = &ep;
	csi_reply_pack(out, &r.base);
}

void csi_identity_caps(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol)
{
	Csi__V1__GetPluginCapabilitiesResponse r = CSI__V1__GET_PLUGIN_CAPABILITIES_RESPONSE__INIT;
	Csi__V1__PluginCapability c = CSI__V1__PLUGIN_CAPABILITY__INIT, *cp = &c;
	Csi__V1__PluginCapability__Service svc = CSI__V1__PLUGIN_CAPABILITY__SERVICE__INIT;

	(void)ctx; (void)in; (void)len; (void)vol;
	svc.type = CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__VOLUME_ACCESSIBILITY_CONSTRAINTS;
	c.type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE;
	c.service = &svc;
	r.n_capabilities = 1;
	r.capabilities = &cp;
	csi_reply_pack(out, &r.base);
}

void csi_identity_probe(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out,
			char *vol)
{
	struct csi_plugin *p = ctx;
	Csi__V1__ProbeResponse r = CSI__V1__PROBE_RESPONSE__INIT;
	Csi__V1__BoolValue ready = CSI__V1__BOOL_VALUE__INIT;
	struct cache_client *c = NULL;

	(void)in; (void)len; (void)vol;
	ready.value = cache_client_connect(p->cfg.cache_socket, "lith csi probe", &c) == 0;
	cache_client_free(c);
	r.ready = &ready;
	csi_reply_pack(out, &r.base);
}
