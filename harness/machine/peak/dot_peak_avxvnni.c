// SPDX-License-Identifier: MIT
// The AVX-VNNI INT8 dot-product throughput loop (peak.h): PEAK_CHAINS independent chains
// of the VEX-encoded vpdpbusd ymm (the form of AVX2-class cores without AVX-512), acc +=
// Σ_{t<4} u8(a[4i+t])·s8(b[4i+t]) per int32 lane. Compiled with AVX2 + AVX-VNNI only, so
// the compiler cannot pick the EVEX form. a is all 1 and b (1, −1, 1, −1): each step adds 0.
#include <immintrin.h>

#include "peak.h"

uint64_t attn_peak_loop__avxvnni(uint64_t iters, float *sink) {
  volatile int va = 0x01010101, vb = (int)0xff01ff01u;  // opaque to constant folding
  const __m256i a = _mm256_set1_epi32(va), b = _mm256_set1_epi32(vb);
  __m256i acc[PEAK_CHAINS];
#pragma GCC unroll 16
  for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = _mm256_set1_epi32(i);
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], a, b);
  }
  __m256i s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = _mm256_add_epi32(s, acc[i]);
  int lanes[8];
  _mm256_storeu_si256((__m256i *)lanes, s);
  int t = 0;
  for (int i = 0; i < 8; i++) t += lanes[i];
  *sink = (float)t;
  return iters * PEAK_CHAINS * 64u;  // 8 lanes x 4 byte pairs x (multiply + add)
}
