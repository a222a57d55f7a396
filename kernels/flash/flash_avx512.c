// SPDX-License-Identifier: MIT
// flash__avx512 — OpenMP FlashAttention-2-style kernel, AVX-512F (16 lanes). The
// algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file only
// picks the register tiles for 32 zmm registers:
//   Q·Kᵀ: 8 query rows × 48 keys = 24 accumulators (+3 K vectors, 1 broadcast): 11 loads
//         per 24 FMAs, at the FMA bound on Intel models (8×32 is not: docs/mca.md)
//   P·V:  6 query rows × 64 columns = 24 accumulators (+4 V vectors, 1 broadcast)
#include "simd/vec_avx512.h"

// Decode row vectors (flash_decode.h, fl_lanes): 8-lane __m256, one lane per row of an
// MQA decode task (8 rows per K/V head). (No AVX512VL here, so 16 ymm registers: 8 score
// accumulators, the Q̂ᵀ row vector and the broadcast K element.) Why these choices:
// docs/tuning.md.
#define FL_RV_W 8
typedef __m256 fl_rv_t;
static inline fl_rv_t fl_rv_zero(void) {
  return _mm256_setzero_ps();
}
static inline fl_rv_t fl_rv_load(const float *p) {
  return _mm256_loadu_ps(p);
}
static inline void fl_rv_store(float *p, fl_rv_t x) {
  _mm256_storeu_ps(p, x);
}
static inline fl_rv_t fl_rv_fma_bcast(const float *k, fl_rv_t q, fl_rv_t acc) {
  return _mm256_fmadd_ps(_mm256_broadcast_ss(k), q, acc);
}
#define FL_LANES_MAX_ROWS 8  // 9–16 rows take the packed 8×48 tiles
#define FL_DEC_BLOCK 32      // keys per decode block (and prefetch distance)
// Fused decode rows (flash_decode.h): single rows (MHA) prefetch the next block's V rows
// with their P·V pass, groups of 2–4 rows (GQA) with the scores (docs/tuning.md).
#define FL_DEC_PF_V_PV 1

#define FL_QK_MR 8
#define FL_QK_NV 3
#define FL_PV_MR 6
#define FL_PV_NV 4
#define VK_K_UNROLL 2  // micro-kernel k loop unrolled 2× (docs/tuning.md)
// The spread-out next-tile prefetch (simd/prefetch.h) asks for L2 (prefetcht1), not L1:
// the next K and V tiles (2 × 64 KiB at D128) do not fit L1 anyway.
#define VK_PF_LOCALITY 2
#define FL_RUN flash_avx512_run
#define FL_WORKSPACE flash_avx512_workspace
#include "flash/flash_body.h"

const attn_kernel attn_kernel_flash__avx512 = {
    .name = "flash__avx512",
    .summary =
        "OpenMP FlashAttention-2 style, AVX-512F 8x48 QK^T / 6x64 PV tiles, GQA-shared "
        "packed K/V, causal/window tile skipping, split-KV decode, every option and f16/bf16/q8_0 "
        "K/V native",
    .required_isa = ATTN_ISA_AVX512F,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_OPT_ALL | ATTN_CAP_KV_ALL,
    .workspace = FL_WORKSPACE,
    .run = FL_RUN,
    FL_RECORD_TILES,
};
