/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parses "s3://bucket[/key-or-prefix]" as users type it. The key part is
 * taken verbatim (it may contain spaces, '%', '?', '#': nothing is decoded).
 */
#ifndef LITH_S3_S3URI_H
#define LITH_S3_S3URI_H

#include <stddef.h>

struct s3_uri {
	char bucket[256];
	char key[1025];  /* "" when absent */
};

/* -EINVAL (message in err) when not an s3:// URI or parts are too long. */
int s3_uri_parse(const char *s, struct s3_uri *ret, char *err, size_t errlen);

#endif
