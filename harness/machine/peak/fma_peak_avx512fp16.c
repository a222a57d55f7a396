// SPDX-License-Identifier: MIT
// The AVX512-FP16 FMA throughput loop (peak.h): PEAK_CHAINS independent chains of
// vfmadd231ph zmm (32 binary16 lanes), acc = acc·b + c with b = 1 − 2^-11 and c = 2^-11
// (binary16 0x3bff and 0x1000), so every value stays near 1. Compiled with only
// AVX512-FP16's flags.
#include <immintrin.h>

#include "peak.h"

uint64_t attn_peak_loop__avx512fp16(uint64_t iters, float *sink) {
  volatile short vb = 0x3bff, vc = 0x1000;  // opaque to constant folding
  const __m512h b = _mm512_castsi512_ph(_mm512_set1_epi16(vb));
  const __m512h c = _mm512_castsi512_ph(_mm512_set1_epi16(vc));
  __m512h acc[PEAK_CHAINS];
#pragma GCC unroll 16
  for (int i = 0; i < PEAK_CHAINS; i++)  // 1 + i·2^-10
    acc[i] = _mm512_castsi512_ph(_mm512_set1_epi16((short)(0x3c00 + i)));
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = _mm512_fmadd_ph(acc[i], b, c);
  }
  __m512 s = _mm512_setzero_ps();
  for (int i = 0; i < PEAK_CHAINS; i++) {  // all 32 lanes: the two halves widened apart
    const __m512i bits = _mm512_castph_si512(acc[i]);
    s = _mm512_add_ps(s, _mm512_cvtph_ps(_mm512_castsi512_si256(bits)));
    s = _mm512_add_ps(s, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(bits, 1)));
  }
  *sink = _mm512_reduce_add_ps(s);
  return iters * PEAK_CHAINS * 64u;  // 32 lanes x (multiply + add)
}
