// SPDX-License-Identifier: MIT
// The aarch64 INT8 dot-product throughput loop (peak.h): PEAK_CHAINS independent chains of
// sdot v.4s, acc += Σ_{t<4} a[4i+t]·b[4i+t] per int32 lane. Compiled with only +dotprod.
// a is all 1 and b (1, −1, 1, −1): each step adds 0.
#include <arm_neon.h>

#include "peak.h"

uint64_t attn_peak_loop__neon_dotprod(uint64_t iters, float *sink) {
  volatile uint32_t va = 0x01010101u, vb = 0xff01ff01u;  // opaque to constant folding
  const int8x16_t a = vreinterpretq_s8_u32(vdupq_n_u32(va));
  const int8x16_t b = vreinterpretq_s8_u32(vdupq_n_u32(vb));
  int32x4_t acc[PEAK_CHAINS];
#pragma GCC unroll 16
  for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = vdupq_n_s32(i);
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = vdotq_s32(acc[i], a, b);
  }
  int32x4_t s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = vaddq_s32(s, acc[i]);
  *sink = (float)vaddvq_s32(s);
  return iters * PEAK_CHAINS * 32u;  // 4 lanes x 4 byte pairs x (multiply + add)
}
