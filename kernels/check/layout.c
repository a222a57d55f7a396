// SPDX-License-Identifier: MIT
// Check cases with a serving layout (attn.h, "Serving layouts"). The checker builds the
// layout (lengths, page table, page order, shared prefix pages), generates the packed Q
// and the K/V pools, then prepares one dense case per sequence from that sequence's rows —
// gathered here with the checker's own addressing, not the library's — so each sequence
// has its reference and tolerance exactly as a dense case (check.h). A kernel's packed
// output is compared sequence by sequence; a sequence without keys must give exact zeros
// (and LSE −inf).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_internal.h"
#include "check/inputs.h"
#include "core/convert.h"

void attn_check_layout_free(attn_check_prepared *pc) {
  if (pc->seq)
    for (int64_t b = 0; b < pc->p.batch; b++) attn_check_prepared_free(pc->seq[b]);
  free(pc->seq);
  free(pc->cu_q);
  free(pc->cu_kv);
  free(pc->page_table);
}

static bool nomem(char *err, size_t err_len) {
  if (err && err_len) snprintf(err, err_len, "out of memory preparing a layout check case");
  return false;
}

// The lengths, and for PAGED the pool: each sequence's pages get fresh page numbers in
// order, except the prefix pages shared with sequence 0; spare pages follow; then the
// numbers are permuted (shuffle) so that a sequence's pages lie anywhere in the pool.
static bool build_layout(attn_check_prepared *pc, const attn_check_layout *s, uint64_t seed,
                         char *err, size_t err_len) {
  const int n = s->seqs;
  if (n < 1 || n > ATTN_CHECK_MAX_SEQS) {
    if (err && err_len)
      snprintf(err, err_len, "a layout case needs 1..%d sequences (got %d)", ATTN_CHECK_MAX_SEQS,
               n);
    return false;
  }
  if (!(pc->cu_q = calloc((size_t)n + 1, sizeof(int64_t))) ||
      !(pc->cu_kv = calloc((size_t)n + 1, sizeof(int64_t))))
    return nomem(err, err_len);
  for (int b = 0; b < n; b++) {
    pc->cu_q[b + 1] = pc->cu_q[b] + s->q_lens[b];
    pc->cu_kv[b + 1] = pc->cu_kv[b] + s->kv_lens[b];
  }
  attn_layout *l = &pc->layout;
  *l = (attn_layout){.kind = s->kind, .cu_seqlens_q = pc->cu_q, .cu_seqlens_kv = pc->cu_kv};
  if (s->kind != ATTN_LAYOUT_PAGED) return true;
  const int64_t ps = s->page_size > 0 ? s->page_size : 1;
  int64_t per = 1, fresh = 0;
  for (int b = 0; b < n; b++) {
    const int64_t need = (s->kv_lens[b] + ps - 1) / ps;
    if (need > per) per = need;
  }
  if (!(pc->page_table = calloc((size_t)n * (size_t)per, sizeof(int32_t))))
    return nomem(err, err_len);
  for (int b = 0; b < n; b++) {
    const int64_t need = (s->kv_lens[b] + ps - 1) / ps;
    int64_t shared = 0;
    if (b > 0) {
      shared = s->shared_pages;
      if (shared > s->kv_lens[0] / ps) shared = s->kv_lens[0] / ps;
      if (shared > s->kv_lens[b] / ps) shared = s->kv_lens[b] / ps;
      if (shared < 0) shared = 0;
    }
    for (int64_t i = 0; i < need; i++)
      pc->page_table[b * per + i] = i < shared ? pc->page_table[i] : (int32_t)fresh++;
  }
  const int64_t pages = fresh + (s->spare_pages > 0 ? s->spare_pages : 0);
  l->page_size = ps;
  l->num_pages = pages > 0 ? pages : 1;
  l->pages_per_seq = per;
  l->page_table = pc->page_table;
  if (s->shuffle) {  // a seeded permutation of the page numbers (Fisher–Yates)
    int32_t *perm = malloc((size_t)l->num_pages * sizeof *perm);
    if (!perm) return nomem(err, err_len);
    for (int64_t i = 0; i < l->num_pages; i++) perm[i] = (int32_t)i;
    uint64_t st = seed * 11 + 9;
    for (int64_t i = l->num_pages - 1; i > 0; i--) {
      const int64_t j = (int64_t)(attn_rand_u64(&st) % (uint64_t)(i + 1));
      const int32_t t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t i = 0; i < (int64_t)n * per; i++) pc->page_table[i] = perm[pc->page_table[i]];
    free(perm);
  }
  return true;
}

// The option arrays of the case (check.h's generators; the mask per sequence block).
static bool build_options(attn_check_prepared *pc, const attn_check_case *c, char *err,
                          size_t err_len) {
  attn_options o = c->opts;
  o.lse = NULL;
  const size_t h = (size_t)pc->p.heads;
  const bool any = o.window || o.align != ATTN_ALIGN_BOTTOM_RIGHT || o.softcap != 0.0f ||
                   o.alibi_max_bias != 0.0f || o.alibi_slopes || o.sinks || o.mask || c->gen;
  if (!any) return true;
  if (o.alibi_slopes || o.sinks || o.mask) {
    if (err && err_len)
      snprintf(err, err_len, "a layout case generates its option arrays (gen), it takes none");
    return false;
  }
  if (c->gen & ATTN_CHECK_GEN_SLOPES) {
    if (!(pc->slopes = malloc(h * sizeof(float)))) return nomem(err, err_len);
    uint64_t st = c->seed * 7 + 5;
    for (size_t t = 0; t < h; t++) pc->slopes[t] = (float)(1.25 * attn_rand_uniform(&st) - 0.25);
    o.alibi_slopes = pc->slopes;
  }
  if (c->gen & (ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_SINKS_HIGH)) {
    if (!(pc->sinks = malloc(h * sizeof(float)))) return nomem(err, err_len);
    const bool high = c->gen & ATTN_CHECK_GEN_SINKS_HIGH;
    attn_rand_sinks(pc->sinks, h, high ? 30.0 : 0.0, c->seed * 7 + 6, ATTN_NORMAL_U1_HALF_OPEN);
    o.sinks = pc->sinks;
  }
  pc->opts = o;
  pc->p.opts = &pc->opts;
  if (c->gen & ATTN_CHECK_GEN_MASK) {
    pc->opts.mask = &pc->opts.softcap;  // a marker while sizing: only presence counts
    const size_t n = attn_mask_elems(&pc->p);
    if (!(pc->mask = malloc((n ? n : 1) * sizeof(float)))) return nomem(err, err_len);
    for (int64_t b = 0; b < pc->p.batch; b++) {
      const size_t nq = (size_t)attn_layout_q_len(&pc->p, b);
      const size_t nk = (size_t)attn_layout_kv_len(&pc->p, b);
      const size_t nb = (o.mask_per_head ? h : 1) * nq * nk;
      if (nb)
        attn_rand_mask(pc->mask + attn_layout_mask_offset(&pc->p, b), nb, nq, nk,
                       ATTN_MASK_STYLE_CHECK, c->seed * 7 + 4 + (uint64_t)b);
    }
    pc->opts.mask = pc->mask;
  }
  pc->layout_lse = (c->gen & ATTN_CHECK_GEN_LSE) != 0;
  return true;
}

// Row r of a K/V tensor of sequence b (the checker's addressing, attn.h's formulas).
static size_t kv_row_index(const attn_check_prepared *pc, int64_t b, int64_t g, int64_t t) {
  const attn_layout *l = &pc->layout;
  const int64_t kvh = pc->p.kv_heads;
  if (l->kind == ATTN_LAYOUT_RAGGED) return (size_t)((pc->cu_kv[b] + t) * kvh + g);
  const int64_t page = l->page_table[b * l->pages_per_seq + t / l->page_size];
  return (size_t)((page * kvh + g) * l->page_size + t % l->page_size);
}

// Sequence b's dense case from its gathered rows (stored K/V bytes as they are).
static attn_check_prepared *prepare_sequence(attn_check_prepared *pc, int64_t b, char *err,
                                             size_t err_len) {
  attn_options ob;
  attn_problem sp = attn_layout_seq_problem(&pc->p, b, &ob);
  if (pc->layout_lse) ob.lse = (float *)&ob;  // a marker: LSE is checked
  const int64_t nq = sp.seq_q, nk = sp.seq_kv, H = pc->p.heads, G = pc->p.kv_heads;
  const int64_t dqk = pc->p.head_dim_qk, dv = pc->p.head_dim_v;
  const size_t kr = attn_kv_row_bytes(sp.kv_dtype, dqk), vr = attn_kv_row_bytes(sp.kv_dtype, dv);
  float *q = malloc((size_t)(H * nq * dqk) * sizeof(float));
  char *k = malloc((size_t)(G * nk) * kr), *v = malloc((size_t)(G * nk) * vr);
  attn_check_prepared *out = NULL;
  if (q && k && v) {
    for (int64_t h = 0; h < H; h++)
      for (int64_t i = 0; i < nq; i++)
        memcpy(q + (h * nq + i) * dqk, pc->q + ((pc->cu_q[b] + i) * H + h) * dqk,
               (size_t)dqk * sizeof(float));
    const char *ks = pc->ks ? (const char *)pc->ks : (const char *)pc->k;
    const char *vs = pc->vs ? (const char *)pc->vs : (const char *)pc->v;
    for (int64_t g = 0; g < G; g++)
      for (int64_t t = 0; t < nk; t++) {
        const size_t r = kv_row_index(pc, b, g, t);
        memcpy(k + (size_t)(g * nk + t) * kr, ks + r * kr, kr);
        memcpy(v + (size_t)(g * nk + t) * vr, vs + r * vr, vr);
      }
    out = attn_check_prepare_inputs(&sp, q, k, v, err, err_len);
  } else {
    nomem(err, err_len);
  }
  free(q);
  free(k);
  free(v);
  return out;
}

// The input domain and one dense case per sequence with queries and keys.
static attn_check_prepared *finish_layout(attn_check_prepared *pc, char *err, size_t err_len) {
  const attn_problem *p = &pc->p;
  if (!(pc->seq = calloc((size_t)p->batch, sizeof *pc->seq))) {
    nomem(err, err_len);
    goto fail;
  }
  const void *kk = pc->ks ? pc->ks : (const void *)pc->k,
             *vv = pc->vs ? pc->vs : (const void *)pc->v;
  if (attn_inputs_check(p, pc->q, kk, vv, pc->domain, sizeof pc->domain) == ATTN_OK)
    pc->domain[0] = '\0';
  for (int64_t b = 0; b < p->batch; b++) {
    if (attn_layout_q_len(p, b) == 0 || attn_layout_kv_len(p, b) == 0) continue;
    if (!(pc->seq[b] = prepare_sequence(pc, b, err, err_len))) goto fail;
  }
  return pc;
fail:
  attn_check_prepared_free(pc);
  return NULL;
}

attn_check_prepared *attn_check_prepare_layout(const attn_check_case *c, char *err,
                                               size_t err_len) {
  attn_check_prepared *pc = calloc(1, sizeof *pc);
  if (!pc) return nomem(err, err_len), NULL;
  pc->p = c->problem;
  pc->p.opts = NULL;
  if (c->problem.opts) {
    if (err && err_len) snprintf(err, err_len, "a layout case takes its options from opts, gen");
    goto fail;
  }
  if (!build_layout(pc, &c->layout, c->seed, err, err_len)) goto fail;
  attn_problem_set_layout(&pc->p, &pc->layout, c->layout.seqs);
  if (!build_options(pc, c, err, err_len) || !attn_problem_validate(&pc->p, err, err_len))
    goto fail;
  const attn_problem *p = &pc->p;
  if (!(pc->q = malloc(attn_q_elems(p) * sizeof(float))) ||
      !(pc->k = malloc(attn_k_elems(p) * sizeof(float))) ||
      !(pc->v = malloc(attn_v_elems(p) * sizeof(float)))) {
    nomem(err, err_len);
    goto fail;
  }
  attn_check_case fc = *c;
  fc.problem = *p;
  attn_check_fill(&fc, pc->q, pc->k, pc->v);
  if (p->kv_dtype != ATTN_DTYPE_F32) {  // the pools as stored
    const size_t kr = attn_k_elems(p) / (size_t)p->head_dim_qk;
    if (!(pc->ks = malloc(attn_k_bytes(p))) || !(pc->vs = malloc(attn_v_bytes(p)))) {
      nomem(err, err_len);
      goto fail;
    }
    attn_quantize_rows(p->kv_dtype, pc->k, kr, p->head_dim_qk, pc->ks);
    attn_quantize_rows(p->kv_dtype, pc->v, kr, p->head_dim_v, pc->vs);
  }
  return finish_layout(pc, err, err_len);
fail:
  attn_check_prepared_free(pc);
  return NULL;
}

// A copy of n elements of size sz (NULL when src is NULL; *ok false when out of memory).
static void *dup(const void *src, size_t n, size_t sz, bool *ok) {
  if (!src) return NULL;
  void *d = malloc(n ? n * sz : 1);
  if (!d)
    *ok = false;
  else if (n)
    memcpy(d, src, n * sz);
  return d;
}

attn_check_prepared *attn_check_prepare_layout_inputs(const attn_problem *p, const float *q,
                                                      const void *k, const void *v, char *err,
                                                      size_t err_len) {
  if (!attn_problem_validate(p, err, err_len)) return NULL;
  attn_check_prepared *pc = calloc(1, sizeof *pc);
  if (!pc) return nomem(err, err_len), NULL;
  const attn_layout *l = p->layout;
  const size_t nb = (size_t)p->batch + 1, h = (size_t)p->heads;
  bool ok = true;
  pc->p = *p;
  pc->layout = *l;
  pc->p.layout = &pc->layout;
  pc->layout.cu_seqlens_q = pc->cu_q = dup(l->cu_seqlens_q, nb, sizeof(int64_t), &ok);
  pc->layout.cu_seqlens_kv = pc->cu_kv = dup(l->cu_seqlens_kv, nb, sizeof(int64_t), &ok);
  if (l->kind == ATTN_LAYOUT_PAGED)
    pc->layout.page_table = pc->page_table =
        dup(l->page_table, (size_t)p->batch * (size_t)l->pages_per_seq, sizeof(int32_t), &ok);
  if (p->opts) {
    pc->opts = *p->opts;
    pc->opts.lse = NULL;
    pc->layout_lse = p->opts->lse != NULL;
    pc->p.opts = &pc->opts;
    pc->opts.alibi_slopes = pc->slopes = dup(p->opts->alibi_slopes, h, sizeof(float), &ok);
    pc->opts.sinks = pc->sinks = dup(p->opts->sinks, h, sizeof(float), &ok);
    pc->opts.mask = pc->mask = dup(p->opts->mask, attn_mask_elems(p), sizeof(float), &ok);
  }
  pc->q = dup(q, attn_q_elems(p), sizeof(float), &ok);
  if (p->kv_dtype == ATTN_DTYPE_F32) {
    pc->k = dup(k, attn_k_elems(p), sizeof(float), &ok);
    pc->v = dup(v, attn_v_elems(p), sizeof(float), &ok);
  } else {
    pc->ks = dup(k, attn_k_bytes(p), 1, &ok);
    pc->vs = dup(v, attn_v_bytes(p), 1, &ok);
  }
  if (!ok) {
    nomem(err, err_len);
    attn_check_prepared_free(pc);
    return NULL;
  }
  return finish_layout(pc, err, err_len);
}

static int verdict_rank(attn_check_verdict v) {
  return v == ATTN_CHECK_FAIL ? 2 : v == ATTN_CHECK_INCONCLUSIVE ? 1 : 0;
}

// Sequence b's output and LSE rows out of the packed tensors, into dense [heads][q_len].
static void extract(const attn_check_prepared *pc, int64_t b, const float *o, const float *lse,
                    float *od, float *lsed) {
  const int64_t nq = attn_layout_q_len(&pc->p, b), H = pc->p.heads, dv = pc->p.head_dim_v;
  const int64_t total = pc->cu_q[pc->p.batch];
  for (int64_t h = 0; h < H; h++)
    for (int64_t i = 0; i < nq; i++) {
      memcpy(od + (h * nq + i) * dv, o + ((pc->cu_q[b] + i) * H + h) * dv,
             (size_t)dv * sizeof(float));
      if (lse) lsed[h * nq + i] = lse[h * total + pc->cu_q[b] + i];
    }
}

// A sequence without keys: exact zeros and LSE −inf, its verdict in *rb. The bound is 0, so
// any other value is beyond it: the statistics are the largest |o| (NaN: infinite) at its
// index in the packed O, with err/tol and the relative error infinite when one is bad.
static void check_empty(const attn_check_prepared *pc, int64_t b, const float *o, const float *lse,
                        attn_check_result *rb) {
  const int64_t nq = attn_layout_q_len(&pc->p, b), H = pc->p.heads, dv = pc->p.head_dim_v;
  const int64_t total = pc->cu_q[pc->p.batch];
  memset(rb, 0, sizeof *rb);
  size_t bad = 0;
  for (int64_t h = 0; h < H; h++)
    for (int64_t i = 0; i < nq; i++) {
      const size_t at = (size_t)(((pc->cu_q[b] + i) * H + h) * dv);
      for (int64_t d = 0; d < dv; d++) {
        if (o[at + (size_t)d] == 0.0f) continue;
        const double e = isnan(o[at + (size_t)d]) ? INFINITY : fabs((double)o[at + (size_t)d]);
        if (!bad++ || e > rb->max_abs_err) rb->max_abs_err = e, rb->worst_index = at + (size_t)d;
      }
      if (lse && lse[h * total + pc->cu_q[b] + i] != -INFINITY) {
        if (!bad++) rb->worst_index = at;
      }
    }
  rb->verdict = bad ? ATTN_CHECK_FAIL : ATTN_CHECK_PASS;
  if (!bad) return;
  rb->max_rel_err = rb->worst_ratio = INFINITY;
  snprintf(rb->message, sizeof rb->message,
           "%zu outputs of a sequence without keys are not 0 (LSE -inf)", bad);
}

bool attn_check_output_layout(const attn_check_prepared *pc, const float *o, const float *lse,
                              attn_check_result *r) {
  memset(r, 0, sizeof *r);
  r->verdict = ATTN_CHECK_PASS;
  const int64_t H = pc->p.heads, dv = pc->p.head_dim_v;
  float *od = malloc(((size_t)(H * pc->p.seq_q * dv) + 1) * sizeof(float));
  float *lsed = malloc(((size_t)(H * pc->p.seq_q)) * sizeof(float) + 1);
  if (!od || !lsed) {
    free(od), free(lsed);
    snprintf(r->message, sizeof r->message, "out of memory comparing a layout case");
    r->verdict = ATTN_CHECK_FAIL;
    return r->pass = false;
  }
  for (int64_t b = 0; b < pc->p.batch; b++) {
    const int64_t nq = attn_layout_q_len(&pc->p, b);
    if (nq == 0) continue;
    attn_check_result rb;
    if (!pc->seq[b]) {
      check_empty(pc, b, o, lse, &rb);
    } else {
      extract(pc, b, o, pc->layout_lse ? lse : NULL, od, lsed);
      attn_check_output_lse(pc->seq[b], od, pc->layout_lse ? lsed : NULL, &rb);
      // the worst element's index in the packed O
      const size_t w = rb.worst_index, d = w % (size_t)dv, i = w / (size_t)dv % (size_t)nq;
      const size_t h = w / ((size_t)dv * (size_t)nq);
      rb.worst_index = (((size_t)pc->cu_q[b] + i) * (size_t)H + h) * (size_t)dv + d;
    }
    if (rb.max_abs_err > r->max_abs_err) r->max_abs_err = rb.max_abs_err;
    if (rb.max_rel_err > r->max_rel_err) r->max_rel_err = rb.max_rel_err;
    if (rb.worst_ratio > r->worst_ratio || b == 0)
      r->worst_ratio = rb.worst_ratio, r->worst_index = rb.worst_index;
    if (verdict_rank(rb.verdict) > verdict_rank(r->verdict)) {
      r->verdict = rb.verdict;
      snprintf(r->message, sizeof r->message, "sequence %lld (q_len %lld, kv_len %lld): %.250s",
               (long long)b, (long long)nq, (long long)attn_layout_kv_len(&pc->p, b), rb.message);
    }
  }
  free(od);
  free(lsed);
  if (r->verdict == ATTN_CHECK_PASS && pc->domain[0]) {
    r->verdict = ATTN_CHECK_INCONCLUSIVE;
    snprintf(r->message, sizeof r->message, "inputs outside the kernel input domain: %.250s",
             pc->domain);
  }
  r->compute = pc->p.compute;  // the mode's error over the sequences, next to the verdict
  r->has_compute = attn_check_compute_error(pc, &r->compute_abs_err, &r->compute_rel_err);
  r->pass = r->verdict == ATTN_CHECK_PASS;
  return r->pass;
}

void attn_check_layout_describe(const attn_check_layout *l, char *buf, size_t len) {
  if (!len) return;
  buf[0] = '\0';
  if (l->kind == ATTN_LAYOUT_DENSE) return;
  size_t w =
      (size_t)snprintf(buf, len, " %s q_lens=", l->kind == ATTN_LAYOUT_PAGED ? "paged" : "ragged");
  for (int b = 0; b < l->seqs && b < ATTN_CHECK_MAX_SEQS && w < len; b++)
    w += (size_t)snprintf(buf + w, len - w, "%s%lld", b ? "," : "", (long long)l->q_lens[b]);
  if (w < len) w += (size_t)snprintf(buf + w, len - w, " kv_lens=");
  for (int b = 0; b < l->seqs && b < ATTN_CHECK_MAX_SEQS && w < len; b++)
    w += (size_t)snprintf(buf + w, len - w, "%s%lld", b ? "," : "", (long long)l->kv_lens[b]);
  if (l->kind == ATTN_LAYOUT_PAGED && w < len)
    snprintf(buf + w, len - w, " page=%lld%s%s", (long long)l->page_size,
             l->shuffle ? " shuffled" : "", l->shared_pages > 0 ? " shared-prefix" : "");
}
