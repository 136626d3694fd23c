// SPDX-License-Identifier: Apache-2.0
/* The metrics/health HTTP endpoint on libmicrohttpd (see httpd.h). */
#include "csi/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "csi/nodemetrics.h"
#include "fetch/base/log.h"
#include "fetch/base/parse.h"
#include "mounter/cacheclient.h"

#define EXPOSITION_MAX (16u << 20)
#define MAX_CONNECTIONS 16u
#define CONNECTION_TIMEOUT_S 30u

struct csi_httpd {
	struct MHD_Daemon *d;
	struct csi_plugin *p;
};

static int port_of(const char *s, uint16_t *ret)
{
	uint64_t v;

	if (parse_u64(s, &v) < 0 || v == 0 || v > 65535)
		return -EINVAL;
	*ret = htons((uint16_t)v);
	return 0;
}

int csi_httpd_parse_addr(const char *addr, struct sockaddr_storage *ss)
{
	const char *colon = strrchr(addr, ':');
	char host[64];
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (!colon || (hl = (size_t)(colon - addr)) >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	if (host[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		if (hl < 2 || host[hl - 1] != ']')
			return -EINVAL;
		host[hl - 1] = '\0';
		s6->sin6_family = AF_INET6;
		return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1
			       ? port_of(colon + 1, &s6->sin6_port) : -EINVAL;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	s4->sin_family = AF_INET;
	s4->sin_addr.s_addr = htonl(INADDR_ANY);
	if (hl && inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	return port_of(colon + 1, &s4->sin_port);
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, char *body,
				 size_t len, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_msg(struct MHD_Connection *c, unsigned status, const char *msg)
{
	char *body = strdup(msg);

	return body ? send_text(c, status, body, strlen(body), "text/plain; charset=utf-8")
		    : MHD_NO;
}

static enum MHD_Result metrics(struct csi_httpd *h, struct MHD_Connection *c)
{
	struct strbuf sb;
	int r;

	strbuf_init(&sb, EXPOSITION_MAX);
	r = csi_node_metrics(h->p, &sb);
	if (r < 0) {
		log_warn("metrics scrape failed", "err=\"%s\"", strerror(-r));
		strbuf_free(&sb);
		return send_msg(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the metrics\n");
	}
	size_t len = sb.len;
	return send_text(c, MHD_HTTP_OK, strbuf_steal(&sb), len,
			 "text/plain; version=0.0.4; charset=utf-8");
}

static enum MHD_Result ready(struct csi_httpd *h, struct MHD_Connection *c)
{
	struct cache_client *cl = NULL;
	bool ok = cache_client_connect(h->p->cfg.cache_socket, "lith csi readyz", &cl) == 0;

	cache_client_free(cl);
	return ok ? send_msg(c, MHD_HTTP_OK, "ok\n")
		  : send_msg(c, MHD_HTTP_SERVICE_UNAVAILABLE, "lith cached does not answer\n");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct csi_httpd *h = cls;

	(void)version;
	(void)upload;
	(void)con_cls;
	if (*upload_size) /* no request bodies: drop them */
		*upload_size = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return send_msg(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (!strcmp(url, "/metrics"))
		return metrics(h, c);
	if (!strcmp(url, "/healthz"))
		return send_msg(c, MHD_HTTP_OK, "ok\n");
	if (!strcmp(url, "/readyz"))
		return ready(h, c);
	return send_msg(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics, /healthz, /readyz\n");
}

int csi_httpd_start(const char *addr, struct csi_plugin *p, struct csi_httpd **ret, char *msg,
		    size_t msglen)
{
	struct sockaddr_storage ss;
	struct csi_httpd *h;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;

	if (csi_httpd_parse_addr(addr, &ss) < 0) {
		snprintf(msg, msglen, "--metrics-addr %s: want HOST:PORT, [V6]:PORT or :PORT", addr);
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->p = p;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, &ss,
				MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S, MHD_OPTION_END);
	if (!h->d) {
		int e = errno ? errno : EADDRINUSE;
		snprintf(msg, msglen, "cannot listen on %s: %s", addr, strerror(e));
		free(h);
		return -e;
	}
	*ret = h;
	return 0;
}

void csi_httpd_stop(struct csi_httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
