// SPDX-License-Identifier: MIT
// flash__neon — OpenMP FlashAttention-2-style kernel, aarch64 Advanced SIMD (4 lanes).
// The algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file
// only picks the register tiles for 32 q registers:
//   Q·Kᵀ: 8 query rows × 8 keys  = 16 accumulators (+2 K vectors, 1 broadcast)
//   P·V:  6 query rows × 16 columns = 24 accumulators (+4 V vectors, 1 broadcast)
#include "simd/vec_neon.h"

#define FL_QK_MR 8
#define FL_QK_NV 2
#define FL_PV_MR 6
#define FL_PV_NV 4
#define FL_RUN flash_neon_run
#define FL_WORKSPACE flash_neon_workspace
#include "flash/flash_body.h"

const attn_kernel attn_kernel_flash__neon = {
    .name = "flash__neon",
    .summary =
        "OpenMP FlashAttention-2 style, NEON 8x8 QK^T / 6x16 PV tiles, GQA-shared packed "
        "K/V, causal/window tile skipping, split-KV decode, every option and f16/bf16/q8_0 K/V "
        "native",
    .required_isa = ATTN_ISA_NEON,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_SPLIT | ATTN_CAP_OPT_ALL |
            ATTN_CAP_KV_ALL,
    .workspace = FL_WORKSPACE,
    .run = FL_RUN,
    FL_RECORD_TILES,
};
