// SPDX-License-Identifier: MIT
// The portable path for serving layouts (attn.h, "Serving layouts"): a kernel without
// the layout's ATTN_CAP_LAYOUT_* bit gets each sequence gathered into a dense batch-1
// problem in its workspace — Q rows, the sequence's K/V rows as stored (any kv_dtype:
// rows are copied as bytes, attn_kernel_run converts them afterwards if the kernel needs
// float32) — is called once per sequence, and its O (and LSE) rows are scattered back.
// Workspace, each part rounded up to 64 bytes:
//   Q [heads][max q_len][head_dim_qk] f32 | O [heads][max q_len][head_dim_v] f32 |
//   LSE [heads][max q_len] f32 (with LSE) | K [kv_heads][max kv_len] rows | V likewise |
//   the largest attn_kernel_workspace of one sequence's dense problem.
#include <math.h>
#include <string.h>

#include "core/attn_internal.h"

bool attn_layout_gathered(const attn_kernel *k, const attn_problem *p) {
  if (!p->layout) return false;
  const uint32_t cap =
      p->layout->kind == ATTN_LAYOUT_PAGED ? ATTN_CAP_LAYOUT_PAGED : ATTN_CAP_LAYOUT_RAGGED;
  // The options fallback (attn_kernel_native false: portable/blocked.c) reads dense
  // problems only, so a kernel that would hand p to it gets the sequences gathered too.
  return (k->caps & cap) == 0 || !attn_kernel_native(k, p);
}

static size_t round64_sat(size_t x) {
  return x > SIZE_MAX - 63 ? SIZE_MAX : (x + 63) & ~(size_t)63;
}

typedef struct gather_parts {
  size_t q, o, lse, k, v;  // bytes of each part, rounded to 64
} gather_parts;

static gather_parts parts_of(const attn_problem *p) {
  const size_t hq = (size_t)p->heads * (size_t)p->seq_q;  // seq_q, seq_kv: the largest
  const size_t kvr = (size_t)p->kv_heads * (size_t)p->seq_kv;
  gather_parts g = {
      .q = round64_sat(attn_size_mul_sat(hq * (size_t)p->head_dim_qk, sizeof(float))),
      .o = round64_sat(attn_size_mul_sat(hq * (size_t)p->head_dim_v, sizeof(float))),
      .lse = p->opts && p->opts->lse ? round64_sat(hq * sizeof(float)) : 0,
      .k = round64_sat(attn_size_mul_sat(kvr, attn_kv_row_bytes(p->kv_dtype, p->head_dim_qk))),
      .v = round64_sat(attn_size_mul_sat(kvr, attn_kv_row_bytes(p->kv_dtype, p->head_dim_v))),
  };
  return g;
}

// Sequence b's dense problem as the kernel gets it (its LSE, when wanted, in lse).
static attn_problem seq_problem(const attn_problem *p, int64_t b, attn_options *opts, float *lse) {
  attn_problem s = attn_layout_seq_problem(p, b, opts);
  if (p->opts) opts->lse = p->opts->lse ? lse : NULL;
  return s;
}

size_t attn_layout_workspace(const attn_kernel *k, const attn_problem *p, const attn_exec *exec) {
  const gather_parts g = parts_of(p);
  size_t inner = 0;
  for (int64_t b = 0; b < p->batch; b++) {
    if (attn_layout_q_len(p, b) == 0 || attn_layout_kv_len(p, b) == 0) continue;
    attn_options o;
    // the caller's LSE pointer stands in for the buffer: sizing reads only its presence
    const attn_problem s = seq_problem(p, b, &o, p->opts ? p->opts->lse : NULL);
    const size_t w = attn_kernel_workspace(k, &s, exec);
    if (w > inner) inner = w;
  }
  size_t n = attn_size_add_sat(g.q, g.o);
  n = attn_size_add_sat(n, g.lse);
  n = attn_size_add_sat(n, g.k);
  n = attn_size_add_sat(n, g.v);
  return attn_size_add_sat(n, inner);
}

// Sequence b's keys of K/V head g, as stored, into dst [kv_len] rows (a paged layout
// copies one run of consecutive slots per page).
static void gather_kv(const attn_problem *p, const void *x, int64_t b, int64_t g, int64_t dim,
                      char *dst) {
  const int64_t n = attn_layout_kv_len(p, b);
  const size_t row = attn_kv_row_bytes(p->kv_dtype, dim);
  const int64_t run = p->layout->kind == ATTN_LAYOUT_PAGED ? p->layout->page_size : 1;
  for (int64_t t = 0; t < n;) {
    int64_t len = run - t % run;
    if (len > n - t) len = n - t;
    memcpy(dst + (size_t)t * row, attn_layout_kv_row(p, x, b, g, t, dim), (size_t)len * row);
    t += len;
  }
}

// Rows that see nothing: zeros and LSE −inf (attn.h), for a sequence without keys.
static void write_empty(const attn_problem *p, int64_t b, float *o) {
  const int64_t nq = attn_layout_q_len(p, b);
  float *lse = p->opts ? p->opts->lse : NULL;
  const size_t total = attn_layout_total_q(p);
  for (int64_t h = 0; h < p->heads; h++)
    for (int64_t i = 0; i < nq; i++) {
      memset(attn_layout_o_row(p, o, b, h, i), 0, (size_t)p->head_dim_v * sizeof(float));
      if (lse) lse[(size_t)h * total + (size_t)p->layout->cu_seqlens_q[b] + (size_t)i] = -INFINITY;
    }
}

int attn_layout_run(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                    const float *q, const void *kk, const void *v, float *o, void *workspace,
                    attn_run_info *info) {
  *info = (attn_run_info){0};
  const gather_parts g = parts_of(p);
  char *w = workspace;
  float *qd = (float *)w, *od = (float *)(w + g.q), *lsed = (float *)(w + g.q + g.o);
  char *kd = w + g.q + g.o + g.lse, *vd = kd + g.k;
  void *inner = vd + g.v;
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  float *lse = p->opts ? p->opts->lse : NULL;
  const size_t total = attn_layout_total_q(p);
  for (int64_t b = 0; b < p->batch; b++) {
    const int64_t nq = attn_layout_q_len(p, b), nk = attn_layout_kv_len(p, b);
    if (nq == 0) continue;
    if (nk == 0) {
      write_empty(p, b, o);
      continue;
    }
    attn_options opts;
    const attn_problem s = seq_problem(p, b, &opts, lsed);
    for (int64_t h = 0; h < p->heads; h++)
      for (int64_t i = 0; i < nq; i++)
        memcpy(qd + ((size_t)h * (size_t)nq + (size_t)i) * (size_t)dqk,
               attn_layout_q_row(p, q, b, h, i), (size_t)dqk * sizeof(float));
    const size_t kr = attn_kv_row_bytes(p->kv_dtype, dqk), vr = attn_kv_row_bytes(p->kv_dtype, dv);
    for (int64_t kh = 0; kh < p->kv_heads; kh++) {
      gather_kv(p, kk, b, kh, dqk, kd + (size_t)kh * (size_t)nk * kr);
      gather_kv(p, v, b, kh, dv, vd + (size_t)kh * (size_t)nk * vr);
    }
    attn_run_info sub;
    const int rc = attn_kernel_run_info(k, &s, exec, qd, kd, vd, od, inner, &sub);
    info->fallback |= sub.fallback;
    if (sub.fp_leak && !info->fp_leak)
      *info = (attn_run_info){info->fallback, true, sub.fp_given, sub.fp_returned};
    if (rc != ATTN_OK) return rc;
    for (int64_t h = 0; h < p->heads; h++)
      for (int64_t i = 0; i < nq; i++) {
        memcpy(attn_layout_o_row(p, o, b, h, i),
               od + ((size_t)h * (size_t)nq + (size_t)i) * (size_t)dv, (size_t)dv * sizeof(float));
        if (lse)
          lse[(size_t)h * total + (size_t)p->layout->cu_seqlens_q[b] + (size_t)i] =
              lsed[(size_t)h * (size_t)nq + (size_t)i];
      }
  }
  return ATTN_OK;
}
