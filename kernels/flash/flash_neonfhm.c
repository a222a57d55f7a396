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

static inline int64_t nh_dpad(const attn_problem *p) {  // Q̂/K̂ elements per row, a multiple of 8
  return (p->head_dim_qk + 7) / 8 * 8;
}
static size_t lpm_q_row_bytes(const attn_problem *p) {
  return (size_t)lp_round_up(nh_dpad(p) * 2, 16);
}
static size_t lpm_k_tile_bytes(const attn_problem *p, int64_t tkv) {
  return (size_t)nh_dpad(p) * (size_t)tkv * 2;
}
static size_t lpm_v_tile_bytes(const attn_problem *p, int64_t tkv, int64_t dvp) {
  (void)p;
  return (size_t)tkv * (size_t)dvp * 2;
}

// f16 of x[0 .. n) (n ≤ 8; the rest 0) as 8 elements.
static inline float16x8_t nh_round8(const float *x, int64_t n) {
  float32x4_t lo, hi;
  lp_load8(x, n, &lo, &hi);
  return vcombine_f16(vcvt_f16_f32(lo), vcvt_f16_f32(hi));
}

static void lpm_pack_q(const attn_problem *p, const float *q, char *dst) {
  float16_t *out = (float16_t *)dst;
  for (int64_t d = 0; d < nh_dpad(p); d += 8)
    vst1q_f16(out + d, nh_round8(q + d, p->head_dim_qk - d));
}

// K̂ and V̂ of one tile (see the top of the file).
static void lpm_pack_kv(const attn_problem *p, const char *k, const char *v, int64_t nk,
                        int64_t ncp, int64_t tkv, int64_t dvp, float *kc, void *kt, void *vt) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, dpad = nh_dpad(p);
  const float *kf = lp_kv_floats(p, k, nk, dqk, kc);
  float16_t *kp = kt;
  for (int64_t c = 0; c < ncp; c++)
    for (int64_t d = 0; d < dpad; d += 8) {
      float16_t x[8];
      vst1q_f16(x, c < nk ? nh_round8(kf + c * dqk + d, dqk - d) : vdupq_n_f16(0));
      for (int t = 0; t < 8; t++) kp[(d + t) * tkv + c] = x[t];
    }
  const float *vf = lp_kv_floats(p, v, nk, dv, kc);  // K is packed: kc is free again
  float16_t *vp = vt;
  for (int64_t j = 0; j < ncp; j++)
    for (int64_t e = 0; e < dvp; e += 8)
      vst1q_f16(vp + j * dvp + e, j < nk ? nh_round8(vf + j * dv + e, dv - e) : vdupq_n_f16(0));
}

// c[r][0 .. 16) = (accumulate ? c[r] : 0) + Σ_d A[r][d]·B[d][0 .. 16) with FMLAL/FMLAL2,
// d < n (a multiple of 8), r < mr (a constant): A rows of binary16 at a + r·lda (the
// broadcast operand, 8 at a time), B rows of 16 binary16 at b + d·ldb. Both GEMMs: Q̂·K̂ᵀ
// and P̃·V̂.
LP_INLINE void nh_gemm(const int mr, const int accumulate, const float16_t *a, int64_t lda,
                       const float16_t *b, int64_t ldb, int64_t n, float *c, int64_t ldc) {
  float32x4_t acc[LP_MR][4];
  for (int r = 0; r < mr; r++)
    for (int x = 0; x < 4; x++) acc[r][x] = accumulate ? vld1q_f32(c + r * ldc + 4 * x) : vf_zero();
  for (int64_t d8 = 0; d8 < n; d8 += 8) {
    float16x8_t av[LP_MR];
    for (int r = 0; r < mr; r++) av[r] = vld1q_f16(a + r * lda + d8);
#define NH_LANE(L)                                                 \
  {                                                                \
    const float16x8_t b0 = vld1q_f16(b + (d8 + L) * ldb);          \
    const float16x8_t b1 = vld1q_f16(b + (d8 + L) * ldb + 8);      \
    for (int r = 0; r < mr; r++) {                                 \
      acc[r][0] = vfmlalq_laneq_low_f16(acc[r][0], b0, av[r], L);  \
      acc[r][1] = vfmlalq_laneq_high_f16(acc[r][1], b0, av[r], L); \
      acc[r][2] = vfmlalq_laneq_low_f16(acc[r][2], b1, av[r], L);  \
      acc[r][3] = vfmlalq_laneq_high_f16(acc[r][3], b1, av[r], L); \
    }                                                              \
  }
    NH_LANE(0) NH_LANE(1) NH_LANE(2) NH_LANE(3) NH_LANE(4) NH_LANE(5) NH_LANE(6) NH_LANE(7)
#undef NH_LANE
  }
  for (int r = 0; r < mr; r++)
    for (int x = 0; x < 4; x++) vst1q_f32(c + r * ldc + 4 * x, acc[r][x]);
}

static void lpm_qk(const attn_problem *p, const char *qp, int mr, const void *kt, int64_t tkv,
                   int64_t ncols, float *S, int64_t lds) {
  const int64_t dpad = nh_dpad(p);
  for (int64_t c = 0; c < ncols; c += LP_KEYS)
    LP_DISPATCH_MR(mr, nh_gemm, 0, (const float16_t *)qp, (int64_t)lpm_q_row_bytes(p) / 2,
                   (const float16_t *)kt + c, tkv, dpad, S + c, lds);
}

// P̃ = f16(p), nearest even (FCVTN; p < 2^-14 becomes a binary16 subnormal, not zero).
static void lpm_round_p(const float *s, int64_t n, char *dst) {
  float16_t *out = (float16_t *)dst;
  for (int64_t j = 0; j < n; j += 8) vst1q_f16(out + j, nh_round8(s + j, 8));
}

static void lpm_pv(const char *pb, int64_t ldp, int mr, const void *vt, int64_t nkp, int64_t dvp,
                   float *acc, int64_t lda) {
  for (int64_t e = 0; e < dvp; e += 16)
    LP_DISPATCH_MR(mr, nh_gemm, 1, (const float16_t *)pb, ldp, (const float16_t *)vt + e, dvp, nkp,
                   acc + e, lda);
}

const attn_kernel attn_kernel_flash__neonfhm = {
    .name = "flash__neonfhm",
    .summary =
        "flash__neon with the F16 compute mode on FMLAL/FMLAL2: f16 Q/K/V tiles, 4x16 "
        "QK^T / 4x16 PV, fp32 softmax and sums, P rounded to f16; F32 mode is "
        "flash__neon's",
    .required_isa = ATTN_ISA_NEON | ATTN_ISA_NEON_FHM,
    .caps = LP_CAPS | ATTN_CAP_COMPUTE_F16,
    LP_RECORD_COMMON,
    .qk_cols = LP_KEYS,
};
