// SPDX-License-Identifier: MIT
// topology.h — the machine as hwloc sees it (packages, cores, PUs, NUMA nodes, cache
// sizes, CPU model) and the memory available now; for results-file context and
// `attnbench info`. Thread binding lives in placement.h, not here. hwloc is loaded once
// per process, here; placement.c binds threads with the same topology.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_topology {
  bool ok;  // false: hwloc failed; error says why, counts are 0
  char error[128];
  char cpu_model[128];  // "AMD EPYC 9R14 96-Core Processor" (or "unknown")
  int packages, cores, pus, numa_nodes;
  uint64_t l1d_bytes, l2_bytes, l3_bytes;  // size of one cache of each level (0 = none)
  int l1d_count, l2_count, l3_count;       // how many of each
  uint64_t memory_bytes;                   // total memory hwloc reports
  // The process's CPU set when the topology was loaded (before attnbench binds anything):
  // what taskset, a cgroup cpuset or the parent's affinity left it. Thread placement
  // (placement.h) stays inside it.
  char cpuset[96];         // hwloc list syntax, e.g. "0-1" or "1"
  int set_cores, set_pus;  // cores with a PU in the set, and PUs in the set
} attn_topology;

// The topology of this machine (discovered once; later calls return the same).
const attn_topology *attn_topology_get(void);

// The loaded hwloc topology (a hwloc_topology_t; NULL if hwloc failed), loaded on first
// use and kept. Typed void * so that this header does not need hwloc.h.
void *attn_topology_hwloc(void);

// The CPU set above as a hwloc_const_cpuset_t (NULL if hwloc failed); typed as above.
const void *attn_topology_cpuset(void);

// All last-level caches together in bytes (L3 size × count, else L2's); 0 when unknown.
uint64_t attn_topology_llc_bytes(const attn_topology *t);

// One line: "1 package, 2 cores, 2 PUs, 1 NUMA node; L1d 32 KiB x2, L2 1 MiB x2, L3 32 MiB x1"
void attn_topology_summary(const attn_topology *t, char *buf, size_t len);

// A few labelled lines for people (`attnbench info`).
void attn_topology_print(const attn_topology *t, FILE *out);

#ifdef __cplusplus
}
#endif
