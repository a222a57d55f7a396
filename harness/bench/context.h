// SPDX-License-Identifier: MIT
// context.h — what a results file says about the machine and the build, and the
// measured peaks the "% of peak" counters are relative to.
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "bench/config.h"
#include "machine/peak/peak.h"

#ifdef __cplusplus
extern "C" {
#endif

// Measured FP32 FMA peak in GFLOP/s for one ATTN_ISA_* bit (0 = scalar) on `threads`
// threads (memoised; 0 when no peak probe is built in or the CPU lacks the ISA).
double attn_bench_fma_peak(uint32_t isa, int threads);
// Measured peak in G ops/s of one unit on one ISA (peak.h; memoised like the FMA peak,
// which is the unit ATTN_PEAK_FP32_FMA). Each measured peak becomes a context entry:
// peak_fma_gflops_<isa>_T<n> for the FP32 FMA, peak_unit_gops_<unit>_<isa>_T<n> else.
double attn_bench_unit_peak(attn_peak_key key, int threads);

// Measured read bandwidth in GB/s with `threads` threads (memoised; 0 if unavailable).
double attn_bench_read_bandwidth(int threads);

// The thread count "0 = one per physical core" stands for.
int attn_bench_physical_cores(void);

// Adds the context entries (CPU, ISA, topology, binding, OpenMP environment, compiler,
// git commit, config, measured peaks for every (unit, ISA, threads) the plan uses) to the
// results file. measure = false skips the probes (context says "not measured").
void attn_bench_add_context(const attn_bench_plan *plan, const char *config_path, bool measure);

#ifdef __cplusplus
}
#endif
