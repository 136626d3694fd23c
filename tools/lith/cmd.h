/* SPDX-License-Identifier: Apache-2.0 */
/* Entry points of lith's subcommands; each takes argv starting at its name. */
#ifndef LITH_TOOLS_CMD_H
#define LITH_TOOLS_CMD_H

int cmd_s3(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_cached(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
int cmd_csi(int argc, char **argv);

#endif
