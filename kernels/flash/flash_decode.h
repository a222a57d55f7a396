// SPDX-License-Identifier: MIT
// flash_decode.h — the flash kernels' two decode paths, for tasks with too few rows to
// fill the packed register tiles (flash_body.h picks the path from the task's row count,
// which depends on the shape only):
//   fl_row_fused  fewer than FL_QK_MR rows (MHA decode): one fused sequential pass
//   fl_lanes      FL_RV_W..FL_LANES_MAX_ROWS rows (MQA/GQA decode): rows in vector lanes
// Both keep the online-softmax state (m, l, acc) of the FA2 loop and give the same
// result contract as the tiled pass (acc, m, l per row; l = 0: no key seen).
// Included by flash_body.h only.
#pragma once

#include "flash/flash_opts.h"
#include "flash/flash_tiles.h"
#include "simd/kv_widen.h"

// ── Decode rows (fewer than FL_QK_MR): one fused pass over the keys ─────────────────
// Decode tasks (MHA: one row; GQA: the group's heads) read each K and V element once with
// a few flop per byte, so their speed is what the hardware prefetcher sustains. It
// streams best when every access is strictly sequential: each key's score is one dot
// product along its own K row (4 accumulators over head_dim, one horizontal sum), and
// blocks of FL_ROW_KEYS keys are scored, softmax-updated and folded into acc at once, so
// K and V advance as two sequential streams. No software prefetch: here it only competes
// with the hardware prefetcher (docs/tuning.md). Per block and row
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
// from L1, and each row's P·V pass rereads the block's V rows from L1 likewise. fin (NULL:
// none) finishes each row's block scores (flash_opts.h); key 0 here is key kabs of the head.
static void fl_row_fused(int64_t nrows, const float *q, int64_t dqk, const float *k, const float *v,
                         int64_t dv, int64_t dvp, int64_t nkeys, const int32_t *vis, float *acc,
                         float *m, float *l, const fl_fin *fin, int64_t kabs) {
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
      if (fin && n > 0) n = fl_fin_row(fin, r, s, kabs + j0, n);            // options; 0: none seen
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
          for (int x = 0; x < FL_ROW_NV; x++)
            o[x] = vf_fma(pb, vf_load(ve + c * dv + x * VF_W), o[x]);
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

// The same for K/V of type t (not F32): each block of FL_KV_FUSED_KEYS keys is widened
// into kc (K rows, dqk floats) and vc (V rows, dv floats) — exact — and run through
// fl_row_fused, whose FL_ROW_KEYS blocks then start at the same keys as over the whole
// range, so the arithmetic is the float32 path's on the stored values. K and V rows are
// kb, vb + key · krb, vrb bytes.
#ifndef FL_KV_FUSED_KEYS
#define FL_KV_FUSED_KEYS FL_ROW_KEYS  // keys widened at once (a multiple of FL_ROW_KEYS)
#endif
_Static_assert(FL_KV_FUSED_KEYS % FL_ROW_KEYS == 0, "FL_KV_FUSED_KEYS: whole FL_ROW_KEYS blocks");
static void fl_row_fused_typed(attn_dtype t, int64_t nrows, const float *q, int64_t dqk,
                               const char *kb, size_t krb, const char *vb, size_t vrb, int64_t dv,
                               int64_t dvp, int64_t nkeys, const int32_t *vis, float *kc, float *vc,
                               float *acc, float *m, float *l, const fl_fin *fin, int64_t kabs) {
  int32_t bvis[FL_QK_MR];
  for (int64_t j0 = 0; j0 < nkeys; j0 += FL_KV_FUSED_KEYS) {
    const int64_t nk = nkeys - j0 < FL_KV_FUSED_KEYS ? nkeys - j0 : FL_KV_FUSED_KEYS;
    kv_widen_rows(t, kb + (size_t)j0 * krb, krb, nk, dqk, kc, dqk, dqk);
    kv_widen_rows(t, vb + (size_t)j0 * vrb, vrb, nk, dv, vc, dv, dv);
    for (int64_t r = 0; r < nrows; r++) {
      const int64_t n = vis[r] - j0;
      bvis[r] = (int32_t)(n < 0 ? 0 : n > nk ? nk : n);
    }
    fl_row_fused(nrows, q, dqk, kc, vc, dv, dvp, nk, bvis, acc, m, l, fin, kabs + j0);
  }
}

// One decode row (MHA decode) with K/V of type t, widened in registers: fl_row_fused's
// arithmetic for nrows = 1 operation for operation — the same four accumulators along
// each K row, the same horizontal sum, softmax and P·V order — on vectors widened
// straight from the stored rows (kv_vec), so the float32 scratch round trip of
// fl_row_fused_typed is skipped and the output bits are the same.
FL_INLINE vf_t fl_kv_vec(const attn_dtype t, const char *row, int64_t e) {
  switch (t) {
    case ATTN_DTYPE_F16:
      return kv_w_f16((const uint16_t *)row + e);
    case ATTN_DTYPE_BF16:
      return kv_w_bf16((const uint16_t *)row + e);
    case ATTN_DTYPE_Q8_0: {  // e is a multiple of VF_W, so the vector lies in one block
      const attn_block_q8_0 *b = (const attn_block_q8_0 *)row + e / ATTN_Q8_0_BLOCK;
      return vf_mul(kv_w_scale(b->d), kv_w_i8(b->qs + e % ATTN_Q8_0_BLOCK));
    }
    default:
      return vf_load((const float *)row + e);
  }
}
// n < VF_W elements at e, zeros above (f16/bf16 tails; q8_0 rows are whole blocks).
FL_INLINE vf_t fl_kv_vec_partial(const attn_dtype t, const char *row, int64_t e, int n) {
  float buf[VF_W] __attribute__((aligned(64)));
  for (int i = 0; i < VF_W; i++) buf[i] = 0.0f;
  const uint16_t *h = (const uint16_t *)row + e;
  for (int i = 0; i < n; i++)
    buf[i] = t == ATTN_DTYPE_F16 ? attn_f16_to_f32(h[i]) : attn_bf16_to_f32(h[i]);
  return vf_load(buf);
}

FL_INLINE void fl_row1_t(const attn_dtype t, const float *q, int64_t dqk, const char *k, size_t krb,
                         const char *v, size_t vrb, int64_t dv, int64_t nkeys, int64_t vis,
                         float *acc, float *m, float *l) {
  float s[FL_ROW_KEYS + VF_W] __attribute__((aligned(64)));
  for (int64_t j0 = 0; j0 < nkeys; j0 += FL_ROW_KEYS) {
    const int64_t nk = nkeys - j0 < FL_ROW_KEYS ? nkeys - j0 : FL_ROW_KEYS;
    const int64_t ncol = (nk + VF_W - 1) / VF_W * VF_W;
    const char *kj = k + (size_t)j0 * krb, *vj = v + (size_t)j0 * vrb;
    for (int64_t c = 0; c < nk; c++) {
      const char *kc = kj + (size_t)c * krb;
      vf_t a0 = vf_zero(), a1 = vf_zero(), a2 = vf_zero(), a3 = vf_zero();
      int64_t d = 0;
      for (; d + 4 * VF_W <= dqk; d += 4 * VF_W) {
        a0 = vf_fma(vf_load(q + d), fl_kv_vec(t, kc, d), a0);
        a1 = vf_fma(vf_load(q + d + VF_W), fl_kv_vec(t, kc, d + VF_W), a1);
        a2 = vf_fma(vf_load(q + d + 2 * VF_W), fl_kv_vec(t, kc, d + 2 * VF_W), a2);
        a3 = vf_fma(vf_load(q + d + 3 * VF_W), fl_kv_vec(t, kc, d + 3 * VF_W), a3);
      }
      for (; d + VF_W <= dqk; d += VF_W) a0 = vf_fma(vf_load(q + d), fl_kv_vec(t, kc, d), a0);
      if (d < dqk)
        a1 = vf_fma(vf_load_partial(q + d, (int)(dqk - d)),
                    fl_kv_vec_partial(t, kc, d, (int)(dqk - d)), a1);
      s[c] = vf_hsum(vf_add(vf_add(a0, a1), vf_add(a2, a3)));
    }
    int64_t n = vis - j0;  // keys of this block the row sees
    n = n < 0 ? 0 : n > nk ? nk : n;
    const float alpha = vs_online_softmax_row(s, n, ncol, m, l);  // s: p from here
    if (n == 0) continue;                                         // p = 0 and α = 1: acc unchanged
    const vf_t va = vf_set1(alpha);
    const int rescale = alpha != 1.0f;
    int64_t e = 0;
    for (; e + FL_ROW_NV * VF_W <= dv; e += FL_ROW_NV * VF_W) {
      vf_t o[FL_ROW_NV];
#pragma GCC unroll 8
      for (int x = 0; x < FL_ROW_NV; x++) {
        o[x] = vf_load(acc + e + x * VF_W);
        if (rescale) o[x] = vf_mul(o[x], va);
      }
      for (int64_t c = 0; c < n; c++) {
        const vf_t pb = vf_set1(s[c]);
        const char *vr = vj + (size_t)c * vrb;
#pragma GCC unroll 8
        for (int x = 0; x < FL_ROW_NV; x++) o[x] = vf_fma(pb, fl_kv_vec(t, vr, e + x * VF_W), o[x]);
      }
#pragma GCC unroll 8
      for (int x = 0; x < FL_ROW_NV; x++) vf_store(acc + e + x * VF_W, o[x]);
    }
    for (; e < dv; e += VF_W) {  // the rest one vector at a time; the last may be partial
      const int w = (int)(dv - e < VF_W ? dv - e : VF_W);
      vf_t o = vf_load(acc + e);
      if (rescale) o = vf_mul(o, va);
      for (int64_t c = 0; c < n; c++) {
        const char *vr = vj + (size_t)c * vrb;
        o = vf_fma(vf_set1(s[c]), w == VF_W ? fl_kv_vec(t, vr, e) : fl_kv_vec_partial(t, vr, e, w),
                   o);
      }
      vf_store(acc + e, o);
    }
  }
}

#define FL_ROW1_INSTANCE(name, T, ATTR)                                                           \
  ATTR static void name(const float *q, int64_t dqk, const char *k, size_t krb, const char *v,    \
                        size_t vrb, int64_t dv, int64_t nkeys, int64_t vis, float *acc, float *m, \
                        float *l) {                                                               \
    fl_row1_t(T, q, dqk, k, krb, v, vrb, dv, nkeys, vis, acc, m, l);                              \
  }
FL_ROW1_INSTANCE(fl_row1_f16, ATTN_DTYPE_F16, KV_F16C)
FL_ROW1_INSTANCE(fl_row1_bf16, ATTN_DTYPE_BF16, )
#ifdef FL_KV_ROW1_Q8_0
FL_ROW1_INSTANCE(fl_row1_q8_0, ATTN_DTYPE_Q8_0, )
#endif
#undef FL_ROW1_INSTANCE

// A group of G (≤ FL_KV_RG) decode rows with K/V of type t widened in registers: each K
// and V vector is widened once for the G rows. Rows never interact, and each row gets
// fl_row_fused's operations in fl_row_fused's order (the same four accumulators along
// each K row, horizontal sum, softmax per block, P·V in key order per output element;
// only which rows share a loop differs), so the output bits are the same.
#ifndef FL_KV_RG
#define FL_KV_RG 4  // 4 × 4 score accumulators: for 32 vector registers (AVX2 sets 2)
#endif
#if FL_KV_RG < 1 || FL_KV_RG > 4
#error "FL_KV_RG: 1 to 4 rows per group"
#endif
#define FL_KV_RG_NV 4  // V vectors per P·V pass (G × 4 accumulators)
FL_INLINE void fl_rowg_t(const attn_dtype t, const int G, const float *q, int64_t dqk,
                         const char *k, size_t krb, const char *v, size_t vrb, int64_t dv,
                         int64_t dvp, int64_t nkeys, const int32_t *vis, float *acc, float *m,
                         float *l) {
  float s[FL_KV_RG][FL_ROW_KEYS + VF_W] __attribute__((aligned(64)));
  for (int64_t j0 = 0; j0 < nkeys; j0 += FL_ROW_KEYS) {
    const int64_t nk = nkeys - j0 < FL_ROW_KEYS ? nkeys - j0 : FL_ROW_KEYS;
    const int64_t ncol = (nk + VF_W - 1) / VF_W * VF_W;
    const char *kj = k + (size_t)j0 * krb, *vj = v + (size_t)j0 * vrb;
    for (int64_t c = 0; c < nk; c++) {
      const char *kc = kj + (size_t)c * krb;
      vf_t a[FL_KV_RG][4];
#pragma GCC unroll 4
      for (int r = 0; r < G; r++) a[r][0] = a[r][1] = a[r][2] = a[r][3] = vf_zero();
      int64_t d = 0;
      for (; d + 4 * VF_W <= dqk; d += 4 * VF_W) {
        vf_t kv[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) kv[i] = fl_kv_vec(t, kc, d + i * VF_W);
#pragma GCC unroll 4
        for (int r = 0; r < G; r++)
#pragma GCC unroll 4
          for (int i = 0; i < 4; i++)
            a[r][i] = vf_fma(vf_load(q + r * dqk + d + i * VF_W), kv[i], a[r][i]);
      }
      for (; d + VF_W <= dqk; d += VF_W) {
        const vf_t kv = fl_kv_vec(t, kc, d);
#pragma GCC unroll 4
        for (int r = 0; r < G; r++) a[r][0] = vf_fma(vf_load(q + r * dqk + d), kv, a[r][0]);
      }
      if (d < dqk) {
        const vf_t kv = fl_kv_vec_partial(t, kc, d, (int)(dqk - d));
#pragma GCC unroll 4
        for (int r = 0; r < G; r++)
          a[r][1] = vf_fma(vf_load_partial(q + r * dqk + d, (int)(dqk - d)), kv, a[r][1]);
      }
#pragma GCC unroll 4
      for (int r = 0; r < G; r++)
        s[r][c] = vf_hsum(vf_add(vf_add(a[r][0], a[r][1]), vf_add(a[r][2], a[r][3])));
    }
    int64_t n[FL_KV_RG], nmax = 0;
    vf_t va[FL_KV_RG];
    int rescale[FL_KV_RG];
#pragma GCC unroll 4
    for (int r = 0; r < G; r++) {
      int64_t x = vis[r] - j0;  // keys of this block row r sees
      n[r] = x < 0 ? 0 : x > nk ? nk : x;
      nmax = n[r] > nmax ? n[r] : nmax;
      const float alpha = vs_online_softmax_row(s[r], n[r], ncol, &m[r], &l[r]);
      va[r] = vf_set1(alpha);
      rescale[r] = alpha != 1.0f;  // a row with n = 0 has α = 1: its acc stays as it is
    }
    if (nmax == 0) continue;
    int64_t e = 0;
    for (; e + FL_KV_RG_NV * VF_W <= dv; e += FL_KV_RG_NV * VF_W) {
      vf_t o[FL_KV_RG][FL_KV_RG_NV];
#pragma GCC unroll 4
      for (int r = 0; r < G; r++)
#pragma GCC unroll 4
        for (int x = 0; x < FL_KV_RG_NV; x++) {
          o[r][x] = vf_load(acc + r * dvp + e + x * VF_W);
          if (rescale[r]) o[r][x] = vf_mul(o[r][x], va[r]);
        }
      for (int64_t c = 0; c < nmax; c++) {
        const char *vr = vj + (size_t)c * vrb;
        vf_t vv[FL_KV_RG_NV];
#pragma GCC unroll 4
        for (int x = 0; x < FL_KV_RG_NV; x++) vv[x] = fl_kv_vec(t, vr, e + x * VF_W);
#pragma GCC unroll 4
        for (int r = 0; r < G; r++) {
          if (c >= n[r]) continue;
          const vf_t pb = vf_set1(s[r][c]);
#pragma GCC unroll 4
          for (int x = 0; x < FL_KV_RG_NV; x++) o[r][x] = vf_fma(pb, vv[x], o[r][x]);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < G; r++)
#pragma GCC unroll 4
        for (int x = 0; x < FL_KV_RG_NV; x++) vf_store(acc + r * dvp + e + x * VF_W, o[r][x]);
    }
    for (; e < dv; e += VF_W) {  // the rest one vector at a time; the last may be partial
      const int w = (int)(dv - e < VF_W ? dv - e : VF_W);
      vf_t o[FL_KV_RG];
#pragma GCC unroll 4
      for (int r = 0; r < G; r++) {
        o[r] = vf_load(acc + r * dvp + e);
        if (rescale[r]) o[r] = vf_mul(o[r], va[r]);
      }
      for (int64_t c = 0; c < nmax; c++) {
        const char *vr = vj + (size_t)c * vrb;
        const vf_t vv = w == VF_W ? fl_kv_vec(t, vr, e) : fl_kv_vec_partial(t, vr, e, w);
#pragma GCC unroll 4
        for (int r = 0; r < G; r++)
          if (c < n[r]) o[r] = vf_fma(vf_set1(s[r][c]), vv, o[r]);
      }
#pragma GCC unroll 4
      for (int r = 0; r < G; r++) vf_store(acc + r * dvp + e, o[r]);
    }
  }
}

// Rows [0, nrows) in groups of FL_KV_RG (the last one smaller), each group's row count a
// constant of its own instance.
FL_INLINE void fl_rows_t(const attn_dtype t, int64_t nrows, const float *q, int64_t dqk,
                         const char *k, size_t krb, const char *v, size_t vrb, int64_t dv,
                         int64_t dvp, int64_t nkeys, const int32_t *vis, float *acc, float *m,
                         float *l) {
  for (int64_t r = 0; r < nrows; r += FL_KV_RG) {
    const int64_t g = nrows - r < FL_KV_RG ? nrows - r : FL_KV_RG;
    const float *qr = q + r * dqk;
    float *ar = acc + r * dvp;
#define FL_ROWG_CASE(G)                                                                  \
  case G:                                                                                \
    fl_rowg_t(t, G, qr, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis + r, ar, m + r, l + r); \
    break;
    switch (g) {
      FL_ROWG_CASE(1)
#if FL_KV_RG >= 2
      FL_ROWG_CASE(2)
#endif
#if FL_KV_RG >= 3
      FL_ROWG_CASE(3)
#endif
#if FL_KV_RG >= 4
      FL_ROWG_CASE(4)
#endif
      default:
        break;
    }
#undef FL_ROWG_CASE
  }
}
#define FL_ROWS_INSTANCE(name, T, ATTR)                                                        \
  ATTR static void name(int64_t nrows, const float *q, int64_t dqk, const char *k, size_t krb, \
                        const char *v, size_t vrb, int64_t dv, int64_t dvp, int64_t nkeys,     \
                        const int32_t *vis, float *acc, float *m, float *l) {                  \
    fl_rows_t(T, nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l);               \
  }
FL_ROWS_INSTANCE(fl_rows_f16, ATTN_DTYPE_F16, KV_F16C)
FL_ROWS_INSTANCE(fl_rows_bf16, ATTN_DTYPE_BF16, )
FL_ROWS_INSTANCE(fl_rows_q8_0, ATTN_DTYPE_Q8_0, )
#undef FL_ROWS_INSTANCE

// 2..FL_QK_MR−1 decode rows of type t in registers when it can be (f16: kv_have_f16c);
// returns 0 when the caller must take fl_row_fused_typed.
static int fl_rows_typed(attn_dtype t, int64_t nrows, const float *q, int64_t dqk, const char *k,
                         size_t krb, const char *v, size_t vrb, int64_t dv, int64_t dvp,
                         int64_t nkeys, const int32_t *vis, float *acc, float *m, float *l) {
#ifdef FL_KV_ROWS_BUFFERED  // A/B switch for docs/tuning.md: always the scratch round trip
  return 0;
#endif
  switch (t) {
    case ATTN_DTYPE_F16:
      if (!kv_have_f16c()) return 0;
      fl_rows_f16(nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l);
      return 1;
    case ATTN_DTYPE_BF16:
      fl_rows_bf16(nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l);
      return 1;
    case ATTN_DTYPE_Q8_0:
      fl_rows_q8_0(nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l);
      return 1;
    default:
      return 0;
  }
}

// A decode row of type t in registers when it can be (f16 needs the widening
// instruction: kv_have_f16c); returns 0 when the caller must take fl_row_fused_typed.
static int fl_row1_typed(attn_dtype t, const float *q, int64_t dqk, const char *k, size_t krb,
                         const char *v, size_t vrb, int64_t dv, int64_t nkeys, int64_t vis,
                         float *acc, float *m, float *l) {
#ifdef FL_KV_ROW1_BUFFERED  // A/B switch for docs/tuning.md: always the scratch round trip
  return 0;
#endif
  switch (t) {
    case ATTN_DTYPE_F16:
      if (!kv_have_f16c()) return 0;
      fl_row1_f16(q, dqk, k, krb, v, vrb, dv, nkeys, vis, acc, m, l);
      return 1;
    case ATTN_DTYPE_BF16:
      fl_row1_bf16(q, dqk, k, krb, v, vrb, dv, nkeys, vis, acc, m, l);
      return 1;
    case ATTN_DTYPE_Q8_0:  // measured slower than widening per block (docs/tuning.md)
#ifdef FL_KV_ROW1_Q8_0
      fl_row1_q8_0(q, dqk, k, krb, v, vrb, dv, nkeys, vis, acc, m, l);
      return 1;
#else
      return 0;
#endif
    default:
      return 0;
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
// 8-lane __m256, so 8 rows fill one vector).
#ifndef FL_RV_W
#define FL_RV_W VF_W
typedef vf_t fl_rv_t;
FL_INLINE fl_rv_t fl_rv_zero(void) {
  return vf_zero();
}
FL_INLINE fl_rv_t fl_rv_load(const float *p) {
  return vf_load(p);
}
FL_INLINE void fl_rv_store(float *p, fl_rv_t x) {
  vf_store(p, x);
}
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
_Static_assert(FL_DEC_BLOCK <= FL_OPTS_MAX_KEYS, "fl_fin_lanes: a decode block's keys");
// Tasks of FL_RV_W..FL_LANES_MAX_ROWS rows take this path (at most two row vectors; an
// ISA file may stop earlier, see docs/tuning.md).
#ifndef FL_LANES_MAX_ROWS
#define FL_LANES_MAX_ROWS FL_LANES_MAX_R
#endif
#if FL_LANES_MAX_ROWS < FL_RV_W || FL_LANES_MAX_ROWS > FL_LANES_MAX_R
#error "FL_LANES_MAX_ROWS: between FL_RV_W and 2·FL_RV_W"
#endif
// Q̂ᵀ (dqk × R floats) lives in the task's K̂ᵀ scratch (dqk × tkv, tkv ≥ FL_QK_NV·VF_W).
_Static_assert(FL_QK_NV *VF_W >= FL_LANES_MAX_R, "fl_lanes: Q̂ᵀ does not fit the K̂ᵀ scratch");
#define FL_LANES_W (FL_LANES_MAX_R > VF_W ? FL_LANES_MAX_R : VF_W)

// Sᵀ[c][x·FL_RV_W ..] for keys c < nk (nk ≤ FL_DEC_NK / nrv), row vectors x < nrv.
FL_INLINE void fl_lanes_qk_micro(int nrv, int nk, const float *qt, int64_t R, const float *k,
                                 int64_t dqk, float *st, vk_pf *pf) {
  fl_rv_t s[2][FL_DEC_NK];
#pragma GCC unroll 2
  for (int x = 0; x < nrv; x++)
#pragma GCC unroll 16
    for (int c = 0; c < nk; c++) s[x][c] = fl_rv_zero();
  for (int64_t d = 0; d < dqk; d++) {
    const fl_rv_t q0 = fl_rv_load(qt + d * R);
    const fl_rv_t q1 = nrv > 1 ? fl_rv_load(qt + d * R + FL_RV_W) : q0;
    if ((d & 3) == 3) vk_pf_step_l2(pf);
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
// K and V rows are kb, vb + key · krb, vrb bytes of type t; a type other than F32 is
// widened per block (K into kc, blk·dqk floats; V into vs, padded), exactly. fin (NULL:
// none) finishes each row's block scores (flash_opts.h); key 0 here is key kabs of the head.
FL_INLINE void fl_lanes_t(const attn_dtype t, int64_t nrows, const float *qs, int64_t dqk,
                          const char *kb, size_t krb, const char *vb, size_t vrb, int64_t dv,
                          int64_t dvp, int64_t nkeys, int64_t blk, const int32_t *vis, float *qt,
                          float *vs, float *kc, float *acc, float *m, float *l, const fl_fin *fin,
                          int64_t kabs) {
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
    const char *kjb = kb + (size_t)j0 * krb, *vjb = vb + (size_t)j0 * vrb;
    const float *kj = (const float *)kjb;
    if (t != ATTN_DTYPE_F32) {
      kv_widen_rows(t, kjb, krb, nk, dqk, kc, dqk, dqk);
      kj = kc;
    }
    // The next block's K and V, requested into L2 a little at a time: two lines per four
    // d steps of the Q·Kᵀ loop, then two per key step of the P·V loops (spread over the
    // block's whole compute time, not in a burst that fills the miss queue).
    const int64_t pj = j0 + blk;                             // first key of the next block
    const int64_t nn = nkeys - pj < blk ? nkeys - pj : blk;  // ≤ 0: nothing left
    vk_pf pf = vk_pf_rows(kb + (size_t)pj * krb, vb + (size_t)pj * vrb, nn, krb, vrb);
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
      if (fin && n > 0) n = fl_fin_lanes(fin, r, st, R, kabs + j0, n);  // options
      bl[r] = (int32_t)n;
      if (j0 + nk > vmin || fin)
        for (int64_t cc = n; cc < nk; cc++) st[cc * R + r] = -INFINITY;
    }
    const int64_t n_flat = (nk * R + VF_W - 1) / VF_W * VF_W;
    for (int64_t x = nk * R; x < n_flat; x++) st[x] = -INFINITY;
    fl_lanes_softmax(st, n_flat, R, lm, ll, alpha);
    const float *vt;
    if (t == ATTN_DTYPE_F32) {
      vt = vk_pad_v((const float *)vjb, nk, dv, dvp, vs);
    } else {
      kv_widen_rows(t, vjb, vrb, nk, dv, vs, dvp, dvp);
      vt = vs;
    }
    fl_pv_tile_inline(nrows, st, 1, R, vt, dvp, acc, dvp, alpha, bl, NULL, &pf);
  }
  for (int64_t r = 0; r < nrows; r++) m[r] = lm[r], l[r] = ll[r];
}

// The float32 instance (K and V rows of dqk and dv floats) and the typed one.
static void fl_lanes(int64_t nrows, const float *qs, int64_t dqk, const float *k, const float *v,
                     int64_t dv, int64_t dvp, int64_t nkeys, int64_t blk, const int32_t *vis,
                     float *qt, float *vs, float *acc, float *m, float *l, const fl_fin *fin,
                     int64_t kabs) {
  fl_lanes_t(ATTN_DTYPE_F32, nrows, qs, dqk, (const char *)k, (size_t)dqk * sizeof(float),
             (const char *)v, (size_t)dv * sizeof(float), dv, dvp, nkeys, blk, vis, qt, vs, NULL,
             acc, m, l, fin, kabs);
}
static void fl_lanes_typed(attn_dtype t, int64_t nrows, const float *qs, int64_t dqk,
                           const char *kb, size_t krb, const char *vb, size_t vrb, int64_t dv,
                           int64_t dvp, int64_t nkeys, int64_t blk, const int32_t *vis, float *qt,
                           float *vs, float *kc, float *acc, float *m, float *l, const fl_fin *fin,
                           int64_t kabs) {
  fl_lanes_t(t, nrows, qs, dqk, kb, krb, vb, vrb, dv, dvp, nkeys, blk, vis, qt, vs, kc, acc, m, l,
             fin, kabs);
}
