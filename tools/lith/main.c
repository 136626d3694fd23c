// SPDX-License-Identifier: Apache-2.0
/*
 * `lith`: the single user-facing executable. Dispatches on the first
 * argument to a subcommand (s3 and index for now; cached, mount and csi
 * come with their modules). Exit codes: 0 ok, 1 failure, 2 usage error.
 */
#include <stdio.h>
#include <string.h>

#include "tools/lith/cmd.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "s3", cmd_s3, "talk to S3 directly: ls, head, get, bench" },
	{ "index", cmd_index, "build or inspect a namespace index file" },
	{ "cached", cmd_cached, "the node cache daemon (and its cat/stats clients)" },
	{ "mount", cmd_mount, "mount an S3 prefix as a read-only filesystem" },
	{ "umount", cmd_umount, "unmount a lith mount and wait for its mounter" },
	{ "csi", cmd_csi, "the CSI node plugin (driver lith.csi)" },
};

static int usage(FILE *f)
{
	fprintf(f, "usage: lith COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "  %-8s %s\n", "version", "print the version");
	return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
		return usage(stdout);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("lith %s (commit %s)\n", LITH_VERSION, LITH_COMMIT);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "lith: unknown command '%s'\n", argv[1]);
	return usage(stderr);
}
