// SPDX-License-Identifier: MIT
// dot_peak_vnni_body.h — the INT8 dot-product throughput loop of the VNNI peaks (peak.h),
// written once for the EVEX zmm and VEX ymm forms of vpdpbusd. PEAK_CHAINS independent
// chains of acc += Σ_{t<4} u8(a[4i+t])·s8(b[4i+t]) per int32 lane; a is all 1 and b
// (1, −1, 1, −1), so each step adds 0. The including file defines, then includes this:
//   VNNI_T                 the vector type (__m512i, __m256i)
//   VNNI_SET1(x)           x broadcast to every int32 lane
//   VNNI_DPBUSD(acc, a, b) one vpdpbusd on acc's own register (an asm: the intrinsic lets
//                          GCC copy the destructive accumulator around each instruction,
//                          a register move per dot product measured as part of the peak)
//   VNNI_ADD(x, y)         lane-wise int32 sum
//   VNNI_HSUM(x)           the sum of x's lanes, as an int
//   VNNI_OPS               operations per instruction (lanes × 4 byte pairs × 2)
#pragma once

#include <stdint.h>

#include "peak.h"

_Static_assert(PEAK_CHAINS == 12, "the loop below names its 12 accumulators");

static uint64_t vnni_peak_loop(uint64_t iters, float *sink) {
  volatile int va = 0x01010101, vb = (int)0xff01ff01u;  // opaque to constant folding
  const VNNI_T a = VNNI_SET1(va), b = VNNI_SET1(vb);
  // PEAK_CHAINS = 12 accumulators, named: an array element bound to an asm operand
  // would live in memory.
  VNNI_T c0 = VNNI_SET1(0), c1 = VNNI_SET1(1), c2 = VNNI_SET1(2), c3 = VNNI_SET1(3);
  VNNI_T c4 = VNNI_SET1(4), c5 = VNNI_SET1(5), c6 = VNNI_SET1(6), c7 = VNNI_SET1(7);
  VNNI_T c8 = VNNI_SET1(8), c9 = VNNI_SET1(9), c10 = VNNI_SET1(10), c11 = VNNI_SET1(11);
  for (uint64_t it = 0; it < iters; it++) {
    VNNI_DPBUSD(c0, a, b);
    VNNI_DPBUSD(c1, a, b);
    VNNI_DPBUSD(c2, a, b);
    VNNI_DPBUSD(c3, a, b);
    VNNI_DPBUSD(c4, a, b);
    VNNI_DPBUSD(c5, a, b);
    VNNI_DPBUSD(c6, a, b);
    VNNI_DPBUSD(c7, a, b);
    VNNI_DPBUSD(c8, a, b);
    VNNI_DPBUSD(c9, a, b);
    VNNI_DPBUSD(c10, a, b);
    VNNI_DPBUSD(c11, a, b);
  }
  const VNNI_T acc[PEAK_CHAINS] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  VNNI_T s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = VNNI_ADD(s, acc[i]);
  *sink = (float)VNNI_HSUM(s);
  return iters * PEAK_CHAINS * (uint64_t)VNNI_OPS;
}
