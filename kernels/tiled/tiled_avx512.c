// SPDX-License-Identifier: MIT
// tiled__avx512 — single-thread tiled attention, AVX-512F (16 lanes). The algorithm is
// tiled/tiled_body.h; this file only picks the register tile for 32 zmm registers:
//   Q·Kᵀ: 8 query rows × 48 keys = 24 accumulators (11 loads per 24 FMAs; why not 8×32:
//         docs/design.md);  P·V: 8 rows × 32 columns = 16.
#include "simd/vec_avx512.h"

#define TILED_ISA AVX512  // its register tile: tiled/tiled_tiles.h
#define TILED_DIRECT_ROWS 32
#define VK_K_UNROLL 2  // micro-kernel k loop unrolled 2× (same FMA order; docs/design.md)
#include "simd/softmax.h"
#include "tiled/tiled_body.h"

TILED_KERNEL(avx512, ATTN_ISA_AVX512F,
             "1 thread, AVX-512F register tiles 8x48 (QK^T) / 8x32 (PV), packed K, online softmax");
