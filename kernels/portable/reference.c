// SPDX-License-Identifier: MIT
// reference — the ground truth. Every score, probability and output element is
// accumulated in double; the softmax subtracts the row maximum:
//     s_j = scale · Σ_d q_d k_jd            (double)
//     m   = max_j s_j,  p_j = exp(s_j − m),  l = Σ_j p_j
//     o   = (Σ_j p_j v_j) / l               (double, rounded to float once)
// With options (attn.h, "Attention variants"), in double as well:
//     s_j ← c·tanh(s_j/c), then + slope·(j − i − off), then + mask[i][j]
//     m = max(max_j s_j, sink),  o = (Σ_j p_j v_j) / (l + e^(sink − m)),  LSE = log Σ_j e^(s_j)
// over the keys of attn_row_keys. Rows with no visible key (causal with seq_q > seq_kv,
// a window, −inf mask entries) output zeros and LSE −inf. K and V of any type are read
// natively: each stored element, converted exactly (core/convert.h), enters in double.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"

static size_t reference_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
  // scores for one row + the output accumulator of one row, in double. Each count is at
  // most SIZE_MAX / 4 (attn_problem_validate), so the sum cannot wrap; the product could.
  const size_t n = (size_t)p->seq_kv + (size_t)p->head_dim_v;
  return n > SIZE_MAX / sizeof(double) ? SIZE_MAX : n * sizeof(double);
}

// Element idx of a K/V head of type t with rows of dim (float32: a plain load).
static inline double kv_at(attn_dtype t, const void *head, int64_t dim, size_t idx) {
  return t == ATTN_DTYPE_F32 ? (double)((const float *)head)[idx]
                             : (double)attn_kv_elem(t, head, dim, idx);
}

static int reference_run(const attn_problem *p, const attn_exec *exec, const float *q,
                         const void *k, const void *v, float *o, void *workspace) {
  (void)exec;
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  const attn_dtype t = p->kv_dtype;
  double *s = workspace;
  double *acc = s + p->seq_kv;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads; h++) {
      const int64_t g = attn_kv_head_of(p, h);
      const float *qh = attn_q_head(p, q, b, h);
      const void *kh = attn_kv_head(p, k, b, g, dqk);
      const void *vh = attn_kv_head(p, v, b, g, dv);
      float *oh = attn_o_head(p, o, b, h);
      const attn_head_opts ho = attn_head_opts_of(p, b, h);
      const float *mrow = ho.mask;
      for (int64_t i = 0; i < p->seq_q; i++) {
        int64_t lo, hi;
        attn_row_keys(p, i, &lo, &hi);
        float *orow = oh + i * dv;
        double m = -INFINITY;
        for (int64_t j = lo; j < hi; j++) {
          double dot = 0.0;
          for (int64_t d = 0; d < dqk; d++)
            dot += (double)qh[i * dqk + d] * kv_at(t, kh, dqk, (size_t)(j * dqk + d));
          double x = (double)p->scale * dot;
          if (ho.softcap > 0.0f) x = (double)ho.softcap * tanh(x / (double)ho.softcap);
          if (ho.slope != 0.0f) x += (double)ho.slope * (double)(j - i - ho.off);
          if (mrow) x += (double)mrow[(size_t)i * (size_t)p->seq_kv + (size_t)j];
          s[j - lo] = x;
          if (x > m) m = x;
        }
        if (m == -INFINITY) {  // sees nothing (empty range or every key masked by −inf)
          memset(orow, 0, (size_t)dv * sizeof *orow);
          if (ho.lse) ho.lse[i] = -INFINITY;
          continue;
        }
        double l = 0.0;
        for (int64_t d = 0; d < dv; d++) acc[d] = 0.0;
        for (int64_t j = lo; j < hi; j++) {
          const double pj = exp(s[j - lo] - m);
          l += pj;
          for (int64_t d = 0; d < dv; d++) acc[d] += pj * kv_at(t, vh, dv, (size_t)(j * dv + d));
        }
        if (ho.lse) ho.lse[i] = (float)(m + log(l));
        const double denom = ho.has_sink ? l + exp((double)ho.sink - m) : l;
        for (int64_t d = 0; d < dv; d++) orow[d] = (float)(acc[d] / denom);
      }
    }
  }
  return ATTN_OK;
}

const attn_kernel attn_kernel_reference = {
    .name = "reference",
    .summary = "ground truth: double accumulation, max-subtracted softmax, one row at a time",
    .required_isa = 0,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_OPT_ALL | ATTN_CAP_KV_ALL,
    .workspace = reference_workspace,
    .run = reference_run,
    .vec_width = 1,  // scalar C, no register tile
};
