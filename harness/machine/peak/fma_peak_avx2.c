// SPDX-License-Identifier: MIT
// The avx2 FMA throughput loop (see peak.h). Compiled with only avx2's flags.
// The mapping header first: the body is written over it.
// clang-format off
#include "simd/vec_avx2.h"
#include "fma_peak_body.h"
// clang-format on

uint64_t attn_peak_loop__avx2(uint64_t iters, float *sink) {
  return peak_loop(iters, sink);
}
