// SPDX-License-Identifier: MIT
// The AVX512-VNNI INT8 dot-product throughput loop (peak.h): PEAK_CHAINS independent
// chains of vpdpbusd zmm, acc += Σ_{t<4} u8(a[4i+t])·s8(b[4i+t]) per int32 lane. Compiled
// with only AVX512-VNNI's flags. a is all 1 and b (1, −1, 1, −1), so each step adds 0.
#include <immintrin.h>

#include "peak.h"

// acc += a·b as one EVEX vpdpbusd on the accumulator's own register. The intrinsic lets
// GCC copy the destructive accumulator around each instruction (a register move per
// dot product inside the loop, measured as part of the peak); the asm pins it.
_Static_assert(PEAK_CHAINS == 12, "the loop below names its 12 accumulators");
#define DPBUSD(acc, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))

uint64_t attn_peak_loop__avx512vnni(uint64_t iters, float *sink) {
  volatile int va = 0x01010101, vb = (int)0xff01ff01u;  // opaque to constant folding
  const __m512i a = _mm512_set1_epi32(va), b = _mm512_set1_epi32(vb);
  // PEAK_CHAINS = 12 accumulators, named: an array element bound to an asm operand
  // would live in memory.
  __m512i c0 = _mm512_set1_epi32(0), c1 = _mm512_set1_epi32(1), c2 = _mm512_set1_epi32(2),
          c3 = _mm512_set1_epi32(3), c4 = _mm512_set1_epi32(4), c5 = _mm512_set1_epi32(5);
  __m512i c6 = _mm512_set1_epi32(6), c7 = _mm512_set1_epi32(7), c8 = _mm512_set1_epi32(8),
          c9 = _mm512_set1_epi32(9), c10 = _mm512_set1_epi32(10), c11 = _mm512_set1_epi32(11);
  for (uint64_t it = 0; it < iters; it++) {
    DPBUSD(c0, a, b);
    DPBUSD(c1, a, b);
    DPBUSD(c2, a, b);
    DPBUSD(c3, a, b);
    DPBUSD(c4, a, b);
    DPBUSD(c5, a, b);
    DPBUSD(c6, a, b);
    DPBUSD(c7, a, b);
    DPBUSD(c8, a, b);
    DPBUSD(c9, a, b);
    DPBUSD(c10, a, b);
    DPBUSD(c11, a, b);
  }
  const __m512i acc[PEAK_CHAINS] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  __m512i s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = _mm512_add_epi32(s, acc[i]);
  *sink = (float)_mm512_reduce_add_epi32(s);
  return iters * PEAK_CHAINS * 128u;  // 16 lanes x 4 byte pairs x (multiply + add)
}
