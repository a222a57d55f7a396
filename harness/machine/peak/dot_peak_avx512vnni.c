// SPDX-License-Identifier: MIT
// The AVX512-VNNI INT8 dot-product throughput loop (peak.h): PEAK_CHAINS independent
// chains of vpdpbusd zmm, acc += Σ_{t<4} u8(a[4i+t])·s8(b[4i+t]) per int32 lane. Compiled
// with only AVX512-VNNI's flags. a is all 1 and b (1, −1, 1, −1), so each step adds 0.
#include <immintrin.h>

#include "peak.h"

uint64_t attn_peak_loop__avx512vnni(uint64_t iters, float *sink) {
  volatile int va = 0x01010101, vb = (int)0xff01ff01u;  // opaque to constant folding
  const __m512i a = _mm512_set1_epi32(va), b = _mm512_set1_epi32(vb);
  __m512i acc[PEAK_CHAINS];
#pragma GCC unroll 16
  for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = _mm512_set1_epi32(i);
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  __m512i s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = _mm512_add_epi32(s, acc[i]);
  *sink = (float)_mm512_reduce_add_epi32(s);
  return iters * PEAK_CHAINS * 128u;  // 16 lanes x 4 byte pairs x (multiply + add)
}
