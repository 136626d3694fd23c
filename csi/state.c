// SPDX-License-Identifier: Apache-2.0
/*
 * The durable per-target records (see state.h): encoding, atomic write,
 * load. Records are small (a few KiB) and bounded (STATE_MAX on read).
 */
#include "csi/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_MAGIC "lith-csi-state 1"
#define STATE_MAX (64 * 1024)

struct sfield { const char *key; size_t off, size; };
struct bfield { const char *key; size_t off; };

#define S(k, f) { k, offsetof(struct volctx, f), sizeof(((struct volctx *)0)->f) }
static const struct sfield sfields[] = {
	S("volume_id", volume_id), S("target", target), S("bucket", bucket), S("prefix", prefix),
	S("endpoint", endpoint), S("region", region),
	S("tuning.0", tuning[0]), S("tuning.1", tuning[1]), S("tuning.2", tuning[2]),
	S("tuning.3", tuning[3]), S("tuning.4", tuning[4]),
};
#define B(k, f) { k, offsetof(struct volctx, f) }
static const struct bfield bfields[] = {
	B("path_style", path_style), B("virtual_host", virtual_host), B("no_sign", no_sign),
	B("requester_pays", requester_pays), B("exec", exec), B("noexec", noexec),
};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

void state_path(const char *dir, const char *target, const char *prefix, const char *ext,
		char *buf, size_t len)
{
	unsigned long long h = 1469598103934665603ull;

	for (const char *s = target; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	snprintf(buf, len, "%s/%s-%016llx.%s", dir, prefix, h, ext);
}

int state_dir_init(const char *dir)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	return chmod(dir, 0700) < 0 ? -errno : 0;
}

/* ---- encoding ---- */

static int encode(const struct state_rec *r, FILE *f)
{
	const struct volctx *v = &r->v;

	fprintf(f, "%s\n", STATE_MAGIC);
	for (size_t i = 0; i < NELEM(sfields); i++) {
		const char *val = (const char *)v + sfields[i].off;
		if (strpbrk(val, "\n\r"))
			return -EINVAL;
		fprintf(f, "%s\t%s\n", sfields[i].key, val);
	}
	for (size_t i = 0; i < NELEM(bfields); i++)
		fprintf(f, "%s\t%d\n", bfields[i].key, *(const bool *)((const char *)v + bfields[i].off));
	fprintf(f, "uid\t%lld\ngid\t%lld\n", v->uid, v->gid);
	for (size_t i = 0; i < v->n_labels; i++)
		fprintf(f, "label\t%s=%s\n", v->labels[i].key, v->labels[i].value);
	fprintf(f, "has_secrets\t%d\n", r->has_secrets);
	fprintf(f, "created\t%d\npid\t%d\nstart\t%llu\nfuse_fd\t%d\n", r->created, (int)r->pid,
		r->start, r->fuse_fd);
	return ferror(f) ? -EIO : 0;
}

static void decode_label(struct volctx *v, const char *val)
{
	const char *eq = strchr(val, '=');
	struct volctx_label *l;

	if (!eq || v->n_labels >= VOLCTX_LABELS_MAX)
		return;
	l = &v->labels[v->n_labels++];
	snprintf(l->key, sizeof(l->key), "%.*s", (int)(eq - val), val);
	snprintf(l->value, sizeof(l->value), "%s", eq + 1);
}

static void decode_line(struct state_rec *r, const char *key, const char *val)
{
	struct volctx *v = &r->v;

	for (size_t i = 0; i < NELEM(sfields); i++)
		if (!strcmp(key, sfields[i].key))
			snprintf((char *)v + sfields[i].off, sfields[i].size, "%s", val);
	for (size_t i = 0; i < NELEM(bfields); i++)
		if (!strcmp(key, bfields[i].key))
			*(bool *)((char *)v + bfields[i].off) = atoi(val) != 0;
	if (!strcmp(key, "uid")) v->uid = atoll(val);
	else if (!strcmp(key, "gid")) v->gid = atoll(val);
	else if (!strcmp(key, "label")) decode_label(v, val);
	else if (!strcmp(key, "created")) r->created = atoi(val) != 0;
	else if (!strcmp(key, "has_secrets")) r->has_secrets = atoi(val) != 0;
	else if (!strcmp(key, "pid")) r->pid = (pid_t)atoi(val);
	else if (!strcmp(key, "start")) r->start = strtoull(val, NULL, 10);
	else if (!strcmp(key, "fuse_fd")) r->fuse_fd = atoi(val);
}

/* buf is NUL-terminated; r must be zeroed. */
static int decode(char *buf, struct state_rec *r)
{
	char *save = NULL, *line = strtok_r(buf, "\n", &save);

	if (!line || strcmp(line, STATE_MAGIC))
		return -EINVAL;
	r->v.uid = r->v.gid = -1;
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *tab = strchr(line, '\t');
		if (tab) {
			*tab = '\0';
			decode_line(r, line, tab + 1);
		}
	}
	return r->v.volume_id[0] && r->v.target[0] == '/' && r->pid > 0 ? 0 : -EINVAL;
}

/* ---- files ---- */

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int write_tmp(const char *tmp, const struct state_rec *r)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600), e;
	FILE *f;

	if (fd < 0)
		return -errno;
	if (!(f = fdopen(fd, "w"))) {
		close(fd);
		return -ENOMEM;
	}
	e = encode(r, f);
	if (fflush(f) != 0 && !e)
		e = -errno;
	if (!e && fsync(fileno(f)) < 0)
		e = -errno;
	if (fclose(f) != 0 && !e)
		e = -EIO;
	return e;
}

int state_save(const char *dir, const struct state_rec *r)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	int e;

	state_path(dir, r->v.target, "pub", "state", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	e = write_tmp(tmp, r);
	if (!e && rename(tmp, path) < 0)
		e = -errno;
	if (e) {
		unlink(tmp);
		return e;
	}
	return fsync_dir(dir);
}

int state_remove(const char *dir, const char *target)
{
	char path[PATH_MAX];
	int e = 0;

	state_path(dir, target, "pub", "init", path, sizeof(path));
	unlink(path);
	state_path(dir, target, "pub", "state", path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		e = -errno;
	return e ? e : fsync_dir(dir);
}

static int read_file(int dfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t n = 0;
	ssize_t k;

	if (fd < 0)
		return -errno;
	while (n < len - 1 && (k = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)k;
	close(fd);
	buf[n] = '\0';
	return n < len - 1 ? 0 : -EFBIG;
}

static bool is_record(const char *name)
{
	size_t n = strlen(name);

	return !strncmp(name, "pub-", 4) && n > 10 && !strcmp(name + n - 6, ".state");
}

int state_load(const char *dir, void (*fn)(void *ctx, struct state_rec *r), void *ctx)
{
	DIR *d = opendir(dir);
	char *buf = malloc(STATE_MAX);
	struct state_rec *r = malloc(sizeof(*r));
	struct dirent *de;

	if (!d || !buf || !r) {
		int e = d ? -ENOMEM : -errno;
		if (d)
			closedir(d);
		free(buf);
		free(r);
		return e;
	}
	while ((de = readdir(d))) {
		if (!strncmp(de->d_name, "pub-", 4) && strstr(de->d_name, ".state.tmp"))
			unlinkat(dirfd(d), de->d_name, 0);
		if (!is_record(de->d_name))
			continue;
		memset(r, 0, sizeof(*r));
		if (read_file(dirfd(d), de->d_name, buf, STATE_MAX) < 0 || decode(buf, r) < 0)
			unlinkat(dirfd(d), de->d_name, 0);
		else
			fn(ctx, r);
	}
	closedir(d);
	free(buf);
	free(r);
	return 0;
}
