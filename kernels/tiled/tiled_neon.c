// SPDX-License-Identifier: MIT
// tiled__neon — single-thread tiled attention, aarch64 Advanced SIMD (4 lanes). The
// algorithm is tiled/tiled_body.h; this file only picks the register tile for 32 q
// registers:  Q·Kᵀ: 8 query rows × 8 keys = 16 accumulators;  P·V: 8 rows × 8 columns.
#include "simd/vec_neon.h"
#include "tiled/tiled_tiles.h"

#define TILED_MR TILED_NEON_MR
#define TILED_NRV TILED_NEON_NRV
#define TILED_NV TILED_NEON_NV
#define TILED_DIRECT_ROWS 32
#define VK_K_UNROLL 1  // micro-kernel k loop not unrolled
#include "simd/softmax.h"
#include "tiled/tiled_body.h"
_Static_assert(VF_W == TILED_NEON_LANES, "tiled_tiles.h: the vector width of vec_neon.h");

const attn_kernel attn_kernel_tiled__neon = {
    .name = "tiled__neon",
    .summary = "1 thread, NEON register tiles 8x8 (QK^T) / 8x8 (PV), packed K, online softmax",
    .required_isa = ATTN_ISA_NEON,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_KV_ALL,  // K/V types widened per head
    .workspace = tiled_workspace,
    .run = tiled_run,
    TILED_RECORD_TILES,
};
