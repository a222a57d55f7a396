// SPDX-License-Identifier: MIT
// flash__avx2 — OpenMP FlashAttention-2-style kernel, AVX2 + FMA (8 lanes). The
// algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file only
// picks the register tiles for 16 ymm registers:
//   Q·Kᵀ: 6 query rows × 16 keys = 12 accumulators (+2 K vectors, 1 broadcast)
//   P·V:  6 query rows × 16 columns = 12 accumulators (+2 V vectors, 1 broadcast)
#include "simd/vec_avx2.h"

#define FL_QK_MR 6
#define FL_QK_NV 2
#define FL_PV_MR 6
#define FL_PV_NV 2
#define VK_K_UNROLL 4  // micro-kernel k loop unrolled 4× (docs/tuning.md)
#define FL_RUN flash_avx2_run
#define FL_WORKSPACE flash_avx2_workspace
#include "flash/flash_body.h"

const attn_kernel attn_kernel_flash__avx2 = {
    .name = "flash__avx2",
    .summary =
        "OpenMP FlashAttention-2 style, AVX2 6x16 QK^T / 6x16 PV tiles, GQA-shared "
        "packed K/V, causal/window tile skipping, split-KV decode, every option and f16/bf16/q8_0 "
        "K/V native",
    .required_isa = ATTN_ISA_AVX2,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_OPT_ALL | ATTN_CAP_KV_ALL,
    .workspace = FL_WORKSPACE,
    .run = FL_RUN,
    FL_RECORD_TILES,
};
