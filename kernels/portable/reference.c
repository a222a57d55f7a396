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
// Compute modes (attn.h, "Compute modes"): the mode's rounding of the inputs is applied
// first — BF16/F16 round each element of Q, K and V to the type, INT8 quantizes each Q row
// per 32-element block (Q8_0) — and everything after is exact-ish double as above (the
// int8 score Σ_b f16(d_q)·f16(d_k)·Σ_t q_t·k_t equals the dot product of the dequantized
// rows). The kernel's own roundings (p, the fp32 sums) are the checker's tolerance.
// Rows are independent: OpenMP hands them out to exec->threads threads (0: the OpenMP
// default), each with its own row of workspace; a row's arithmetic does not depend on
// which thread runs it, so the output is bitwise the same for any thread count.
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"

// Doubles of one thread's row: the scores of one row + its output accumulator + the row
// of Q as the compute mode reads it (float32, in a double slot each).
static size_t reference_row(const attn_problem *p) {
  return (size_t)p->seq_kv + (size_t)p->head_dim_v + (size_t)p->head_dim_qk;
}

static size_t reference_workspace(const attn_problem *p, const attn_exec *exec) {
  // Each count is at most SIZE_MAX / 4 (attn_problem_validate), so the sum cannot wrap;
  // the products could: saturate (attn_kernel_call then reports "cannot allocate").
  const size_t n = attn_size_mul_sat(reference_row(p), (size_t)attn_exec_threads(exec));
  return attn_size_mul_sat(n, sizeof(double));
}

// Element idx of a K/V head of type t with rows of dim (float32: a plain load), rounded
// as compute mode c reads it when round is set (attn_compute_rounds_kv).
static inline double kv_at(attn_dtype t, const void *head, int64_t dim, size_t idx, attn_compute c,
                           bool round) {
  const float x =
      t == ATTN_DTYPE_F32 ? ((const float *)head)[idx] : attn_kv_elem(t, head, dim, idx);
  return (double)(round ? attn_compute_round(c, x) : x);
}

// Row i of query head h (batch b): the formulas at the top, into o.
static void reference_row_run(const attn_problem *p, int64_t b, int64_t h, int64_t i,
                              const float *q, const void *k, const void *v, float *o, double *s) {
  const attn_dtype t = p->kv_dtype;
  const attn_compute c = p->compute;
  const bool rkv = attn_compute_rounds_kv(c, t);
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  double *acc = s + p->seq_kv;
  float *qi = (float *)(acc + dv);  // row i of Q as the mode reads it
  const attn_head_view hd = attn_head_at(p, q, k, v, o, b, h);
  const attn_head_opts ho = attn_head_opts_of(p, b, h);
  const float *mrow = ho.mask;
  int64_t lo, hi;
  attn_row_keys(p, i, &lo, &hi);
  float *orow = hd.o + i * dv;
  attn_compute_round_q(c, hd.q + i * dqk, 1, dqk, qi);
  double m = -INFINITY;
  for (int64_t j = lo; j < hi; j++) {
    double dot = 0.0;
    for (int64_t d = 0; d < dqk; d++)
      dot += (double)qi[d] * kv_at(t, hd.k, dqk, (size_t)(j * dqk + d), c, rkv);
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
    return;
  }
  double l = 0.0;
  for (int64_t d = 0; d < dv; d++) acc[d] = 0.0;
  for (int64_t j = lo; j < hi; j++) {
    const double pj = exp(s[j - lo] - m);
    l += pj;
    for (int64_t d = 0; d < dv; d++)
      acc[d] += pj * kv_at(t, hd.v, dv, (size_t)(j * dv + d), c, rkv);
  }
  if (ho.lse) ho.lse[i] = (float)(m + log(l));
  const double denom = ho.has_sink ? l + exp((double)ho.sink - m) : l;
  for (int64_t d = 0; d < dv; d++) orow[d] = (float)(acc[d] / denom);
}

static int reference_run(const attn_problem *p, const attn_exec *exec, const float *q,
                         const void *k, const void *v, float *o, void *workspace) {
  ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o);
  const int64_t rows = p->batch * p->heads * p->seq_q;
  const size_t per = reference_row(p);
  const int nt = attn_exec_threads(exec);
#pragma omp parallel num_threads(nt)
  {
    double *s = (double *)workspace + (size_t)omp_get_thread_num() * per;
#pragma omp for schedule(dynamic, 16)
    for (int64_t r = 0; r < rows; r++) {
      const int64_t bh = r / p->seq_q;
      reference_row_run(p, bh / p->heads, bh % p->heads, r % p->seq_q, q, k, v, o, s);
    }
  }
  return ATTN_OK;
}

const attn_kernel attn_kernel_reference = {
    .name = "reference",
    .summary =
        "ground truth: double accumulation, max-subtracted softmax, one row at a time (rows in "
        "parallel)",
    .required_isa = 0,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_OPT_ALL | ATTN_CAP_KV_ALL |
            ATTN_CAP_COMPUTE_ALL,
    .workspace = reference_workspace,
    .run = reference_run,
    .vec_width = 1,  // scalar C, no register tile
};
