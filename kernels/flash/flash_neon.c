// SPDX-License-Identifier: MIT
// flash__neon — OpenMP FlashAttention-2-style kernel, aarch64 Advanced SIMD (4 lanes).
// The algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file
// only picks the register tiles for 32 q registers:
//   Q·Kᵀ: 8 query rows × 8 keys  = 16 accumulators (+2 K vectors, 1 broadcast)
//   P·V:  6 query rows × 16 columns = 24 accumulators (+4 V vectors, 1 broadcast)
#include "simd/vec_neon.h"

// dst[d·ds + c] = src[c·ss + d], c, d < 4: the 4×4 in-register transpose (trn1/trn2 on
// 32-bit lanes, then the 64-bit halves recombined).
static inline void fl_transpose4(const float *src, int64_t ss, float *dst, int64_t ds) {
  const float32x4x2_t t01 = vtrnq_f32(vld1q_f32(src), vld1q_f32(src + ss));
  const float32x4x2_t t23 = vtrnq_f32(vld1q_f32(src + 2 * ss), vld1q_f32(src + 3 * ss));
  // t01.val[0] = {r0[0], r1[0], r0[2], r1[2]}, t01.val[1] = {r0[1], r1[1], r0[3], r1[3]}
  vst1q_f32(dst, vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0])));
  vst1q_f32(dst + ds, vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1])));
  vst1q_f32(dst + 2 * ds, vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0])));
  vst1q_f32(dst + 3 * ds, vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1])));
}

#define FL_QK_MR 8
#define FL_QK_NV 2
#define FL_PV_MR 6
#define FL_PV_NV 4
#define FL_TRANSPOSE_BLOCK fl_transpose4
#define FL_RUN flash_neon_run
#define FL_WORKSPACE flash_neon_workspace
#include "flash/flash_body.h"

const attn_kernel attn_kernel_flash__neon = {
    .name = "flash__neon",
    .summary = "OpenMP FlashAttention-2 style, NEON 8x8 QK^T / 6x16 PV tiles, GQA-shared packed "
               "K/V, causal tile skipping, split-KV decode",
    .required_isa = ATTN_ISA_NEON,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS,
    .workspace = FL_WORKSPACE,
    .run = FL_RUN,
};
