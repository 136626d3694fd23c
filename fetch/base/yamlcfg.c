// SPDX-License-Identifier: Apache-2.0
/*
 * YAML config table (see yamlcfg.h). Uses libyaml's event API, which keeps
 * its own state on the heap (no recursion), and stops at the first event we
 * reject, so hostile nesting or alias bombs cost at most one event. The
 * dotted path of the key being read lives in one fixed buffer; base[d] is
 * where the key of mapping level d starts in it.
 * Threads: loading touches only its own state.
 */
#include "fetch/base/fdio.h"
#include "fetch/base/yamlcfg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "fetch/base/macro.h"
#include "fetch/base/parse.h"

struct entry {
	char *key;
	char *value;
	unsigned line, col;   /* of the value (1-based) */
	unsigned kline, kcol; /* of the key */
};

struct yamlcfg {
	char *name;
	struct entry *e;
	size_t n, cap;
};

struct pstate {
	yaml_parser_t parser;
	struct yamlcfg *cfg;
	char path[YAMLCFG_MAX_KEY_LEN + 1];
	size_t path_len;
	size_t base[YAMLCFG_MAX_DEPTH + 1];
	bool want_key[YAMLCFG_MAX_DEPTH + 1];
	yaml_mark_t key_mark; /* of the last key read */
	unsigned depth;
	unsigned docs;
	bool done;
	char *err;
	size_t errlen;
};

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Reports "name:line:col: msg" at a libyaml mark (0-based) and returns r. */
static int fail_at(struct pstate *s, yaml_mark_t m, int r, const char *msg, const char *arg)
{
	seterr(s->err, s->errlen, "%s:%zu:%zu: %s%s%s%s", s->cfg->name, m.line + 1, m.column + 1,
	       msg, arg ? " \"" : "", arg ? arg : "", arg ? "\"" : "");
	return r;
}

/* ---- the table ------------------------------------------------------------- */

void yamlcfg_free(struct yamlcfg *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n; i++) {
		free(cfg->e[i].key);
		free(cfg->e[i].value);
	}
	free(cfg->e);
	free(cfg->name);
	free(cfg);
}

static struct entry *find(const struct yamlcfg *cfg, const char *key)
{
	for (size_t i = 0; cfg && key && i < cfg->n; i++)
		if (strcmp(cfg->e[i].key, key) == 0)
			return &cfg->e[i];
	return NULL;
}

static int table_add(struct yamlcfg *cfg, const char *key, const char *value, size_t vlen,
		     yaml_mark_t km, yaml_mark_t vm)
{
	struct entry *e;

	if (cfg->n == cfg->cap) {
		size_t ncap = cfg->cap ? cfg->cap * 2 : 16;
		e = realloc(cfg->e, ncap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		cfg->e = e;
		cfg->cap = ncap;
	}
	e = &cfg->e[cfg->n];
	e->key = strdup(key);
	e->value = strndup(value, vlen);
	if (!e->key || !e->value) {
		free(e->key);
		free(e->value);
		return -ENOMEM;
	}
	e->line = (unsigned)vm.line + 1;
	e->col = (unsigned)vm.column + 1;
	e->kline = (unsigned)km.line + 1;
	e->kcol = (unsigned)km.column + 1;
	cfg->n++;
	return 0;
}

size_t yamlcfg_count(const struct yamlcfg *cfg)
{
	return cfg ? cfg->n : 0;
}

int yamlcfg_at(const struct yamlcfg *cfg, size_t i, const char **ret_key, const char **ret_value,
	       unsigned *ret_line)
{
	if (!cfg || i >= cfg->n)
		return -ENOENT;
	if (ret_key)
		*ret_key = cfg->e[i].key;
	if (ret_value)
		*ret_value = cfg->e[i].value;
	if (ret_line)
		*ret_line = cfg->e[i].kline;
	return 0;
}

const char *yamlcfg_get(const struct yamlcfg *cfg, const char *key)
{
	struct entry *e = find(cfg, key);
	return e ? e->value : NULL;
}

/* ---- events ------------------------------------------------------------------- */

static bool key_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static int on_key(struct pstate *s, const yaml_event_t *ev)
{
	const char *k = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length, at = s->base[s->depth];

	if (n == 0)
		return fail_at(s, ev->start_mark, -EINVAL, "empty key", NULL);
	for (size_t i = 0; i < n; i++)
		if (!key_char_ok((unsigned char)k[i]))
			return fail_at(s, ev->start_mark, -EINVAL,
				       "key may only contain [A-Za-z0-9_-]:", k);
	if (at + n > YAMLCFG_MAX_KEY_LEN)
		return fail_at(s, ev->start_mark, -ENAMETOOLONG, "key too long", NULL);
	memcpy(s->path + at, k, n);
	s->path_len = at + n;
	s->path[s->path_len] = '\0';
	s->want_key[s->depth] = false;
	s->key_mark = ev->start_mark;
	return 0;
}

/* "a: 1" and "a: {b: 2}" in one file: "a" would be a value and a mapping. */
static bool prefix_clash(const struct yamlcfg *cfg, const char *key)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i < cfg->n; i++) {
		const char *e = cfg->e[i].key;
		size_t el = strlen(e);
		if (el < kl && key[el] == '.' && strncmp(e, key, el) == 0)
			return true;
		if (kl < el && e[kl] == '.' && strncmp(e, key, kl) == 0)
			return true;
	}
	return false;
}

static int on_value(struct pstate *s, const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;

	if (n > YAMLCFG_MAX_VALUE_LEN)
		return fail_at(s, ev->start_mark, -EMSGSIZE, "value too long for key", s->path);
	if (memchr(v, '\0', n))
		return fail_at(s, ev->start_mark, -EINVAL, "NUL byte in value of key", s->path);
	if (find(s->cfg, s->path))
		return fail_at(s, ev->start_mark, -EINVAL, "duplicate key", s->path);
	if (prefix_clash(s->cfg, s->path))
		return fail_at(s, ev->start_mark, -EINVAL, "key is both a value and a mapping:",
			       s->path);
	if (s->cfg->n >= YAMLCFG_MAX_KEYS)
		return fail_at(s, ev->start_mark, -E2BIG, "too many keys (max 1024) at", s->path);
	if (table_add(s->cfg, s->path, v, n, s->key_mark, ev->start_mark) < 0)
		return fail_at(s, ev->start_mark, -ENOMEM, "out of memory", NULL);
	s->want_key[s->depth] = true;
	return 0;
}

static int on_scalar(struct pstate *s, const yaml_event_t *ev)
{
	if (ev->data.scalar.anchor)
		return fail_at(s, ev->start_mark, -EINVAL, "anchors are not supported", NULL);
	if (ev->data.scalar.tag)
		return fail_at(s, ev->start_mark, -EINVAL, "tags are not supported", NULL);
	if (s->depth == 0) {
		/* A document that is empty or "~" is an empty config. */
		if (ev->data.scalar.plain_implicit && ev->data.scalar.length == 0)
			return 0;
		return fail_at(s, ev->start_mark, -EINVAL, "top level must be a mapping", NULL);
	}
	return s->want_key[s->depth] ? on_key(s, ev) : on_value(s, ev);
}

static int on_mapping_start(struct pstate *s, const yaml_event_t *ev)
{
	if (ev->data.mapping_start.anchor)
		return fail_at(s, ev->start_mark, -EINVAL, "anchors are not supported", NULL);
	if (ev->data.mapping_start.tag)
		return fail_at(s, ev->start_mark, -EINVAL, "tags are not supported", NULL);
	if (s->depth > 0 && s->want_key[s->depth])
		return fail_at(s, ev->start_mark, -EINVAL, "keys must be scalars", NULL);
	if (s->depth >= YAMLCFG_MAX_DEPTH)
		return fail_at(s, ev->start_mark, -EINVAL, "nesting deeper than 4 under", s->path);
	if (s->depth > 0) {
		if (s->path_len + 1 >= YAMLCFG_MAX_KEY_LEN)
			return fail_at(s, ev->start_mark, -ENAMETOOLONG, "key too long", NULL);
		s->path[s->path_len++] = '.';
	}
	s->depth++;
	s->base[s->depth] = s->path_len;
	s->want_key[s->depth] = true;
	return 0;
}

static int on_mapping_end(struct pstate *s)
{
	s->depth--;
	if (s->depth > 0)
		s->want_key[s->depth] = true;
	return 0;
}

static int on_document_start(struct pstate *s, const yaml_event_t *ev)
{
	if (++s->docs > 1)
		return fail_at(s, ev->start_mark, -EINVAL, "more than one document", NULL);
	if (ev->data.document_start.tag_directives.start !=
	    ev->data.document_start.tag_directives.end)
		return fail_at(s, ev->start_mark, -EINVAL, "%TAG directives are not supported", NULL);
	return 0;
}

static int on_event(struct pstate *s, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		s->done = true;
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		return on_document_start(s, ev);
	case YAML_MAPPING_START_EVENT:
		return on_mapping_start(s, ev);
	case YAML_MAPPING_END_EVENT:
		return on_mapping_end(s);
	case YAML_SCALAR_EVENT:
		return on_scalar(s, ev);
	case YAML_ALIAS_EVENT:
		return fail_at(s, ev->start_mark, -EINVAL, "aliases are not supported", NULL);
	case YAML_SEQUENCE_START_EVENT:
		if (ev->data.sequence_start.anchor)
			return fail_at(s, ev->start_mark, -EINVAL, "anchors are not supported", NULL);
		return fail_at(s, ev->start_mark, -EINVAL,
			       "sequences are not supported (use a comma-separated string) at",
			       s->depth ? s->path : NULL);
	default: /* stream start, document end, sequence end (unreachable) */
		return 0;
	}
}

static int parser_error(struct pstate *s)
{
	yaml_parser_t *p = &s->parser;

	if (p->error == YAML_MEMORY_ERROR)
		return fail_at(s, p->problem_mark, -ENOMEM, "out of memory", NULL);
	seterr(s->err, s->errlen, "%s:%zu:%zu: %s%s%s", s->cfg->name, p->problem_mark.line + 1,
	       p->problem_mark.column + 1, p->problem ? p->problem : "syntax error",
	       p->context ? " " : "", p->context ? p->context : "");
	return -EINVAL;
}

static int parse_all(struct pstate *s)
{
	yaml_event_t ev;
	int r = 0;

	while (r == 0 && !s->done) {
		if (!yaml_parser_parse(&s->parser, &ev))
			return parser_error(s);
		r = on_event(s, &ev);
		yaml_event_delete(&ev);
	}
	return r;
}

int yamlcfg_load_buf(const char *buf, size_t len, const char *name, struct yamlcfg **ret,
		     char *err, size_t errlen)
{
	struct pstate *s;
	int r;

	name = name ? name : "<config>";
	if (!buf) /* libyaml asserts on a NULL input */
		buf = "";
	if (len > YAMLCFG_MAX_FILE) {
		seterr(err, errlen, "%s: larger than %u bytes", name, YAMLCFG_MAX_FILE);
		return -EFBIG;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->err = err;
	s->errlen = errlen;
	s->cfg = calloc(1, sizeof(*s->cfg));
	if (!s->cfg || !(s->cfg->name = strdup(name)) || !yaml_parser_initialize(&s->parser)) {
		yamlcfg_free(s->cfg);
		free(s);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&s->parser, (const unsigned char *)buf, len);
	r = parse_all(s);
	yaml_parser_delete(&s->parser);
	if (r < 0)
		yamlcfg_free(s->cfg);
	else
		*ret = s->cfg;
	free(s);
	return r;
}

/* ---- files ---------------------------------------------------------------------- */

/* Reads at most YAMLCFG_MAX_FILE bytes; one more means "too large". */
static int read_bounded(int fd, char *buf, size_t *ret_len)
{
	ssize_t have = fdio_read_full(fd, buf, YAMLCFG_MAX_FILE + 1);

	if (have < 0)
		return (int)have;
	if ((size_t)have > YAMLCFG_MAX_FILE)
		return -EFBIG;
	*ret_len = (size_t)have;
	return 0;
}

int yamlcfg_load_file(const char *path, struct yamlcfg **ret, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		seterr(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	if (st.st_size > (off_t)YAMLCFG_MAX_FILE) {
		seterr(err, errlen, "%s: larger than %u bytes", path, YAMLCFG_MAX_FILE);
		return -EFBIG;
	}
	buf = malloc(YAMLCFG_MAX_FILE + 1);
	if (!buf)
		return -ENOMEM;
	r = read_bounded(fd, buf, &len);
	if (r < 0) {
		seterr(err, errlen, "%s: %s", path,
		       r == -EFBIG ? "file grew past the size limit" : strerror(-r));
		return r;
	}
	return yamlcfg_load_buf(buf, len, path, ret, err, errlen);
}

/* ---- typed getters ------------------------------------------------------------- */

static int bad_value(const struct yamlcfg *cfg, const struct entry *e, int r, const char *what,
		     char *err, size_t errlen)
{
	seterr(err, errlen, "%s:%u:%u: %s: \"%.64s\"%s %s %s", cfg->name, e->line, e->col, e->key,
	       e->value, strlen(e->value) > 64 ? "..." : "",
	       r == -ERANGE ? "is out of range for" : "is not", what);
	return r;
}

int yamlcfg_get_string(const struct yamlcfg *cfg, const char *key, const char **ret,
		       char *err, size_t errlen)
{
	struct entry *e = find(cfg, key);

	(void)err;
	(void)errlen;
	if (!e)
		return -ENOENT;
	*ret = e->value;
	return 0;
}

static int check_range(const struct yamlcfg *cfg, const struct entry *e, uint64_t v,
		       uint64_t min, uint64_t max, char *err, size_t errlen)
{
	if (v >= min && v <= max)
		return 0;
	seterr(err, errlen, "%s:%u:%u: %s: %s is outside [%llu, %llu]", cfg->name, e->line, e->col,
	       e->key, e->value, (unsigned long long)min, (unsigned long long)max);
	return -ERANGE;
}

/* The typed number getters: parse with `parse`, then range-check. */
static int get_number(const struct yamlcfg *cfg, const char *key,
		      int (*parse)(const char *, uint64_t *), const char *what, uint64_t min,
		      uint64_t max, uint64_t *ret, char *err, size_t errlen)
{
	struct entry *e = find(cfg, key);
	uint64_t v;
	int r;

	if (!e)
		return -ENOENT;
	r = parse(e->value, &v);
	if (r < 0)
		return bad_value(cfg, e, r, what, err, errlen);
	r = check_range(cfg, e, v, min, max, err, errlen);
	if (r < 0)
		return r;
	*ret = v;
	return 0;
}

int yamlcfg_get_u64(const struct yamlcfg *cfg, const char *key, uint64_t min, uint64_t max,
		    uint64_t *ret, char *err, size_t errlen)
{
	return get_number(cfg, key, parse_u64, "an unsigned integer", min, max, ret, err, errlen);
}

int yamlcfg_get_size(const struct yamlcfg *cfg, const char *key, uint64_t min, uint64_t max,
		     uint64_t *ret, char *err, size_t errlen)
{
	return get_number(cfg, key, parse_size, "a size (e.g. 4096, 64K, 8MiB, 10G)", min, max,
			  ret, err, errlen);
}

int yamlcfg_get_bool(const struct yamlcfg *cfg, const char *key, bool *ret, char *err,
		     size_t errlen)
{
	struct entry *e = find(cfg, key);
	bool v;
	int r;

	if (!e)
		return -ENOENT;
	r = parse_bool(e->value, &v);
	if (r < 0)
		return bad_value(cfg, e, r, "a boolean (true/false, yes/no, on/off, 1/0)", err,
				 errlen);
	*ret = v;
	return 0;
}

/* ---- unknown keys ------------------------------------------------------------------ */

/* Edit distance, both strings <= YAMLCFG_MAX_KEY_LEN (longer: "far"). */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[YAMLCFG_MAX_KEY_LEN + 1];

	if (la > YAMLCFG_MAX_KEY_LEN || lb > YAMLCFG_MAX_KEY_LEN)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t sub = diag + (a[i - 1] != b[j - 1]);
			row[j] = MIN(MIN(row[j - 1] + 1, up + 1), sub);
			diag = up;
		}
	}
	return row[lb];
}

static bool known_match(const char *pattern, const char *key)
{
	size_t n = strlen(pattern);

	if (n >= 2 && strcmp(pattern + n - 2, ".*") == 0)
		return strncmp(pattern, key, n - 1) == 0 && key[n - 1] != '\0';
	return strcmp(pattern, key) == 0;
}

static const char *closest(const char *key, const char *const *known, size_t n_known)
{
	const char *best = NULL;
	size_t best_d = 3; /* suggest only within two edits */

	for (size_t i = 0; i < n_known; i++) {
		size_t d = edit_distance(key, known[i]);
		if (d < best_d) {
			best_d = d;
			best = known[i];
		}
	}
	return best;
}

static void append(char *err, size_t errlen, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *err, size_t errlen, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || *off >= errlen)
		return;
	va_start(ap, fmt);
	n = vsnprintf(err + *off, errlen - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off = MIN(*off + (size_t)n, errlen);
}

static bool is_known(const char *key, const char *const *known, size_t n_known)
{
	for (size_t i = 0; i < n_known; i++)
		if (known_match(known[i], key))
			return true;
	return false;
}

size_t yamlcfg_unknown(const struct yamlcfg *cfg, const char *const *known, size_t n_known,
		       char *err, size_t errlen)
{
	size_t count = 0, off = 0;

	for (size_t i = 0; cfg && i < cfg->n; i++) {
		const struct entry *e = &cfg->e[i];
		if (is_known(e->key, known, n_known))
			continue;
		const char *hint = closest(e->key, known, n_known);
		append(err, errlen, &off, "%s%s:%u:%u: unknown key \"%s\"", count ? "; " : "",
		       cfg->name, e->kline, e->kcol, e->key);
		if (hint)
			append(err, errlen, &off, " (did you mean \"%s\"?)", hint);
		count++;
	}
	return count;
}
