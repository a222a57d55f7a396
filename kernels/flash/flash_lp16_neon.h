// SPDX-License-Identifier: MIT
// flash_lp16_neon.h — the Q̂, K̂ and P̃ packers the 16-bit modes of the NEON low-precision
// flash kernels share (flash_neonbf16.c, flash_neonfhm.c; the driver: flash_lp_neon.h).
// Include after flash_lp_neon.h. The mode file defines
//   LP16_UNIT                  elements per K̂ unit: 2 (BF16: BFDOT reads pairs), 1 (F16)
//   lp16_round8(x, n, dst)     its type of x[0 .. n) (n ≤ 8; n ≤ 0 and the rest: 0),
//                              nearest even, stored as 8 uint16_t at dst
//   lp16_pack_v(p, vf, nk, ncp, dvp, vt)   V̂ of ncp keys from nk float32 rows vf (stride
//                              head_dim_v; keys nk .. ncp and columns past head_dim_v zero)
//   lp16_step8(mr, av, b, ldb, d8, acc)   one step of its register tile: acc[r][0 .. 16)
//                              += Σ_{d8≤d<d8+8} A[r][d]·B[d][0 .. 16), r < mr (a constant),
//                              av[r] = A[r][d8 .. d8 + 8) (16-bit elements, the broadcast
//                              operand), B in units (B row d = unit d / LP16_UNIT of 16
//                              columns at b + (d / LP16_UNIT)·ldb, ldb in elements)
// and gets every other function the driver needs (lpm_*) from here.
// Q̂ and P̃ rows are rounded rows (head_dim padded with zeros to a multiple of 8); K̂ holds
// unit u (elements u·LP16_UNIT ..) of key c at unit index u·tkv + c, so that one vector
// load takes the same unit of consecutive keys.
#pragma once

#include <stdint.h>
#include <string.h>

static inline void lp16_round8(const float *x, int64_t n, uint16_t *dst);
static inline void lp16_pack_v(const attn_problem *p, const float *vf, int64_t nk, int64_t ncp,
                               int64_t dvp, void *vt);
LP_INLINE void lp16_step8(const int mr, const uint16x8_t av[LP_MR], const uint16_t *b, int64_t ldb,
                          int64_t d8, float32x4_t acc[LP_MR][4]);

// The register tile: c[r][0 .. 16) = (accumulate ? c[r] : 0) + Σ_{d<n} A[r][d]·B[d][0 .. 16),
// r < mr (a constant), n a multiple of 8: A rows at a + r·lda (elements), B as for
// lp16_step8.
LP_INLINE void lp16_gemm(const int mr, const int accumulate, const uint16_t *a, int64_t lda,
                         const uint16_t *b, int64_t ldb, int64_t n, float *c, int64_t ldc) {
  float32x4_t acc[LP_MR][4];
  lp_acc_load(mr, accumulate, c, ldc, acc);
  for (int64_t d8 = 0; d8 < n; d8 += 8) {
    uint16x8_t av[LP_MR];  // A[r][d8 .. d8 + 8), the lanes lp16_step8 broadcasts
    for (int r = 0; r < mr; r++) av[r] = vld1q_u16(a + r * lda + d8);
    lp16_step8(mr, av, b, ldb, d8, acc);
  }
  lp_acc_store(mr, c, ldc, acc);
}

// Elements per Q̂ row and per K̂ key: head_dim_qk rounded up to 8 (one vector).
static inline int64_t lp16_dpad(const attn_problem *p) {
  return (p->head_dim_qk + 7) / 8 * 8;
}

// Q̂ rows, K̂ and V̂ tiles: 16-bit elements (K̂: dpad per key; V̂: dvp per key).
static size_t lpm_q_row_bytes(const attn_problem *p) {
  return (size_t)lp16_dpad(p) * 2;  // a multiple of 16
}
static size_t lpm_k_tile_bytes(const attn_problem *p, int64_t tkv) {
  return (size_t)lp16_dpad(p) * (size_t)tkv * 2;
}
static size_t lpm_v_tile_bytes(const attn_problem *p, int64_t tkv, int64_t dvp) {
  (void)p;
  return (size_t)tkv * (size_t)dvp * 2;
}

static void lpm_pack_q(const attn_problem *p, const float *q, char *dst) {
  uint16_t *out = (uint16_t *)dst;
  for (int64_t d = 0; d < lp16_dpad(p); d += 8) lp16_round8(q + d, p->head_dim_qk - d, out + d);
}

// K̂ of ncp keys from nk float32 rows kf (keys nk .. ncp zero), units as above.
static inline void lp16_pack_k(const attn_problem *p, const float *kf, int64_t nk, int64_t ncp,
                               int64_t tkv, void *kt) {
  const int64_t dqk = p->head_dim_qk, dpad = lp16_dpad(p);
  const size_t ub = LP16_UNIT * sizeof(uint16_t);
  char *out = kt;
  for (int64_t c = 0; c < ncp; c++)
    for (int64_t d = 0; d < dpad; d += 8) {
      uint16_t x[8];
      if (c < nk)
        lp16_round8(kf + c * dqk + d, dqk - d, x);
      else
        memset(x, 0, sizeof x);
      for (int u = 0; u < 8 / LP16_UNIT; u++)
        memcpy(out + ((d / LP16_UNIT + u) * tkv + c) * (int64_t)ub, x + u * LP16_UNIT, ub);
    }
}

// K̂ and V̂ of one tile (K and V as stored; kc: scratch for their widening).
static void lpm_pack_kv(const attn_problem *p, const char *k, const char *v, int64_t nk,
                        int64_t ncp, int64_t tkv, int64_t dvp, float *kc, void *kt, void *vt) {
  lp16_pack_k(p, lp_kv_floats(p, k, nk, p->head_dim_qk, kc), nk, ncp, tkv, kt);
  // K is packed: kc is free again for V.
  lp16_pack_v(p, lp_kv_floats(p, v, nk, p->head_dim_v, kc), nk, ncp, dvp, vt);
}

// P̃ row: n probabilities (a multiple of 8) rounded.
static void lpm_round_p(const float *s, int64_t n, char *dst) {
  uint16_t *out = (uint16_t *)dst;
  for (int64_t j = 0; j < n; j += 8) lp16_round8(s + j, 8, out + j);
}

// S = Q̂·K̂ᵀ for ncols keys (K̂ units of tkv keys) and acc += P̃·V̂ (V̂ units of dvp columns).
static void lpm_qk(const attn_problem *p, const char *qp, int mr, const void *kt, int64_t tkv,
                   int64_t ncols, float *S, int64_t lds) {
  const int64_t dpad = lp16_dpad(p);
  for (int64_t c = 0; c < ncols; c += LP_KEYS)
    LP_DISPATCH_MR(mr, lp16_gemm, 0, (const uint16_t *)qp, dpad,
                   (const uint16_t *)kt + c * LP16_UNIT, tkv * LP16_UNIT, dpad, S + c, lds);
}

static void lpm_pv(const char *pb, int64_t ldp, int mr, const void *vt, int64_t nkp, int64_t dvp,
                   float *acc, int64_t lda) {
  for (int64_t e = 0; e < dvp; e += 16)
    LP_DISPATCH_MR(mr, lp16_gemm, 1, (const uint16_t *)pb, ldp,
                   (const uint16_t *)vt + e * LP16_UNIT, dvp * LP16_UNIT, nkp, acc + e, lda);
}
