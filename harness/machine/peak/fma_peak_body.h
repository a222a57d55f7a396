// SPDX-License-Identifier: MIT
// fma_peak_body.h — the FMA throughput loop, written once over the vf_* mapping of
// kernels/simd (include after a vec_<isa>.h). Each chain is acc = acc·b + c with
// b = 1 − 2^-20 and c = 2^-20, so every value stays near 1 (no overflow, no denormals).
#pragma once

#include <stdint.h>

#include "peak.h"

static uint64_t peak_loop(uint64_t iters, float *sink) {
  vf_t acc[PEAK_CHAINS];
  const vf_t b = vf_set1(1.0f - 0x1p-20f), c = vf_set1(0x1p-20f);
#pragma GCC unroll 16
  for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = vf_set1(1.0f + (float)i * 0x1p-10f);
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = vf_fma(acc[i], b, c);
  }
  vf_t s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = vf_add(s, acc[i]);
  *sink = vf_hsum(s);
  return iters * PEAK_CHAINS * VF_W * 2u;
}
