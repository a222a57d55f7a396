// SPDX-License-Identifier: MIT
// dot_peak_vnni_body.h — the INT8 dot-product throughput loop of the VNNI peaks (peak.h),
// written once for the EVEX zmm and VEX ymm forms of vpdpbusd. PEAK_CHAINS independent
// chains of acc += Σ_{t<4} u8(a[4i+t])·s8(b[4i+t]) per int32 lane; a is all 1 and b
// (1, −1, 1, −1), so each step adds 0. The including file defines, then includes this:
//   VNNI_T     the vector type (__m512i, __m256i)
//   VNNI_INSN  the instruction with its encoding prefix ("vpdpbusd", "%{vex%} vpdpbusd": braces
//   escaped in asm) VNNI_LOOP  the name of the loop function this defines (peak.h)
// One asm statement holds the 12 instructions, each on its accumulator's own register
// (the intrinsic lets GCC copy the destructive accumulator around each instruction, a
// register move per dot product that would be measured as part of the peak). Operands
// 0..11 are the accumulators, 12 and 13 a and b; "x" (xmm/ymm/zmm 0–15) suits both
// encodings.
#pragma once

#include <stdint.h>
#include <string.h>

#include "peak.h"

_Static_assert(PEAK_CHAINS == 12, "the asm below names its 12 accumulators");

#define VNNI_STEP(i) VNNI_INSN " %13, %12, %" #i "\n\t"

static VNNI_T vnni_set1(int32_t x) {  // x in every int32 lane
  int32_t lanes[sizeof(VNNI_T) / 4];
  for (size_t i = 0; i < sizeof lanes / sizeof lanes[0]; i++) lanes[i] = x;
  VNNI_T v;
  memcpy(&v, lanes, sizeof v);
  return v;
}

uint64_t VNNI_LOOP(uint64_t iters, float *sink) {
  volatile int32_t va = 0x01010101, vb = (int32_t)0xff01ff01u;  // opaque to constant folding
  const VNNI_T a = vnni_set1(va), b = vnni_set1(vb);
  VNNI_T c0 = vnni_set1(0), c1 = vnni_set1(1), c2 = vnni_set1(2), c3 = vnni_set1(3);
  VNNI_T c4 = vnni_set1(4), c5 = vnni_set1(5), c6 = vnni_set1(6), c7 = vnni_set1(7);
  VNNI_T c8 = vnni_set1(8), c9 = vnni_set1(9), c10 = vnni_set1(10), c11 = vnni_set1(11);
  for (uint64_t it = 0; it < iters; it++)
    __asm__(VNNI_STEP(0) VNNI_STEP(1) VNNI_STEP(2) VNNI_STEP(3) VNNI_STEP(4) VNNI_STEP(5)
                VNNI_STEP(6) VNNI_STEP(7) VNNI_STEP(8) VNNI_STEP(9) VNNI_STEP(10) VNNI_STEP(11)
            : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7),
              "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11)
            : "x"(a), "x"(b));
  const VNNI_T acc[PEAK_CHAINS] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  int64_t total = 0;
  for (int i = 0; i < PEAK_CHAINS; i++) {
    int32_t lanes[sizeof(VNNI_T) / 4];
    memcpy(lanes, &acc[i], sizeof lanes);
    for (size_t l = 0; l < sizeof lanes / sizeof lanes[0]; l++) total += lanes[l];
  }
  *sink = (float)total;
  return iters * PEAK_CHAINS * (uint64_t)sizeof(VNNI_T) * 2u;  // lanes x 4 pairs x (mul + add)
}
