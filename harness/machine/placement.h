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
//   • the cache sizes and core count that the settings resolver's machine rule uses
//     (resolve/resolve.h; the tiles, threads and binding mode are decided there).
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "attn.h"
#include "core/settings.h"  // attn_bind_mode

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

// Sets the mode from --bind's value ("cores" or "none"; NULL keeps the default) for the
// rest of the process. Returns 0, or −1 with "--bind 'x': expected cores or none" in err.
int attn_placement_set_bind(const char *value, char *err, size_t err_len);
// The commands' up-front call, next to attn_resolve_env_bad: false when value is fine
// (mode set); true after printing "attnbench <command>: <reason>" — exit 2 then.
bool attn_placement_bind_bad(const char *command, const char *value);
// The mode in effect (never ATTN_BIND_DEFAULT) and its name ("cores", "none", "openmp").
attn_bind_mode attn_placement_bind_mode(void);
const char *attn_placement_bind_mode_name(attn_bind_mode m);
// Sets the mode the settings resolver decided (attn_settings.bind) for the binds that
// follow; ATTN_BIND_DEFAULT goes back to the rule above.
void attn_placement_use_mode(attn_bind_mode m);

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

#ifdef __cplusplus
}
#endif
