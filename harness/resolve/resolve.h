// SPDX-License-Identifier: MIT
// resolve.h — the harness's side of the settings resolver (kernels/core/settings.h): the
// layers only the harness can fill, and the one call every command makes. Its own room,
// above machine/ (topology) and tune/ (the tuning file, which itself names the machine).
//   • environment: the process's, read through attn_settings_env once per process and
//     checked up front by every command that runs kernels (a malformed value: exit 2);
//   • tuning file: the active file's entry for (kernel, shape class) (tune/tunefile.h);
//   • machine rule: hwloc's physical cores in the inherited CPU set, per-core L1d / L2
//     sizes, and whether threads can be bound (topology.h).
// The command line and a config are the command's own (cli/option_args.h fills the
// command-line layer). `run`, `check`, `bench`, `tune` and `info` call attn_resolve, so
// the same problem gets the same settings, with the same provenance, in each.
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "attn.h"
#include "core/settings.h"

#ifdef __cplusplus
extern "C" {
#endif

// The environment layer (read and checked once). Returns 0, or −1 with the one-line
// message naming the variable in err.
int attn_resolve_env(attn_setting_layer *env, char *err, size_t err_len);

// The commands' up-front check: false when the environment's settings are well formed;
// true after printing "attnbench <command>: <reason>" to stderr — exit 2 then.
bool attn_resolve_env_bad(const char *command);

// The tuning file's layer for kernel k on problem p (empty without a file or an entry).
void attn_resolve_tune_layer(const attn_kernel *k, const attn_problem *p, attn_setting_layer *l);

// The machine layer for problem p from hwloc (empty where hwloc knows nothing).
void attn_resolve_machine_layer(const attn_problem *p, attn_setting_layer *l);

// Leave the tuning file out (tune: it measures the defaults the file would replace);
// leave the environment's tiles, register-tile variant and kv_split out (tune: the
// built-in default it records is the machine rule's and the kernel's, never a passing
// ATTNBENCH_TILE_* / _REGTILE / _KV_SPLIT; threads and binding still come from OMP_*).
enum { ATTN_RESOLVE_NO_TUNE_FILE = 1u << 0, ATTN_RESOLVE_NO_ENV_TUNING = 1u << 1 };

// The settings of kernel k on problem p: cli and config (either NULL: none), then the
// environment, the tuning file (unless flags has ATTN_RESOLVE_NO_TUNE_FILE), hwloc's
// machine rule and the kernel defaults (settings.h). Returns 0, or −1 with a one-line
// message in err and the value at fault in *fault (may be NULL; settings.h).
int attn_resolve(const attn_kernel *k, const attn_problem *p, const attn_setting_layer *cli,
                 const attn_setting_layer *config, unsigned flags, attn_settings *s,
                 attn_setting_fault *fault, char *err, size_t err_len);

// The thread count when no command line or config gives one (OMP_NUM_THREADS, else the
// physical cores of the CPU set, else the OpenMP default): a config's `threads = 0`.
// Threads do not depend on the problem or the kernel.
int attn_resolve_default_threads(void);

// The exit code for a failed resolution: 2 (bad usage) when the value at fault is a
// register-tile variant the user named (command line, config, environment) or a
// malformed environment value; 1 otherwise (a tuning file's variant, the thread cap).
int attn_resolve_exit_code(const attn_setting_fault *fault);

// --explain: "settings of <kernel> on <shape>:" then one line per setting (value, source).
void attn_resolve_print(FILE *out, const attn_kernel *k, const attn_problem *p,
                        const attn_settings *s);

#ifdef __cplusplus
}
#endif
