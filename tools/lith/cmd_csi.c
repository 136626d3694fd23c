// SPDX-License-Identifier: Apache-2.0
/*
 * `lith csi --endpoint unix:///csi/csi.sock --node-id NAME [--state-dir DIR]
 * [--cache-socket PATH]`: the CSI node plugin (csi/). Serves until SIGTERM
 * or SIGINT; mounts and their mounters outlive it. This is the top of the
 * daemon: it logs.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "csi/httpd.h"
#include "csi/plugin.h"
#include "csi/server.h"
#include "fetch/base/log.h"
#include "mounter/lmount.h"
#include "tools/lith/cmd.h"

static const char usage[] =
	"usage: lith csi --endpoint unix:///PATH --node-id NAME [--state-dir DIR]\n"
	"                [--cache-socket PATH] [--metrics-addr HOST:PORT]\n"
	"The CSI node plugin (driver lith.csi): Identity and Node services.\n"
	"  --endpoint URL       gRPC endpoint, unix:///path/csi.sock\n"
	"  --node-id NAME       this node's id (usually the Kubernetes node name)\n"
	"  --state-dir DIR      durable state and mounter logs (default /var/lib/lith/csi)\n"
	"  --cache-socket PATH  the node's lith cached (default " LMOUNT_DEFAULT_SOCKET ")\n"
	"  --metrics-addr ADDR  serve /metrics (the whole node: csi, cached, every\n"
	"                       mount), /healthz and /readyz over HTTP on ADDR\n"
	"                       (HOST:PORT, [V6]:PORT or :PORT; default: off)\n";

static void *signal_main(void *arg)
{
	sigset_t set;
	int sig = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigwait(&set, &sig);
	log_info("stopping", "signal=%d", sig);
	csi_server_stop(arg);
	return NULL;
}

static int serve(const char *endpoint, const char *metrics_addr, struct csi_config *cfg)
{
	struct csi_plugin *p = NULL;
	struct csi_server *s = NULL;
	struct csi_httpd *h = NULL;
	char msg[256];
	const struct csi_method *m;
	pthread_t sig;
	size_t n;
	int r = csi_plugin_new(cfg, &p);

	m = csi_plugin_methods(&n);
	if (r == 0 && (r = csi_server_new(endpoint, m, n, p, &s)) < 0)
		log_error("cannot listen", "endpoint=\"%s\" err=\"%s\"", endpoint, strerror(-r));
	else if (r < 0)
		log_error("cannot start", "state_dir=\"%s\" err=\"%s\"", cfg->state_dir, strerror(-r));
	if (r == 0 && metrics_addr && (r = csi_httpd_start(metrics_addr, p, &h, msg, sizeof(msg))) < 0)
		log_error("cannot serve metrics", "err=\"%s\"", msg);
	if (r == 0 && (r = -pthread_create(&sig, NULL, signal_main, s)) == 0) {
		log_info("serving", "endpoint=\"%s\" node_id=\"%s\" state_dir=\"%s\" cache_socket=\"%s\" "
			 "metrics_addr=\"%s\" version=%s commit=%s", endpoint, cfg->node_id,
			 cfg->state_dir, cfg->cache_socket, metrics_addr ? metrics_addr : "",
			 LITH_VERSION, LITH_COMMIT);
		r = csi_server_run(s);
		pthread_kill(sig, SIGTERM);
		pthread_join(sig, NULL);
	}
	csi_httpd_stop(h);
	csi_server_free(s);
	csi_plugin_free(p);
	return r < 0 ? 1 : 0;
}

int cmd_csi(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "endpoint", required_argument, NULL, 'e' },
		{ "node-id", required_argument, NULL, 'n' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "cache-socket", required_argument, NULL, 'c' },
		{ "metrics-addr", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct csi_config cfg = { .state_dir = "/var/lib/lith/csi",
				  .cache_socket = LMOUNT_DEFAULT_SOCKET };
	const char *endpoint = NULL, *metrics_addr = NULL;
	sigset_t set;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'e': endpoint = optarg; break;
		case 'n': cfg.node_id = optarg; break;
		case 's': cfg.state_dir = optarg; break;
		case 'c': cfg.cache_socket = optarg; break;
		case 'm': metrics_addr = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (!endpoint || !cfg.node_id || optind != argc || strncmp(endpoint, "unix://", 7)) {
		fputs(usage, stderr);
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	return serve(endpoint, metrics_addr, &cfg);
}
