// SPDX-License-Identifier: MIT
// softmax.h — the online-softmax row update and masking, written once over the vf_*
// mapping (include after a vec_<isa>.h).
//
// One call consumes one row of one key tile (Milakov & Gimelshein 2018):
//     t  = max_{j<n} s_j                        tile maximum over the visible keys
//     m' = max(m, t)                            running maximum
//     α  = e^(m − m')                           rescales what was accumulated under m
//     p_j = e^(s_j − m') (j < n),  p_j = 0 (n ≤ j < n_pad)
//     l' = α·l + Σ_j p_j
// The caller then does acc' = α·acc + Σ_j p_j·v_j. Invariant: m = −∞ and l = 0 until the
// row has seen a key, and a row that sees no key in this tile keeps (m, l) and gets
// α = 1, p = 0 — so fully masked rows never form (−∞) − (−∞) = NaN.
#pragma once

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

// Lane numbers 0, 1, 2, … (VF_W ≤ 16), for the masks below.
static const float vs_iota[16]
    __attribute__((aligned(64))) = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

// Masks s[n .. n_pad) with −∞ (keys beyond the row's causal limit or the tile end), so
// every later pass can run over whole vectors. n_pad is a multiple of VF_W, n ≥ 0. Only
// whole-vector stores: the vector holding key n is masked in a register and stored back,
// so the loads that follow read it through store forwarding (a partial or scalar store
// before a vector load of the same bytes would stall them until it commits).
static inline void vs_mask_tail(float *s, int64_t n, int64_t n_pad) {
  int64_t j = n / VF_W * VF_W;
  if (j < n && j < n_pad) {
    vf_store(s + j,
             vf_select_lt(vf_load(vs_iota), (float)(n - j), vf_load(s + j), vf_set1(-INFINITY)));
    j += VF_W;
  }
  for (; j < n_pad; j += VF_W) vf_store(s + j, vf_set1(-INFINITY));
}

// Masks s[v0 .. c0) with −∞ (keys before a window's start), v0 = c0 rounded down to a
// multiple of VF_W: the vector at v0 masked in a register and stored whole (as above).
static inline void vs_mask_head(float *s, int64_t v0, int64_t c0) {
  if (v0 < c0)
    vf_store(s + v0,
             vf_select_lt(vf_load(vs_iota), (float)(c0 - v0), vf_set1(-INFINITY), vf_load(s + v0)));
}

// Four independent running maxima (max is exact, so the order does not change the
// result): the chain of dependent max instructions is a quarter as long.
static inline float vs_row_max(const float *s, int64_t n_pad) {
  vf_t m0 = vf_set1(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  int64_t j = 0;
  for (; j + 4 * VF_W <= n_pad; j += 4 * VF_W) {
    m0 = vf_max(m0, vf_load(s + j));
    m1 = vf_max(m1, vf_load(s + j + VF_W));
    m2 = vf_max(m2, vf_load(s + j + 2 * VF_W));
    m3 = vf_max(m3, vf_load(s + j + 3 * VF_W));
  }
  for (; j < n_pad; j += VF_W) m0 = vf_max(m0, vf_load(s + j));
  return vf_hmax(vf_max(vf_max(m0, m1), vf_max(m2, m3)));
}

// The update above in two passes, so that a caller with many rows can run the first
// over all of them before the second (the max → e^x dependency of one row is then
// hidden behind the other rows' work; the results are the same).
// Pass 1: masks s[n .. n_pad) and returns the tile maximum t (−∞: nothing visible).
static inline float vs_tile_max(float *s, int64_t n, int64_t n_pad) {
  vs_mask_tail(s, n, n_pad);
  return n > 0 ? vs_row_max(s, n_pad) : -INFINITY;
}

// Pass 1 over the vectors [v0, v1) only (v0, v1 multiples of VF_W, v1 ≥ n rounded up to
// whole vectors): masks s[n .. v1), returns the maximum of s[v0 .. v1). The caller has
// masked the keys of [v0, n) it may not see; the vectors outside [v0, v1) hold no
// visible key (a causal limit, a window start) and are not read.
static inline float vs_tile_max_span(float *s, int64_t v0, int64_t n, int64_t v1) {
  vs_mask_tail(s, n, v1);
  return n > v0 ? vs_row_max(s + v0, v1 - v0) : -INFINITY;
}

// Pass 2's bookkeeping around its exponentials, for loops that compute the scores of
// [v0, v1) their own way (flash_opts.h): vs_exp_span_begin returns false (s zeroed, α = 1
// in *alpha, (m, l) kept) when t = −∞ — nothing visible; else m' = max(m, t) in *m_new,
// α = e^(m − m') in *alpha and s[0 .. v0) = 0. vs_exp_span_end zeroes s[v1 .. n_pad) and
// sets l' = α·l + Σ sum, m = m'; returns α.
static inline bool vs_exp_span_begin(float *s, int64_t v0, int64_t n_pad, float t, const float *m,
                                     float *m_new, float *alpha) {
  if (t == -INFINITY) {  // nothing visible in this tile (or only −∞ scores)
    for (int64_t j = 0; j < n_pad; j += VF_W) vf_store(s + j, vf_zero());
    *alpha = 1.0f;
    return false;
  }
  *m_new = t > *m ? t : *m;
  // e^(−∞) = 0 on the row's first visible tile; a max that held gives e^0 = 1 exactly,
  // without the libm call (most tiles after the first few).
  *alpha = *m_new == *m ? 1.0f : expf(*m - *m_new);
  for (int64_t j = 0; j < v0; j += VF_W) vf_store(s + j, vf_zero());
  return true;
}
static inline float vs_exp_span_end(float *s, int64_t v1, int64_t n_pad, vf_t sum, float m_new,
                                    float alpha, float *m, float *l) {
  for (int64_t j = v1; j < n_pad; j += VF_W) vf_store(s + j, vf_zero());
  *l = alpha * *l + vf_hsum(sum);
  *m = m_new;
  return alpha;
}

// Pass 2 (vs_online_softmax_exp below) over the vectors [v0, v1) of s[0..n_pad), as
// vs_tile_max_span: the ones outside get p = 0 without an exponential (the whole row's
// e^(−∞) = 0 there, and the sum of +0s adds nothing), so the result is bitwise that of
// the whole row.
static inline float vs_online_softmax_exp_span(float *s, int64_t v0, int64_t v1, int64_t n_pad,
                                               float t, float *m, float *l) {
  float m_new, alpha;
  if (!vs_exp_span_begin(s, v0, n_pad, t, m, &m_new, &alpha)) return alpha;
  const vf_t vm = vf_set1(m_new);
  vf_t sum = vf_zero();
  for (int64_t j = v0; j < v1; j += VF_W) {
    const vf_t p = vf_exp(vf_sub(vf_load(s + j), vm));  // masked: e^(−∞) = 0 exactly
    vf_store(s + j, p);
    sum = vf_add(sum, p);
  }
  return vs_exp_span_end(s, v1, n_pad, sum, m_new, alpha, m, l);
}

// Pass 2, in place: s[0..n_pad) scores in (masked by pass 1, whose result is t),
// probabilities out. Returns α.
static inline float vs_online_softmax_exp(float *s, int64_t n_pad, float t, float *m, float *l) {
  return vs_online_softmax_exp_span(s, 0, n_pad, n_pad, t, m, l);
}

// Both passes for one row: s[0..n_pad) scores in, probabilities out. n ≤ n_pad, n_pad a
// multiple of VF_W, s has room for n_pad floats. Returns α.
static inline float vs_online_softmax_row(float *s, int64_t n, int64_t n_pad, float *m, float *l) {
  return vs_online_softmax_exp(s, n_pad, vs_tile_max(s, n, n_pad), m, l);
}

// o[0..n) = a[0..n) · scale, whole vectors then a masked tail (nothing past o[n−1]
// is written; a is padded to whole vectors).
static inline void vs_scale_store(float *o, const float *a, int64_t n, float scale) {
  const vf_t vs = vf_set1(scale);
  int64_t d = 0;
  for (; d + VF_W <= n; d += VF_W) vf_store(o + d, vf_mul(vf_load(a + d), vs));
  if (d < n) vf_store_partial(o + d, vf_mul(vf_load(a + d), vs), (int)(n - d));
}
