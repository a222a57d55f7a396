// SPDX-License-Identifier: MIT
// The seed's attention forms: per-head projections, the kernel, concatenation.
#include "forms/forms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// y[rows][n] = x[rows][d] · w[d][n], float32
static void project(const float *x, int64_t rows, int64_t d, const float *w, int64_t n, float *y) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < n; c++) {
      float acc = 0.0f;
      for (int64_t t = 0; t < d; t++) acc += x[r * d + t] * w[t * n + c];
      y[r * n + c] = acc;
    }
}

bool attn_forms_head_dim(int64_t d_model, int64_t heads, int64_t *head_dim, char *err,
                         size_t err_len) {
  if (d_model < 1 || heads < 1 || d_model % heads != 0) {
    if (err && err_len)
      snprintf(err, err_len, "d_model (%lld) must be a positive multiple of heads (%lld)",
               (long long)d_model, (long long)heads);
    return false;
  }
  *head_dim = d_model / heads;
  return true;
}

int attn_forms_attention(const attn_kernel *kernel, const attn_exec *exec,
                         const attn_forms_weights *w, const float *x_q, int64_t seq_q,
                         const float *x_kv, int64_t seq_kv, bool causal, float *out, char *err,
                         size_t err_len) {
  if (!w || !x_q || !x_kv || !out || !w->w_q || !w->w_k || !w->w_v) {
    if (err && err_len) snprintf(err, err_len, "forms: a NULL input, weight or output");
    return ATTN_ERR_INVALID;
  }
  if (w->d_in_q < 1 || w->d_in_kv < 1) {
    if (err && err_len) snprintf(err, err_len, "forms: input widths must be >= 1");
    return ATTN_ERR_INVALID;
  }
  // One problem holds every head: Q[1][H][Sq][Dqk], K/V[1][H][Skv][·], O[1][H][Sq][Dv].
  const attn_problem p =
      attn_problem_make(1, w->heads, w->heads, seq_q, seq_kv, w->d_qk, w->d_v, causal);
  if (!attn_problem_validate(&p, err, err_len)) return ATTN_ERR_INVALID;
  float *q = malloc(attn_q_elems(&p) * sizeof *q);
  float *k = malloc(attn_k_elems(&p) * sizeof *k);
  float *v = malloc(attn_v_elems(&p) * sizeof *v);
  float *o = malloc(attn_o_elems(&p) * sizeof *o);
  int rc = ATTN_ERR_NOMEM;
  if (!q || !k || !v || !o) {
    if (err && err_len) snprintf(err, err_len, "forms: out of memory");
    goto done;
  }
  for (int64_t h = 0; h < w->heads; h++) {
    project(x_q, seq_q, w->d_in_q, w->w_q + h * w->d_in_q * w->d_qk, w->d_qk,
            q + h * seq_q * w->d_qk);
    project(x_kv, seq_kv, w->d_in_kv, w->w_k + h * w->d_in_kv * w->d_qk, w->d_qk,
            k + h * seq_kv * w->d_qk);
    project(x_kv, seq_kv, w->d_in_kv, w->w_v + h * w->d_in_kv * w->d_v, w->d_v,
            v + h * seq_kv * w->d_v);
  }
  rc = attn_kernel_call(kernel, &p, exec, q, k, v, o, err, err_len);
  if (rc == ATTN_OK) {
    // concatenate heads: out[i][h·d_v + c] = O[h][i][c]
    for (int64_t h = 0; h < w->heads; h++)
      for (int64_t i = 0; i < seq_q; i++)
        memcpy(out + (i * w->heads + h) * w->d_v, o + (h * seq_q + i) * w->d_v,
               (size_t)w->d_v * sizeof *out);
  }
done:
  free(q);
  free(k);
  free(v);
  free(o);
  return rc;
}
