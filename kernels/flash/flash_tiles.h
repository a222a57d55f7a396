// SPDX-License-Identifier: MIT
// flash_tiles.h — the flash kernels' register-tile passes over one block of rows: S = Q̂·K̂ᵀ
// (fl_qk_tile) and acc = α·acc + P·V̂ (fl_pv_tile), both built from the shared
// micro-kernel vk_tile (simd/microkernel.h), with causal skipping by each row's limit.
// Used by the tiled pass of flash_body.h and (P·V) by the rows-in-lanes decode path
// (flash_decode_lanes.h). Each inner-loop iteration of the micro-kernel advances the
// next-tile prefetch cursor (simd/prefetch.h). Included by flash_body.h only.
#pragma once

#include "simd/microkernel.h"

// The largest limit among rows [r, r + n): the keys any of them can see.
static inline int64_t fl_max_lim(const int32_t *lims, int64_t r, int64_t n) {
  int64_t mx = 0;
  for (int64_t i = r; i < r + n; i++) mx = lims[i] > mx ? lims[i] : mx;
  return mx;
}

// The smallest first visible key among rows [r, r + n) that see any key here (los: each
// row's window start in the tile; NULL: 0). Keys below it are −∞ for every such row.
static inline int64_t fl_min_lo(const int32_t *lims, const int32_t *los, int64_t r, int64_t n) {
  if (!los) return 0;
  int64_t mn = INT32_MAX;
  for (int64_t i = r; i < r + n; i++)
    if (lims[i] > 0 && los[i] < mn) mn = los[i];
  return mn == INT32_MAX ? 0 : mn;
}

// A register tile of mr < FL_QK_MR rows (a row block's last tile) × FL_QK_NV vectors, from
// its panel (row i's k-th value at qr[k·mr + i]): the switch gives each row count its own
// fully unrolled instance, so the block's edge runs mr·NV FMAs per panel load like the
// full tiles instead of one row at a time (same FMA order per score: the same bits).
static void fl_qk_rows(int mr, const float *qr, const float *ktc, int64_t tkv, int64_t dqk,
                       float *sr, vk_pf *pf) {
#define FL_QK_CASE(M)                                                                        \
  case M:                                                                                    \
    vk_tile(M, FL_QK_NV, VK_INIT_ZERO, NULL, qr, 1, M, ktc, tkv, dqk, sr, tkv, NULL, 1, pf); \
    break;
  switch (mr) {
    FL_QK_CASE(1)
    FL_QK_CASE(2)
#if FL_QK_MR > 3
    FL_QK_CASE(3)
#endif
#if FL_QK_MR > 4
    FL_QK_CASE(4)
#endif
#if FL_QK_MR > 5
    FL_QK_CASE(5)
#endif
#if FL_QK_MR > 6
    FL_QK_CASE(6)
#endif
#if FL_QK_MR > 7
    FL_QK_CASE(7)
#endif
#if FL_QK_MR > 8
    FL_QK_CASE(8)
#endif
#if FL_QK_MR > 9
    FL_QK_CASE(9)
#endif
#if FL_QK_MR > 10
    FL_QK_CASE(10)
#endif
#if FL_QK_MR > 11
    FL_QK_CASE(11)
#endif
    default:
      break;
  }
#undef FL_QK_CASE
}
#if FL_QK_MR > 12
#error "fl_qk_rows: FL_QK_MR <= 12"
#endif

// S rows [0, nrows) × keys [0, ncol), ncol a multiple of VF_W: S = Q̂·K̂ᵀ with the shared
// micro-kernel (init 0; A = Q̂ in panels of FL_QK_MR rows, fl_load_q_panels: the tile of
// mr rows at row r holds Q̂[r + i][k] at q[r·dqk + k·mr + i]; B = K̂ᵀ with tkv keys per d
// row). Full register tiles are FL_QK_MR × FL_QK_NV; edges fall back to narrower
// instances of it (a block's last rows: fl_qk_rows). Register
// tiles whose keys no row of the tile can see (lims: keys each row sees in this K/V
// tile) are skipped — on the diagonal that is the part above it, and with a window
// (los) the part left of every row's window start; the softmax or fl_fin_row overwrites
// those scores with −∞ before anyone reads them.
static void fl_qk_tile(int64_t nrows, int64_t ncol, const float *q, int64_t dqk, const float *kt,
                       int64_t tkv, float *s, const int32_t *lims, const int32_t *los, vk_pf *pf) {
  for (int64_t c = 0; c < ncol; c += FL_QK_NV * VF_W) {
    const int64_t left = (ncol - c) / VF_W;
    const int nv = (int)(left < FL_QK_NV ? left : FL_QK_NV);
    for (int64_t r = 0; r < nrows; r += FL_QK_MR) {
      const int64_t mr = nrows - r < FL_QK_MR ? nrows - r : FL_QK_MR;
      if (c >= fl_max_lim(lims, r, mr)) continue;
      if (los && c + nv * VF_W <= fl_min_lo(lims, los, r, mr)) continue;
      const float *qr = q + r * dqk;  // the panel: row rr's k-th value at qr[k·mr + rr]
      const float *ktc = kt + c;
      float *sr = s + r * tkv + c;
      if (nv == FL_QK_NV && mr == FL_QK_MR) {
        vk_tile(FL_QK_MR, FL_QK_NV, VK_INIT_ZERO, NULL, qr, 1, FL_QK_MR, ktc, tkv, dqk, sr, tkv,
                NULL, 1, pf);
      } else if (mr == FL_QK_MR) {
        for (int v = 0; v < nv; v++)
          vk_tile(FL_QK_MR, 1, VK_INIT_ZERO, NULL, qr, 1, FL_QK_MR, ktc + v * VF_W, tkv, dqk,
                  sr + v * VF_W, tkv, NULL, 1, pf);
      } else if (nv == FL_QK_NV) {
        fl_qk_rows((int)mr, qr, ktc, tkv, dqk, sr, pf);
      } else {
        for (int64_t rr = 0; rr < mr; rr++)
          for (int v = 0; v < nv; v++)
            vk_tile(1, 1, VK_INIT_ZERO, NULL, qr + rr, 0, mr, ktc + v * VF_W, tkv, dqk,
                    sr + rr * tkv + v * VF_W, tkv, NULL, 1, pf);
      }
    }
  }
}

// One register tile of any shape mr ≤ FL_PV_MR, nv ≤ FL_PV_NV: the switch gives each
// row count its own fully unrolled instance (a 1-row tile still runs nv independent
// FMA chains — decode rows are a single row).
static void fl_pv_any(int mr, int nv, const float *pr, int64_t prs, int64_t pcs, int64_t nc,
                      const float *vp, int64_t vstride, float *ar, int64_t dvp, const float *al,
                      int rescale, vk_pf *pf) {
#define FL_PV_CASE(M)                                                                              \
  case M:                                                                                          \
    if (nv == FL_PV_NV)                                                                            \
      vk_tile(M, FL_PV_NV, rescale ? VK_INIT_SCALED : VK_INIT_LOAD, al, pr, prs, pcs, vp, vstride, \
              nc, ar, dvp, NULL, 1, pf);                                                           \
    else /* narrow right edge: head_dim_v not a multiple of the tile */                            \
      for (int v = 0; v < nv; v++)                                                                 \
        vk_tile(M, 1, rescale ? VK_INIT_SCALED : VK_INIT_LOAD, al, pr, prs, pcs, vp + v * VF_W,    \
                vstride, nc, ar + v * VF_W, dvp, NULL, 1, pf);                                     \
    break;
  switch (mr) {
    FL_PV_CASE(1)
    FL_PV_CASE(2)
    FL_PV_CASE(3)
    FL_PV_CASE(4)
#if FL_PV_MR >= 5
    FL_PV_CASE(5)
#endif
#if FL_PV_MR >= 6
    FL_PV_CASE(6)
#endif
#if FL_PV_MR >= 7
    FL_PV_CASE(7)
#endif
#if FL_PV_MR >= 8
    FL_PV_CASE(8)
#endif
    default:
      break;
  }
#undef FL_PV_CASE
}

// acc rows [0, nrows) = α·acc + P · V̂ over keys [0, nc); P[r][c] = pm[r·prs + c·pcs].
// Rows are split into equal register tiles of at most FL_PV_MR rows (8 rows with
// FL_PV_MR 6: 4 + 4, not 6 + 2). A register tile whose rows all kept their max (α = 1)
// skips the rescale. Each register tile stops at the last key one of its rows sees
// (lims), since P is 0 beyond a row's limit, and with a window (los, else NULL) starts
// at the first key one of them sees (P is exactly 0 before: skipping adds nothing).
FL_INLINE void fl_pv_tile_inline(int64_t nrows, const float *pm, int64_t prs, int64_t pcs,
                                 const float *vp, int64_t vstride, float *acc, int64_t dvp,
                                 const float *alpha, const int32_t *lims, const int32_t *los,
                                 vk_pf *pf) {
  const int64_t ntiles = (nrows + FL_PV_MR - 1) / FL_PV_MR;
  for (int64_t g = 0, r = 0; g < ntiles; g++) {
    const int mr = (int)(nrows / ntiles + (g < nrows % ntiles));
    const int64_t c0 = fl_min_lo(lims, los, r, mr);
    const int64_t nc = fl_max_lim(lims, r, mr) - c0;
    int any = 0;
    for (int rr = 0; rr < mr; rr++) any |= alpha[r + rr] != 1.0f;
    const float *vc = vp + c0 * vstride;
    for (int64_t e = 0; e < dvp; e += FL_PV_NV * VF_W) {
      const int64_t left = (dvp - e) / VF_W;
      const int nv = (int)(left < FL_PV_NV ? left : FL_PV_NV);
      const float *pr = pm + r * prs + c0 * pcs;
      float *ar = acc + r * dvp + e;
      if (mr == FL_PV_MR && nv == FL_PV_NV) {
        if (any)
          vk_tile(FL_PV_MR, FL_PV_NV, VK_INIT_SCALED, alpha + r, pr, prs, pcs, vc + e, vstride, nc,
                  ar, dvp, NULL, 1, pf);
        else
          vk_tile(FL_PV_MR, FL_PV_NV, VK_INIT_LOAD, alpha + r, pr, prs, pcs, vc + e, vstride, nc,
                  ar, dvp, NULL, 1, pf);
      } else {
        fl_pv_any(mr, nv, pr, prs, pcs, nc, vc + e, vstride, ar, dvp, alpha + r, any, pf);
      }
    }
    r += mr;
  }
}

// The same as a function of its own, for the tiled pass (the decode lanes path inlines
// fl_pv_tile_inline, so that its prefetch cursor and strides stay in registers).
static void fl_pv_tile(int64_t nrows, const float *pm, int64_t prs, int64_t pcs, const float *vp,
                       int64_t vstride, float *acc, int64_t dvp, const float *alpha,
                       const int32_t *lims, const int32_t *los, vk_pf *pf) {
  fl_pv_tile_inline(nrows, pm, prs, pcs, vp, vstride, acc, dvp, alpha, lims, los, pf);
}
