// SPDX-License-Identifier: MIT
// placement.h — where OpenMP threads run and how big the tiles are, from hwloc (the one
// topology that topology.c loads).
//   • the CPU set: everything below stays inside the CPU set the process inherited
//     (taskset, a cgroup cpuset, the parent's affinity — topology.h reads it once, before
//     any binding). "Cores" below are the physical cores with a PU in that set;
//   • default thread count = those cores (hwloc HWLOC_OBJ_CORE), not hardware threads;
//   • binding, by mode (--bind, attn_placement_set_bind):
//       cores  OpenMP threads 0..n−1 of a team are bound to distinct cores of the set
//              (thread t → core t mod cores, its PUs that are in the set; with n > cores,
//              cores are shared round-robin), from inside an `omp parallel` region, so
//              each OpenMP worker binds itself. libgomp keeps its workers for later
//              regions of the same or smaller size, so the binding holds for the kernel
//              calls that follow. The default, unless OMP_PLACES or OMP_PROC_BIND is set;
//       openmp the default when the user set OMP_PLACES or OMP_PROC_BIND: attnbench binds
//              nothing and OpenMP places the threads as asked (an explicit --bind cores
//              still binds);
//       none   attnbench binds nothing (threads float within the set, or as OpenMP puts
//              them);
//     in every mode the report says where each thread is allowed to run;
//   • tile sizes for the tiled/flash kernels from the per-core L1d/L2 sizes hwloc
//     reports (kernels/core/tiles.h has the rule), unless the user set them
//     (--tile-q/--tile-kv, or the environment ATTNBENCH_TILE_Q / ATTNBENCH_TILE_KV) or a
//     tuning file written by `attnbench tune` has them (tunefile.h); the register-tile
//     variant and split-KV chunk count the same way (attn_placement_variant).
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "attn.h"
#include "machine/regtile_args.h"  // variant names, kv_split values

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_placement_caches {
  size_t l1d, l2, l3;  // bytes of one cache of each level as hwloc reports (0 = unknown)
  int cores, pus;      // physical cores and PUs within the CPU set (0 = unknown)
} attn_placement_caches;

// Cache sizes and core counts within the CPU set (discovered once; hwloc failure gives zeros).
attn_placement_caches attn_placement_query(void);

// Threads to use when the user asks for "default": physical cores in the CPU set, or the
// OpenMP default if hwloc knows no cores.
int attn_placement_default_threads(void);

// The binding modes (see the top of this file).
typedef enum attn_bind_mode {
  ATTN_BIND_DEFAULT = 0,  // cores, or openmp when OMP_PLACES / OMP_PROC_BIND is set
  ATTN_BIND_CORES = 1,
  ATTN_BIND_NONE = 2,
  ATTN_BIND_OPENMP = 3,  // only as the effective mode: the user's OpenMP placement
} attn_bind_mode;

// Sets the mode from --bind's value ("cores" or "none"; NULL keeps the default) for the
// rest of the process. Returns 0, or −1 with "--bind 'x': expected cores or none" in err.
int attn_placement_set_bind(const char *value, char *err, size_t err_len);
// The commands' up-front call, next to attn_placement_env_bad: false when value is fine
// (mode set); true after printing "attnbench <command>: <reason>" — exit 2 then.
bool attn_placement_bind_bad(const char *command, const char *value);
// The mode in effect (never ATTN_BIND_DEFAULT) and its name ("cores", "none", "openmp").
attn_bind_mode attn_placement_bind_mode(void);
const char *attn_placement_bind_mode_name(attn_bind_mode m);

// The --bind option of run, check and bench (for their cli_option tables; needs
// cli_args.h). dest: const char ** (NULL = not given).
#define ATTN_PLACEMENT_BIND_OPTION(where)                                           \
  {                                                                                 \
    .name = "bind", .kind = CLI_STRING, .dest = (where), .metavar = "cores|none",   \
    .help =                                                                         \
        "bind OpenMP threads to cores of the inherited CPU set (default; not when " \
        "OMP_PLACES/OMP_PROC_BIND is set) or leave placement alone"                 \
  }

// Places the `threads` OpenMP threads of a team (threads ≤ 0: the default above) by the
// mode and writes a report. cores: "T0->core1(PU1) T1->core2(PU2)" (the cores and the PU
// hwloc read back); none / openmp: "not bound (--bind none): T0 on PUs 0-1 T1 on PUs 0-1"
// (each thread's allowed PUs). Returns the number of threads bound (0 for none / openmp),
// or −1 with the reason in report (e.g. binding not supported in this container).
int attn_placement_bind(int threads, char *report, size_t len);

// Gives the calling thread back the CPU set the process inherited (attn_bind pins it to one
// core). A process started from this thread inherits its affinity: call this before
// starting one (bench --baselines runs the frameworks on every core of the set). 0 or −1.
int attn_placement_unbind(void);

// One line for results contexts and `info`: "cpuset 1 (1 of 2 cores, 1 of 2 PUs); bind
// cores". Returns buf.
const char *attn_placement_describe_set(char *buf, size_t len);

// The last binding report ("unbound" before any bind). Returns buf.
const char *attn_placement_describe(char *buf, size_t len);

// The harness is the only reader of ATTNBENCH_TILE_Q / ATTNBENCH_TILE_KV (and of
// ATTNBENCH_REGTILE / ATTNBENCH_KV_SPLIT, checked here too; kernels see
// attn_exec and the tile rule, nothing else). They are read and checked once per process;
// every command that runs kernels (run, bench, check, info) calls this up front, so a
// malformed value fails once, with exit 2, before any work. Fills exec->tile_q / tile_kv
// where they are 0 (exec may be NULL: only check). Returns 0, or −1 with a one-line
// message naming the variable in err.
int attn_placement_env_tiles(attn_exec *exec, char *err, size_t err_len);

// The commands' up-front check: false when the environment's tiles are fine (and exec,
// if not NULL, filled as above); true after printing "attnbench <command>: <reason>" to
// stderr — the command then exits with ATTNBENCH_EXIT_USAGE (2).
bool attn_placement_env_bad(const char *command, attn_exec *exec);

// One tile value: 0 when value is NULL or empty, else decimal digits giving 1 .. 2^20. Returns
// 0, or −1 with "NAME=value: expected a positive integer (at most 1048576)" in err.
int attn_placement_parse_tile(const char *name, const char *value, int *tile, char *err,
                              size_t err_len);

// Fills exec->tile_q / tile_kv for kernel k on problem p where they are 0: first from the
// environment (attn_placement_env_tiles), then from the active tuning file's entry for
// (k, p's shape class) (tunefile.h; k may be NULL: no file), then from the tile rule
// (core/tiles.h) with hwloc's cache sizes. *tuned (may be NULL) is set when the tuning
// file supplied a tile. Returns 0, or −1 if an environment value is malformed.
int attn_placement_tiles(const attn_kernel *k, const attn_problem *p, attn_exec *exec, bool *tuned,
                         char *err, size_t err_len);

// Fills exec->regtile and exec->kv_split for kernel k on problem p (k may be NULL: regtile
// 0), each from the first that gives it: the command line / config (regtile: a variant
// name or index, NULL = not given, named `what` in messages, e.g. "--regtile"; kv_split:
// −1 = not given, 0 = the kernel's rule), the environment (ATTNBENCH_REGTILE,
// ATTNBENCH_KV_SPLIT), the active tuning file's entry for (k, p's shape class), else 0
// (the kernel's defaults). *tuned (may be NULL) is set when the tuning file supplied one.
// Returns 0, or −1 with a one-line message in err: a malformed environment value, or a
// variant k does not have ("--regtile '9x9': kernel flash__avx2 has no such register-tile
// variant (0..2: 6x16/6x16 4x24/4x24 3x32/6x16)").
int attn_placement_variant(const attn_kernel *k, const attn_problem *p, const char *regtile,
                           const char *what, int kv_split, attn_exec *exec, bool *tuned, char *err,
                           size_t err_len);

// Whether the --regtile value regtile (NULL: not given), else ATTNBENCH_REGTILE, names one
// of k's variants — the up-front check of run and check, before any problem is known.
// Returns 0, or −1 with attn_placement_variant's message in err.
int attn_placement_regtile_check(const attn_kernel *k, const char *regtile, char *err,
                                 size_t err_len);

// The --regtile and --kv-split options of run, check and bench (for their cli_option
// tables; needs cli_args.h). regtile: const char ** (NULL = not given); kv_split: int *,
// with kv_split_given: bool * (the command sets −1 when not given).
#define ATTN_PLACEMENT_VARIANT_OPTIONS(regtile, kv_split, kv_split_given)               \
  {.name = "regtile",                                                                   \
   .kind = CLI_STRING,                                                                  \
   .dest = (regtile),                                                                   \
   .metavar = "N|NAME",                                                                 \
   .help =                                                                              \
       "register-tile variant of the kernel, by index or name (attnbench list: rt=; "   \
       "default: ATTNBENCH_REGTILE, the tuning file, else 0)"},                         \
  {                                                                                     \
    .name = "kv-split", .kind = CLI_INT, .dest = (kv_split), .given = (kv_split_given), \
    .metavar = "N", .min = 0, .max = ATTN_MAX_KV_SPLIT,                                 \
    .help =                                                                             \
        "split-KV kernels: cut each task's keys into N chunks (1 = no split; 0 = the "  \
        "kernel's rule; default: ATTNBENCH_KV_SPLIT, the tuning file, else 0)"          \
  }

#ifdef __cplusplus
}
#endif
