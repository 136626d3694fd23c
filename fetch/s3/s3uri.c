// SPDX-License-Identifier: Apache-2.0
/* s3:// URI parsing (see s3uri.h). */
#include "fetch/s3/s3uri.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int s3_uri_parse(const char *s, struct s3_uri *ret, char *err, size_t errlen)
{
	const char *b, *slash;
	size_t blen;

	if (!s || strncmp(s, "s3://", 5) != 0) {
		snprintf(err, errlen, "%s: expected s3://bucket[/key]", s ? s : "(null)");
		return -EINVAL;
	}
	b = s + 5;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (blen == 0 || blen >= sizeof(ret->bucket)) {
		snprintf(err, errlen, "%s: bucket name empty or too long", s);
		return -EINVAL;
	}
	if (slash && strlen(slash + 1) >= sizeof(ret->key)) {
		snprintf(err, errlen, "%s: key longer than 1024 bytes", s);
		return -EINVAL;
	}
	memcpy(ret->bucket, b, blen);
	ret->bucket[blen] = '\0';
	snprintf(ret->key, sizeof(ret->key), "%s", slash ? slash + 1 : "");
	return 0;
}
