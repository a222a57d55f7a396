// SPDX-License-Identifier: MIT
// The AVX-VNNI INT8 dot-product throughput loop (peak.h): the VNNI body
// (dot_peak_vnni_body.h) on the VEX-encoded vpdpbusd ymm (the form of AVX2-class cores
// without AVX-512). Compiled with AVX2 + AVX-VNNI only, so the compiler cannot pick the
// EVEX form.
#include <immintrin.h>

// The sum of the 8 int32 lanes of a ymm.
static inline int hsum_epi32_256(__m256i x) {
  int lanes[8];
  _mm256_storeu_si256((__m256i *)lanes, x);
  int t = 0;
  for (int i = 0; i < 8; i++) t += lanes[i];
  return t;
}

#define VNNI_T __m256i
#define VNNI_SET1(x) _mm256_set1_epi32(x)
#define VNNI_DPBUSD(acc, a, b) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b))
#define VNNI_ADD(x, y) _mm256_add_epi32(x, y)
#define VNNI_HSUM(x) hsum_epi32_256(x)
#define VNNI_OPS 64u  // 8 lanes x 4 byte pairs x (multiply + add)
#include "dot_peak_vnni_body.h"

uint64_t attn_peak_loop__avxvnni(uint64_t iters, float *sink) {
  return vnni_peak_loop(iters, sink);
}
