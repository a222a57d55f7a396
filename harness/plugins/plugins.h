// SPDX-License-Identifier: MIT
// Loading kernel plug-ins (docs/plugins.md): `--plugin PATH` (any command, repeatable) and
// ATTNBENCH_PLUGINS=a.so:b.so. main.c takes every --plugin out of argv and loads the
// plug-ins before dispatching, so the commands see one registry and need no special cases.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// dlopen()s path, looks up ATTN_PLUGIN_ENTRY, calls it and adds its kernels with
// attn_registry_add (all or none). Returns 0, or -1 with a one-line message in err naming
// the file and the problem (cannot open / not a shared object, no entry point, ABI
// mismatch, invalid record, duplicate or shadowing name). A failed plug-in is unloaded
// and leaves the registry as it was. The plug-in's code that loading runs (library
// constructors, the entry point) is guarded: a crash, exit() or no return within
// timeout_s seconds ends the process with the path named (isolate.h).
int attn_plugin_load(const char *path, double timeout_s, char *err, size_t err_len);

// Removes every `--plugin PATH` / `--plugin=PATH` from argv[1..*argc-1] (up to a "--"),
// then loads the plug-ins of ATTNBENCH_PLUGINS (':'-separated, empty entries ignored) and
// those of the command line, in that order, each load watched for the command's
// --case-timeout (default 60 s). On success returns 0 and *argc is the new
// count (argv[*argc] == NULL). On failure prints "attnbench: <message>" to stderr and
// returns the exit code: ATTNBENCH_EXIT_USAGE for --plugin without a path,
// ATTNBENCH_EXIT_FAILURE for a plug-in that does not load.
int attn_plugins_from_args(int *argc, char **argv);

#ifdef __cplusplus
}
#endif
