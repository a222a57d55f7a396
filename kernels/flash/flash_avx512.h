// SPDX-License-Identifier: MIT
// flash_avx512.h — what every register-tile variant of flash__avx512 shares: the SIMD
// mapping, the decode row vectors, the micro-kernel unroll and prefetch, and the plan
// and path parameters of the default variant (flash_body.h: so that every variant gives
// the default's output bits), plus the variants' tiles (their entry points:
// flash_variants.h). Included by flash_avx512.c (the default, the record and the
// dispatch) and flash_<tiles>_avx512.c (one other variant each), before their
// FL_QK_* / FL_PV_* and flash/flash_body.h.
#pragma once

#include "attn.h"
#include "simd/vec_avx512.h"

// Decode row vectors (flash_decode_lanes.h, fl_lanes): 8-lane __m256, one lane per row of
// an MQA decode task (8 rows per K/V head). With an even head_dim the scores use zmm
// registers, the 8 rows twice over a pair of head_dim elements (fl_lanes_qk_pairs: 16 keys
// per pass); the one-element loop (odd head_dim) has 16 ymm registers (no AVX512VL here): 8
// score accumulators, the Q̂ᵀ row vector and the broadcast K element (docs/design.md).
#define FL_RV_W 8
typedef __m256 fl_rv_t;
static inline fl_rv_t fl_rv_zero(void) {
  return _mm256_setzero_ps();
}
static inline fl_rv_t fl_rv_load(const float *p) {
  return _mm256_loadu_ps(p);
}
static inline void fl_rv_store(float *p, fl_rv_t x) {
  _mm256_storeu_ps(p, x);
}
static inline fl_rv_t fl_rv_fma_bcast(const float *k, fl_rv_t q, fl_rv_t acc) {
  return _mm256_fmadd_ps(_mm256_broadcast_ss(k), q, acc);
}
#define FL_LANES_MAX_ROWS 8  // 9–16 rows take the packed register tiles
#define FL_DEC_BLOCK 32      // keys per decode block (and prefetch distance)
// Fused decode rows (flash_decode_rows.h): single rows (MHA) prefetch the next block's V
// rows with their P·V pass; groups of 2–4 rows (GQA) with the P·V pass on AMD CPUs, and on
// Emerald Rapids (Intel model 0xCF) for f32, f16 and bf16 rows where each head's rows are
// contiguous (dense, paged; not q8_0, not a ragged batch's); with the scores otherwise
// (each the faster where measured: docs/design.md). A run-time choice, once per call; the
// output bits are the same either way.
#define FL_DEC_PF_V_PV(t, contiguous)                                                              \
  (attn_cpu_vendor_amd() || ((contiguous) && (t) != ATTN_DTYPE_Q8_0 && attn_cpu_intel_model(0xcf)) \
       ? 4                                                                                         \
       : 1)

// One decode row reads its K rows one at a time, front to back (flash_decode_rows.h), the
// order the hardware prefetchers follow best; the same bits as interleaved rows.
#define FL_DEC_KEYS1 1

#define VK_K_UNROLL 2  // micro-kernel k loop unrolled 2× (same FMA order; docs/design.md)
// The spread-out next-tile prefetch (simd/prefetch.h) asks for L2 (prefetcht1), not L1:
// the next K and V tiles (2 × 64 KiB at D128) do not fit L1 anyway.
#define VK_PF_LOCALITY 2

// The default variant's plan and paths, for every variant (flash_body.h).
#define FL_DEC_ROWS 8    // fewer rows: the fused decode pass
#define FL_PLAN_NR 48    // tile_kv a multiple of 48 keys
#define FL_ROW_BLOCK 48  // rows per Q·Kᵀ → softmax → P·V block
#define FL_LINKAGE       // the variants' entry points are called from flash_avx512.c

// The register-tile variants, MR rows × NV vectors of 16 floats (≤ 32 zmm registers:
// MR·NV accumulators + NV B vectors + 1 broadcast):
//   0  8x48/6x64   Q·Kᵀ 24 + 3 + 1, P·V 24 + 4 + 1 (the default)
//   1  12x32/8x32  Q·Kᵀ 24 + 2 + 1 (14 loads per 24 FMAs), P·V 16 + 2 + 1
//   2  6x64/8x48   Q·Kᵀ 24 + 4 + 1 (10 loads per 24 FMAs), P·V 24 + 3 + 1
// (flash_avx512.h and flash_avx2.h each hold this table with their own ISA's numbers:
// the same shape, other data.)
#define FL_RT0_QK_MR 8
#define FL_RT0_QK_NV 3
#define FL_RT0_PV_MR 6
#define FL_RT0_PV_NV 4
#define FL_RT1_QK_MR 12
#define FL_RT1_QK_NV 2
#define FL_RT1_PV_MR 8
#define FL_RT1_PV_NV 2
#define FL_RT2_QK_MR 6
#define FL_RT2_QK_NV 4
#define FL_RT2_PV_MR 8
#define FL_RT2_PV_NV 3

// The variants' entry points (defined by flash_body.h in each variant's file).
#include "flash/flash_variants.h"
