// SPDX-License-Identifier: MIT
// The adjacent bandwidth probe (adjacent.h): the read probe of peak/bandwidth.h on a
// buffer kept across calls.
#include "bench/adjacent.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"
#include "machine/peak/bandwidth.h"
#include "machine/topology.h"

// The adjacent probe's buffer: prepared on first use, kept for the sweep.
static attn_bandwidth_buffer g_adj;
static bool g_adj_failed;

double attn_bench_adjacent_bandwidth(int threads, int passes) {
  if (g_adj_failed) return 0;
  if (!g_adj.x) {
    // Several times the last-level cache (every pass then reads DRAM), at least 256 MiB.
    const uint64_t llc = attn_topology_llc_bytes(attn_topology_get());
    uint64_t bytes = (uint64_t)256 << 20;
    if (4 * llc > bytes) bytes = 4 * llc;
    // The buffer comes on top of the point's inputs, which are allocated by now: the same
    // refusal rule as the points' (run, check and bench), once, with a note, instead of
    // an allocation that the kernel's overcommit grants and the fill then cannot back.
    uint64_t budget = 0;
    char why[160] = "";
    if (!attn_memory_budget(&budget, why, sizeof why)) budget = 0;
    const bool refused = attn_memory_refused(bytes, budget, why, sizeof why);
    if (refused || attn_bandwidth_prepare((size_t)bytes, threads, &g_adj) != 0) {
      if (!refused)
        snprintf(why, sizeof why, "cannot allocate %llu MiB", (unsigned long long)(bytes >> 20));
      fprintf(stderr,
              "note: adjacent bandwidth probe off (%s): memory-bound points get no %%adj_bw "
              "(counter adj_bw_unavailable 1)\n",
              why);
      attn_bandwidth_release(&g_adj);
      g_adj_failed = true;
      return 0;
    }
  }
  attn_bandwidth bw;
  if (attn_bandwidth_measure(&g_adj, threads, passes, &bw) != 0 || !bw.ok) return 0;
  return bw.best_gbs;
}

void attn_bench_release_adjacent_probe(void) {
  attn_bandwidth_release(&g_adj);
  g_adj_failed = false;
}
