// SPDX-License-Identifier: MIT
// flash__neon — OpenMP FlashAttention-2-style kernel, aarch64 Advanced SIMD (4 lanes).
// The algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file
// only picks the register tiles for 32 q registers:
//   Q·Kᵀ: 8 query rows × 8 keys  = 16 accumulators (+2 K vectors, 1 broadcast)
//   P·V:  6 query rows × 16 columns = 24 accumulators (+4 V vectors, 1 broadcast)
#include "simd/vec_neon.h"
// The decode row vector: one q register, 4 rows (flash_decode_lanes.h).
#include "flash/flash_rv_vf.h"

#define FL_QK_MR 8
#define FL_QK_NV 2
#define FL_PV_MR 6
#define FL_PV_NV 4
#define FL_RUN flash_neon_run
#define FL_WORKSPACE flash_neon_workspace
#define FL_LINKAGE static  // one variant: the record below calls the entry points directly
// The plan and paths (flash_body.h): row blocks of 48 rows (both tiles' multiple), tile_kv
// a multiple of the Q·Kᵀ tile's 8 keys, the fused decode pass below FL_QK_MR rows.
#define FL_ROW_BLOCK (FL_QK_MR * FL_PV_MR)
#define FL_PLAN_NR (FL_QK_NV * VF_W)
#define FL_DEC_ROWS 8
#define VK_K_UNROLL 1     // micro-kernel k loop not unrolled
#define VK_PF_LOCALITY 3  // next-tile prefetch into L1
// Fused decode rows (flash_decode_rows.h): one row interleaves the K rows of all its score
// accumulators; every group prefetches V with the scores.
#define FL_DEC_KEYS1 FL_DEC_ACC
#define FL_DEC_PF_V_PV(t, contiguous) 0
// Rows in vector lanes (flash_decode_lanes.h): up to two row vectors (8 rows), in blocks of
// 64 keys (also the prefetch distance).
#define FL_LANES_MAX_ROWS (2 * FL_RV_W)
#define FL_DEC_BLOCK 64
#include "flash/flash_body.h"

const attn_kernel attn_kernel_flash__neon = {
    .name = "flash__neon",
    .summary =
        "OpenMP FlashAttention-2 style, NEON 8x8 QK^T / 6x16 PV tiles, GQA-shared packed "
        "K/V, causal/window tile skipping, split-KV decode, every option and f16/bf16/q8_0 K/V "
        "native, ragged and paged batches in place",
    .required_isa = ATTN_ISA_NEON,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_SPLIT | ATTN_CAP_OPT_ALL |
            ATTN_CAP_KV_ALL | ATTN_CAP_LAYOUT_ALL,
    .workspace = FL_WORKSPACE,
    .run = FL_RUN,
    FL_RECORD_TILES,
};
