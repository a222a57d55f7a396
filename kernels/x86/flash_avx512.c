// SPDX-License-Identifier: MIT
// flash__avx512 — OpenMP FlashAttention-2-style kernel, AVX-512F (16 lanes). The
// algorithm is flash/flash_body.h and the task split core/flash_plan.h; this file only
// picks the register tiles for 32 zmm registers:
//   Q·Kᵀ: 8 query rows × 32 keys = 16 accumulators (+2 K vectors, 1 broadcast)
//   P·V:  6 query rows × 64 columns = 24 accumulators (+4 V vectors, 1 broadcast)
#include "simd/vec_avx512.h"

#define FL_QK_MR 8
#define FL_QK_NV 2
#define FL_PV_MR 6
#define FL_PV_NV 4
#define FL_RUN flash_avx512_run
#define FL_WORKSPACE flash_avx512_workspace
#include "flash/flash_body.h"

const attn_kernel attn_kernel_flash__avx512 = {
    .name = "flash__avx512",
    .summary = "OpenMP FlashAttention-2 style, AVX-512F 8x32 QK^T / 6x64 PV tiles, GQA-shared "
               "packed K/V, causal tile skipping, split-KV decode",
    .required_isa = ATTN_ISA_AVX512F,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS,
    .workspace = FL_WORKSPACE,
    .run = FL_RUN,
};
