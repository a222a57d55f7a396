// SPDX-License-Identifier: MIT
// tiled__neon — single-thread tiled attention, aarch64 Advanced SIMD (4 lanes). The
// algorithm is tiled/tiled_body.h; this file only picks the register tile for 32 q
// registers:  Q·Kᵀ: 8 query rows × 8 keys = 16 accumulators;  P·V: 8 rows × 8 columns.
#include "simd/vec_neon.h"

#define TILED_ISA NEON  // its register tile: tiled/tiled_tiles.h
#define TILED_DIRECT_ROWS 32
#define VK_K_UNROLL 1  // micro-kernel k loop not unrolled
#include "simd/softmax.h"
#include "tiled/tiled_body.h"

TILED_KERNEL(neon, ATTN_ISA_NEON,
             "1 thread, NEON register tiles 8x8 (QK^T) / 8x8 (PV), packed K, online softmax");
