// SPDX-License-Identifier: MIT
// The compute-unit peak probes (harness/machine/peak/peak.h): every probe of this build
// whose ISA the CPU has runs, counts the operations its table row says, leaves the
// values its comment says (the loops add exact zeros), and gives a positive peak; a
// probe whose ISA the CPU lacks (or ATTNBENCH_ISA_MASK hides) gives 0 without running.
// No timing assertions. Run by CTest plainly and with ATTNBENCH_ISA_MASK hiding every
// low-precision unit (--masked: then no such unit may be measured but AVX2's INT8 dot,
// which needs avx2 alone).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "peak.h"
#include "test_util.h"

// What a loop leaves in *sink: the sum over lanes and chains of the start values, which
// the zero-adding loops keep (FP32 FMA loops converge elsewhere: not checked here).
static bool expected_sink(const attn_peak_probe *pr, double *want) {
  double per_lane_ops;
  switch (pr->unit) {
    case ATTN_PEAK_BF16_DOT:
      per_lane_ops = 4;  // 2 pairs x (multiply + add)
      break;
    case ATTN_PEAK_FP16_FMA:
      per_lane_ops = 2;
      break;
    case ATTN_PEAK_INT8_DOT:
      per_lane_ops = 8;  // 4 byte pairs x (multiply + add)
      break;
    case ATTN_PEAK_AMX_BF16:
      *want = 0;  // accumulators start at zero
      return true;
    default:
      return false;
  }
  const double lanes = pr->ops_per_instruction / per_lane_ops, sum_i = 66;  // Σ_{i<12} i
  *want = pr->unit == ATTN_PEAK_INT8_DOT ? lanes * sum_i : lanes * (PEAK_CHAINS + sum_i * 0x1p-10);
  return true;
}

int main(int argc, char **argv) {
  const bool masked = argc > 1 && strcmp(argv[1], "--masked") == 0;
  const uint32_t cpu = attn_cpu_features();
  size_t n;
  const attn_peak_probe *probes = attn_peak_probes(&n);
  EXPECT(n >= 2 && probes[0].unit == ATTN_PEAK_FP32_FMA && probes[0].isa == 0,
         "the table starts with the scalar FP32 row");
  int measured_low = 0;
  for (size_t i = 0; i < n; i++) {
    const attn_peak_probe *pr = &probes[i];
    char isa[64];
    attn_isa_names(pr->isa, isa, sizeof isa);
    const char *unit = attn_peak_unit_name(pr->unit);
    EXPECT(attn_peak_probe_find(pr->unit, pr->isa) == pr, "%s/%s: found by (unit, isa)", unit, isa);
    EXPECT(pr->loop && pr->ops_per_instruction > 0 && pr->instruction[0],
           "%s/%s: has a loop, an op count and an instruction", unit, isa);
    if ((cpu & pr->isa) != pr->isa) {
      EXPECT(attn_peak_gops(pr->unit, pr->isa, 1) == 0.0, "%s/%s: absent -> 0 (not measured)", unit,
             isa);
      printf("  %-8s %-14s not on this CPU\n", unit, isa);
      continue;
    }
    // The loop counts whole instructions of its row (PEAK_CHAINS each, 6 for AMX's tiles).
    float sink = -1;
    const uint64_t iters = 1000, ops = pr->loop(iters, &sink);
    const uint64_t per_iter = pr->unit == ATTN_PEAK_AMX_BF16 ? 6 : PEAK_CHAINS;
    EXPECT(ops == iters * per_iter * (uint64_t)pr->ops_per_instruction,
           "%s/%s: %llu ops for %llu iterations (%d per instruction)", unit, isa,
           (unsigned long long)ops, (unsigned long long)iters, pr->ops_per_instruction);
    double want;
    if (expected_sink(pr, &want))
      EXPECT(fabs(sink - want) <= 1e-6 * fabs(want), "%s/%s: loop result %.9g, expected %.9g", unit,
             isa, sink, want);
    const double one = attn_peak_gops(pr->unit, pr->isa, 1);
    const double two = attn_peak_gops(pr->unit, pr->isa, 2);
    EXPECT(one > 0 && isfinite(one) && two > 0 && isfinite(two),
           "%s/%s: peak measured on 1 and 2 threads (%.1f, %.1f G ops/s)", unit, isa, one, two);
    printf("  %-8s %-14s %10.1f G ops/s (1 thread)\n", unit, isa, one);
    // AVX2's own INT8 dot product needs no bit beyond avx2: measured under the mask too.
    if (pr->unit != ATTN_PEAK_FP32_FMA && pr->isa != ATTN_ISA_AVX2) measured_low++;
  }
  // An unknown unit or ISA: no probe.
  EXPECT(attn_peak_probe_find(ATTN_PEAK_BF16_DOT, ATTN_ISA_AVX2) == NULL, "no bf16 probe on avx2");
  EXPECT(attn_peak_gops((attn_peak_unit)ATTN_PEAK_UNIT_COUNT, 0, 1) == 0.0, "unknown unit -> 0");
  EXPECT(strcmp(attn_peak_unit_name((attn_peak_unit)99), "?") == 0, "unknown unit name");
  // The all-threads figure's busy flag (attn_peak_gops_scaled): raised when the figure stays
  // below 80 % of threads × the 1-thread figure on threads ≤ cores — here against a 1-thread
  // figure no machine reaches — and never when it cannot apply (1 thread, threads > cores).
  int busy = -1;
  EXPECT(attn_peak_gops_scaled(ATTN_PEAK_FP32_FMA, 0, 2, 1e9, 2, &busy) > 0.0 && busy == 1,
         "2 threads against 1e9 on 1 thread: busy %d", busy);
  EXPECT(attn_peak_gops_scaled(ATTN_PEAK_FP32_FMA, 0, 2, 0.0, 2, &busy) > 0.0 && busy == 0,
         "2 threads against 0 on 1 thread: busy %d", busy);
  EXPECT(attn_peak_gops_scaled(ATTN_PEAK_FP32_FMA, 0, 1, 1e9, 2, &busy) > 0.0 && busy == 0,
         "1 thread: busy %d", busy);
  EXPECT(attn_peak_gops_scaled(ATTN_PEAK_FP32_FMA, 0, 2, 1e9, 1, &busy) > 0.0 && busy == 0,
         "2 threads on 1 core: busy %d", busy);
  if (masked)
    EXPECT(measured_low == 0, "ATTNBENCH_ISA_MASK hides every low-precision unit (%d measured)",
           measured_low);
  return test_finish(masked ? "test_peak_units --masked" : "test_peak_units");
}
