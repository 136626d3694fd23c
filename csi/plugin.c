// SPDX-License-Identifier: Apache-2.0
/*
 * The plugin object (see plugin.h): method table, published targets,
 * per-volume locks.
 */
#include "csi/plugin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csi/state.h"

static const struct csi_method methods[] = {
	{ "/csi.v1.Identity/GetPluginInfo", csi_identity_info },
	{ "/csi.v1.Identity/GetPluginCapabilities", csi_identity_caps },
	{ "/csi.v1.Identity/Probe", csi_identity_probe },
	{ "/csi.v1.Node/NodeGetInfo", csi_node_info },
	{ "/csi.v1.Node/NodeGetCapabilities", csi_node_caps },
	{ "/csi.v1.Node/NodeGetVolumeStats", csi_node_stats },
	{ "/csi.v1.Node/NodePublishVolume", csi_node_publish },
	{ "/csi.v1.Node/NodeUnpublishVolume", csi_node_unpublish },
};

const struct csi_method *csi_plugin_methods(size_t *n)
{
	*n = sizeof(methods) / sizeof(methods[0]);
	return methods;
}

int csi_plugin_new(const struct csi_config *cfg, struct csi_plugin **ret)
{
	struct csi_plugin *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	pthread_mutex_init(&p->lock, NULL);
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r = p->wake_fd < 0 ? -errno : state_dir_init(cfg->state_dir);
	if (r == 0) {
		csi_supervise_adopt(p);
		r = csi_supervise_start(p);
	}
	if (r < 0) {
		csi_plugin_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void csi_plugin_free(struct csi_plugin *p)
{
	if (!p)
		return;
	csi_supervise_stop(p);
	while (p->pubs) {
		struct pub *pub = p->pubs;
		p->pubs = pub->next;
		if (pub->proc.pidfd >= 0)
			close(pub->proc.pidfd);
		if (pub->proc.status_fd >= 0)
			close(pub->proc.status_fd);
		if (pub->fd >= 0)
			close(pub->fd);
		csi_pub_free(pub);
	}
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

struct vlock *csi_volume_lock(struct csi_plugin *p, const char *id)
{
	struct vlock *l;

	pthread_mutex_lock(&p->lock);
	for (l = p->vlocks; l && strcmp(l->id, id); l = l->next)
		;
	if (!l && (l = calloc(1, sizeof(*l)))) {
		snprintf(l->id, sizeof(l->id), "%s", id);
		pthread_mutex_init(&l->m, NULL);
		l->next = p->vlocks;
		p->vlocks = l;
	}
	if (l)
		l->refs++;
	pthread_mutex_unlock(&p->lock);
	if (l)
		pthread_mutex_lock(&l->m);
	return l;
}

void csi_volume_unlock(struct csi_plugin *p, struct vlock *l)
{
	struct vlock **pp;

	pthread_mutex_unlock(&l->m);
	pthread_mutex_lock(&p->lock);
	if (--l->refs == 0) {
		for (pp = &p->vlocks; *pp != l; pp = &(*pp)->next)
			;
		*pp = l->next;
		pthread_mutex_destroy(&l->m);
		free(l);
	}
	pthread_mutex_unlock(&p->lock);
}

struct pub *csi_pub_find(struct csi_plugin *p, const char *target)
{
	struct pub *pub;

	pthread_mutex_lock(&p->lock);
	for (pub = p->pubs; pub && strcmp(pub->v.target, target); pub = pub->next)
		;
	pthread_mutex_unlock(&p->lock);
	return pub;
}

void csi_pub_add(struct csi_plugin *p, struct pub *pub)
{
	pthread_mutex_lock(&p->lock);
	pub->gen = ++p->next_gen;
	pub->next = p->pubs;
	p->pubs = pub;
	pthread_mutex_unlock(&p->lock);
	csi_supervise_wake(p);
}

void csi_pub_remove(struct csi_plugin *p, struct pub *pub)
{
	struct pub **pp;

	pthread_mutex_lock(&p->lock);
	for (pp = &p->pubs; *pp && *pp != pub; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = pub->next;
	pthread_mutex_unlock(&p->lock);
	csi_supervise_wake(p);
}

void csi_pub_log_path(const struct csi_plugin *p, const char *target, char *buf, size_t len)
{
	state_path(p->cfg.state_dir, target, "mounter", "log", buf, len);
}

void csi_pub_init_path(const struct csi_plugin *p, const char *target, char *buf, size_t len)
{
	state_path(p->cfg.state_dir, target, "pub", "init", buf, len);
}

int csi_pub_save(struct csi_plugin *p, const struct pub *pub)
{
	struct state_rec *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	r->v = pub->v;
	r->created = pub->created;
	r->pid = pub->proc.pid;
	r->start = pub->proc.start;
	r->fuse_fd = MOUNTER_FUSE_FD;
	r->has_secrets = pub->v.access_key[0] || pub->v.session_token[0];
	volctx_clear_secrets(&r->v);
	e = state_save(p->cfg.state_dir, r);
	free(r);
	return e;
}

void csi_pub_free(struct pub *pub)
{
	if (!pub)
		return;
	mstats_unmap(pub->mstats);
	if (pub->stats_fd >= 0)
		close(pub->stats_fd);
	volctx_clear_secrets(&pub->v);
	free(pub);
}
