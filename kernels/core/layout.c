// SPDX-License-Identifier: MIT
// Serving layouts (attn.h, "Serving layouts"): ragged batches and paged K/V — the
// per-sequence view, sizes, validation and the input domain of a layout problem.
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"

void attn_problem_set_layout(attn_problem *p, const attn_layout *l, int64_t batch) {
  p->layout = l;
  p->batch = batch;
  int64_t mq = 0, mk = 0;
  for (int64_t b = 0; l && l->cu_seqlens_q && l->cu_seqlens_kv && b < batch; b++) {
    // only the differences of valid offsets (non-negative, non-decreasing) are taken;
    // attn_problem_validate refuses the rest by name
    const int64_t *cq = l->cu_seqlens_q, *ck = l->cu_seqlens_kv;
    const int64_t nq = cq[b] >= 0 && cq[b + 1] >= cq[b] ? cq[b + 1] - cq[b] : 0;
    const int64_t nk = ck[b] >= 0 && ck[b + 1] >= ck[b] ? ck[b + 1] - ck[b] : 0;
    if (nq > mq) mq = nq;
    if (nk > mk) mk = nk;
  }
  p->seq_q = mq;
  p->seq_kv = mk;
}

int64_t attn_layout_q_len(const attn_problem *p, int64_t b) {
  return p->layout ? p->layout->cu_seqlens_q[b + 1] - p->layout->cu_seqlens_q[b] : p->seq_q;
}
int64_t attn_layout_kv_len(const attn_problem *p, int64_t b) {
  return p->layout ? p->layout->cu_seqlens_kv[b + 1] - p->layout->cu_seqlens_kv[b] : p->seq_kv;
}
size_t attn_layout_total_q(const attn_problem *p) {
  return p->layout ? (size_t)p->layout->cu_seqlens_q[p->batch]
                   : (size_t)p->batch * (size_t)p->seq_q;
}

// The union over sequence b's rows i of the keys j with −left ≤ j − (i + off) ≤ right
// (causal: right = 0), off its diagonal offset: one range, since consecutive rows' ranges
// move by one key and every window side is ≥ 0. A side of kv_len or more bounds nothing
// (and is never added: any int64 side is valid).
int64_t attn_layout_visible_keys(const attn_problem *p, int64_t b) {
  const int64_t nk = attn_layout_kv_len(p, b), nq = attn_layout_q_len(p, b);
  if (nk == 0 || nq == 0) return 0;
  attn_options o;
  const attn_problem sp = attn_layout_seq_problem(p, b, &o);
  const int64_t off = attn_diag_offset(&sp);  // |off| ≤ 2^60, lengths ≤ 2^61: no overflow below
  const bool win = sp.opts && sp.opts->window;
  int64_t lo = 0, hi = nk - 1;
  const int64_t left = win ? sp.opts->window_left : ATTN_WINDOW_UNBOUNDED;
  if (left != ATTN_WINDOW_UNBOUNDED && left < off) lo = off - left;
  int64_t right = win ? sp.opts->window_right : ATTN_WINDOW_UNBOUNDED;
  if (sp.causal && (right == ATTN_WINDOW_UNBOUNDED || right > 0)) right = 0;
  if (right != ATTN_WINDOW_UNBOUNDED && right < nk) hi = nq - 1 + off + right;
  if (hi > nk - 1) hi = nk - 1;
  return hi >= lo ? hi - lo + 1 : 0;
}

attn_problem attn_layout_seq_problem(const attn_problem *p, int64_t b, attn_options *opts) {
  attn_problem s = *p;
  s.layout = NULL;
  s.batch = 1;
  s.seq_q = attn_layout_q_len(p, b);
  s.seq_kv = attn_layout_kv_len(p, b);
  if (p->opts) {
    *opts = *p->opts;
    opts->lse = NULL;
    if (opts->mask) opts->mask = p->opts->mask + attn_layout_mask_offset(p, b);
    s.opts = opts;
  }
  return s;
}

size_t attn_layout_mask_offset(const attn_problem *p, int64_t b) {
  const bool per_head = p->opts && p->opts->mask_per_head;
  if (!p->layout)
    return per_head ? (size_t)b * (size_t)p->heads * (size_t)p->seq_q * (size_t)p->seq_kv : 0;
  size_t off = 0;
  for (int64_t c = 0; c < b; c++)
    off += (size_t)attn_layout_q_len(p, c) * (size_t)attn_layout_kv_len(p, c);
  return per_head ? off * (size_t)p->heads : off;
}

size_t attn_mask_elems(const attn_problem *p) {
  if (!p->opts || !p->opts->mask) return 0;
  if (p->layout) return attn_layout_mask_offset(p, p->batch);
  return (p->opts->mask_per_head ? (size_t)p->batch * (size_t)p->heads : 1) * (size_t)p->seq_q *
         (size_t)p->seq_kv;
}

size_t attn_lse_elems(const attn_problem *p) {
  if (!p->opts || !p->opts->lse) return 0;
  return attn_layout_total_q(p) * (size_t)p->heads;
}

// ── Validation ──────────────────────────────────────────────────────────────────────

// cu[0] == 0, non-decreasing; the largest difference in *max and the total in *total.
static bool offsets_ok(const int64_t *cu, int64_t batch, const char *name, int64_t *max,
                       int64_t *total, char *err, size_t err_len) {
  if (!cu) return attn_fail(err, err_len, "layout: %s is NULL", name);
  if (cu[0] != 0)
    return attn_fail(err, err_len, "layout: %s[0] must be 0 (got %lld)", name, (long long)cu[0]);
  *max = 0;
  for (int64_t b = 0; b < batch; b++) {
    if (cu[b + 1] < cu[b])  // cu[b] >= cu[0] = 0 from here: the difference cannot overflow
      return attn_fail(err, err_len, "layout: %s decreases at sequence %lld (%lld then %lld)", name,
                       (long long)b, (long long)cu[b], (long long)cu[b + 1]);
    const int64_t n = cu[b + 1] - cu[b];
    if (n > *max) *max = n;
  }
  *total = cu[batch];
  return true;
}

static bool paged_ok(const attn_problem *p, char *err, size_t err_len) {
  const attn_layout *l = p->layout;
  if (l->page_size < 1 || l->page_size > ATTN_MAX_PAGE_SIZE)
    return attn_fail(err, err_len, "layout: page_size must be in 1..%d (got %lld)",
                     ATTN_MAX_PAGE_SIZE, (long long)l->page_size);
  if (l->num_pages < 1)
    return attn_fail(err, err_len, "layout: num_pages must be >= 1 (got %lld)",
                     (long long)l->num_pages);
  if (!l->page_table) return attn_fail(err, err_len, "layout: page_table is NULL");
  if (l->pages_per_seq < 0 || !attn_tensor_fits(p->batch, l->pages_per_seq, 1, 1))
    return attn_fail(err, err_len,
                     "layout: a page table of %lld sequences x %lld pages_per_seq does not fit in "
                     "memory",
                     (long long)p->batch, (long long)l->pages_per_seq);
  if (!attn_tensor_fits(l->num_pages, p->kv_heads, l->page_size,
                        (p->head_dim_qk > p->head_dim_v ? p->head_dim_qk : p->head_dim_v)))
    return attn_fail(err, err_len,
                     "layout: a K/V pool of %lld pages of %lld tokens overflows size_t",
                     (long long)l->num_pages, (long long)l->page_size);
  for (int64_t b = 0; b < p->batch; b++) {
    const int64_t kv = attn_layout_kv_len(p, b);
    const int64_t need = (kv + l->page_size - 1) / l->page_size;
    if (need > l->pages_per_seq)
      return attn_fail(err, err_len,
                       "layout: sequence %lld has %lld keys = %lld pages of %lld, more than "
                       "pages_per_seq (%lld)",
                       (long long)b, (long long)kv, (long long)need, (long long)l->page_size,
                       (long long)l->pages_per_seq);
    for (int64_t i = 0; i < need; i++) {
      const int32_t pg = l->page_table[(size_t)b * (size_t)l->pages_per_seq + (size_t)i];
      if (pg < 0 || pg >= l->num_pages)
        return attn_fail(err, err_len,
                         "layout: page_table[%lld][%lld] = %ld is not a page (0..%lld)",
                         (long long)b, (long long)i, (long)pg, (long long)(l->num_pages - 1));
    }
  }
  return true;
}

bool attn_layout_validate(const attn_problem *p, char *err, size_t err_len) {
  const attn_layout *l = p->layout;
  if (l->kind != ATTN_LAYOUT_RAGGED && l->kind != ATTN_LAYOUT_PAGED)
    return attn_fail(err, err_len,
                     "layout kind must be ragged (1) or paged (2) (got %d; a dense problem has "
                     "layout NULL)",
                     (int)l->kind);
  int64_t mq, mk, tq, tk;
  if (!offsets_ok(l->cu_seqlens_q, p->batch, "cu_seqlens_q", &mq, &tq, err, err_len) ||
      !offsets_ok(l->cu_seqlens_kv, p->batch, "cu_seqlens_kv", &mk, &tk, err, err_len))
    return false;
  if (mq != p->seq_q || mk != p->seq_kv)
    return attn_fail(err, err_len,
                     "layout: seq_q and seq_kv (%lld, %lld) must be the largest sequence lengths "
                     "(%lld, %lld); attn_problem_set_layout sets them",
                     (long long)p->seq_q, (long long)p->seq_kv, (long long)mq, (long long)mk);
  if (!attn_tensor_fits(tq, p->heads, p->head_dim_qk, 1) ||
      !attn_tensor_fits((int64_t)tq, p->heads, p->head_dim_v, 1))
    return attn_fail(err, err_len, "layout: %lld query tokens overflow size_t", (long long)tq);
  if (l->kind == ATTN_LAYOUT_RAGGED &&
      !attn_tensor_fits(tk, p->kv_heads,
                        (p->head_dim_qk > p->head_dim_v ? p->head_dim_qk : p->head_dim_v), 1))
    return attn_fail(err, err_len, "layout: %lld keys overflow size_t", (long long)tk);
  if (l->kind == ATTN_LAYOUT_PAGED && !paged_ok(p, err, err_len)) return false;
  if (p->opts && p->opts->mask) {
    double n = 0.0;  // the blocks' total, in double: it cannot wrap
    for (int64_t b = 0; b < p->batch; b++)
      n += (double)attn_layout_q_len(p, b) * (double)attn_layout_kv_len(p, b);
    if (p->opts->mask_per_head) n *= (double)p->heads;
    if (n * sizeof(float) >= 0x1p62)
      return attn_fail(err, err_len, "layout: the mask blocks (%.3g elements) overflow", n);
  }
  return true;
}

// ── The input domain of a layout problem (attn.h, "Numerics contract") ──────────────

// Euclidean norm of a row of dim elements of type t, or −1 if an element is not finite
// (its index in *bad).
static double row_norm(attn_dtype t, const void *row, int64_t dim, int64_t *bad) {
  double ss = 0.0;
  for (int64_t d = 0; d < dim; d++) {
    const float x = t == ATTN_DTYPE_F32 ? ((const float *)row)[d] : attn_kv_elem(t, row, dim, d);
    if (!isfinite(x)) {
      *bad = d;
      return -1.0;
    }
    ss += (double)x * (double)x;
  }
  return sqrt(ss);
}

// Largest |element| of a row of type t (finite rows).
static double row_max_abs(attn_dtype t, const void *row, int64_t dim) {
  double m = 0.0;
  for (int64_t d = 0; d < dim; d++) {
    const float x = t == ATTN_DTYPE_F32 ? ((const float *)row)[d] : attn_kv_elem(t, row, dim, d);
    if (fabs((double)x) > m) m = fabs((double)x);
  }
  return m;
}

// Conditions 1–3 of attn.h per sequence: the query rows and the keys each sequence reads
// (only those: a pool's unused pages are not inputs).
int attn_layout_inputs_check(const attn_problem *p, const float *q, const void *k, const void *v,
                             char *err, size_t err_len) {
  const attn_dtype kt = p->kv_dtype;
  const int64_t group = p->heads / p->kv_heads, dqk = p->head_dim_qk, dv = p->head_dim_v;
  const double s = fmax(1.0, fabs((double)p->scale)), sa = fabs((double)p->scale);
  const attn_compute_range cr = attn_compute_range_of(p->compute);
  int64_t bad = 0;
  for (int64_t b = 0; b < p->batch; b++) {
    const int64_t nq = attn_layout_q_len(p, b), nk = attn_layout_kv_len(p, b);
    for (int64_t g = 0; g < p->kv_heads; g++) {
      double qn = 0.0, kn = 0.0, vmax = 0.0;
      for (int64_t h = g * group; h < (g + 1) * group; h++)
        for (int64_t i = 0; i < nq; i++) {
          const double n = row_norm(ATTN_DTYPE_F32, attn_layout_q_row(p, q, b, h, i), dqk, &bad);
          if (n < 0)
            return attn_range_fail(
                err, err_len,
                "input Q of sequence %lld, head %lld, token %lld, element %lld is "
                "not finite (inputs must be finite)",
                (long long)b, (long long)h, (long long)i, (long long)bad);
          const double qa =
              isinf(cr.q) ? 0.0  // no limit (f32): no scan
                          : row_max_abs(ATTN_DTYPE_F32, attn_layout_q_row(p, q, b, h, i), dqk);
          if (qa > cr.q)
            return attn_range_fail(err, err_len,
                                   "input Q of sequence %lld, head %lld, token %lld holds %g, "
                                   "which exceeds %.9g, %s",
                                   (long long)b, (long long)h, (long long)i, qa, cr.q, cr.why);
          qn = fmax(qn, n);
        }
      for (int64_t t = 0; t < nk; t++) {
        const void *kr = attn_layout_kv_row(p, k, b, g, t, dqk);
        const void *vr = attn_layout_kv_row(p, v, b, g, t, dv);
        const double n = row_norm(kt, kr, dqk, &bad);
        const double nv = n < 0 ? n : row_norm(kt, vr, dv, &bad);
        if (n < 0 || nv < 0)
          return attn_range_fail(
              err, err_len,
              "input %s of sequence %lld, K/V head %lld, key %lld, element %lld is "
              "not finite (inputs must be finite)",
              n < 0 ? "K" : "V", (long long)b, (long long)g, (long long)t, (long long)bad);
        const double ka = isinf(cr.kv) ? 0.0 : row_max_abs(kt, kr, dqk);  // as Q's
        const double va = row_max_abs(kt, vr, dv);  // also the V accumulation's bound
        if (ka > cr.kv || va > cr.kv)
          return attn_range_fail(err, err_len,
                                 "input %s of sequence %lld, K/V head %lld, key %lld holds %g, "
                                 "which exceeds %.9g, %s",
                                 ka > cr.kv ? "K" : "V", (long long)b, (long long)g, (long long)t,
                                 ka > cr.kv ? ka : va, cr.kv, cr.why);
        kn = fmax(kn, n);
        vmax = fmax(vmax, va);
      }
      if (s * qn * kn > ATTN_SCORE_LIMIT || (sa > 1.0 && sa * fmax(qn, kn) > ATTN_SCORE_LIMIT))
        return attn_range_fail(err, err_len,
                               "scores may overflow float32: max(1,|scale|)*max|q|*max|k| = "
                               "%.3g*%.3g*%.3g exceeds the limit %.3g or a pre-scaled operand does "
                               "(sequence %lld, K/V head %lld; Euclidean row norms)",
                               s, qn, kn, ATTN_SCORE_LIMIT, (long long)b, (long long)g);
      if ((double)nk * vmax > ATTN_VALUE_LIMIT)
        return attn_range_fail(err, err_len,
                               "the V accumulation may overflow float32: kv_len*max|v| = %lld*%.3g "
                               "exceeds the limit %.3g (sequence %lld, K/V head %lld)",
                               (long long)nk, vmax, ATTN_VALUE_LIMIT, (long long)b, (long long)g);
    }
  }
  return ATTN_OK;
}
