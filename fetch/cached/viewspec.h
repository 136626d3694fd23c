/* SPDX-License-Identifier: Apache-2.0 */
/* A dataset view as clients describe it and the daemon registers it (the
 * ViewSpec message of proto/cache.proto, as plain C). Strings are borrowed. */
#ifndef LITH_CACHED_VIEWSPEC_H
#define LITH_CACHED_VIEWSPEC_H

#include <stdbool.h>

struct view_spec {
	const char *endpoint, *region, *bucket, *prefix;
	bool path_style, virtual_host, anonymous, requester_pays, refresh_index;
	const char *access_key, *secret_key, *session_token;
	const char *volume_id, *ca_file;
	const char *pod_namespace, *pod_name; /* metrics labels; may be NULL */
};

#endif
