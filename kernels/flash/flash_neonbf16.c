// SPDX-License-Identifier: MIT
// flash__neonbf16 — the NEON flash kernel with the BF16 compute mode on BFDOT (Armv8.6
// BF16, FEAT_BF16); every other mode runs flash__neon's F32 path. Compiled with +bf16
// (the file suffix, kernels/CMakeLists.txt) and offered only when the CPU has the unit
// (ATTN_ISA_NEON_BF16). The driver is flash/flash_lp_neon.h; this file holds the layouts
// and the register tiles (docs/low-precision-kernels.md).
//
// `bfdot acc.4s, a.8h, b.2h[lane]` adds to each float32 lane i the pair product
// a[2i]·b[2·lane] + a[2i+1]·b[2·lane+1] (products of bf16 values are exact in float32). Both
// GEMMs therefore run over pairs along their reduction dimension (a u32 = one pair, the
// lower-indexed element in its low half):
//   Q·Kᵀ  Q̂ row: bf16(Q[r]) row-major, head_dim padded to d2p pairs (a multiple of 4);
//         K̂: kt[k·tkv + c] = (K[c][2k], K[c][2k+1]) — one vector = 4 keys × one pair,
//         the Q pair taken by lane from a vector of 4 pairs.
//   P·V   P̃ row: bf16(p) row-major (pairs of consecutive keys);
//         V̂: vt[j·dvp + e] = (V[2j][e], V[2j+1][e]) — one vector = 4 columns × one key pair.
// Q, K and V are rounded to nearest even by BFCVTN (the contract's rounding; K/V stored as
// f16, bf16 or q8_0 are first widened exactly); the sign of the scale is applied to the
// float32 scores.
#define LPM_MODE ATTN_COMPUTE_BF16
#define LPM_P_BYTES 2
#include "flash/flash_lp_neon.h"

#define LP16_UNIT 2  // K̂ and V̂ units: bf16 pairs

// bf16 of x[0 .. n) by BFCVTN (nearest even).
static inline void lp16_round8(const float *x, int64_t n, uint16_t *dst) {
  float32x4_t lo, hi;
  lp_load8(x, n, &lo, &hi);
  vst1q_bf16((bfloat16_t *)dst, vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(lo), hi));
}

// V̂ of one tile (see the top of the file).
static inline void lp16_pack_v(const attn_problem *p, const float *vf, int64_t nk, int64_t ncp,
                               int64_t dvp, void *vt) {
  const int64_t dv = p->head_dim_v;
  uint16_t *vp = vt;
  for (int64_t j = 0; j < ncp / 2; j++)
    for (int64_t e = 0; e < dvp; e += 4) {
      const int n = (int)(dv - e < 0 ? 0 : dv - e > 4 ? 4 : dv - e);
      const float32x4_t a = 2 * j < nk ? vf_load_partial(vf + 2 * j * dv + e, n) : vf_zero();
      const float32x4_t b =
          2 * j + 1 < nk ? vf_load_partial(vf + (2 * j + 1) * dv + e, n) : vf_zero();
      const uint16x4_t ra = vreinterpret_u16_bf16(vcvt_bf16_f32(a));
      const uint16x4_t rb = vreinterpret_u16_bf16(vcvt_bf16_f32(b));
      vst1q_u16(vp + 2 * (j * dvp + e), vcombine_u16(vzip1_u16(ra, rb), vzip2_u16(ra, rb)));
    }
}

// lp16_step8 with BFDOT (flash_lp16_neon.h): the reduction runs over pairs, B unit k =
// 16 u32 pairs (one vector: 4 columns × one pair), A's pair k taken by lane from a vector
// of 4 pairs. Both GEMMs: Q̂·K̂ᵀ (pairs along head_dim) and P̃·V̂ (pairs of keys).
LP_INLINE void lp16_step8(const int mr, const uint16x8_t av[LP_MR], const uint16_t *b, int64_t ldb,
                          int64_t d8, float32x4_t acc[LP_MR][4]) {
#define NB_LANE(L)                                                                         \
  {                                                                                        \
    const bfloat16_t *bu = (const bfloat16_t *)b + (d8 / 2 + L) * ldb;                     \
    bfloat16x8_t bv[4];                                                                    \
    for (int x = 0; x < 4; x++) bv[x] = vld1q_bf16(bu + 8 * x);                            \
    for (int r = 0; r < mr; r++)                                                           \
      for (int x = 0; x < 4; x++)                                                          \
        acc[r][x] = vbfdotq_laneq_f32(acc[r][x], bv[x], vreinterpretq_bf16_u16(av[r]), L); \
  }
  NB_LANE(0) NB_LANE(1) NB_LANE(2) NB_LANE(3)
#undef NB_LANE
}
#include "flash/flash_lp16_neon.h"

const attn_kernel attn_kernel_flash__neonbf16 =
    LP_RECORD("flash__neonbf16",
              "flash__neon with the BF16 compute mode on BFDOT: pair-packed bf16 Q/K/V tiles, "
              "4x16 QK^T / 4x16 PV, fp32 softmax and sums, P rounded to bf16; F32 mode is "
              "flash__neon's",
              ATTN_ISA_NEON_BF16, ATTN_CAP_COMPUTE_BF16, LP_KEYS);
