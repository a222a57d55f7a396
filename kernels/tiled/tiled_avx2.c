// SPDX-License-Identifier: MIT
// tiled__avx2 — single-thread tiled attention, AVX2 + FMA (8 lanes). The algorithm is
// tiled/tiled_body.h; this file only picks the register tile for 16 ymm registers:
//   Q·Kᵀ: 6 query rows × 16 keys = 12 accumulators;  P·V: 6 rows × 16 columns = 12.
#include "simd/vec_avx2.h"
#include "tiled/tiled_tiles.h"

#define TILED_MR TILED_AVX2_MR
#define TILED_NRV TILED_AVX2_NRV
#define TILED_NV TILED_AVX2_NV
#define TILED_DIRECT_ROWS 32
#define VK_K_UNROLL 1  // micro-kernel k loop not unrolled
#include "simd/softmax.h"
#include "tiled/tiled_body.h"
_Static_assert(VF_W == TILED_AVX2_LANES, "tiled_tiles.h: the vector width of vec_avx2.h");

const attn_kernel attn_kernel_tiled__avx2 = {
    .name = "tiled__avx2",
    .summary =
        "1 thread, AVX2+FMA register tiles 6x16 (QK^T) / 6x16 (PV), packed K, online softmax",
    .required_isa = ATTN_ISA_AVX2,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_KV_ALL,  // K/V types widened per head
    .workspace = tiled_workspace,
    .run = tiled_run,
    TILED_RECORD_TILES,
};
