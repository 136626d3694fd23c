/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lith.csi plugin: its configuration, the published targets it owns,
 * per-volume serialization, and the method table handed to the server
 * (Identity: identity.c; Node: node.c; publish/unpublish: publish.c;
 * mounter supervision: supervise.c; durable state: state.c).
 *
 * Ownership: the plugin owns every struct pub (its FUSE fd, its mounter
 * handle). Locking: `lock` guards the list and the volume lock table and
 * is never held across a slow operation; a volume's own mutex is held for
 * the whole of a Publish/Unpublish of that volume, so calls on different
 * volumes run concurrently.
 */
#ifndef LITH_CSI_PLUGIN_H
#define LITH_CSI_PLUGIN_H

#include <pthread.h>
#include <stdbool.h>

#include "csi/mounter.h"
#include "mounter/mstats.h"
#include "csi/server.h"
#include "csi/volctx.h"

#define CSI_PLUGIN_NAME "lith.csi"
#define CSI_TOPOLOGY_KEY "topology.lith.csi/node"

struct csi_config {
	const char *node_id;
	const char *state_dir;     /* durable state + mounter logs */
	const char *cache_socket;  /* lith cached */
};

struct pub {
	struct pub *next;
	unsigned long long gen;       /* unique per pub (the supervisor's handle) */
	struct volctx v;
	int fd;                       /* our copy of the FUSE connection; -1 once given up */
	struct mounter_proc proc;     /* pid 0 / pidfd -1 while down */
	bool created;                 /* we made the target directory */
	bool secrets_known;           /* v holds the credentials (in memory only) */
	bool unhealthy;
	unsigned restarts;            /* consecutive restarts */
	unsigned long long restarts_total;
	int stats_fd;                 /* the mounters' metrics region (memfd), -1: none */
	struct mstats *mstats;        /* its mapping, read at scrape time */
	double up_since;              /* monotonic ms the current mounter started */
	double retry_at;              /* monotonic ms of the next restart; 0: none */
	char condition[640];
};

struct vlock {
	struct vlock *next;
	char id[VOLCTX_ID_MAX + 1];
	pthread_mutex_t m;
	unsigned refs;
};

struct csi_plugin {
	struct csi_config cfg;
	pthread_mutex_t lock;
	struct pub *pubs;
	struct vlock *vlocks;
	pthread_t supervisor;
	bool supervising;
	bool stop;
	int wake_fd;                  /* eventfd: the set of mounters changed */
	unsigned long long next_gen;
};

int csi_plugin_new(const struct csi_config *cfg, struct csi_plugin **ret);
/* Leaves every mount and mounter running (a restarted lith csi adopts
 * them); closes our fds. */
void csi_plugin_free(struct csi_plugin *p);
const struct csi_method *csi_plugin_methods(size_t *n);

/* Per-volume lock (created on first use, freed on last unlock). */
struct vlock *csi_volume_lock(struct csi_plugin *p, const char *volume_id);
void csi_volume_unlock(struct csi_plugin *p, struct vlock *l);
/* Finds the publication at target (caller holds the volume lock). */
struct pub *csi_pub_find(struct csi_plugin *p, const char *target);
void csi_pub_add(struct csi_plugin *p, struct pub *pub);
void csi_pub_remove(struct csi_plugin *p, struct pub *pub);
/* Frees a pub that is in no list: metrics region, secrets, memory. NULL ok. */
void csi_pub_free(struct pub *pub);

/* Paths of a target's files in the state dir (log, INIT). */
void csi_pub_log_path(const struct csi_plugin *p, const char *target, char *buf, size_t len);
void csi_pub_init_path(const struct csi_plugin *p, const char *target, char *buf, size_t len);
/* Writes pub's durable record (caller holds the volume lock). */
int csi_pub_save(struct csi_plugin *p, const struct pub *pub);

/* supervise.c: adopts the mounters recorded in the state dir (at start),
 * then watches every mounter and restarts the ones that die. */
void csi_supervise_adopt(struct csi_plugin *p);
int csi_supervise_start(struct csi_plugin *p);
void csi_supervise_stop(struct csi_plugin *p);
/* Tells the supervisor the set of mounters changed. */
void csi_supervise_wake(struct csi_plugin *p);
double csi_now_ms(void);

/* Method handlers. */
void csi_identity_info(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol);
void csi_identity_caps(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol);
void csi_identity_probe(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol);
void csi_node_info(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol);
void csi_node_caps(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol);
void csi_node_stats(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol);
void csi_node_publish(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out, char *vol);
void csi_node_unpublish(void *ctx, const uint8_t *in, size_t len, struct csi_reply *out,
			char *vol);

/* Packs msg into out (or fails it with RESOURCE_EXHAUSTED). */
void csi_reply_pack(struct csi_reply *out, const ProtobufCMessage *msg);

#endif
