// SPDX-License-Identifier: MIT
// placement.h — where OpenMP threads run and how big the tiles are, from hwloc (the one
// topology that topology.c loads).
//   • default thread count = physical cores (hwloc HWLOC_OBJ_CORE), not hardware threads;
//   • binding: OpenMP threads 0..n−1 of a team are bound to distinct physical cores
//     (thread t → core t mod cores, its whole cpuset; with n > cores, cores are shared
//     round-robin), from inside an `omp parallel` region, so each OpenMP worker binds
//     itself. libgomp keeps its workers for later regions of the same or smaller size,
//     so the binding holds for the kernel calls that follow;
//   • tile sizes for the tiled/flash kernels from the per-core L1d/L2 sizes hwloc
//     reports (kernels/core/tiles.h has the rule), unless the user set them
//     (--tile-q/--tile-kv, or the environment ATTNBENCH_TILE_Q / ATTNBENCH_TILE_KV).
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_placement_caches {
  size_t l1d, l2, l3;  // bytes of one cache of each level as hwloc reports (0 = unknown)
  int cores, pus;      // physical cores and processing units (0 = unknown)
} attn_placement_caches;

// Cache sizes and core counts (discovered once; hwloc failure gives zeros).
attn_placement_caches attn_placement_query(void);

// Threads to use when the user asks for "default": physical cores, or the OpenMP
// default if hwloc knows no cores.
int attn_placement_default_threads(void);

// Binds the `threads` OpenMP threads of a team (threads ≤ 0: the default above) to
// distinct physical cores and writes a report such as "T0->core0(PU0) T1->core1(PU1)"
// (the cores hwloc read back). Returns the number of threads bound, or −1 with the
// reason in report (e.g. binding not supported in this container).
int attn_placement_bind(int threads, char *report, size_t len);

// The last binding report ("unbound" before any bind). Returns buf.
const char *attn_placement_describe(char *buf, size_t len);

// The harness is the only reader of ATTNBENCH_TILE_Q / ATTNBENCH_TILE_KV (kernels see
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

// Fills exec->tile_q / tile_kv for problem p where they are 0: first from the
// environment (attn_placement_env_tiles), then from the tile rule (core/tiles.h) with
// hwloc's cache sizes. Returns 0, or −1 if an environment value is malformed.
int attn_placement_tiles(const attn_problem *p, attn_exec *exec, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
