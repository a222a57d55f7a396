// SPDX-License-Identifier: MIT
// The AVX512-BF16 dot-product throughput loop (peak.h): PEAK_CHAINS independent chains of
// vdpbf16ps zmm, acc += a[2i]·b[2i] + a[2i+1]·b[2i+1] per float32 lane. Compiled with only
// AVX512-BF16's flags. a holds (x, −x) pairs and b (y, y), so each step adds x·y − x·y = 0
// and the accumulators keep their start values (no overflow, no denormals).
#include <immintrin.h>

#include "peak.h"

uint64_t attn_peak_loop__avx512bf16(uint64_t iters, float *sink) {
  volatile float vx = 0x1p-4f, vy = 0x1p-3f;  // opaque to constant folding
  const __m512 x = _mm512_set1_ps(vx), y = _mm512_set1_ps(vy);
  const __m512 xpm = _mm512_mask_sub_ps(x, 0xAAAA, _mm512_setzero_ps(), x);  // x, −x, …
  const __m512bh a = _mm512_cvtne2ps_pbh(xpm, xpm), b = _mm512_cvtne2ps_pbh(y, y);
  __m512 acc[PEAK_CHAINS];
#pragma GCC unroll 16
  for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = _mm512_set1_ps(1.0f + (float)i * 0x1p-10f);
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = _mm512_add_ps(s, acc[i]);
  *sink = _mm512_reduce_add_ps(s);
  return iters * PEAK_CHAINS * 64u;  // 16 lanes x 2 pairs x (multiply + add)
}
