// SPDX-License-Identifier: MIT
// flash_body.h — the FlashAttention-2-style kernel body, written once for every ISA.
// An ISA file (flash_avx512.c, flash_avx2.c, flash_neon.c) includes its
// SIMD mapping header (simd/vec_<isa>.h: vf_t, VF_W, vf_load, vf_fma, vf_exp, …),
// defines the register tiles and names below, then includes this file.
//   FL_QK_MR, FL_QK_NV     Q·Kᵀ register tile: MR query rows × NV vectors of keys
//   FL_PV_MR, FL_PV_NV     P·V register tile:  MR query rows × NV vectors of head_dim_v
//   FL_RUN, FL_WORKSPACE   names of the kernel's run / workspace functions
// and optionally:
//   FL_TRANSPOSE_BLOCK     in-register VF_W × VF_W transpose for packing K̂ᵀ
//   FL_PF_LOCALITY         __builtin_prefetch locality of the tiled path (default 3)
//   FL_RV_W + fl_rv_t, fl_rv_zero/load/store/fma_bcast   the decode row vector (default:
//                          vf_t itself), FL_LANES_MAX_ROWS, FL_DEC_NK, FL_DEC_BLOCK — see
//                          "Decode rows in vector lanes" below
//
// ── The algorithm (Dao 2023, FlashAttention-2; online softmax, Milakov & Gimelshein
// 2018) for one task (see flash/flash_plan.h) holding `rows` query rows:
//   Q̂ = scale·Q (packed once, row-major)                     resident for the task
//   for each K/V tile j (tkv keys) the task's rows can see:
//     K̂ᵀ[d][c] = K[j+c][d]  (packed once, shared by every row — GQA: by every head of
//                            the group; V is read in place, or copied when head_dim_v
//                            is not whole vectors)
//     for each block of FL_ROW_BLOCK rows (its scores stay in L1):
//       S = Q̂·K̂ᵀ                                      register tile FL_QK_MR × FL_QK_NV
//       per row: m' = max(m, max_c S), α = e^{m−m'}, P = e^{S−m'}, l' = α·l + Σ_c P
//       acc = α·acc + P·V   (α multiply skipped for a register tile whose max held)
//   o = acc / l   (l = 0 — the row saw no key — gives zeros)
// Causal: tiles wholly above the diagonal are never visited (the loop stops at the
// keys the task's last row sees); in tiles that cross it, each row's limit (lims) masks
// its scores and register tiles / row blocks past every row's limit are skipped.
// Decode-sized tasks skip the tiles: FL_RV_W..FL_LANES_MAX_ROWS rows (MQA/GQA decode) put
// the rows in vector lanes (fl_lanes); fewer than FL_QK_MR rows take one fused pass over the
// keys (fl_row_fused).
// Split-KV tasks store (acc, m, l) instead, merged by flash_merge in chunk order.
#pragma once

#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/attn_internal.h"
#include "flash/flash_plan.h"
#include "simd/softmax.h"

#if FL_PV_MR < 4 || FL_PV_MR > 8 || FL_QK_MR > 16
#error "register tiles: 4 <= FL_PV_MR <= 8, FL_QK_MR <= 16"
#endif
// Rows per Q·Kᵀ → softmax → P·V block: a common multiple of both register tiles' rows.
#ifndef FL_ROW_BLOCK
#define FL_ROW_BLOCK (FL_QK_MR * FL_PV_MR)
#endif

#ifndef FL_PF_LOCALITY
#define FL_PF_LOCALITY 3
#endif

#define FL_INLINE static inline __attribute__((always_inline))

// ── Spread-out prefetch of the next K/V tile ─────────────────────────────────────────
// Decode streams K and V from memory with little arithmetic per byte. Asking for the
// whole next tile at once fills the core's miss queue and stalls the pipeline; instead
// the micro-kernels' inner loops each issue two requests (two 64-byte lines) per
// iteration from this cursor: first the next K tile, then the next V tile. (With 8 rows
// a tile has about half as many inner iterations as lines to fetch, hence two.)
// FL_PF_LOCALITY is the __builtin_prefetch locality of these requests, per ISA file:
// 3 (prefetcht0, into L1) by default; flash_avx512.c asks for 2 (prefetcht1, into L2),
// which measured faster there for MQA decode and slower for flash__avx2. (Tasks of fewer
// rows than a Q·Kᵀ register tile take fl_row_fused, which uses no software prefetch.)
typedef struct fl_pf {
  const char *p, *end;    // current segment
  const char *p2, *end2;  // the segment after it (empty when p2 == end2)
} fl_pf;
#define FL_PF_STEP_FN(name, locality)                                                      \
  FL_INLINE void name(fl_pf *c) {                                                          \
    if (c->p < c->end) {                                                                   \
      __builtin_prefetch(c->p, 0, locality);                                               \
      __builtin_prefetch(c->p + 64, 0, locality);                                          \
      c->p += 128;                                                                         \
    } else if (c->p2 < c->end2) {                                                          \
      c->p = c->p2, c->end = c->end2, c->p2 = c->end2;                                     \
    }                                                                                      \
  }
FL_PF_STEP_FN(fl_pf_step, FL_PF_LOCALITY)
// The Q·Kᵀ loop of the rows-in-lanes decode path (fl_lanes) prefetches into L2 on every
// ISA: measured faster than L1 there for flash__avx2 and flash__avx512 (MQA decode, Skv
// 32768). Its P·V share goes through fl_pv_micro, i.e. FL_PF_LOCALITY.
FL_PF_STEP_FN(fl_pf_step_l2, 2)
#undef FL_PF_STEP_FN

// A cursor over the K rows, then the V rows, of the n keys (n ≤ 0: none) that start at
// k and v — the next tile or block, handed out by the steps above.
FL_INLINE fl_pf fl_pf_keys(const float *k, const float *v, int64_t n, int64_t dqk, int64_t dv) {
  if (n <= 0) return (fl_pf){0};
  const char *kc = (const char *)k, *vc = (const char *)v;
  return (fl_pf){kc, kc + n * dqk * 4, vc, vc + n * dv * 4};
}

// V̂ for P·V, which runs over dvp columns: when head_dim_v is a whole number of vectors
// (dv == dvp) V's own rows serve; otherwise its nk rows are copied into buf, zero-padded
// to dvp. Either way the rows returned have stride dvp.
static const float *fl_v_rows(const float *v, int64_t nk, int64_t dv, int64_t dvp, float *buf) {
  if (dv == dvp) return v;
  for (int64_t c = 0; c < nk; c++) {
    memcpy(buf + c * dvp, v + c * dv, (size_t)dv * sizeof(float));
    for (int64_t e = dv; e < dvp; e++) buf[c * dvp + e] = 0.0f;
  }
  return buf;
}

// ── Q·Kᵀ micro-kernel: S[mr][nv·LANES] = Q̂[mr][d] · K̂ᵀ[d][nv·LANES] ─────────────────
// K̂ᵀ holds one row of tkv keys per d, so each d loads nv contiguous vectors of keys and
// each row broadcasts one Q̂ element: mr·nv FMAs per (nv loads + mr broadcasts).
FL_INLINE void fl_qk_micro(int mr, int nv, const float *q, int64_t dqk, const float *kt,
                           int64_t tkv, float *s, fl_pf *pf) {
  vf_t acc[FL_QK_MR][FL_QK_NV];
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) acc[r][v] = vf_zero();
  for (int64_t d = 0; d < dqk; d++) {
    vf_t kv[FL_QK_NV];
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) kv[v] = vf_load(kt + d * tkv + v * VF_W);
    fl_pf_step(pf);
#pragma GCC unroll 16
    for (int r = 0; r < mr; r++) {
      const vf_t qb = vf_set1(q[r * dqk + d]);
#pragma GCC unroll 4
      for (int v = 0; v < nv; v++) acc[r][v] = vf_fma(qb, kv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) vf_store(s + r * tkv + v * VF_W, acc[r][v]);
}

// The largest limit among rows [r, r + n): the keys any of them can see.
static inline int64_t fl_max_lim(const int32_t *lims, int64_t r, int64_t n) {
  int64_t mx = 0;
  for (int64_t i = r; i < r + n; i++) mx = lims[i] > mx ? lims[i] : mx;
  return mx;
}

// S rows [0, nrows) × keys [0, ncol), ncol a multiple of VF_W. Full register tiles
// use the MR × NV micro-kernel; edges fall back to narrower instances of it. Register
// tiles whose keys no row of the tile can see (lims: keys each row sees in this K/V
// tile) are skipped — on the diagonal that is the part above it; the softmax overwrites
// those scores with −∞ before anyone reads them.
static void fl_qk_tile(int64_t nrows, int64_t ncol, const float *q, int64_t dqk,
                       const float *kt, int64_t tkv, float *s, const int32_t *lims, fl_pf *pf) {
  for (int64_t c = 0; c < ncol; c += FL_QK_NV * VF_W) {
    const int64_t left = (ncol - c) / VF_W;
    const int nv = (int)(left < FL_QK_NV ? left : FL_QK_NV);
    for (int64_t r = 0; r < nrows; r += FL_QK_MR) {
      const int64_t mr = nrows - r < FL_QK_MR ? nrows - r : FL_QK_MR;
      if (c >= fl_max_lim(lims, r, mr)) continue;
      const float *qr = q + r * dqk;
      const float *ktc = kt + c;
      float *sr = s + r * tkv + c;
      if (nv == FL_QK_NV && mr == FL_QK_MR) {
        fl_qk_micro(FL_QK_MR, FL_QK_NV, qr, dqk, ktc, tkv, sr, pf);
      } else if (mr == FL_QK_MR) {
        for (int v = 0; v < nv; v++)
          fl_qk_micro(FL_QK_MR, 1, qr, dqk, ktc + v * VF_W, tkv, sr + v * VF_W, pf);
      } else if (nv == FL_QK_NV) {
        for (int64_t rr = 0; rr < mr; rr++)
          fl_qk_micro(1, FL_QK_NV, qr + rr * dqk, dqk, ktc, tkv, sr + rr * tkv, pf);
      } else {
        for (int64_t rr = 0; rr < mr; rr++)
          for (int v = 0; v < nv; v++)
            fl_qk_micro(1, 1, qr + rr * dqk, dqk, ktc + v * VF_W, tkv,
                        sr + rr * tkv + v * VF_W, pf);
      }
    }
  }
}

// ── P·V micro-kernel: acc[mr][nv·LANES] = α·acc + P[mr][0..nc) · V̂[0..nc)[nv·LANES] ──
// P[r][c] is pm[r·prs + c·pcs]: row-major scores (prs = tkv, pcs = 1) or the lanes
// path's transposed P̂ᵀ (prs = 1, pcs = R).
FL_INLINE void fl_pv_micro(int mr, int nv, const float *pm, int64_t prs, int64_t pcs, int64_t nc,
                           const float *vp, int64_t vstride, float *acc, int64_t dvp,
                           const float *alpha, int rescale, fl_pf *pf) {
  vf_t o[FL_PV_MR][FL_PV_NV];
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++) {
    const vf_t a = vf_set1(rescale ? alpha[r] : 1.0f);
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) {
      o[r][v] = vf_load(acc + r * dvp + v * VF_W);
      if (rescale) o[r][v] = vf_mul(o[r][v], a);
    }
  }
  for (int64_t c = 0; c < nc; c++) {
    vf_t vv[FL_PV_NV];
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) vv[v] = vf_load(vp + c * vstride + v * VF_W);
    fl_pf_step(pf);
#pragma GCC unroll 16
    for (int r = 0; r < mr; r++) {
      const vf_t pb = vf_set1(pm[r * prs + c * pcs]);
#pragma GCC unroll 4
      for (int v = 0; v < nv; v++) o[r][v] = vf_fma(pb, vv[v], o[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) vf_store(acc + r * dvp + v * VF_W, o[r][v]);
}

// One register tile of any shape mr ≤ FL_PV_MR, nv ≤ FL_PV_NV: the switch gives each
// row count its own fully unrolled instance (a 1-row tile still runs nv independent
// FMA chains — decode rows are a single row).
static void fl_pv_any(int mr, int nv, const float *pr, int64_t prs, int64_t pcs, int64_t nc,
                      const float *vp,
                      int64_t vstride, float *ar, int64_t dvp, const float *al, int rescale,
                      fl_pf *pf) {
#define FL_PV_CASE(M)                                                                      \
  case M:                                                                                  \
    if (nv == FL_PV_NV)                                                                    \
      fl_pv_micro(M, FL_PV_NV, pr, prs, pcs, nc, vp, vstride, ar, dvp, al, rescale, pf); \
    else /* narrow right edge: head_dim_v not a multiple of the tile */                    \
      for (int v = 0; v < nv; v++)                                                         \
        fl_pv_micro(M, 1, pr, prs, pcs, nc, vp + v * VF_W, vstride, ar + v * VF_W, dvp, al,  \
                    rescale, pf);                                                          \
    break;
  switch (mr) {
    FL_PV_CASE(1) FL_PV_CASE(2) FL_PV_CASE(3) FL_PV_CASE(4)
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
    default: break;
  }
#undef FL_PV_CASE
}

// acc rows [0, nrows) = α·acc + P · V̂ over keys [0, nc); P[r][c] = pm[r·prs + c·pcs].
// Rows are split into equal register tiles of at most FL_PV_MR rows (8 rows with
// FL_PV_MR 6: 4 + 4, not 6 + 2). A register tile whose rows all kept their max (α = 1)
// skips the rescale. Each register tile stops at the last key one of its rows sees
// (lims), since P is 0 beyond a row's limit.
static void fl_pv_tile(int64_t nrows, const float *pm, int64_t prs, int64_t pcs, const float *vp,
                       int64_t vstride, float *acc, int64_t dvp, const float *alpha,
                       const int32_t *lims, fl_pf *pf) {
  const int64_t ntiles = (nrows + FL_PV_MR - 1) / FL_PV_MR;
  for (int64_t g = 0, r = 0; g < ntiles; g++) {
    const int mr = (int)(nrows / ntiles + (g < nrows % ntiles));
    const int64_t nc = fl_max_lim(lims, r, mr);
    int any = 0;
    for (int rr = 0; rr < mr; rr++) any |= alpha[r + rr] != 1.0f;
    for (int64_t e = 0; e < dvp; e += FL_PV_NV * VF_W) {
      const int64_t left = (dvp - e) / VF_W;
      const int nv = (int)(left < FL_PV_NV ? left : FL_PV_NV);
      const float *pr = pm + r * prs;
      float *ar = acc + r * dvp + e;
      if (mr == FL_PV_MR && nv == FL_PV_NV) {
        if (any)
          fl_pv_micro(FL_PV_MR, FL_PV_NV, pr, prs, pcs, nc, vp + e, vstride, ar, dvp, alpha + r, 1, pf);
        else
          fl_pv_micro(FL_PV_MR, FL_PV_NV, pr, prs, pcs, nc, vp + e, vstride, ar, dvp, alpha + r, 0, pf);
      } else {
        fl_pv_any(mr, nv, pr, prs, pcs, nc, vp + e, vstride, ar, dvp, alpha + r, any, pf);
      }
    }
    r += mr;
  }
}

// ── Decode rows (fewer than FL_QK_MR): one fused pass over the keys ─────────────────
// Decode tasks (MHA: one row; GQA: the group's heads) read each K and V element once with
// a few flop per byte, so their speed is what the hardware prefetcher sustains. It
// streams best when every access is strictly sequential: each key's score is one dot
// product along its own K row (4 accumulators over head_dim, one horizontal sum), and
// blocks of FL_ROW_KEYS keys are scored, softmax-updated and folded into acc at once, so
// K and V advance as two sequential streams. No software prefetch: here it only competes
// with the hardware prefetcher. (The tiled path read 4 K rows at once — 4 interleaved
// streams 512 bytes apart at D128 — and asked for the whole next tile up front: 16–17 ms
// vs 10–11 ms for this on 1 thread, Sq1 Skv32768 D128 KV8.) Per block and row
// (vs_online_softmax_row):
//   s_c = Q̂·K_c, m' = max(m, max_c s_c), α = e^{m−m'}, p_c = e^{s_c−m'}, l' = α·l + Σ p_c,
//   acc' = α·acc + Σ_c p_c·V_c  (key order; the α multiply is skipped when α = 1).
#ifndef FL_ROW_KEYS
#define FL_ROW_KEYS 32
#endif
#define FL_ROW_NV 8  // acc vectors held in registers per pass over a block's V rows

// Rows [0, nrows) (nrows < FL_QK_MR) of a task over its keys [0, nkeys); row r sees keys
// [0, vis[r]) (causal: vis[r] < nkeys for rows before the last). Each key's K row is read
// once from memory, start to end, by the first row's dot product; the other rows reread it
// from L1, and each row's P·V pass rereads the block's V rows from L1 likewise.
static void fl_row_fused(int64_t nrows, const float *q, int64_t dqk, const float *k,
                         const float *v, int64_t dv, int64_t dvp, int64_t nkeys,
                         const int32_t *vis, float *acc, float *m, float *l) {
  float sbuf[FL_QK_MR][FL_ROW_KEYS + VF_W] __attribute__((aligned(64)));
  for (int64_t j0 = 0; j0 < nkeys; j0 += FL_ROW_KEYS) {
    const int64_t nk = nkeys - j0 < FL_ROW_KEYS ? nkeys - j0 : FL_ROW_KEYS;
    const int64_t ncol = (nk + VF_W - 1) / VF_W * VF_W;
    const float *kj = k + j0 * dqk, *vj = v + j0 * dv;
    for (int64_t c = 0; c < nk; c++) {
      const float *kc = kj + c * dqk;
      for (int64_t r = 0; r < nrows; r++) {
        const float *qr = q + r * dqk;
        vf_t a0 = vf_zero(), a1 = vf_zero(), a2 = vf_zero(), a3 = vf_zero();
        int64_t d = 0;
        for (; d + 4 * VF_W <= dqk; d += 4 * VF_W) {
          a0 = vf_fma(vf_load(qr + d), vf_load(kc + d), a0);
          a1 = vf_fma(vf_load(qr + d + VF_W), vf_load(kc + d + VF_W), a1);
          a2 = vf_fma(vf_load(qr + d + 2 * VF_W), vf_load(kc + d + 2 * VF_W), a2);
          a3 = vf_fma(vf_load(qr + d + 3 * VF_W), vf_load(kc + d + 3 * VF_W), a3);
        }
        for (; d + VF_W <= dqk; d += VF_W) a0 = vf_fma(vf_load(qr + d), vf_load(kc + d), a0);
        if (d < dqk)
          a1 = vf_fma(vf_load_partial(qr + d, (int)(dqk - d)),
                      vf_load_partial(kc + d, (int)(dqk - d)), a1);
        sbuf[r][c] = vf_hsum(vf_add(vf_add(a0, a1), vf_add(a2, a3)));
      }
    }
    for (int64_t r = 0; r < nrows; r++) {
      int64_t n = vis[r] - j0;  // keys of this block row r sees
      n = n < 0 ? 0 : n > nk ? nk : n;
      float *s = sbuf[r];
      const float alpha = vs_online_softmax_row(s, n, ncol, &m[r], &l[r]);  // s: p from here
      if (n == 0) continue;  // p = 0 and α = 1: acc unchanged
      float *ar = acc + r * dvp;
      const vf_t va = vf_set1(alpha);
      const int rescale = alpha != 1.0f;
      int64_t e = 0;
      for (; e + FL_ROW_NV * VF_W <= dv; e += FL_ROW_NV * VF_W) {  // 8 whole vectors per pass
        vf_t o[FL_ROW_NV];
#pragma GCC unroll 8
        for (int x = 0; x < FL_ROW_NV; x++) {
          o[x] = vf_load(ar + e + x * VF_W);
          if (rescale) o[x] = vf_mul(o[x], va);
        }
        const float *ve = vj + e;
        for (int64_t c = 0; c < n; c++) {
          const vf_t pb = vf_set1(s[c]);
#pragma GCC unroll 8
          for (int x = 0; x < FL_ROW_NV; x++) o[x] = vf_fma(pb, vf_load(ve + c * dv + x * VF_W), o[x]);
        }
#pragma GCC unroll 8
        for (int x = 0; x < FL_ROW_NV; x++) vf_store(ar + e + x * VF_W, o[x]);
      }
      for (; e < dvp; e += VF_W) {  // the rest one vector at a time; the last may be partial
        const int w = (int)(dv - e < VF_W ? dv - e : VF_W);
        vf_t o = vf_load(ar + e);
        if (rescale) o = vf_mul(o, va);
        for (int64_t c = 0; c < n; c++) {
          const float *vr = vj + c * dv + e;
          o = vf_fma(vf_set1(s[c]), w == VF_W ? vf_load(vr) : vf_load_partial(vr, w), o);
        }
        vf_store(ar + e, o);
      }
    }
  }
}

// ── Decode rows in vector lanes: FL_RV_W ≤ rows ≤ FL_LANES_MAX_ROWS (MQA / GQA decode) ──
// The heads of one K/V group at one position (MQA decode: 8 rows) share every K and V
// row. The tiled path packs K̂ᵀ per tile, and at 8 rows that transpose costs about a fifth
// of the task; the fused path's per-row dot products end in one horizontal sum per row
// and key. Here Q̂ is transposed instead, once per task (Q̂ᵀ[d][r], R = rows rounded up to
// whole row vectors of FL_RV_W lanes, padding rows 0), and K is read in place:
//   Sᵀ[c][·] = Σ_d K[c][d] · Q̂ᵀ[d][·]       one broadcast K element × one row vector
// FL_DEC_NK keys at a time (their accumulators stay in registers). The online softmax
// then runs lane-wise on Sᵀ (row r lives in lane r of every key's R floats: maxima and
// sums need no horizontal reductions), and P·V reads P̂ᵀ with column stride R. Each
// row's arithmetic is fixed by the shape alone (block boundaries, key order).
// The row vector: an ISA file may define a narrower one than vf_t (flash_avx512.c uses
// 8-lane __m256, as fast per lane on Zen 4 and not wasting half of each vector at 8 rows).
#ifndef FL_RV_W
#define FL_RV_W VF_W
typedef vf_t fl_rv_t;
FL_INLINE fl_rv_t fl_rv_zero(void) { return vf_zero(); }
FL_INLINE fl_rv_t fl_rv_load(const float *p) { return vf_load(p); }
FL_INLINE void fl_rv_store(float *p, fl_rv_t x) { vf_store(p, x); }
FL_INLINE fl_rv_t fl_rv_fma_bcast(const float *k, fl_rv_t q, fl_rv_t acc) {
  return vf_fma(vf_set1(*k), q, acc);
}
#endif
#ifndef FL_DEC_NK
#define FL_DEC_NK 8  // keys whose score row vectors are accumulated at once (one row vector)
#endif
#ifndef FL_DEC_BLOCK
#define FL_DEC_BLOCK 64  // keys per online-softmax block (and the prefetch distance)
#endif
#define FL_LANES_MAX_R (2 * FL_RV_W)
// Tasks of FL_RV_W..FL_LANES_MAX_ROWS rows take this path (at most two row vectors).
// flash_avx512.c stops at 8: with 16 rows the packed transpose is shared by twice the
// rows and the 8×32 zmm tiles measured faster than two 8-lane row vectors.
#ifndef FL_LANES_MAX_ROWS
#define FL_LANES_MAX_ROWS FL_LANES_MAX_R
#endif
#if FL_LANES_MAX_ROWS < FL_RV_W || FL_LANES_MAX_ROWS > FL_LANES_MAX_R
#error "FL_LANES_MAX_ROWS: between FL_RV_W and 2·FL_RV_W"
#endif
// Q̂ᵀ (dqk × R floats) lives in the task's K̂ᵀ scratch (dqk × tkv, tkv ≥ FL_QK_NV·VF_W).
_Static_assert(FL_QK_NV * VF_W >= FL_LANES_MAX_R, "fl_lanes: Q̂ᵀ does not fit the K̂ᵀ scratch");
#define FL_LANES_W (FL_LANES_MAX_R > VF_W ? FL_LANES_MAX_R : VF_W)

// Sᵀ[c][x·FL_RV_W ..] for keys c < nk (nk ≤ FL_DEC_NK / nrv), row vectors x < nrv.
FL_INLINE void fl_lanes_qk_micro(int nrv, int nk, const float *qt, int64_t R, const float *k,
                                 int64_t dqk, float *st, fl_pf *pf) {
  fl_rv_t s[2][FL_DEC_NK];
#pragma GCC unroll 2
  for (int x = 0; x < nrv; x++)
#pragma GCC unroll 16
    for (int c = 0; c < nk; c++) s[x][c] = fl_rv_zero();
  for (int64_t d = 0; d < dqk; d++) {
    const fl_rv_t q0 = fl_rv_load(qt + d * R);
    const fl_rv_t q1 = nrv > 1 ? fl_rv_load(qt + d * R + FL_RV_W) : q0;
    if ((d & 3) == 3) fl_pf_step_l2(pf);
#pragma GCC unroll 16
    for (int c = 0; c < nk; c++) {
      s[0][c] = fl_rv_fma_bcast(k + c * dqk + d, q0, s[0][c]);
      if (nrv > 1) s[1][c] = fl_rv_fma_bcast(k + c * dqk + d, q1, s[1][c]);
    }
  }
#pragma GCC unroll 2
  for (int x = 0; x < nrv; x++)
#pragma GCC unroll 16
    for (int c = 0; c < nk; c++) fl_rv_store(st + c * R + x * FL_RV_W, s[x][c]);
}

// The online-softmax update (see softmax.h) of one block, lane-wise: st holds Sᵀ[c][r]
// for c < nk, r < R, then −∞ up to n_flat (a multiple of VF_W); P̂ᵀ replaces it.
// m, l, alpha: R entries. A row that has seen no key yet subtracts 0 instead of its
// max −∞, so e^(−∞ − 0) = 0 gives P = 0, α = 0 on a zero acc and l = 0: never NaN.
static void fl_lanes_softmax(float *st, int64_t n_flat, int64_t R, float *m, float *l,
                             float *alpha) {
  // Vector i of st covers lanes (i·VF_W .. ) mod R: when R > VF_W there are R / VF_W
  // phases, each with its own accumulator; else lane j of any vector is row j mod R.
  const int nph = R > VF_W ? (int)(R / VF_W) : 1;
  const int W = nph * VF_W;  // lanes of one phase cycle: max(R, VF_W)
  float tmp[FL_LANES_W] __attribute__((aligned(64)));
  float rep_old[FL_LANES_W] __attribute__((aligned(64)));
  float rep_new[FL_LANES_W] __attribute__((aligned(64)));
  vf_t acc[FL_LANES_W / VF_W];
  for (int ph = 0; ph < nph; ph++) acc[ph] = vf_set1(-INFINITY);
  for (int64_t x = 0, ph = 0; x < n_flat; x += VF_W, ph = ph + 1 == nph ? 0 : ph + 1)
    acc[ph] = vf_max(acc[ph], vf_load(st + x));
  for (int ph = 0; ph < nph; ph++) vf_store(tmp + ph * VF_W, acc[ph]);
  for (int64_t r = 0; r < R; r++) {
    float bm = tmp[r];
    for (int64_t j = r + R; j < W; j += R) bm = tmp[j] > bm ? tmp[j] : bm;
    const float mn = bm > m[r] ? bm : m[r];
    const float ms = mn == -INFINITY ? 0.0f : mn;
    for (int64_t j = r; j < W; j += R) rep_old[j] = m[r], rep_new[j] = ms;
    m[r] = mn;
  }
  for (int ph = 0; ph < nph; ph++) {  // α = e^(m − m'), lane-wise
    const vf_t a = vf_exp(vf_sub(vf_load(rep_old + ph * VF_W), vf_load(rep_new + ph * VF_W)));
    vf_store(tmp + ph * VF_W, a);
  }
  for (int64_t r = 0; r < R; r++) alpha[r] = tmp[r];
  vf_t vm[FL_LANES_W / VF_W];
  for (int ph = 0; ph < nph; ph++) vm[ph] = vf_load(rep_new + ph * VF_W), acc[ph] = vf_zero();
  for (int64_t x = 0, ph = 0; x < n_flat; x += VF_W, ph = ph + 1 == nph ? 0 : ph + 1) {
    const vf_t p = vf_exp(vf_sub(vf_load(st + x), vm[ph]));
    vf_store(st + x, p);
    acc[ph] = vf_add(acc[ph], p);
  }
  for (int ph = 0; ph < nph; ph++) vf_store(tmp + ph * VF_W, acc[ph]);
  for (int64_t r = 0; r < R; r++) {
    float sum = 0.0f;
    for (int64_t j = r; j < W; j += R) sum += tmp[j];
    l[r] = alpha[r] * l[r] + sum;
  }
}

// Rows [0, nrows) of a task over its keys [0, nkeys); row r sees keys [0, vis[r]).
// qt: dqk·R floats of scratch; vs: blk·dvp floats, used when dv is not whole vectors.
static void fl_lanes(int64_t nrows, const float *qs, int64_t dqk, const float *k, const float *v,
                     int64_t dv, int64_t dvp, int64_t nkeys, int64_t blk, const int32_t *vis,
                     float *qt, float *vs, float *acc, float *m, float *l) {
  const int nrv = nrows > FL_RV_W ? 2 : 1;
  const int64_t R = nrv * FL_RV_W;
  float st[FL_DEC_BLOCK * FL_LANES_MAX_R + VF_W] __attribute__((aligned(64)));
  float lm[FL_LANES_MAX_R], ll[FL_LANES_MAX_R], alpha[FL_LANES_MAX_R];
  int32_t bl[FL_LANES_MAX_R];
  if (blk > FL_DEC_BLOCK) blk = FL_DEC_BLOCK;
  for (int64_t d = 0; d < dqk; d++)
    for (int64_t r = 0; r < R; r++) qt[d * R + r] = r < nrows ? qs[r * dqk + d] : 0.0f;
  int64_t vmin = nkeys;  // keys every row sees
  for (int64_t r = 0; r < nrows; r++) vmin = vis[r] < vmin ? vis[r] : vmin;
  for (int64_t r = 0; r < R; r++) lm[r] = -INFINITY, ll[r] = 0.0f;
  const int step = FL_DEC_NK / nrv;
  for (int64_t j0 = 0; j0 < nkeys; j0 += blk) {
    const int64_t nk = nkeys - j0 < blk ? nkeys - j0 : blk;
    const float *kj = k + j0 * dqk, *vj = v + j0 * dv;
    // The next block's K and V, requested into L2 a little at a time: two lines per four
    // d steps of the Q·Kᵀ loop, then two per key step of the P·V loops (spread over the
    // block's whole compute time, not in a burst that fills the miss queue).
    const int64_t pj = j0 + blk;                             // first key of the next block
    const int64_t nn = nkeys - pj < blk ? nkeys - pj : blk;  // ≤ 0: nothing left
    fl_pf pf = fl_pf_keys(k + pj * dqk, v + pj * dv, nn, dqk, dv);
    int64_t c = 0;
    if (nrv == 1)
      for (; c + step <= nk; c += step)
        fl_lanes_qk_micro(1, FL_DEC_NK, qt, R, kj + c * dqk, dqk, st + c * R, &pf);
    else
      for (; c + step <= nk; c += step)
        fl_lanes_qk_micro(2, FL_DEC_NK / 2, qt, R, kj + c * dqk, dqk, st + c * R, &pf);
    for (; c < nk; c++) fl_lanes_qk_micro(nrv, 1, qt, R, kj + c * dqk, dqk, st + c * R, &pf);
    for (int64_t r = 0; r < nrows; r++) {  // keys of this block row r sees; mask the rest
      int64_t n = vis[r] - j0;
      n = n < 0 ? 0 : n > nk ? nk : n;
      bl[r] = (int32_t)n;
      if (j0 + nk > vmin)
        for (int64_t cc = n; cc < nk; cc++) st[cc * R + r] = -INFINITY;
    }
    const int64_t n_flat = (nk * R + VF_W - 1) / VF_W * VF_W;
    for (int64_t x = nk * R; x < n_flat; x++) st[x] = -INFINITY;
    fl_lanes_softmax(st, n_flat, R, lm, ll, alpha);
    fl_pv_tile(nrows, st, 1, R, fl_v_rows(vj, nk, dv, dvp, vs), dvp, acc, dvp, alpha, bl, &pf);
  }
  for (int64_t r = 0; r < nrows; r++) m[r] = lm[r], l[r] = ll[r];
}

// ── Packing ──────────────────────────────────────────────────────────────────────────
// K̂ᵀ[d][c] = K[c][d] for c < nk, 0 for nk ≤ c < ncp. Blocks of VF_W keys × VF_W dims go
// through FL_TRANSPOSE_BLOCK when the ISA file defines it (in-register transpose:
// dst[d·dst_stride + c] = src[c·src_stride + d] for c, d < VF_W); the rest is scalar,
// still one block of VF_W keys at a time so that the source rows and the destination
// lines stay in L1.
static void fl_pack_kt(const float *k, int64_t nk, int64_t ncp, int64_t dqk, float *kt,
                       int64_t tkv) {
  int64_t c0 = 0;
  for (; c0 + VF_W <= nk; c0 += VF_W) {
    const float *kb = k + c0 * dqk;
    int64_t d = 0;
#ifdef FL_TRANSPOSE_BLOCK
    for (; d + VF_W <= dqk; d += VF_W) FL_TRANSPOSE_BLOCK(kb + d, dqk, kt + d * tkv + c0, tkv);
#endif
    for (; d < dqk; d++) {
      float *dst = kt + d * tkv + c0;
      for (int c = 0; c < VF_W; c++) dst[c] = kb[c * dqk + d];
    }
  }
  for (int64_t d = 0; d < dqk; d++) {
    float *dst = kt + d * tkv;
    for (int64_t c = c0; c < nk; c++) dst[c] = k[c * dqk + d];
    for (int64_t c = nk; c < ncp; c++) dst[c] = 0.0f;
  }
}

// ── One task ─────────────────────────────────────────────────────────────────────────
static void fl_task(const attn_problem *p, const flash_plan *pl, int64_t t, const float *q,
                    const float *k, const float *v, float *o, float *scratch, float *partials) {
  const flash_task tk = flash_task_at(p, pl, t);
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, dvp = pl->dvp, tkv = pl->tkv;
  const int64_t hpg = p->heads / p->kv_heads;
  const int64_t h0 = tk.g * hpg + tk.sub * pl->heads_per_task;
  const int64_t hs = hpg - tk.sub * pl->heads_per_task < pl->heads_per_task
                         ? hpg - tk.sub * pl->heads_per_task
                         : pl->heads_per_task;
  const int64_t i0 = tk.qb * pl->tq;
  const int64_t nq = p->seq_q - i0 < pl->tq ? p->seq_q - i0 : pl->tq;
  const int64_t nrows = hs * nq;  // row hh·nq + r = head h0+hh, query position i0+r
  float *qs = scratch + pl->off_q, *kt = scratch + pl->off_kt, *vs = scratch + pl->off_v;
  float *S = scratch + pl->off_s, *acc = scratch + pl->off_acc;
  float *m = scratch + pl->off_m, *l = scratch + pl->off_l, *alpha = scratch + pl->off_alpha;
  int32_t *lims = (int32_t *)(scratch + pl->off_lim);

  // The keys this task visits: its chunk, cut at the last key its last row can see.
  const int64_t kv_end_all = attn_visible_keys(p, i0 + nq - 1);
  const int64_t kb = tk.chunk * pl->chunk;
  const int64_t ke = kb + pl->chunk < kv_end_all ? kb + pl->chunk : kv_end_all;
  const float *kh = attn_k_head(p, k, tk.b, tk.g);
  const float *vh = attn_v_head(p, v, tk.b, tk.g);

  for (int64_t row = 0; row < nrows; row++) m[row] = -INFINITY, l[row] = 0.0f;
  memset(acc, 0, (size_t)(nrows * dvp) * sizeof(float));
  if (kb < ke) {
    const float scale = p->scale;
    for (int64_t hh = 0; hh < hs; hh++) {
      const float *qh = attn_q_head(p, q, tk.b, h0 + hh) + i0 * dqk;
      float *dst = qs + hh * nq * dqk;
      for (int64_t x = 0; x < nq * dqk; x++) dst[x] = scale * qh[x];
    }
    // Decode-sized tasks skip the K̂ᵀ tiles: FL_RV_W..FL_LANES_MAX_ROWS rows (MQA/GQA
    // decode) put the rows in vector lanes; fewer than one Q·Kᵀ register tile take one
    // fused pass. (The path depends on the plan's rows only: on the shape, not threads.)
    const int lanes = nrows >= FL_RV_W && nrows <= FL_LANES_MAX_ROWS;
    const int packed = !lanes && nrows >= FL_QK_MR;
    if (!packed) {  // keys each row sees from kb on (ke is cut at the last row's limit)
      for (int64_t row = 0; row < nrows; row++) {
        const int64_t lim = attn_visible_keys(p, i0 + row % nq) - kb;
        lims[row] = (int32_t)(lim > ke - kb ? ke - kb : lim < 0 ? 0 : lim);
      }
      if (lanes)
        fl_lanes(nrows, qs, dqk, kh + kb * dqk, vh + kb * dv, dv, dvp, ke - kb, tkv, lims, kt, vs,
                 acc, m, l);
      else
        fl_row_fused(nrows, qs, dqk, kh + kb * dqk, vh + kb * dv, dv, dvp, ke - kb, lims, acc, m,
                     l);
    }
    for (int64_t j0 = kb; packed && j0 < ke; j0 += tkv) {  // ≥ FL_QK_MR rows: tiles
      const int64_t nk = ke - j0 < tkv ? ke - j0 : tkv;
      const int64_t ncol = (nk + VF_W - 1) / VF_W * VF_W;
      for (int64_t row = 0; row < nrows; row++) {  // keys each row sees in this tile
        int64_t lim = attn_visible_keys(p, i0 + row % nq) - j0;  // < nk on the diagonal
        lims[row] = (int32_t)(lim > nk ? nk : lim < 0 ? 0 : lim);
      }
      const float *kj = kh + j0 * dqk, *vj = vh + j0 * dv;
      // The next tile's K and V, requested a line at a time by the inner loops below.
      const int64_t nn = ke - j0 - tkv < tkv ? ke - j0 - tkv : tkv;  // ≤ 0: last tile
      fl_pf pf = fl_pf_keys(kj + tkv * dqk, vj + tkv * dv, nn, dqk, dv);
      const float *vt = fl_v_rows(vj, nk, dv, dvp, vs);  // V̂: in place, or padded copy
      {  // K̂ᵀ: tkv keys per d row; columns [nk, ncol) zero so their scores are finite.
        const int64_t ncq = (nk + FL_QK_NV * VF_W - 1) / (FL_QK_NV * VF_W) *
                            (FL_QK_NV * VF_W);
        const int64_t ncp = ncq < tkv ? ncq : tkv;
        fl_pack_kt(kj, nk, ncp, dqk, kt, tkv);
      }
      // Row blocks of FL_ROW_BLOCK rows run Q·Kᵀ → softmax → P·V back to back, so their
      // scores (FL_ROW_BLOCK × tkv floats) never leave L1; K̂ᵀ and V̂ come from L2.
      for (int64_t r0 = 0; r0 < nrows; r0 += FL_ROW_BLOCK) {
        const int64_t nb = nrows - r0 < FL_ROW_BLOCK ? nrows - r0 : FL_ROW_BLOCK;
        if (fl_max_lim(lims, r0, nb) == 0) continue;  // causal: block sees nothing here
        float *sb = S + r0 * tkv;
        fl_qk_tile(nb, ncol, qs + r0 * dqk, dqk, kt, tkv, sb, lims + r0, &pf);
        for (int64_t row = r0; row < r0 + nb; row++)  // lim 0: P = 0, α = 1, (m, l) kept
          alpha[row] = vs_online_softmax_row(S + row * tkv, lims[row], ncol, &m[row], &l[row]);
        fl_pv_tile(nb, sb, tkv, 1, vt, dvp, acc + r0 * dvp, dvp, alpha + r0, lims + r0, &pf);
      }
    }
  }

  if (pl->nsplit > 1) {  // partial (acc, m, l) for flash_merge
    float *blk = partials + (size_t)t * pl->partial_stride;
    memcpy(blk, acc, (size_t)(nrows * dvp) * sizeof(float));
    memcpy(blk + pl->rows * dvp, m, (size_t)nrows * sizeof(float));
    memcpy(blk + pl->rows * dvp + pl->rows, l, (size_t)nrows * sizeof(float));
    return;
  }
  for (int64_t hh = 0; hh < hs; hh++) {
    float *oh = attn_o_head(p, o, tk.b, h0 + hh) + i0 * dv;
    for (int64_t r = 0; r < nq; r++) {
      const int64_t row = hh * nq + r;
      const float inv = l[row] > 0.0f ? 1.0f / l[row] : 0.0f;  // l = 0: no visible key
      const vf_t iv = vf_set1(inv);
      const float *ar = acc + row * dvp;
      float *orow = oh + r * dv;
      int64_t e = 0;
      for (; e + VF_W <= dv; e += VF_W) vf_store(orow + e, vf_mul(vf_load(ar + e), iv));
      if (e < dv) vf_store_partial(orow + e, vf_mul(vf_load(ar + e), iv), (int)(dv - e));
    }
  }
}

// ── Entry points ─────────────────────────────────────────────────────────────────────
static void fl_plan(const attn_problem *p, const attn_exec *exec, flash_plan *pl) {
  flash_plan_make(p, exec, VF_W, FL_QK_NV * VF_W, pl);
}

static size_t FL_WORKSPACE(const attn_problem *p, const attn_exec *exec) {
  flash_plan pl;
  fl_plan(p, exec, &pl);
  return flash_workspace_bytes(&pl, flash_threads(exec));
}

static int FL_RUN(const attn_problem *p, const attn_exec *exec, const float *q, const float *k,
                  const float *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  flash_plan pl;
  fl_plan(p, exec, &pl);
  const int nt = flash_threads(exec);
  float *ws = workspace;
  float *partials = ws + (size_t)nt * pl.scratch_floats;
  // Split-KV: chunks done per base task; whoever finishes the last chunk merges, in chunk
  // order (the merge does not depend on who runs it), so no barrier separates the phases.
  int *done = (int *)(partials + (size_t)pl.tasks * pl.partial_stride);
  if (pl.nsplit > 1) memset(done, 0, (size_t)pl.base_tasks * sizeof *done);
#pragma omp parallel num_threads(nt)
  {
    const attn_fp_env env = attn_fp_env_enter();
    float *scratch = ws + (size_t)omp_get_thread_num() * pl.scratch_floats;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < pl.tasks; t++) {
      fl_task(p, &pl, t, q, k, v, o, scratch, partials);
      if (pl.nsplit > 1) {
        int n;
        // seq_cst: the partial written above is visible to whichever thread merges.
#pragma omp atomic capture seq_cst
        n = ++done[t / pl.nsplit];
        if (n == pl.nsplit) flash_merge(p, &pl, partials, t / pl.nsplit, o);
      }
    }
    attn_fp_env_leave(env);
  }
  return ATTN_OK;
}
