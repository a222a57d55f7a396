// SPDX-License-Identifier: MIT
// The AVX512-VNNI INT8 dot-product throughput loop (peak.h): the VNNI body
// (dot_peak_vnni_body.h) on the EVEX vpdpbusd zmm. Compiled with only AVX512-VNNI's flags.
#include <immintrin.h>

#define VNNI_T __m512i
#define VNNI_SET1(x) _mm512_set1_epi32(x)
#define VNNI_DPBUSD(acc, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b))
#define VNNI_ADD(x, y) _mm512_add_epi32(x, y)
#define VNNI_HSUM(x) _mm512_reduce_add_epi32(x)
#define VNNI_OPS 128u  // 16 lanes x 4 byte pairs x (multiply + add)
#include "dot_peak_vnni_body.h"

uint64_t attn_peak_loop__avx512vnni(uint64_t iters, float *sink) {
  return vnni_peak_loop(iters, sink);
}
