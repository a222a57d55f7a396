// SPDX-License-Identifier: MIT
// Declarations of every subcommand entry point, generated from commands.def.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

#define ATTN_COMMAND(name, help) int cmd_##name(int argc, char **argv);
#include "cli/commands.def"
#undef ATTN_COMMAND

#ifdef __cplusplus
}
#endif
