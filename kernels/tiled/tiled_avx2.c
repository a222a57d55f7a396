// SPDX-License-Identifier: MIT
// tiled__avx2 — single-thread tiled attention, AVX2 + FMA (8 lanes). The algorithm is
// tiled/tiled_body.h; this file only picks the register tile for 16 ymm registers:
//   Q·Kᵀ: 6 query rows × 16 keys = 12 accumulators;  P·V: 6 rows × 16 columns = 12.
#include "simd/vec_avx2.h"

#define TILED_ISA AVX2  // its register tile: tiled/tiled_tiles.h
#define TILED_DIRECT_ROWS 32
#define VK_K_UNROLL 1  // micro-kernel k loop not unrolled
#include "simd/softmax.h"
#include "tiled/tiled_body.h"

TILED_KERNEL(avx2, ATTN_ISA_AVX2,
             "1 thread, AVX2+FMA register tiles 6x16 (QK^T) / 6x16 (PV), packed K, online softmax");
