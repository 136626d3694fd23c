/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lith csi's HTTP endpoint (libmicrohttpd, its own thread): GET /metrics
 * (the node's exposition, nodemetrics.h), /healthz (the process serves) and
 * /readyz (lith cached answers). Anything else: 404; methods other than GET
 * and HEAD: 405. Connections and their time are bounded.
 */
#ifndef LITH_CSI_HTTPD_H
#define LITH_CSI_HTTPD_H

#include "csi/plugin.h"

struct csi_httpd;

/* addr: "HOST:PORT" with an IPv4 host, "[V6]:PORT", or ":PORT" for every
 * interface. -EINVAL with msg for a bad address, -errno when it cannot
 * listen. */
int csi_httpd_start(const char *addr, struct csi_plugin *p, struct csi_httpd **ret, char *msg,
		    size_t msglen);
void csi_httpd_stop(struct csi_httpd *h);

/* Parses addr into a sockaddr (exposed for tests). */
struct sockaddr_storage;
int csi_httpd_parse_addr(const char *addr, struct sockaddr_storage *ss);

#endif
