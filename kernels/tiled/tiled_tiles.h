// SPDX-License-Identifier: MIT
// tiled_tiles.h — the register tiles of the tiled__<isa> kernels, one set per ISA, in the
// names tiled/tiled_body.h takes (TILED_<ISA>_MR, _NRV, _NV) plus the ISA's vector width
// in floats (_LANES, the VF_W of its vec_<isa>.h). tiled_<isa>.c builds with them, and
// omp/omp.c, which runs tiled__<isa> on each of its tasks and has no ISA flags of its own,
// reports the same tiles in the omp__<isa> records (TILED_TILES_RECORD).
//   Q·Kᵀ micro-tile  MR query rows × NRV·LANES keys
//   P·V micro-tile   MR query rows × NV·LANES columns of head_dim_v
// Each MR × (NRV or NV) accumulator block plus its B vectors and the broadcast fits the
// ISA's vector registers (16 ymm for AVX2, 32 zmm for AVX-512F, 32 q for NEON).
#pragma once

#define TILED_AVX2_LANES 8
#define TILED_AVX2_MR 6
#define TILED_AVX2_NRV 2
#define TILED_AVX2_NV 2

#define TILED_AVX512_LANES 16
#define TILED_AVX512_MR 8
#define TILED_AVX512_NRV 3
#define TILED_AVX512_NV 2

#define TILED_NEON_LANES 4
#define TILED_NEON_MR 8
#define TILED_NEON_NRV 2
#define TILED_NEON_NV 2

// The register-tile fields of a kernel record (attn.h) for tiled__<isa>'s tiles; ISA is
// AVX2, AVX512 or NEON.
#define TILED_TILES_RECORD(ISA)                                                    \
  .vec_width = TILED_##ISA##_LANES, .qk_rows = TILED_##ISA##_MR,                   \
  .qk_cols = TILED_##ISA##_NRV * TILED_##ISA##_LANES, .pv_rows = TILED_##ISA##_MR, \
  .pv_cols = TILED_##ISA##_NV * TILED_##ISA##_LANES
