// SPDX-License-Identifier: MIT
// The per-element error bounds of a prepared case (derivation in check.h) and what stops
// a case from being conclusive (uninformative bounds, a non-finite reference).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check/check_internal.h"
#include "core/attn_internal.h"

#define U32 (1.0 / 16777216.0)  // float32 unit roundoff 2^-24
#define FLT_MIN_D 0x1p-126      // smallest normal float32 (FLT_MIN)

// The rounding of p = e^(s−m) a compute mode allows (attn.h, "Compute modes";
// docs/precision.md derives the bound). A probability the kernel computes as p^k is
// rounded to p̂ with |p̂ − p^k| ≤ u_p·p^k when p^k ≥ p_min, and ≤ a when p^k < p_min
// (binary16's subnormal spacing 2^-24, half of it by round-to-nearest, and p^k ≤ 2^-25
// rounds to 0 with an error ≤ p^k ≤ a). bfloat16 has float32's exponent range: its
// underflow is float32's flush-to-zero, already in the bound (check.h), so a = 0.
// F32 and INT8 do not round p (u_p = 0).
typedef struct p_rounding {
  double u, a, p_min;
} p_rounding;

static p_rounding p_rounding_of(attn_compute c) {
  switch (c) {
    case ATTN_COMPUTE_BF16:
      return (p_rounding){0x1p-8, 0.0, 0.0};
    case ATTN_COMPUTE_F16:
      return (p_rounding){0x1p-11, 0x1p-25, 0x1p-14};
    default:
      return (p_rounding){0.0, 0.0, 0.0};
  }
}

// Tolerance of every output element of one query row (see check.h). The row's keys are
// key[0..n) (indices into K/V); key[n] == -1 is the sink when has_sink (score sink, value
// 0). s[j], prob[j], e[j]: final double score, reference probability and score-error
// bound of entry j. tol_score[d] gets the score part of the bound before it is capped at
// spread[d], the spread of the visible V values (check.h, "When the bound says nothing").
// *lse and *lse_tol get the row's LSE (double) and its tolerance.
static void row_tolerance(const attn_problem *p, const attn_head_opts *ho, int64_t i,
                          const float *qrow, const float *kh, const float *vh, const int64_t *key,
                          int64_t n, double *s, double *prob, double *e, double *tol_row,
                          double *tol_score, double *spread, double *lse, double *lse_tol) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  const double scale = fabs((double)p->scale);
  const int64_t n_all = n + (ho->has_sink ? 1 : 0);
  double m = -INFINITY;
  for (int64_t t = 0; t < n; t++) {
    const int64_t j = key[t];
    double dot = 0.0, absdot = 0.0, abssum = 0.0;
    for (int64_t c = 0; c < dqk; c++) {
      const double qt = (double)qrow[c], kt = (double)kh[j * dqk + c];
      const double x = qt * kt;
      dot += x;
      absdot += fabs(x);
      abssum += fabs(qt) + fabs(kt);
    }
    double x = (double)p->scale * dot;
    double et = (double)(dqk + 2) * U32 * scale * absdot                               // rounding
                + 2.0 * FLT_MIN_D * (1.0 + scale) * (abssum + (double)(2 * dqk + 2));  // DAZ/FTZ
    if (ho->softcap > 0.0f) {
      // The kernel's argument (its score and the rounding of s/c, in score units) is
      // within w of x; c·tanh(·/c) moves by at most w times the largest slope tanh'
      // = sech² over that interval, taken where |ξ| is smallest (mean value theorem):
      // where tanh saturates the carried error vanishes. Then tanh's ulps, × c, a flushed
      // argument.
      const double c = (double)ho->softcap;
      const double capped = c * tanh(x / c);
      const double w = et + 2.0 * U32 * fabs(x);
      const double ch = cosh(fmax(0.0, fabs(x) - w) / c);  // +inf far out: slope 0
      et = w / (ch * ch) + (2.0 * ATTN_CHECK_TANH_ULP + 1.0) * U32 * fabs(capped) +
           2.0 * FLT_MIN_D * (1.0 + c);
      x = capped;
    }
    if (ho->slope != 0.0f) {
      const double bias = (double)ho->slope * (double)(j - i - ho->off);
      x += bias;
      et += 3.0 * U32 * fabs(bias) + U32 * fabs(x);
    }
    if (ho->mask) {
      x += (double)ho->mask[(size_t)i * (size_t)p->seq_kv + (size_t)j];
      et += U32 * fabs(x);
    }
    s[t] = x;
    e[t] = et;
    if (x > m) m = x;
  }
  const double m_keys = m;
  if (ho->has_sink) {
    s[n] = (double)ho->sink;
    e[n] = 0.0;
    if (s[n] > m) m = s[n];
  }
  // the shift a kernel subtracts: the key maximum or the maximum with the sink
  const double m_abs = fmax(fabs(m), fabs(m_keys));
  double l = 0.0, l_keys = 0.0, e_max = 0.0, e_max_keys = 0.0;
  for (int64_t t = 0; t < n_all; t++) {
    e[t] += 2.0 * U32 * (fabs(s[t]) + m_abs);
    if (e[t] > e_max) e_max = e[t];
    if (t < n && e[t] > e_max_keys) e_max_keys = e[t];
    prob[t] = exp(s[t] - m);
    l += prob[t];
    if (t < n) l_keys += exp(s[t] - m_keys);
  }
  const double log_l = log(l);
  for (int64_t t = 0; t < n_all; t++) prob[t] /= l;
  // The rounding of p (p_rounding above). The kernel's probability of key t is the
  // reference's e^(s_t − m) within a factor e^(±(E_t + E_max)) (its shift is the maximum
  // of its own scores, with the sink); a key that may fall below p_min gets the absolute
  // error a. Relative to the kernel's normaliser l^k ≥ e^(−2E_max)·(1 − u_p) (its largest
  // term is about 1), the output moves by at most (docs/precision.md)
  //   g·( u_p·Σ_t p̄_t·(|v_t| + |v_t − o|) + a·Σ_{t small} (|v_t| + |v_t − o|) ),
  // g = 2·e^(2E_max): the |v_t| part when the normaliser sums unrounded p (or o·δl), the
  // |v_t − o| part when it sums the rounded ones; the 2 covers the kernel's p and o
  // differing from the reference's at second order.
  const p_rounding pr = p_rounding_of(p->compute);
  const double g = 2.0 * exp(2.0 * e_max), log_p_min = pr.a > 0.0 ? log(pr.p_min) : -INFINITY;
  int64_t n_small = 0;  // keys whose kernel probability may be below p_min
  for (int64_t t = 0; t < n && pr.a > 0.0; t++) n_small += s[t] - m - e[t] - e_max < log_p_min;
  const double acc_ulps = (3.0 * (double)n_all + ATTN_CHECK_EXP_ULP + 8.0) * U32;
  *lse = m_keys + log(l_keys);
  *lse_tol = e_max_keys + acc_ulps + 8.0 * U32 * (1.0 + log((double)n)) + 2.0 * U32 * fabs(*lse) +
             4.0 * (double)n * FLT_MIN_D;
  // A normaliser of rounded probabilities. Under the kernel's shift m (with the sink) the
  // keys' normaliser is l_k = l_keys·e^(m_keys − m), below 1 when the sink holds the
  // maximum; each p is within u_p, a small one also within a, so
  // |l̂_k/l_k − 1| ≤ x = g·(u_p + n_small·a/min(1, l_k)) and |log(l̂_k/l_k)| ≤ x/(1 − x)
  // for x < 1/2. Beyond, the rounding may take l̂_k to 0: the bound says nothing (+inf,
  // the row's LSE is not judged and the verdict cannot be pass: verdict.c).
  if (pr.u > 0.0) {
    const double lk = fmin(1.0, l_keys * exp(m_keys - m));
    const double x = g * (pr.u + (double)n_small * pr.a / lk);
    *lse_tol = x < 0.5 ? *lse_tol + x / (1.0 - x) : INFINITY;
  }
  for (int64_t d = 0; d < dv; d++) {
    double o = 0.0;
    for (int64_t t = 0; t < n; t++) o += prob[t] * (double)vh[key[t] * dv + d];
    double first = 0.0, exact = 0.0, mag = 0.0, vmax = 0.0, vsum = 0.0, r = 0.0;
    double p_rel = 0.0, p_abs = 0.0;  // the rounding of p: Σ p̄(|v| + |v − o|), Σ_small
    for (int64_t t = 0; t < n_all; t++) {
      const double vj = t < n ? (double)vh[key[t] * dv + d] : 0.0;  // the sink: value 0
      if (t < n) {
        p_rel += prob[t] * (fabs(vj) + fabs(vj - o));
        if (n_small && s[t] - m - e[t] - e_max < log_p_min) p_abs += fabs(vj) + fabs(vj - o);
      }
      first += prob[t] * e[t] * fabs(vj - o);
      // p_j·(e^(E_j+E_max) − 1), in log space where p_j underflows
      const double x = e[t] + e_max;
      exact += fabs(vj - o) * (prob[t] > 1e-300 ? prob[t] * expm1(x) : exp(s[t] - m - log_l + x));
      mag += prob[t] * fabs(vj);
      vsum += fabs(vj);
      if (fabs(vj) > vmax) vmax = fabs(vj);
      if (fabs(vj - o) > r) r = fabs(vj - o);
    }
    const double ftz = 2.0 * FLT_MIN_D * (3.0 * (double)n_all + 2.0 + vsum + (double)n_all * vmax);
    // Two valid bounds on the weight-induced error (check.h); weak when even the
    // smaller reaches the spread r, which itself bounds that error.
    tol_score[d] = fmin(2.0 * first + 2.0 * e_max * e_max * vmax, exact);
    spread[d] = r;
    // (0 without a rounding of p: g may be inf where the score bound already says nothing)
    const double p_term = pr.u > 0.0 ? g * (pr.u * p_rel + pr.a * p_abs) : 0.0;
    tol_row[d] = fmin(tol_score[d], r) + acc_ulps * mag + ftz + p_term;
  }
}

bool attn_check_tolerances(attn_check_prepared *pc, char *err, size_t err_len) {
  const attn_problem *p = &pc->p;
  const size_t n_kv = (size_t)p->seq_kv + 1, dv = (size_t)p->head_dim_v;  // + the sink
  const int64_t rows = p->batch * p->heads * p->seq_q;
  // Rows are independent: in parallel, each thread with its own scratch. The weak-bound
  // bookkeeping keeps the count and the lowest index (as a serial pass would report it).
  size_t n_weak = 0, first_weak = SIZE_MAX, n_weak_lse = 0, first_weak_lse = SIZE_MAX;
  double weak_tol = 0.0, weak_spread = 0.0;
  bool oom = false;
#pragma omp parallel reduction(+ : n_weak, n_weak_lse)
  {
    double *scratch = malloc((3 * n_kv + 2 * dv) * sizeof(double));
    int64_t *key = malloc(n_kv * sizeof *key);
    size_t my_first = SIZE_MAX, my_first_lse = SIZE_MAX;
    double my_tol = 0.0, my_spread = 0.0;
    if (!scratch || !key) {
#pragma omp atomic write
      oom = true;
    }
#pragma omp for schedule(dynamic, 8)
    for (int64_t r = 0; r < rows; r++) {
      if (!scratch || !key) continue;
      const int64_t bh = r / p->seq_q, b = bh / p->heads, h = bh % p->heads, i = r % p->seq_q;
      double *tol_score = scratch + 3 * n_kv, *spread = tol_score + dv;
      const int64_t g = attn_kv_head_of(p, h);
      const float *qh = attn_q_head(p, pc->tq, b, h);  // as the compute mode reads them
      const float *kh = attn_k_head(p, pc->tk, b, g);
      const float *vh = attn_v_head(p, pc->tv, b, g);
      const size_t o_off = (size_t)(attn_o_head(p, pc->ref, b, h) - pc->ref);
      const attn_head_opts ho = attn_head_opts_of(p, b, h);
      const size_t lse_off = (size_t)bh * (size_t)p->seq_q;
      const size_t row_off = o_off + (size_t)i * dv;
      double *tol_row = pc->tol + row_off;
      int64_t lo, hi, n = 0;  // the row's keys: in range and not masked by −inf
      attn_row_keys(p, i, &lo, &hi);
      for (int64_t j = lo; j < hi; j++)
        if (!ho.mask || ho.mask[(size_t)i * (size_t)p->seq_kv + (size_t)j] != -INFINITY)
          key[n++] = j;
      if (n == 0) {  // no visible key: the output must be exactly zero, LSE −inf
        for (size_t d = 0; d < dv; d++) tol_row[d] = 0.0;
        if (pc->lse_ref) pc->lse_ref[lse_off + (size_t)i] = -INFINITY;
        if (pc->lse_tol) pc->lse_tol[lse_off + (size_t)i] = 0.0;
        continue;
      }
      double lse, lse_tol;
      row_tolerance(p, &ho, i, qh + i * p->head_dim_qk, kh, vh, key, n, scratch, scratch + n_kv,
                    scratch + 2 * n_kv, tol_row, tol_score, spread, &lse, &lse_tol);
      if (pc->lse_ref) pc->lse_ref[lse_off + (size_t)i] = lse;
      if (pc->lse_tol) {
        pc->lse_tol[lse_off + (size_t)i] = lse_tol;
        if (isinf(lse_tol)) {
          n_weak_lse++;
          if (lse_off + (size_t)i < my_first_lse) my_first_lse = lse_off + (size_t)i;
        }
      }
      for (size_t d = 0; d < dv; d++) {
        // Uninformative: the score part of the bound reaches the largest error any
        // convex combination of the visible V rows could have, where the choice of
        // weights matters beyond rounding (spread above the rest of the bound).
        const double rest = tol_row[d] - fmin(tol_score[d], spread[d]);
        if (!(tol_score[d] < spread[d]) && spread[d] > rest) {
          n_weak++;
          if (row_off + d < my_first) {
            my_first = row_off + d;
            my_tol = tol_score[d];
            my_spread = spread[d];
          }
        }
      }
    }
#pragma omp critical(attn_check_weak)
    {
      if (my_first < first_weak) {
        first_weak = my_first;
        weak_tol = my_tol;
        weak_spread = my_spread;
      }
      if (my_first_lse < first_weak_lse) first_weak_lse = my_first_lse;
    }
    free(scratch);
    free(key);
  }
  if (oom) {
    if (err && err_len) snprintf(err, err_len, "out of memory computing tolerances");
    return false;
  }
  pc->n_weak = n_weak;
  pc->n_weak_lse = n_weak_lse;
  pc->first_weak_lse = n_weak_lse ? first_weak_lse : 0;
  if (n_weak) {
    pc->first_weak = first_weak;
    pc->weak_tol = weak_tol;
    pc->weak_spread = weak_spread;
  }
  pc->ref_max_abs = 0.0;
  pc->n_nonfinite_ref = 0;
  for (size_t i = 0; i < attn_o_elems(p); i++) {
    if (!isfinite(pc->ref[i]) || !isfinite(pc->tol[i])) {
      if (!pc->n_nonfinite_ref++) pc->first_nonfinite_ref = i;
      continue;
    }
    if (fabs((double)pc->ref[i]) > pc->ref_max_abs) pc->ref_max_abs = fabs((double)pc->ref[i]);
  }
  return true;
}
