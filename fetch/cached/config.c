// SPDX-License-Identifier: Apache-2.0
/* lith cached configuration (see config.h). */
#include "fetch/cached/config.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/base/parse.h"
#include "fetch/base/yamlcfg.h"

const char cached_usage[] =
	"usage: lith cached --socket PATH --cache-dir DIR --cache-size BYTES [options]\n"
	"  --config FILE.yaml      settings file (flags override it)\n"
	"  --block-size SIZE       cache block (default 1MiB, 64KiB..16MiB)\n"
	"  --max-coalesce SIZE     largest ranged GET (default 8MiB)\n"
	"  --inflight-budget SIZE  bytes in flight node-wide (default NIC speed x 100ms)\n"
	"  --max-connections N     S3 connections (default 64)\n"
	"  --index-concurrency N   LISTs in flight per index build (default 32)\n"
	"  --index-max-age SECS    rebuild older indexes (default 0: never)\n"
	"  --allow-uid UID         a non-root uid allowed to connect\n"
	"  --probe-bytes SIZE      cache device write probe at start (default 32MiB, 0: off)\n"
	"YAML keys: the same names with '_' (socket, cache_dir, cache_size, ...).\n";

struct setting {
	const char *name; /* flag name; YAML key is the same with '_' */
	char kind;        /* s: string, z: size, u: unsigned */
	size_t off;
	uint64_t min, max;
};

#define OFF(f) offsetof(struct cached_config, f)
static const struct setting settings[] = {
	{ "socket", 's', OFF(socket), 1, sizeof(((struct cached_config *)0)->socket) - 1 },
	{ "cache-dir", 's', OFF(cache_dir), 1, sizeof(((struct cached_config *)0)->cache_dir) - 1 },
	{ "cache-size", 'z', OFF(cache_size), 16ull << 20, 1ull << 50 },
	{ "block-size", 'z', OFF(block_size), 64u << 10, 16u << 20 },
	{ "max-coalesce", 'z', OFF(max_coalesce), 64u << 10, 256u << 20 },
	{ "inflight-budget", 'z', OFF(inflight_budget), 1u << 20, 1ull << 40 },
	{ "max-connections", 'u', OFF(max_connections), 1, 4096 },
	{ "index-concurrency", 'u', OFF(index_concurrency), 1, 1024 },
	{ "index-max-age", 'u', OFF(index_max_age_s), 0, 1ull << 40 },
	{ "allow-uid", 'u', OFF(allow_uid), 0, 0xfffffffe },
	{ "probe-bytes", 'z', OFF(probe_bytes), 0, 1ull << 30 },
	{ "min-device-mbps", 'u', OFF(min_device_mbps), 0, 1u << 20 },
};

static int set_value(struct cached_config *c, const struct setting *s, const char *v,
		     const char *from, char *err, size_t errlen)
{
	char *field = (char *)c + s->off;
	uint64_t n;
	int r;

	if (s->kind == 's') {
		if (strlen(v) < s->min || strlen(v) > s->max) {
			snprintf(err, errlen, "%s %s: length must be %llu..%llu", from, s->name,
				 (unsigned long long)s->min, (unsigned long long)s->max);
			return -EINVAL;
		}
		memcpy(field, v, strlen(v) + 1);
		return 0;
	}
	r = s->kind == 'z' ? parse_size(v, &n) : parse_u64(v, &n);
	if (r < 0 || n < s->min || n > s->max) {
		snprintf(err, errlen, "%s %s: '%s' is not a %s in %llu..%llu", from, s->name, v,
			 s->kind == 'z' ? "size" : "number", (unsigned long long)s->min,
			 (unsigned long long)s->max);
		return -EINVAL;
	}
	if (s->off == OFF(block_size))
		*(uint32_t *)field = (uint32_t)n;
	else if (s->off == OFF(max_connections) || s->off == OFF(index_concurrency))
		*(unsigned *)field = (unsigned)n;
	else if (s->off == OFF(allow_uid))
		*(long *)field = (long)n;
	else
		*(uint64_t *)field = n;
	return 0;
}

static const struct setting *find_setting(const char *name, bool yaml)
{
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		const char *a = settings[i].name, *b = name;
		for (; *a && *b; a++, b++)
			if (!(*a == *b || (yaml && *a == '-' && *b == '_')))
				break;
		if (!*a && !*b)
			return &settings[i];
	}
	return NULL;
}

static int load_yaml(struct cached_config *c, const char *path, char *err, size_t errlen)
{
	struct yamlcfg *y = NULL;
	const char *k, *v;
	int r = yamlcfg_load_file(path, &y, err, errlen);

	unsigned line;

	for (size_t i = 0; r == 0 && yamlcfg_at(y, i, &k, &v, &line) == 0; i++) {
		const struct setting *s = find_setting(k, true);
		if (!s) {
			snprintf(err, errlen, "%s:%u: unknown setting '%s'", path, line, k);
			r = -EINVAL;
		} else {
			r = set_value(c, s, v, path, err, errlen);
		}
	}
	yamlcfg_free(y);
	return r;
}

static void defaults(struct cached_config *c)
{
	*c = (struct cached_config){
		.cache_size = 10ull << 30, .block_size = 1u << 20, .max_coalesce = 8u << 20,
		.max_connections = 64, .index_concurrency = 32, .allow_uid = -1,
		.probe_bytes = 32u << 20, .min_device_mbps = 200,
	};
	strcpy(c->socket, "/run/lith/cached.sock");
	strcpy(c->cache_dir, "/var/cache/lith");
}

static const char *find_config_flag(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], "--config=", 9))
			return argv[i] + 9;
	}
	return NULL;
}

static int parse_flags(struct cached_config *c, int argc, char **argv, char *err, size_t errlen)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char name[64];
		const struct setting *s;

		if (strncmp(a, "--", 2) != 0) {
			snprintf(err, errlen, "unexpected argument '%s'", a);
			return -EINVAL;
		}
		snprintf(name, sizeof(name), "%s", a + 2);
		if (strchr(name, '='))
			*strchr(name, '=') = '\0', val = strchr(a, '=') + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		if (!strcmp(name, "config"))
			continue;
		if (!(s = find_setting(name, false)) || !val) {
			snprintf(err, errlen, "%s: unknown option or missing value", a);
			return -EINVAL;
		}
		if (set_value(c, s, val, "flag", err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

int cached_config_parse(int argc, char **argv, struct cached_config *ret, char *err,
			size_t errlen)
{
	struct cached_config c;
	const char *cfg = find_config_flag(argc, argv);
	int r;

	defaults(&c);
	if (cfg && (r = load_yaml(&c, cfg, err, errlen)) < 0)
		return r;
	r = parse_flags(&c, argc, argv, err, errlen);
	if (r < 0)
		return r;
	if (c.block_size & (c.block_size - 1)) {
		snprintf(err, errlen, "block-size %u: must be a power of two", c.block_size);
		return -EINVAL;
	}
	if (c.max_coalesce < c.block_size) {
		snprintf(err, errlen, "max-coalesce must be at least one block");
		return -EINVAL;
	}
	if (c.cache_dir[0] != '/' || c.socket[0] != '/') {
		snprintf(err, errlen, "cache-dir and socket must be absolute paths");
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

static long nic_speed_mbps(const char *dir, const char *name)
{
	char path[512], buf[32] = "";
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), "%s/%s/operstate", dir, name);
	if ((f = fopen(path, "re"))) {
		if (!fgets(buf, sizeof(buf), f) || strncmp(buf, "up", 2) != 0)
			buf[0] = '\0';
		fclose(f);
	}
	if (strncmp(buf, "up", 2) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s/speed", dir, name);
	if ((f = fopen(path, "re"))) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

uint64_t cached_default_budget(const char *sysfs_net)
{
	DIR *d = opendir(sysfs_net ? sysfs_net : "/sys/class/net");
	long best = -1;
	struct dirent *e;
	uint64_t budget;

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "lo"))
			continue;
		long s = nic_speed_mbps(sysfs_net ? sysfs_net : "/sys/class/net", e->d_name);
		if (s > best && s < 10000000)
			best = s;
	}
	if (d)
		closedir(d);
	if (best <= 0)
		best = 10000; /* unknown: assume 10 Gb/s */
	budget = (uint64_t)best * 1000000 / 8 / 10;
	return budget < (16u << 20) ? 16u << 20 : budget;
}
