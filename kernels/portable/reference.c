// SPDX-License-Identifier: MIT
// reference — the ground truth. Every score, probability and output element is
// accumulated in double; the softmax subtracts the row maximum:
//     s_j = scale · Σ_d q_d k_jd            (double)
//     m   = max_j s_j,  p_j = exp(s_j − m),  l = Σ_j p_j
//     o   = (Σ_j p_j v_j) / l               (double, rounded to float once)
// Rows with no visible key (causal, seq_q > seq_kv) output zeros.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"

static size_t reference_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)exec;
  // scores for one row + the output accumulator of one row, in double. Each count is at
  // most SIZE_MAX / 4 (attn_problem_validate), so the sum cannot wrap; the product could.
  const size_t n = (size_t)p->seq_kv + (size_t)p->head_dim_v;
  return n > SIZE_MAX / sizeof(double) ? SIZE_MAX : n * sizeof(double);
}

static int reference_run(const attn_problem *p, const attn_exec *exec, const float *q,
                         const float *k, const float *v, float *o, void *workspace) {
  (void)exec;
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  double *s = workspace;
  double *acc = s + p->seq_kv;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads; h++) {
      const int64_t g = attn_kv_head_of(p, h);
      const float *qh = attn_q_head(p, q, b, h);
      const float *kh = attn_k_head(p, k, b, g);
      const float *vh = attn_v_head(p, v, b, g);
      float *oh = attn_o_head(p, o, b, h);
      for (int64_t i = 0; i < p->seq_q; i++) {
        const int64_t n = attn_visible_keys(p, i);
        float *orow = oh + i * dv;
        if (n == 0) {
          memset(orow, 0, (size_t)dv * sizeof *orow);
          continue;
        }
        double m = -INFINITY;
        for (int64_t j = 0; j < n; j++) {
          double dot = 0.0;
          for (int64_t d = 0; d < dqk; d++)
            dot += (double)qh[i * dqk + d] * (double)kh[j * dqk + d];
          s[j] = (double)p->scale * dot;
          if (s[j] > m) m = s[j];
        }
        double l = 0.0;
        for (int64_t d = 0; d < dv; d++) acc[d] = 0.0;
        for (int64_t j = 0; j < n; j++) {
          const double pj = exp(s[j] - m);
          l += pj;
          for (int64_t d = 0; d < dv; d++) acc[d] += pj * (double)vh[j * dv + d];
        }
        for (int64_t d = 0; d < dv; d++) orow[d] = (float)(acc[d] / l);
      }
    }
  }
  return ATTN_OK;
}

const attn_kernel attn_kernel_reference = {
    .name = "reference",
    .summary = "ground truth: double accumulation, max-subtracted softmax, one row at a time",
    .required_isa = 0,
    .caps = ATTN_CAP_ALL_SHAPES,
    .workspace = reference_workspace,
    .run = reference_run,
    .vec_width = 1,  // scalar C, no register tile
};
