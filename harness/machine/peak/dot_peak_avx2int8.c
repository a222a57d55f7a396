// SPDX-License-Identifier: MIT
// The INT8 dot-product throughput loop of plain AVX2 (peak.h): what a CPU without VNNI has
// for 8-bit products into int32 sums — vpmaddubsw (u8·s8 byte pairs added into int16),
// vpmaddwd against ones (int16 pairs added into int32) and vpaddd into the accumulator,
// the three instructions flash__avx2int8 spends per 32 products. PEAK_CHAINS independent
// chains c ← c + madd(maddubs(a, c), 1): each step reads its accumulator's bytes, so no
// step can be hoisted or shared, and the chains cover the three instructions' latency.
// a is all zero bytes (opaque to the compiler), so every accumulator stays 0. 64 ops per
// step: 32 products × (multiply + add), as vpdpbusd ymm counts.
#include <immintrin.h>

#include "peak.h"

uint64_t attn_peak_loop__avx2int8(uint64_t iters, float *sink) {
  volatile char va = 0;  // opaque to constant folding
  const __m256i a = _mm256_set1_epi8(va), ones = _mm256_set1_epi16(1);
  __m256i c[PEAK_CHAINS];
  for (int i = 0; i < PEAK_CHAINS; i++) c[i] = _mm256_set1_epi32(i);
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 12
    for (int i = 0; i < PEAK_CHAINS; i++)
      c[i] = _mm256_add_epi32(c[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a, c[i]), ones));
  }
  int64_t total = 0;
  for (int i = 0; i < PEAK_CHAINS; i++) {
    int32_t lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, c[i]);
    for (int l = 0; l < 8; l++) total += lanes[l];
  }
  *sink = (float)total;
  return iters * PEAK_CHAINS * 64u;
}
