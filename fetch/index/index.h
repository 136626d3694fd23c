/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading a namespace index: the file that answers lookup, getattr and
 * readdir for a mounted bucket with no S3 request (layout in format.h).
 *
 * index_open* validates the whole file once: size, magic, version, the
 * SHA-256 checksum, then every offset, length, name, ETag, parent link and
 * the sort order of every directory. Any defect gives -EBADMSG and nothing
 * else; after a successful open every accessor is O(1) or O(log n) and
 * trusts the data. The index is read-only and immutable, so any number of
 * threads may use one handle concurrently.
 *
 * Inode numbers: entry i is inode i + 1 (root: INDEX_ROOT_INO). They are a
 * pure function of the indexed keys, so every process holding an index of
 * the same listing agrees on them.
 *
 * Ownership: index_open/index_open_fd map the file privately (the fd is
 * not kept; the caller still owns and closes it). Index files are never
 * modified in place, only replaced by rename, so a mapping stays valid: do
 * not truncate or rewrite a file that is open; index_open_mem borrows the caller's buffer, which must stay
 * valid and unchanged until index_close. Strings returned by accessors
 * point into the index and live until index_close; they are not
 * NUL-terminated unless stated.
 *
 * Errors: -EBADMSG malformed file; -ENOENT no such inode or name;
 * -ENOTDIR lookup/readdir on a file; -ENOSPC a caller buffer is too small.
 */
#ifndef LITH_INDEX_INDEX_H
#define LITH_INDEX_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fetch/index/normalize.h"

#define INDEX_ROOT_INO 1ull
#define INDEX_MAX_FILE_SIZE (1ull << 40)   /* files larger than this are refused */

struct index;

struct index_attr {
	uint64_t ino;
	uint64_t parent;      /* parent's inode (the root is its own parent) */
	uint64_t size;        /* files: bytes; directories: 0 */
	int64_t mtime;        /* unix seconds */
	bool is_dir;
	uint32_t nchildren;   /* directories */
	uint32_t nsubdirs;    /* directories: st_nlink = 2 + nsubdirs */
};

struct index_stats {
	uint32_t version;
	uint64_t file_size;
	uint64_t entries, files, dirs, total_bytes;
	uint64_t keys_listed, markers;
	uint64_t skipped[INDEX_SKIP__COUNT]; /* [0] is the total */
	uint64_t samples;
	int64_t build_time;
	uint64_t build_usec;
	uint64_t list_requests;
	uint32_t concurrency;
	bool serial;
	/* source, NUL-free but not NUL-terminated */
	const char *endpoint, *bucket, *prefix;
	size_t endpoint_len, bucket_len, prefix_len;
};

int index_open(const char *path, struct index **ret);
int index_open_fd(int fd, struct index **ret);
/* buf must be 8-byte aligned (-EINVAL otherwise). */
int index_open_mem(const void *buf, size_t len, struct index **ret);
void index_close(struct index *idx);

/* -ENOENT when name is absent; -ENOTDIR when dir is a file. */
int index_lookup(const struct index *idx, uint64_t dir, const char *name, size_t len,
		 uint64_t *ret_ino);
/* The children of dir are inodes [*ret_first, *ret_first + *ret_count),
 * sorted by name. */
int index_readdir(const struct index *idx, uint64_t dir, uint64_t *ret_first,
		  uint32_t *ret_count);
int index_getattr(const struct index *idx, uint64_t ino, struct index_attr *ret);
/* The entry's own name (root: ""). */
int index_name(const struct index *idx, uint64_t ino, const char **ret_name,
	       size_t *ret_len);
/* Path below the index root, NUL-terminated ("a/b"; root: ""). Returns the
 * length. */
int index_path(const struct index *idx, uint64_t ino, char *buf, size_t cap);
/* The S3 key: prefix + path for a file, prefix + path + "/" for a
 * directory (root: the prefix). NUL-terminated; returns the length. */
int index_key(const struct index *idx, uint64_t ino, char *buf, size_t cap);
/* The file's ETag as S3 gave it, without quotes ("" when S3 gave none),
 * NUL-terminated, for If-Match. Returns the length; -EISDIR on a directory. */
int index_etag(const struct index *idx, uint64_t ino, char *buf, size_t cap);

void index_get_stats(const struct index *idx, struct index_stats *ret);
/* Sample i (0 <= i < stats.samples) of the skipped keys: up to
 * INDEX_SAMPLES_PER_REASON per reason, the bytewise smallest keys. */
int index_sample(const struct index *idx, size_t i, enum index_skip *ret_reason,
		 const char **ret_key, size_t *ret_len);

#endif
