// SPDX-License-Identifier: MIT
// The NEON FMA throughput loop (see peak.h).
// The mapping header first: the body is written over it.
// clang-format off
#include "simd/vec_neon.h"
#include "fma_peak_body.h"
// clang-format on

uint64_t attn_peak_loop__neon(uint64_t iters, float *sink) {
  return peak_loop(iters, sink);
}
