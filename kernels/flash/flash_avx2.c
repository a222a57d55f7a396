// SPDX-License-Identifier: MIT
// flash__avx2 — OpenMP FlashAttention-2-style kernel, AVX2 + FMA (8 lanes). The
// algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file only
// picks the register tiles for 16 ymm registers:
//   Q·Kᵀ: 6 query rows × 16 keys = 12 accumulators (+2 K vectors, 1 broadcast)
//   P·V:  6 query rows × 16 columns = 12 accumulators (+2 V vectors, 1 broadcast)
#include "simd/vec_avx2.h"

// dst[d·ds + c] = src[c·ss + d], c, d < 8: the 8×8 in-register transpose (32-bit lanes,
// 64-bit pairs, then 128-bit halves).
static inline void fl_transpose8(const float *src, int64_t ss, float *dst, int64_t ds) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * ss);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // r[i + j] = column 4k + j of rows i..i+3, in lane k
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int j = 0; j < 4; j++) {  // columns j and 4 + j: low / high lanes of rows 0-3 | 4-7
    _mm256_storeu_ps(dst + j * ds, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
    _mm256_storeu_ps(dst + (4 + j) * ds, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
  }
}

#define FL_QK_MR 6
#define FL_QK_NV 2
#define FL_PV_MR 6
#define FL_PV_NV 2
#define FL_TRANSPOSE_BLOCK fl_transpose8
#define FL_RUN flash_avx2_run
#define FL_WORKSPACE flash_avx2_workspace
#include "flash/flash_body.h"

const attn_kernel attn_kernel_flash__avx2 = {
    .name = "flash__avx2",
    .summary = "OpenMP FlashAttention-2 style, AVX2 6x16 QK^T / 6x16 PV tiles, GQA-shared "
               "packed K/V, causal tile skipping, split-KV decode",
    .required_isa = ATTN_ISA_AVX2,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS,
    .workspace = FL_WORKSPACE,
    .run = FL_RUN,
};
