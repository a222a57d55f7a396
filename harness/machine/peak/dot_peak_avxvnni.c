// SPDX-License-Identifier: MIT
// The AVX-VNNI INT8 dot-product throughput loop (peak.h): PEAK_CHAINS independent chains
// of the VEX-encoded vpdpbusd ymm (the form of AVX2-class cores without AVX-512), acc +=
// Σ_{t<4} u8(a[4i+t])·s8(b[4i+t]) per int32 lane. Compiled with AVX2 + AVX-VNNI only, so
// the compiler cannot pick the EVEX form. a is all 1 and b (1, −1, 1, −1): each step adds 0.
#include <immintrin.h>

#include "peak.h"

// acc += a·b as one VEX-encoded vpdpbusd on the accumulator's own register. The intrinsic lets
// GCC copy the destructive accumulator around each instruction (a register move per
// dot product inside the loop, measured as part of the peak); the asm pins it.
_Static_assert(PEAK_CHAINS == 12, "the loop below names its 12 accumulators");
#define DPBUSD(acc, a, b) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b))

uint64_t attn_peak_loop__avxvnni(uint64_t iters, float *sink) {
  volatile int va = 0x01010101, vb = (int)0xff01ff01u;  // opaque to constant folding
  const __m256i a = _mm256_set1_epi32(va), b = _mm256_set1_epi32(vb);
  // PEAK_CHAINS = 12 accumulators, named: an array element bound to an asm operand
  // would live in memory.
  __m256i c0 = _mm256_set1_epi32(0), c1 = _mm256_set1_epi32(1), c2 = _mm256_set1_epi32(2),
          c3 = _mm256_set1_epi32(3), c4 = _mm256_set1_epi32(4), c5 = _mm256_set1_epi32(5);
  __m256i c6 = _mm256_set1_epi32(6), c7 = _mm256_set1_epi32(7), c8 = _mm256_set1_epi32(8),
          c9 = _mm256_set1_epi32(9), c10 = _mm256_set1_epi32(10), c11 = _mm256_set1_epi32(11);
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
  const __m256i acc[PEAK_CHAINS] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  __m256i s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = _mm256_add_epi32(s, acc[i]);
  int lanes[8];
  _mm256_storeu_si256((__m256i *)lanes, s);
  int t = 0;
  for (int i = 0; i < 8; i++) t += lanes[i];
  *sink = (float)t;
  return iters * PEAK_CHAINS * 64u;  // 8 lanes x 4 byte pairs x (multiply + add)
}
