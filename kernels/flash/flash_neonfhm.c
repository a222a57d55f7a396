// SPDX-License-Identifier: MIT
// flash__neonfhm — the NEON flash kernel with the F16 compute mode on FMLAL/FMLAL2 (Armv8.2
// FHM, FEAT_FHM); every other mode runs flash__neon's F32 path. Compiled with +fp16fml
// (the file suffix, kernels/CMakeLists.txt) and offered only when the CPU has the unit
// (ATTN_ISA_NEON_FHM). The driver is flash/flash_lp_neon.h; this file holds the layouts
// and the register tiles (docs/low-precision-kernels.md).
//
// `fmlal acc.4s, a.4h, b.h[lane]` (FMLAL2: the upper four halves of a) adds to each float32
// lane i the product a[i]·b[lane] of two binary16 values — exact in float32 (11-bit
// significands) — with one rounding (a fused multiply-add). So both GEMMs are outer
// products of binary16 vectors by one broadcast element:
//   Q·Kᵀ  Q̂ row: f16(Q[r]) row-major, head_dim padded to a multiple of 8;
//         K̂: kt[d·tkv + c] = K[c][d] — one vector = 8 keys of one d, the Q element by lane.
//   P·V   P̃ row: f16(p) row-major; V̂: vt[j·dvp + e] = V[j][e] (rows as they are) — one
//         vector = 8 columns of one key, the P element by lane.
// Q, K and V are rounded to nearest even by FCVTN (binary16 subnormals kept: the kernels'
// environment flushes float32 only, FPCR.FZ16 stays clear); K/V stored as bf16 or q8_0
// are first widened exactly (f16 storage: the rounding changes nothing).
#define LPM_MODE ATTN_COMPUTE_F16
#define LPM_P_BYTES 2
#include "flash/flash_lp_neon.h"

#define LP16_UNIT 1  // K̂ and V̂ units: single binary16 elements

// f16 of x[0 .. n) by FCVTN (nearest even, binary16 subnormals kept).
static inline void lp16_round8(const float *x, int64_t n, uint16_t *dst) {
  float32x4_t lo, hi;
  lp_load8(x, n, &lo, &hi);
  vst1q_f16((float16_t *)dst, vcombine_f16(vcvt_f16_f32(lo), vcvt_f16_f32(hi)));
}

// V̂ of one tile (see the top of the file).
static inline void lp16_pack_v(const attn_problem *p, const float *vf, int64_t nk, int64_t ncp,
                               int64_t dvp, void *vt) {
  const int64_t dv = p->head_dim_v;
  uint16_t *vp = vt;
  for (int64_t j = 0; j < ncp; j++)
    for (int64_t e = 0; e < dvp; e += 8)
      if (j < nk)
        lp16_round8(vf + j * dv + e, dv - e, vp + j * dvp + e);
      else
        memset(vp + j * dvp + e, 0, 8 * sizeof *vp);
}

// lp16_step8 with FMLAL/FMLAL2 (flash_lp16_neon.h): B row d = 16 binary16 (two vectors:
// FMLAL takes the lower 4, FMLAL2 the upper 4 of each), A's element d taken by lane from a
// vector of 8. Both GEMMs: Q̂·K̂ᵀ and P̃·V̂.
LP_INLINE void lp16_step8(const int mr, const uint16x8_t av[LP_MR], const uint16_t *b, int64_t ldb,
                          int64_t d8, float32x4_t acc[LP_MR][4]) {
#define NH_LANE(L)                                                \
  {                                                               \
    const float16_t *bu = (const float16_t *)b + (d8 + L) * ldb;  \
    const float16x8_t b0 = vld1q_f16(bu), b1 = vld1q_f16(bu + 8); \
    for (int r = 0; r < mr; r++) {                                \
      const float16x8_t ah = vreinterpretq_f16_u16(av[r]);        \
      acc[r][0] = vfmlalq_laneq_low_f16(acc[r][0], b0, ah, L);    \
      acc[r][1] = vfmlalq_laneq_high_f16(acc[r][1], b0, ah, L);   \
      acc[r][2] = vfmlalq_laneq_low_f16(acc[r][2], b1, ah, L);    \
      acc[r][3] = vfmlalq_laneq_high_f16(acc[r][3], b1, ah, L);   \
    }                                                             \
  }
  NH_LANE(0) NH_LANE(1) NH_LANE(2) NH_LANE(3) NH_LANE(4) NH_LANE(5) NH_LANE(6) NH_LANE(7)
#undef NH_LANE
}
#include "flash/flash_lp16_neon.h"

const attn_kernel attn_kernel_flash__neonfhm =
    LP_RECORD("flash__neonfhm",
              "flash__neon with the F16 compute mode on FMLAL/FMLAL2: f16 Q/K/V tiles, 4x16 "
              "QK^T / 4x16 PV, fp32 softmax and sums, P rounded to f16; F32 mode is "
              "flash__neon's",
              ATTN_ISA_NEON_FHM, ATTN_CAP_COMPUTE_F16, LP_KEYS);
