// SPDX-License-Identifier: MIT
// flash_opts.h — the attention options (attn.h, "Attention variants") in the flash
// kernels' score tiles, written once over the vf_* mapping. Included by flash_body.h.
//
// A task whose problem uses softcap, ALiBi, a mask or a window with a bounded left side
// gets an fl_fin (else NULL, and the passes run exactly the code of a plain problem). The
// decode passes call fl_fin_row once per row and key block, after S = Q̂·K̂ᵀ and before the
// online-softmax update; the tiled pass calls fl_fin_softmax_row, the same fused with that
// update. Either finishes the row's scores, lane-parallel:
//     s ← c·tanh(s·(1/c))                  softcap (vf_softcap, simd/vec_tanh.h)
//     s ← s + slope_h·(j − i − off)         ALiBi (one FMA; the distance is exact in float
//                                           below 2^24)
//     s ← s + M[i][j]                       mask (−inf removes the key)
// and sets s = −inf for the keys left of the row's window (j < lo of attn_row_keys; the
// right end is the row's limit, masked by the softmax as before). Sinks and the LSE act
// only on (m, l) at the end (fl_store, flash_merge), never on scores.
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/attn_internal.h"
#include "simd/softmax.h"

// The options of one task's rows. Row r of the task is query head h0 + r / nq at
// position i0 + r % nq.
typedef struct fl_fin {
  const attn_problem *p;
  int64_t i0, nq, off, seq_kv;
  bool scores;     // softcap, ALiBi or a mask: the scores change
  bool window_lo;  // a window with a bounded left side: keys below a row's lo are masked
  float softcap, inv_softcap;  // c > 0 and its rounded reciprocal; 0: no softcap
  const float *slopes;         // [heads of the task] ALiBi slopes; NULL: no ALiBi
  const float *mask;           // the mask plane of the task's first head; NULL: none
  size_t mask_head_stride;     // floats between consecutive heads' planes (0: broadcast)
} fl_fin;

// n rounded up to whole vectors.
static inline int64_t fl_vec_ceil(int64_t n) {
  return (n + VF_W - 1) / VF_W * VF_W;
}

// The plain online-softmax update of one row of a tile whose keys it sees are [c0, n)
// (c0 = 0 without a window's start; n = 0: none), over the vectors [v0, v1) that hold
// them: the keys of [v0, c0) masked, then vs_tile_max_span / vs_online_softmax_exp_span
// (simd/softmax.h). phase 1 returns the tile max t; phase 2 the row's α, given t_in.
static inline float fl_span_softmax_pass(float *s, int64_t c0, int64_t n, int64_t ncol, float *m,
                                         float *l, const int phase, const float t_in) {
  const int64_t v0 = c0 / VF_W * VF_W, v1 = fl_vec_ceil(n);
  if (phase == 2) return vs_online_softmax_exp_span(s, v0, v1, ncol, t_in, m, l);
  vs_mask_head(s, v0, c0);
  const float t = vs_tile_max_span(s, v0, n, v1);
  return phase == 1 ? t : vs_online_softmax_exp_span(s, v0, v1, ncol, t, m, l);
}

// What a row's score options need over keys j0 + [a, b) of head hh at position i: the
// ALiBi slope, the mask row at j0, and the distances j − i − off of the first vector's
// keys (dist0) — stepped by VF_W while every one is below 2^24 in magnitude (exact),
// else converted per vector (≤ 2 roundings, check.h).
typedef struct fl_fin_rowq {
  float slope;
  const float *mrow;
  bool stepped;
  vf_t dist0;
} fl_fin_rowq;
static inline fl_fin_rowq fl_fin_row_setup(const fl_fin *f, int64_t hh, int64_t i, int64_t j0,
                                           int64_t a, int64_t b) {
  fl_fin_rowq q;
  q.slope = f->slopes ? f->slopes[hh] : 0.0f;
  q.mrow = f->mask ? f->mask + (size_t)hh * f->mask_head_stride + (size_t)i * (size_t)f->seq_kv +
                         (size_t)j0
                   : NULL;
  const int64_t d0 = j0 + a - i - f->off, d1 = j0 + b - i - f->off;
  q.stepped = (d0 < 0 ? -d0 : d0) < (1 << 24) && (d1 < 0 ? -d1 : d1) < (1 << 24);
  q.dist0 = vf_add(vf_set1((float)d0), vf_load(vs_iota));
  return q;
}

// Row `row`'s scores s[c] of keys j0 + c, c < n (n: the row's limit in this block; later
// keys are the softmax's to mask). Returns the keys the row may see here: n, or 0 when its
// window starts at or after j0 + n (then s is left as is and the caller masks it all).
static int64_t fl_fin_row(const fl_fin *f, int64_t row, float *s, int64_t j0, int64_t n) {
  const int64_t hh = row / f->nq, i = f->i0 + row % f->nq;
  int64_t c0 = 0;
  if (f->window_lo) {
    int64_t lo, hi;
    attn_row_keys(f->p, i, &lo, &hi);
    c0 = lo - j0 < 0 ? 0 : lo - j0;
    if (c0 >= n) return 0;
    for (int64_t c = 0; c < c0; c++) s[c] = -INFINITY;
  }
  if (!f->scores) return n;
  const fl_fin_rowq rq = fl_fin_row_setup(f, hh, i, j0, c0, n);
  const float slope = rq.slope, *mrow = rq.mrow;
  const bool stepped = rq.stepped;
  const vf_t cap = vf_set1(f->softcap), icap = vf_set1(f->inv_softcap), vsl = vf_set1(slope);
  const vf_t iota = vf_load(vs_iota), step = vf_set1((float)VF_W);
  vf_t dist = rq.dist0;
  for (int64_t c = c0; c < n; c += VF_W) {
    if (!stepped) dist = vf_add(vf_set1((float)(j0 + c - i - f->off)), iota);
    const int w = n - c < VF_W ? (int)(n - c) : VF_W;
    vf_t x = w == VF_W ? vf_load(s + c) : vf_load_partial(s + c, w);
    if (f->softcap > 0.0f) x = vf_softcap(x, cap, icap);
    if (slope != 0.0f) x = vf_fma(vsl, dist, x);
    if (mrow) x = vf_add(x, w == VF_W ? vf_load(mrow + c) : vf_load_partial(mrow + c, w));
    if (w == VF_W)
      vf_store(s + c, x);
    else
      vf_store_partial(s + c, x, w);
    dist = vf_add(dist, step);
  }
  return n;
}

// x with the lanes of keys outside [c0, n) set to −∞ (the vector holds keys c .. c + VF_W).
static inline vf_t fl_edges(vf_t x, int64_t c, int64_t c0, int64_t n, vf_t iota) {
  if (c < c0) x = vf_select_lt(iota, (float)(c0 - c), vf_set1(-INFINITY), x);
  if (c + VF_W > n) x = vf_select_lt(iota, (float)(n - c), x, vf_set1(-INFINITY));
  return x;
}

// fl_fin_row fused with the online-softmax update of the tiled pass: the same result as
// fl_fin_row(f, row, s, j0, n) then vs_online_softmax_row(s, n or 0, ncol, m, l)
// (simd/softmax.h; the same per-key values, max and lane sums, so bitwise the same P, m, l
// and α), in two passes over the row instead of three, and only over the vectors that hold
// a key the row sees, [v0, v1) ⊇ [c0, n):
//   pass 1  x = the finished score (as fl_fin_row), −∞ outside [c0, n), t = max x — x is
//           stored only with softcap or a mask (masked after the softcap, which maps −∞
//           to −c); otherwise s is −∞ outside [c0, n) beforehand, which the ALiBi FMA
//           keeps, and pass 2 recomputes x from the same operands instead of a reload;
//   pass 2  m' = max(m, t), α = e^(m − m'), p = e^(x − m') stored, l' = α·l + Σ p.
// The vectors outside [v0, v1) get p = 0 without being read (e^(−∞) = 0 there, and
// adding 0 to the sum changes nothing). A row that sees nothing here (t = −∞) gets
// P = 0, α = 1 and keeps (m, l). A window alone (no score option) only masks the keys
// before the row's start and runs the plain update over [v0, v1) (vs_tile_max_span,
// vs_online_softmax_exp_span): as fast or faster there (docs/parallel.md). n ≥ 1; ncol ≥ n a
// multiple of VF_W. Returns α. phase 0 runs both passes; 1 only pass 1 and returns t (m, l
// untouched); 2 only pass 2, given pass 1's t (t_in) — so a caller can run pass 1 over a block's
// rows before pass 2, and one row's max → exp dependency hides behind the other rows' work.
static inline __attribute__((always_inline)) float fl_fin_softmax_pass(
    const fl_fin *f, int64_t row, float *s, int64_t j0, int64_t n, int64_t ncol, float *m, float *l,
    const int phase, const float t_in) {
  const int64_t hh = row / f->nq, i = f->i0 + row % f->nq;
  int64_t c0 = 0;
  if (f->window_lo) {  // the row's first key, lo = clamp(i + off − left, 0, seq_kv) (attn.h)
    int64_t lo = i + f->off - f->p->opts->window_left;  // |·| < 2^62: window_lo bounds left
    lo = lo < 0 ? 0 : lo > f->seq_kv ? f->seq_kv : lo;
    c0 = lo - j0 < 0 ? 0 : lo - j0;
    if (c0 >= n) c0 = n = 0;  // the window starts after this block: nothing seen
  }
  // A window alone: its start masked, then the plain update over [v0, v1).
  if (!f->scores) return fl_span_softmax_pass(s, c0, n, ncol, m, l, phase, t_in);
  const int64_t v0 = c0 / VF_W * VF_W, v1 = fl_vec_ceil(n);
  const bool keep = f->softcap > 0.0f || f->mask;  // pass 1 stores the finished scores
  const fl_fin_rowq rq = fl_fin_row_setup(f, hh, i, j0, v0, v1);
  const float slope = rq.slope, *mrow = rq.mrow;
  const bool stepped = rq.stepped;
  const vf_t cap = vf_set1(f->softcap), icap = vf_set1(f->inv_softcap), vsl = vf_set1(slope);
  const vf_t iota = vf_load(vs_iota), step = vf_set1((float)VF_W);
  const vf_t dist0 = rq.dist0;
  if (!keep && phase != 2) {
    vs_mask_head(s, v0, c0);
    vs_mask_tail(s, n, v1);
  }
  // Four running maxima (max is exact: the same t in any order), so the max chain does
  // not serialise the loop.
  vf_t mx = vf_set1(-INFINITY), mx1 = mx, mx2 = mx, mx3 = mx, dist = dist0;
  // ALiBi alone with stepped distances, the common case, in a loop of its own.
  if (phase == 2) {
    // pass 1 ran before: its t is t_in
  } else if (f->softcap > 0.0f && slope == 0.0f && !mrow) {
    // Softcap alone, in a loop of its own: the capped scores stored, −∞ outside [c0, n).
    for (int64_t c = v0; c < v1; c += 2 * VF_W) {
      vf_t x = vf_softcap(vf_load(s + c), cap, icap);
      if (c < c0 || c + VF_W > n) x = fl_edges(x, c, c0, n, iota);
      vf_store(s + c, x);
      mx = vf_max(mx, x);
      if (c + VF_W >= v1) break;
      vf_t y = vf_softcap(vf_load(s + c + VF_W), cap, icap);
      if (c + 2 * VF_W > n) y = fl_edges(y, c + VF_W, c0, n, iota);
      vf_store(s + c + VF_W, y);
      mx1 = vf_max(mx1, y);
    }
  } else if (!keep && stepped) {
    int64_t c = v0;
    const vf_t step2 = vf_add(step, step), step3 = vf_add(step2, step),
               step4 = vf_add(step2, step2);
    for (; c + 4 * VF_W <= v1; c += 4 * VF_W, dist = vf_add(dist, step4)) {
      mx = vf_max(mx, vf_fma(vsl, dist, vf_load(s + c)));
      mx1 = vf_max(mx1, vf_fma(vsl, vf_add(dist, step), vf_load(s + c + VF_W)));
      mx2 = vf_max(mx2, vf_fma(vsl, vf_add(dist, step2), vf_load(s + c + 2 * VF_W)));
      mx3 = vf_max(mx3, vf_fma(vsl, vf_add(dist, step3), vf_load(s + c + 3 * VF_W)));
    }
    for (; c < v1; c += VF_W, dist = vf_add(dist, step))
      mx = vf_max(mx, vf_fma(vsl, dist, vf_load(s + c)));
  } else {
    for (int64_t c = v0; c < v1; c += VF_W, dist = vf_add(dist, step)) {
      vf_t x = vf_load(s + c);
      if (!stepped) dist = vf_add(vf_set1((float)(j0 + c - i - f->off)), iota);
      if (f->softcap > 0.0f) x = vf_softcap(x, cap, icap);
      if (slope != 0.0f) x = vf_fma(vsl, dist, x);
      if (mrow) {
        const int w = n - c < VF_W ? (int)(n - c) : VF_W;  // the mask row ends at seq_kv
        x = vf_add(x, w == VF_W ? vf_load(mrow + c) : vf_load_partial(mrow + c, w));
      }
      if (keep) {
        x = fl_edges(x, c, c0, n, iota);
        vf_store(s + c, x);
      }
      if ((c - v0) & VF_W)  // alternate vectors into two maxima
        mx1 = vf_max(mx1, x);
      else
        mx = vf_max(mx, x);
    }
  }
  mx = vf_max(vf_max(mx, mx1), vf_max(mx2, mx3));
  const float t = phase == 2 ? t_in : v0 < v1 ? vf_hmax(mx) : -INFINITY;
  if (phase == 1) return t;
  // The finished scores are in s: the plain pass 2 over [v0, v1).
  if (keep || slope == 0.0f) return vs_online_softmax_exp_span(s, v0, v1, ncol, t, m, l);
  // ALiBi alone: pass 2 as vs_online_softmax_exp_span, x recomputed from the same operands
  // as in pass 1 instead of a reload.
  float m_new, alpha;
  if (!vs_exp_span_begin(s, v0, ncol, t, m, &m_new, &alpha)) return alpha;
  const vf_t vm = vf_set1(m_new);
  vf_t sum = vf_zero();
  dist = dist0;
  for (int64_t c = v0; c < v1; c += VF_W, dist = vf_add(dist, step)) {
    if (!stepped) dist = vf_add(vf_set1((float)(j0 + c - i - f->off)), iota);
    const vf_t p = vf_exp(vf_sub(vf_fma(vsl, dist, vf_load(s + c)), vm));
    vf_store(s + c, p);
    sum = vf_add(sum, p);
  }
  return vs_exp_span_end(s, v1, ncol, sum, m_new, alpha, m, l);
}

static inline __attribute__((always_inline)) float fl_fin_softmax_row(const fl_fin *f, int64_t row,
                                                                      float *s, int64_t j0,
                                                                      int64_t n, int64_t ncol,
                                                                      float *m, float *l) {
  return fl_fin_softmax_pass(f, row, s, j0, n, ncol, m, l, 0, 0.0f);
}

// The same for row r of a transposed block (decode lanes: key c's scores at st[c·R ..]),
// through a contiguous copy; n ≤ FL_OPTS_MAX_KEYS. Keys the row may not see become −inf.
#define FL_OPTS_MAX_KEYS 64
static int64_t fl_fin_lanes(const fl_fin *f, int64_t r, float *st, int64_t R, int64_t j0,
                            int64_t n) {
  float tmp[FL_OPTS_MAX_KEYS] __attribute__((aligned(64)));
  for (int64_t c = 0; c < n; c++) tmp[c] = st[c * R + r];
  const int64_t seen = fl_fin_row(f, r, tmp, j0, n);
  for (int64_t c = 0; c < n; c++) st[c * R + r] = c < seen ? tmp[c] : -INFINITY;
  return seen;
}
