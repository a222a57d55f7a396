// SPDX-License-Identifier: MIT
// microkernel.h — the register-tile micro-kernel and the packers, written once over the
// vf_* mapping and shared by the tiled (tiled/tiled_body.h) and flash
// (flash/flash_body.h) kernels. Include after a vec_<isa>.h.
//
// ── The micro-kernel ────────────────────────────────────────────────────────────────
// Both GEMMs of attention are the same register-tile update
//     C[r][0 .. nv·VF_W) = init_r + Σ_{k < nk} A[r][k] · B[k][0 .. nv·VF_W),   r < mr
// with A broadcast one element at a time and B loaded as nv whole vectors per k:
//     Q·Kᵀ:  A = Q (rows × head dim),  B = Kᵀ packed (head dim × keys),  C = scores S
//     P·V:   A = P (rows × keys),      B = V (keys × head_dim_v),        C = accumulator
// Strides make one kernel serve every layout: A[r][k] = a[r·ars + k·aks] (row-major
// ars = lda, aks = 1; a packed column panel ars = 1, aks = MR; the transposed P of the
// rows-in-lanes decode path ars = 1, aks = R), B row k at b + k·ldb, C row r at c + r·ldc.
//     init  VK_INIT_ZERO    init_r = 0                  (Q·Kᵀ)
//           VK_INIT_LOAD    init_r = C[r]               (P·V, no rescale needed)
//           VK_INIT_SCALED  init_r = alpha[r] · C[r]    (P·V after the max moved)
//     out_scale != NULL: C[r] is stored as (init_r + Σ …) · *out_scale
//     prefetch != 0: one vk_pf_step(pf) per k (prefetch.h), after B's loads
// mr ≤ VK_MR_MAX and nv ≤ VK_NV_MAX (the includer sizes them to its tiles); every call
// site passes compile-time constants for mr, nv and prefetch (init may be a run-time
// choice between LOAD and SCALED), and the function is always inlined, so the mr × nv
// accumulators live in registers and the loops are fully unrolled. The FMA order is
// fixed: for each k in order, acc[r][v] = A[r][k]·B[k][v] + acc[r][v] — so a kernel
// moved onto this layer keeps its output bits.
#pragma once

#include <stdint.h>
#include <string.h>

#include "simd/prefetch.h"

// The includer defines, before including:
//   VK_MR_MAX, VK_NV_MAX  the accumulator array's rows and vectors (its largest tile)
//   VK_K_UNROLL           k steps per iteration of the k loop (1: not unrolled): fewer loop
//                         branches per FMA, one loop exit per VK_K_UNROLL steps to predict;
//                         the FMA order is the same for every value (docs/design.md)
//   VK_PF_LOCALITY        the next-tile prefetch's locality (prefetch.h)
#if !defined(VK_MR_MAX) || !defined(VK_NV_MAX) || !defined(VK_K_UNROLL)
#error "microkernel.h: define VK_MR_MAX, VK_NV_MAX and VK_K_UNROLL before including"
#endif

#define VK_INLINE static inline __attribute__((always_inline))
#define VK_PRAGMA(x) _Pragma(#x)
#define VK_UNROLL(n) VK_PRAGMA(GCC unroll n)

typedef enum { VK_INIT_ZERO, VK_INIT_LOAD, VK_INIT_SCALED } vk_init;

VK_INLINE void vk_tile(const int mr, const int nv, const vk_init init, const float *alpha,
                       const float *a, int64_t ars, int64_t aks, const float *b, int64_t ldb,
                       int64_t nk, float *c, int64_t ldc, const float *out_scale,
                       const int prefetch, vk_pf *pf) {
  vf_t acc[VK_MR_MAX][VK_NV_MAX];
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++) {
    const vf_t al = vf_set1(init == VK_INIT_SCALED ? alpha[r] : 1.0f);
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) {
      acc[r][v] = init == VK_INIT_ZERO ? vf_zero() : vf_load(c + r * ldc + v * VF_W);
      if (init == VK_INIT_SCALED) acc[r][v] = vf_mul(acc[r][v], al);
    }
  }
  VK_UNROLL(VK_K_UNROLL)
  for (int64_t k = 0; k < nk; k++) {
    vf_t bv[VK_NV_MAX];
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) bv[v] = vf_load(b + k * ldb + v * VF_W);
    if (prefetch) vk_pf_step(pf);
#pragma GCC unroll 16
    for (int r = 0; r < mr; r++) {
      const vf_t ab = vf_set1(a[r * ars + k * aks]);
#pragma GCC unroll 16
      for (int v = 0; v < nv; v++) acc[r][v] = vf_fma(ab, bv[v], acc[r][v]);
    }
  }
  if (out_scale) {
    const vf_t vs = vf_set1(*out_scale);
#pragma GCC unroll 16
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 16
      for (int v = 0; v < nv; v++) vf_store(c + r * ldc + v * VF_W, vf_mul(acc[r][v], vs));
  } else {
#pragma GCC unroll 16
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 16
      for (int v = 0; v < nv; v++) vf_store(c + r * ldc + v * VF_W, acc[r][v]);
  }
}

// ── The K packer ────────────────────────────────────────────────────────────────────
// Kᵀ panel for the Q·Kᵀ micro-kernel: kt[d·ldkt + c] = K[c][d] for keys c < nk, and 0 for
// nk ≤ c < ncp (their scores are finite and masked before use). K rows have dqk floats.
// Blocks of VF_W keys × VF_W dims go through the mapping header's in-register transpose
// (vf_transpose_block, when it defines VF_HAVE_TRANSPOSE); the rest is scalar, still one
// block of VF_W keys at a time so the source rows and destination lines stay in L1.
static inline void vk_pack_kt(const float *k, int64_t nk, int64_t ncp, int64_t dqk, float *kt,
                              int64_t ldkt) {
  int64_t c0 = 0;
  for (; c0 + VF_W <= nk; c0 += VF_W) {
    const float *kb = k + c0 * dqk;
    int64_t d = 0;
#ifdef VF_HAVE_TRANSPOSE
    for (; d + VF_W <= dqk; d += VF_W) vf_transpose_block(kb + d, dqk, kt + d * ldkt + c0, ldkt);
#endif
    for (; d < dqk; d++) {
      float *dst = kt + d * ldkt + c0;
      for (int c = 0; c < VF_W; c++) dst[c] = kb[c * dqk + d];
    }
  }
  for (int64_t d = 0; d < dqk; d++) {
    float *dst = kt + d * ldkt;
    for (int64_t c = c0; c < nk; c++) dst[c] = k[c * dqk + d];
    for (int64_t c = nk; c < ncp; c++) dst[c] = 0.0f;
  }
}

// ── The V pad/copy ──────────────────────────────────────────────────────────────────
// n rows of V (dv floats each) copied into buf with stride dvp ≥ dv, zero-padded.
static inline const float *vk_copy_v(const float *v, int64_t n, int64_t dv, int64_t dvp,
                                     float *buf) {
  for (int64_t c = 0; c < n; c++) {
    memcpy(buf + c * dvp, v + c * dv, (size_t)dv * sizeof(float));
    for (int64_t e = dv; e < dvp; e++) buf[c * dvp + e] = 0.0f;
  }
  return buf;
}

// V rows for the P·V micro-kernel, which loads dvp = ⌈dv/VF_W⌉·VF_W columns per row: when
// head_dim_v is whole vectors (dv == dvp) V's own rows serve; otherwise its n rows are
// copied into buf, zero-padded to dvp. Either way the rows returned have stride dvp.
static inline const float *vk_pad_v(const float *v, int64_t n, int64_t dv, int64_t dvp,
                                    float *buf) {
  if (dv == dvp) return v;
  return vk_copy_v(v, n, dv, dvp, buf);
}

// The same, and also copied when V is not vector-aligned (malloc's 16-byte alignment, a
// view into a larger array), so that no vector load of the micro-kernel straddles two
// cache lines — on AVX-512 every one would; one copy per K/V tile costs less
// (docs/design.md). buf (vector-aligned) must hold n·dvp floats whatever dv.
static inline const float *vk_aligned_v(const float *v, int64_t n, int64_t dv, int64_t dvp,
                                        float *buf) {
  if ((uintptr_t)v % (VF_W * sizeof(float)) != 0) return vk_copy_v(v, n, dv, dvp, buf);
  return vk_pad_v(v, n, dv, dvp, buf);
}
