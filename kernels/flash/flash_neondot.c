// SPDX-License-Identifier: MIT
// flash__neondot — the NEON flash kernel with the INT8 compute mode on SDOT (Armv8.2
// DotProd, FEAT_DotProd); every other mode runs flash__neon's F32 path. Compiled with
// +dotprod (the file suffix, kernels/CMakeLists.txt) and offered only when the CPU has the
// unit (ATTN_ISA_NEON_DOTPROD). The driver is flash/flash_lp_neon.h; this file holds the
// layouts and the register tiles (docs/low-precision-kernels.md).
//
// INT8 (attn.h, "Compute modes"): K is Q8_0 as stored, Q is quantized per 32-element block
// with the same rule (attn_quantize_q8_0_row), and a score is
//     Σ_blocks f16(d_q)·f16(d_k) · Σ_t q_t·k_t
// with the block dot product exact in int32 (|Σ| ≤ 32·127² < 2^24, so its conversion to
// float32 is exact too), f16(d_q)·f16(d_k) exact in float32 (11-bit significands), and
// one fused multiply-add per block into the float32 score. P·V is the F32 mode's: p in
// float32 against V widened exactly from Q8_0.
// `sdot acc.4s, a.16b, b.4b[lane]` adds to each int32 lane i the dot product of the four
// int8 a[4i .. 4i+3] with b[4·lane .. 4·lane+3]:
//   Q̂ row: the int8 values of Q (head_dim bytes), then one float f16(d_q) per block;
//   K̂: per block b and group g of 4 elements, kq[((b·8 + g)·tkv + c)·4 + t] = k_c[32b+4g+t]
//       — one vector = 4 keys × one group, the Q group taken by lane — and the float
//       scales dk[b·tkv + c] = f16(d_k) of key c's block b;
//   V̂: float32 rows vt[j·dvp + e] = V[j][e].
#define LPM_MODE ATTN_COMPUTE_INT8
#define LPM_P_BYTES 4
#include "flash/flash_lp_neon.h"

#define ND_KEYS 8  // keys of the Q·Kᵀ register tile (int32 and float32 accumulators: 2 × 8)

static inline int64_t nd_blocks(const attn_problem *p) {
  return p->head_dim_qk / ATTN_Q8_0_BLOCK;
}
static size_t lpm_q_row_bytes(const attn_problem *p) {
  return (size_t)lp_round_up(p->head_dim_qk + 4 * nd_blocks(p), 16);
}
static size_t lpm_k_tile_bytes(const attn_problem *p, int64_t tkv) {
  return (size_t)(nd_blocks(p) * tkv) * (ATTN_Q8_0_BLOCK + sizeof(float));
}
static size_t lpm_v_tile_bytes(const attn_problem *p, int64_t tkv, int64_t dvp) {
  (void)p;
  return (size_t)tkv * (size_t)dvp * sizeof(float);
}

// One Q row: the Q8_0 rule per block, then the int8 values and the widened scales.
static void lpm_pack_q(const attn_problem *p, const float *q, char *dst) {
  const int64_t nb = nd_blocks(p);
  float *dq = (float *)(dst + p->head_dim_qk);
  for (int64_t b = 0; b < nb; b++) {
    attn_block_q8_0 blk;
    attn_quantize_q8_0_row(q + b * ATTN_Q8_0_BLOCK, ATTN_Q8_0_BLOCK, &blk);
    memcpy(dst + b * ATTN_Q8_0_BLOCK, blk.qs, ATTN_Q8_0_BLOCK);
    dq[b] = attn_f16_to_f32(blk.d);
  }
}

// K̂ from the stored Q8_0 rows, V̂ widened to float32 (see the top of the file).
static void lpm_pack_kv(const attn_problem *p, const char *k, const char *v, int64_t nk,
                        int64_t ncp, int64_t tkv, int64_t dvp, float *kc, void *kt, void *vt) {
  (void)kc;
  const int64_t nb = nd_blocks(p), dv = p->head_dim_v;
  const size_t krb = attn_kv_row_bytes(ATTN_DTYPE_Q8_0, p->head_dim_qk);
  int8_t *kq = kt;
  float *dk = (float *)(kq + nb * ATTN_Q8_0_BLOCK * tkv);
  for (int64_t c = 0; c < ncp; c++)
    for (int64_t b = 0; b < nb; b++) {
      attn_block_q8_0 blk = {0, {0}};
      if (c < nk) memcpy(&blk, k + (size_t)c * krb + (size_t)b * sizeof blk, sizeof blk);
      for (int g = 0; g < 8; g++) memcpy(kq + ((b * 8 + g) * tkv + c) * 4, blk.qs + 4 * g, 4);
      dk[b * tkv + c] = attn_f16_to_f32(blk.d);
    }
  float *vf = vt;
  kv_widen_rows(ATTN_DTYPE_Q8_0, v, attn_kv_row_bytes(ATTN_DTYPE_Q8_0, dv), nk, dv, vf, dvp, dvp);
  memset(vf + nk * dvp, 0, (size_t)((ncp - nk) * dvp) * sizeof(float));
}

// S[r][0 .. 8) = Σ_b f16(d_q)·f16(d_k)·(int32 block dot), r < mr (a constant).
LP_INLINE void nd_qk_tile(const int mr, const int8_t *q, int64_t ldq, int64_t nb, const int8_t *kq,
                          const float *dk, int64_t tkv, float *s, int64_t lds) {
  float32x4_t f[LP_MR][2];
  for (int r = 0; r < mr; r++) f[r][0] = f[r][1] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; b++) {
    int32x4_t ia[LP_MR][2];
    for (int r = 0; r < mr; r++) ia[r][0] = ia[r][1] = vdupq_n_s32(0);
    for (int h = 0; h < 2; h++) {  // groups 0-3, then 4-7 of the block
      int8x16_t qv[LP_MR];
      for (int r = 0; r < mr; r++) qv[r] = vld1q_s8(q + r * ldq + b * ATTN_Q8_0_BLOCK + 16 * h);
#define ND_LANE(L)                                             \
  {                                                            \
    const int8_t *kg = kq + ((b * 8 + 4 * h + L) * tkv) * 4;   \
    const int8x16_t k0 = vld1q_s8(kg), k1 = vld1q_s8(kg + 16); \
    for (int r = 0; r < mr; r++) {                             \
      ia[r][0] = vdotq_laneq_s32(ia[r][0], k0, qv[r], L);      \
      ia[r][1] = vdotq_laneq_s32(ia[r][1], k1, qv[r], L);      \
    }                                                          \
  }
      ND_LANE(0) ND_LANE(1) ND_LANE(2) ND_LANE(3)
#undef ND_LANE
    }
    const float32x4_t d0 = vld1q_f32(dk + b * tkv), d1 = vld1q_f32(dk + b * tkv + 4);
    for (int r = 0; r < mr; r++) {
      const float dq = ((const float *)(q + r * ldq + nb * ATTN_Q8_0_BLOCK))[b];
      f[r][0] = vfmaq_f32(f[r][0], vcvtq_f32_s32(ia[r][0]), vmulq_n_f32(d0, dq));
      f[r][1] = vfmaq_f32(f[r][1], vcvtq_f32_s32(ia[r][1]), vmulq_n_f32(d1, dq));
    }
  }
  for (int r = 0; r < mr; r++) vst1q_f32(s + r * lds, f[r][0]), vst1q_f32(s + r * lds + 4, f[r][1]);
}

static void lpm_qk(const attn_problem *p, const char *qp, int mr, const void *kt, int64_t tkv,
                   int64_t ncols, float *S, int64_t lds) {
  const int64_t nb = nd_blocks(p), ldq = (int64_t)lpm_q_row_bytes(p);
  const int8_t *q = (const int8_t *)qp, *kq = kt;
  const float *dk = (const float *)(kq + nb * ATTN_Q8_0_BLOCK * tkv);
  for (int64_t c = 0; c < ncols; c += ND_KEYS) {
    LP_DISPATCH_MR(mr, nd_qk_tile, q, ldq, nb, kq + c * 4, dk + c, tkv, S + c, lds);
  }
}

// P·V in float32: p is not rounded in this mode.
static void lpm_round_p(const float *s, int64_t n, char *dst) {
  memcpy(dst, s, (size_t)n * sizeof(float));
}

// acc[r][0 .. 16) += Σ_j P[r][j]·V̂[j][0 .. 16), j < nkp (a multiple of 4), r < mr.
LP_INLINE void nd_pv_tile(const int mr, const float *pb, int64_t ldp, const float *vt, int64_t dvp,
                          int64_t nkp, float *acc, int64_t lda) {
  float32x4_t a[LP_MR][4];
  lp_acc_load(mr, 1, acc, lda, a);
  for (int64_t j = 0; j < nkp; j += 4) {
    float32x4_t pv[LP_MR];
    for (int r = 0; r < mr; r++) pv[r] = vld1q_f32(pb + r * ldp + j);
#define ND_PV_LANE(L)                                                                  \
  {                                                                                    \
    float32x4_t vv[4];                                                                 \
    for (int x = 0; x < 4; x++) vv[x] = vld1q_f32(vt + (j + L) * dvp + 4 * x);         \
    for (int r = 0; r < mr; r++)                                                       \
      for (int x = 0; x < 4; x++) a[r][x] = vfmaq_laneq_f32(a[r][x], vv[x], pv[r], L); \
  }
    ND_PV_LANE(0) ND_PV_LANE(1) ND_PV_LANE(2) ND_PV_LANE(3)
#undef ND_PV_LANE
  }
  lp_acc_store(mr, acc, lda, a);
}

static void lpm_pv(const char *pb, int64_t ldp, int mr, const void *vt, int64_t nkp, int64_t dvp,
                   float *acc, int64_t lda) {
  const float *pr = (const float *)pb;
  for (int64_t e = 0; e < dvp; e += 16) {
    const float *ve = (const float *)vt + e;
    LP_DISPATCH_MR(mr, nd_pv_tile, pr, ldp, ve, dvp, nkp, acc + e, lda);
  }
}

const attn_kernel attn_kernel_flash__neondot =
    LP_RECORD("flash__neondot",
              "flash__neon with the INT8 compute mode on SDOT: Q8_0 Q against Q8_0 K in "
              "int32 block dot products scaled by f16 d_q x d_k, 4x8 QK^T, fp32 softmax and "
              "4x16 PV; F32 mode is flash__neon's",
              ATTN_ISA_NEON_DOTPROD, ATTN_CAP_COMPUTE_INT8, ND_KEYS);
