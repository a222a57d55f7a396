// SPDX-License-Identifier: MIT
// The aarch64 BF16 dot-product throughput loop (peak.h): PEAK_CHAINS independent chains of
// bfdot v.4s, acc += a[2i]·b[2i] + a[2i+1]·b[2i+1] per float32 lane. Compiled with only
// +bf16. a holds (x, −x) pairs and b (y, y): each step adds 0.
#include <arm_neon.h>

#include "peak.h"

uint64_t attn_peak_loop__neon_bf16(uint64_t iters, float *sink) {
  volatile uint32_t va = 0xbd803d80u, vb = 0x3e003e00u;  // bf16 (1/16, −1/16), (1/8, 1/8)
  const bfloat16x8_t a = vreinterpretq_bf16_u32(vdupq_n_u32(va));
  const bfloat16x8_t b = vreinterpretq_bf16_u32(vdupq_n_u32(vb));
  float32x4_t acc[PEAK_CHAINS];
#pragma GCC unroll 16
  for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = vdupq_n_f32(1.0f + (float)i * 0x1p-10f);
  for (uint64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < PEAK_CHAINS; i++) acc[i] = vbfdotq_f32(acc[i], a, b);
  }
  float32x4_t s = acc[0];
  for (int i = 1; i < PEAK_CHAINS; i++) s = vaddq_f32(s, acc[i]);
  *sink = vaddvq_f32(s);
  return iters * PEAK_CHAINS * 16u;  // 4 lanes x 2 pairs x (multiply + add)
}
