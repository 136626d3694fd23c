/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounded reader for flat-ish YAML config files (libyaml): mappings of
 * scalars, nested mappings addressed with dots ("s3.max_connections"),
 * producing a key → string table, plus typed getters and a check for
 * unknown keys so that a typo is an error rather than a silently ignored
 * setting.
 *
 * Input is hostile: file <= YAMLCFG_MAX_FILE bytes, <= YAMLCFG_MAX_KEYS
 * keys, dotted key <= YAMLCFG_MAX_KEY_LEN, value <= YAMLCFG_MAX_VALUE_LEN,
 * nesting <= YAMLCFG_MAX_DEPTH mappings. Rejected with a message naming
 * line:column: aliases and anchors (no billion laughs), tags, sequences,
 * non-scalar keys, duplicate keys, key segments outside [A-Za-z0-9_-],
 * NUL bytes in values, a top level that is not a mapping, more than one
 * document. Every error message is "NAME:LINE:COL: what" (1-based).
 *
 * Ownership: the table owns every string it returns; they live until
 * yamlcfg_free. Threads: a loaded table is immutable and may be read from
 * any thread; loading uses no global state.
 */
#ifndef LITH_BASE_YAMLCFG_H
#define LITH_BASE_YAMLCFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define YAMLCFG_MAX_FILE (1u << 20)
#define YAMLCFG_MAX_KEYS 1024u
#define YAMLCFG_MAX_KEY_LEN 128u
#define YAMLCFG_MAX_VALUE_LEN 4096u
#define YAMLCFG_MAX_DEPTH 4u

struct yamlcfg;

/*
 * err/errlen (may be NULL/0) receive a one-line message on failure.
 * -EINVAL bad YAML or a rejected construct, -EFBIG file too large,
 * -E2BIG too many keys, -ENAMETOOLONG key too long, -EMSGSIZE value too long,
 * -ENOMEM, or the -errno of open/read. A non-regular file is -EINVAL.
 */
int yamlcfg_load_file(const char *path, struct yamlcfg **ret, char *err, size_t errlen);
/* name is used in messages (e.g. "<flags>"); may be NULL. */
int yamlcfg_load_buf(const char *buf, size_t len, const char *name, struct yamlcfg **ret,
		     char *err, size_t errlen);
void yamlcfg_free(struct yamlcfg *cfg);

/* Entries in file order. yamlcfg_at: -ENOENT past the end; outputs may be NULL. */
size_t yamlcfg_count(const struct yamlcfg *cfg);
int yamlcfg_at(const struct yamlcfg *cfg, size_t i, const char **ret_key, const char **ret_value,
	       unsigned *ret_line);
/* Raw value, or NULL when the key is absent. */
const char *yamlcfg_get(const struct yamlcfg *cfg, const char *key);

/*
 * Typed getters. -ENOENT when the key is absent (output and err untouched:
 * keep your default). A bad value gives -EINVAL or -ERANGE and a message
 * naming the file position, the key and the value, e.g.
 *   lith.yaml:4:20: s3.max_connections: "64x" is not an unsigned integer
 * The u64/size getters also enforce [min, max] (-ERANGE).
 */
int yamlcfg_get_string(const struct yamlcfg *cfg, const char *key, const char **ret,
		       char *err, size_t errlen);
int yamlcfg_get_u64(const struct yamlcfg *cfg, const char *key, uint64_t min, uint64_t max,
		    uint64_t *ret, char *err, size_t errlen);
int yamlcfg_get_size(const struct yamlcfg *cfg, const char *key, uint64_t min, uint64_t max,
		     uint64_t *ret, char *err, size_t errlen);
int yamlcfg_get_bool(const struct yamlcfg *cfg, const char *key, bool *ret, char *err,
		     size_t errlen);

/*
 * Counts the keys not in known[0..n_known) (an entry "prefix.*" accepts any
 * key below prefix). When the count is > 0, err lists them with positions
 * and a "did you mean" for near misses (truncated to errlen).
 */
size_t yamlcfg_unknown(const struct yamlcfg *cfg, const char *const *known, size_t n_known,
		       char *err, size_t errlen);

#endif
