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

static inline int64_t nb_pairs(const attn_problem *p) {  // Q̂/K̂ pairs per row, a multiple of 4
  return ((p->head_dim_qk + 1) / 2 + 3) / 4 * 4;
}
static size_t lpm_q_row_bytes(const attn_problem *p) {
  return (size_t)nb_pairs(p) * 4;
}
static size_t lpm_k_tile_bytes(const attn_problem *p, int64_t tkv) {
  return (size_t)nb_pairs(p) * (size_t)tkv * 4;
}
static size_t lpm_v_tile_bytes(const attn_problem *p, int64_t tkv, int64_t dvp) {
  (void)p;
  return (size_t)(tkv / 2) * (size_t)dvp * 4;
}

// bf16 of x[0 .. n) (n ≤ 8; the rest 0) as 8 elements.
static inline bfloat16x8_t nb_round8(const float *x, int64_t n) {
  float32x4_t lo, hi;
  lp_load8(x, n, &lo, &hi);
  return vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(lo), hi);
}

static void lpm_pack_q(const attn_problem *p, const float *q, char *dst) {
  bfloat16_t *out = (bfloat16_t *)dst;
  for (int64_t d = 0; d < 2 * nb_pairs(p); d += 8)
    vst1q_bf16(out + d, nb_round8(q + d, p->head_dim_qk - d));
}

// K̂ and V̂ of one tile (see the top of the file).
static void lpm_pack_kv(const attn_problem *p, const char *k, const char *v, int64_t nk,
                        int64_t ncp, int64_t tkv, int64_t dvp, float *kc, void *kt, void *vt) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, d2p = nb_pairs(p);
  const float *kf = lp_kv_floats(p, k, nk, dqk, kc);
  uint32_t *kp = kt;
  for (int64_t c = 0; c < ncp; c++)
    for (int64_t k4 = 0; k4 < d2p; k4 += 4) {
      uint32_t pairs[4] = {0, 0, 0, 0};
      if (c < nk)
        vst1q_u32(pairs, vreinterpretq_u32_bf16(nb_round8(kf + c * dqk + 2 * k4, dqk - 2 * k4)));
      for (int t = 0; t < 4; t++) kp[(k4 + t) * tkv + c] = pairs[t];
    }
  const float *vf = lp_kv_floats(p, v, nk, dv, kc);  // K is packed: kc is free again
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

// c[r][0 .. 16) = (accumulate ? c[r] : 0) + Σ_k pair-dot(A[r] pair k, B[k][0 .. 16)) with
// BFDOT, k < np (a multiple of 4), r < mr (a constant): A rows of bf16 at a + r·lda (the
// broadcast operand, 4 pairs at a time), B rows of 16 u32 pairs at b + k·ldb. Both GEMMs:
// Q̂·K̂ᵀ (pairs along head_dim) and P̃·V̂ (pairs of keys).
LP_INLINE void nb_gemm(const int mr, const int accumulate, const bfloat16_t *a, int64_t lda,
                       const uint32_t *b, int64_t ldb, int64_t np, float *c, int64_t ldc) {
  float32x4_t acc[LP_MR][4];
  for (int r = 0; r < mr; r++)
    for (int x = 0; x < 4; x++) acc[r][x] = accumulate ? vld1q_f32(c + r * ldc + 4 * x) : vf_zero();
  for (int64_t k4 = 0; k4 < np; k4 += 4) {
    bfloat16x8_t av[LP_MR];
    for (int r = 0; r < mr; r++) av[r] = vld1q_bf16(a + r * lda + 2 * k4);
#define NB_LANE(L)                                                                           \
  {                                                                                          \
    bfloat16x8_t bv[4];                                                                      \
    for (int x = 0; x < 4; x++)                                                              \
      bv[x] = vld1q_bf16((const bfloat16_t *)(b + (k4 + L) * ldb + 4 * x));                  \
    for (int r = 0; r < mr; r++)                                                             \
      for (int x = 0; x < 4; x++) acc[r][x] = vbfdotq_laneq_f32(acc[r][x], bv[x], av[r], L); \
  }
    NB_LANE(0) NB_LANE(1) NB_LANE(2) NB_LANE(3)
#undef NB_LANE
  }
  for (int r = 0; r < mr; r++)
    for (int x = 0; x < 4; x++) vst1q_f32(c + r * ldc + 4 * x, acc[r][x]);
}

static void lpm_qk(const attn_problem *p, const char *qp, int mr, const void *kt, int64_t tkv,
                   int64_t ncols, float *S, int64_t lds) {
  const int64_t d2p = nb_pairs(p);
  for (int64_t c = 0; c < ncols; c += LP_KEYS)
    LP_DISPATCH_MR(mr, nb_gemm, 0, (const bfloat16_t *)qp, 2 * d2p, (const uint32_t *)kt + c, tkv,
                   d2p, S + c, lds);
}

// P̃ = bf16(p), nearest even (BFCVTN).
static void lpm_round_p(const float *s, int64_t n, char *dst) {
  bfloat16_t *out = (bfloat16_t *)dst;
  for (int64_t j = 0; j < n; j += 8) vst1q_bf16(out + j, nb_round8(s + j, 8));
}

static void lpm_pv(const char *pb, int64_t ldp, int mr, const void *vt, int64_t nkp, int64_t dvp,
                   float *acc, int64_t lda) {
  for (int64_t e = 0; e < dvp; e += 16)
    LP_DISPATCH_MR(mr, nb_gemm, 1, (const bfloat16_t *)pb, ldp, (const uint32_t *)vt + e, dvp,
                   nkp / 2, acc + e, lda);
}

const attn_kernel attn_kernel_flash__neonbf16 = {
    .name = "flash__neonbf16",
    .summary =
        "flash__neon with the BF16 compute mode on BFDOT: pair-packed bf16 Q/K/V tiles, "
        "4x16 QK^T / 4x16 PV, fp32 softmax and sums, P rounded to bf16; F32 mode is "
        "flash__neon's",
    .required_isa = ATTN_ISA_NEON | ATTN_ISA_NEON_BF16,
    .caps = LP_CAPS | ATTN_CAP_COMPUTE_BF16,
    LP_RECORD_COMMON,
    .qk_cols = LP_KEYS,
};
