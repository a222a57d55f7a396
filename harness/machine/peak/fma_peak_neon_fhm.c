// SPDX-License-Identifier: MIT
// The aarch64 FP16 throughput loop (peak.h): PEAK_CHAINS independent chains of fmlal v.4s
// (binary16 products of the low halves, widened and added in float32). Compiled with only
// +fp16fml. Products 2^-13·2^-13 = 2^-26 are below half an ulp of the accumulators (near
// 1), so they stay put; both factors are normal binary16 numbers.
#include <arm_neon.h>

#include "peak.h"

uint64_t attn_peak_loop__neon_fhm(uint64_t iters, float *sink) {
  volatile uint16_t vx = 0x0c00;  // binary16 2^-13, opaque to constant folding
  const float16x8_t x = vreinterpretq_f16_u16(vdupq_n_u16(vx));
  float32x4_t acc[PEAK_CHAINS];
#pragma GCC unroll 16
  for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = vdupq_n_f32(1.0f + (float)i * 0x1p-10f);
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = vfmlalq_low_f16(acc[i], x, x);
  }
  float32x4_t s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = vaddq_f32(s, acc[i]);
  *sink = vaddvq_f32(s);
  return iters * PEAK_CHAINS * 8u;  // 4 lanes x (multiply + add)
}
