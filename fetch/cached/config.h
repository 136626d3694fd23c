/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lith cached's configuration: defaults, then the YAML file (--config),
 * then command-line flags. Every value is validated with a message naming
 * the setting; unknown YAML keys are errors (a typo must not pass).
 */
#ifndef LITH_CACHED_CONFIG_H
#define LITH_CACHED_CONFIG_H

#include <stdint.h>
#include <sys/types.h>

struct cached_config {
	char socket[108];
	char cache_dir[512];
	uint64_t cache_size;
	uint32_t block_size;
	uint64_t max_coalesce;       /* bytes per GET */
	uint64_t inflight_budget;    /* bytes; 0: NIC speed x 100 ms */
	unsigned max_connections;    /* S3 connections */
	unsigned index_concurrency;
	uint64_t index_max_age_s;    /* 0: never refresh by age */
	long allow_uid;              /* -1: root only */
	uint64_t probe_bytes;        /* cache device write probe; 0: skip */
	uint64_t min_device_mbps;
};

/* Parses argv (after "cached"); -EINVAL with a message in err. */
int cached_config_parse(int argc, char **argv, struct cached_config *ret, char *err,
			size_t errlen);
/* The in-flight budget from the fastest NIC that is up: speed x 100 ms
 * (default 10 Gb/s when sysfs does not say), at least 16 MiB. */
uint64_t cached_default_budget(const char *sysfs_net);

extern const char cached_usage[];

#endif
