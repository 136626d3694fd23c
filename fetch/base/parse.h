/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strict parsers for user-supplied numbers: sizes with binary suffixes
 * ("8M", "1GiB", "4096"), unsigned integers, booleans. Every parser rejects
 * trailing garbage, signs and overflow with -EINVAL/-ERANGE and leaves the
 * output untouched on failure.
 */
#ifndef LITH_BASE_PARSE_H
#define LITH_BASE_PARSE_H

#include <stdbool.h>
#include <stdint.h>

int parse_u64(const char *s, uint64_t *ret);
int parse_size(const char *s, uint64_t *ret);
int parse_bool(const char *s, bool *ret);
/* "A-B" inclusive byte range, A <= B. */
int parse_range(const char *s, uint64_t *ret_first, uint64_t *ret_last);

#endif
