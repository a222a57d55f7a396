// SPDX-License-Identifier: MIT
// flash_avx2.h — what every register-tile variant of flash__avx2 shares: the SIMD
// mapping, the micro-kernel unroll, and the plan and path parameters of the default
// variant (flash_body.h: so that every variant gives the default's output bits), plus the
// variants' tiles (their entry points: flash_variants.h). Included by flash_avx2.c (the
// default, the record and the dispatch) and flash_<tiles>_avx2.c (one other variant
// each), before their FL_QK_* / FL_PV_* and flash/flash_body.h.
#pragma once

#include "attn.h"
#include "simd/vec_avx2.h"
// The decode row vector: one ymm, 8 rows (flash_decode_lanes.h).
#include "flash/flash_rv_vf.h"

#define VK_K_UNROLL 4  // micro-kernel k loop unrolled 4× (same FMA order; docs/design.md)
// The next-tile prefetch (simd/prefetch.h) asks for L1 (prefetcht0).
#define VK_PF_LOCALITY 3

// The default variant's plan and paths, for every variant (flash_body.h).
#define FL_DEC_ROWS 6  // fewer rows: the fused decode pass
// Fused decode rows (flash_decode_rows.h): float32 groups of 1–4 rows prefetch the next
// block's V rows with their P·V passes on AMD CPUs, and on Emerald Rapids (Intel model
// 0xCF) where each head's rows are contiguous (dense, paged; not a ragged batch's); with
// the scores on other CPUs, and the other K/V types everywhere (each the faster where
// measured: docs/design.md). A run-time choice, once per call; the output bits are the same.
#define FL_DEC_PF_V_PV(t, contiguous)                                              \
  ((t) == ATTN_DTYPE_F32 &&                                                        \
           (attn_cpu_vendor_amd() || ((contiguous) && attn_cpu_intel_model(0xcf))) \
       ? 4                                                                         \
       : 0)
// One decode row reads its K rows one at a time, front to back (flash_decode_rows.h), the
// order the hardware prefetchers follow best; the same bits as interleaved rows.
#define FL_DEC_KEYS1 1
// Rows in vector lanes (flash_decode_lanes.h): up to two row vectors (16 rows), in blocks
// of 64 keys (also the prefetch distance).
#define FL_LANES_MAX_ROWS (2 * FL_RV_W)
#define FL_DEC_BLOCK 64
#define FL_PLAN_NR 16    // tile_kv a multiple of 16 keys
#define FL_ROW_BLOCK 36  // rows per Q·Kᵀ → softmax → P·V block
#define FL_LINKAGE       // the variants' entry points are called from flash_avx2.c

// The register-tile variants, MR rows × NV vectors of 8 floats (16 ymm registers:
// MR·NV accumulators + the B vectors + the broadcasts live at once):
//   0  6x16/6x16  Q·Kᵀ 12 + 2 + 1, P·V 12 + 2 + 1 (the default)
//   1  4x24/4x24  Q·Kᵀ 12 + 3 + 1, P·V 12 + 3 + 1
//   2  3x32/6x16  Q·Kᵀ 12 accumulators + 1 broadcast, the 4 K vectors as FMA memory
//                 operands (or 3 broadcasts + 1 K vector); P·V the default's
// (flash_avx512.h and flash_avx2.h each hold this table with their own ISA's numbers:
// the same shape, other data.)
#define FL_RT0_QK_MR 6
#define FL_RT0_QK_NV 2
#define FL_RT0_PV_MR 6
#define FL_RT0_PV_NV 2
#define FL_RT1_QK_MR 4
#define FL_RT1_QK_NV 3
#define FL_RT1_PV_MR 4
#define FL_RT1_PV_NV 3
#define FL_RT2_QK_MR 3
#define FL_RT2_QK_NV 4
#define FL_RT2_PV_MR 6
#define FL_RT2_PV_NV 2

// The variants' entry points (defined by flash_body.h in each variant's file).
#include "flash/flash_variants.h"
