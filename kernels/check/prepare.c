// SPDX-License-Identifier: MIT
// Prepared check cases: the inputs (generated or given), copies of the option arrays,
// K/V storage, the reference output and the storage error.
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_internal.h"
#include "check/inputs.h"
#include "core/attn_internal.h"
#include "core/convert.h"

void attn_check_prepared_free(attn_check_prepared *pc) {
  if (!pc) return;
  attn_check_layout_free(pc);
  free(pc->q);
  free(pc->k);
  free(pc->v);
  free(pc->ks);
  free(pc->vs);
  free(pc->k32);
  free(pc->v32);
  free(pc->qr);
  free(pc->kr);
  free(pc->vr);
  free(pc->ref);
  free(pc->tol);
  free(pc->slopes);
  free(pc->sinks);
  free(pc->mask);
  free(pc->lse_out);
  free(pc->lse_ref);
  free(pc->lse_tol);
  free(pc);
}

const float *attn_check_reference_output(const attn_check_prepared *pc) {
  return pc->ref;
}
double attn_check_reference_max_abs(const attn_check_prepared *pc) {
  return pc->ref_max_abs;
}
const double *attn_check_reference_lse(const attn_check_prepared *pc) {
  return pc->lse_ref;
}
const attn_problem *attn_check_problem(const attn_check_prepared *pc) {
  return &pc->p;
}

static attn_check_prepared *prepare_common(const attn_problem *p, char *err, size_t err_len) {
  if (!attn_problem_validate(p, err, err_len)) return NULL;
  attn_check_prepared *pc = calloc(1, sizeof *pc);
  if (!pc) goto nomem;
  pc->p = *p;
  pc->q = malloc(attn_q_elems(p) * sizeof(float));
  pc->k = malloc(attn_k_elems(p) * sizeof(float));
  pc->v = malloc(attn_v_elems(p) * sizeof(float));
  pc->ref = malloc(attn_o_elems(p) * sizeof(float));
  pc->tol = malloc(attn_o_elems(p) * sizeof(double));
  if (!pc->q || !pc->k || !pc->v || !pc->ref || !pc->tol) goto nomem;
  if (p->kv_dtype != ATTN_DTYPE_F32) {
    pc->ks = malloc(attn_k_bytes(p));
    pc->vs = malloc(attn_v_bytes(p));
    if (!pc->ks || !pc->vs) goto nomem;
  }
  if (p->opts) {
    // the options' arrays, copied: the prepared case owns everything it reads
    const attn_options *o = p->opts;
    const size_t h = (size_t)p->heads, nl = (size_t)p->batch * h * (size_t)p->seq_q;
    const size_t nm =
        (o->mask_per_head ? (size_t)p->batch * h : 1) * (size_t)p->seq_q * (size_t)p->seq_kv;
    pc->opts = *o;
    pc->opts.lse = NULL;
    pc->p.opts = &pc->opts;
    if (o->alibi_slopes) {
      if (!(pc->slopes = malloc(h * sizeof(float)))) goto nomem;
      memcpy(pc->slopes, o->alibi_slopes, h * sizeof(float));
      pc->opts.alibi_slopes = pc->slopes;
    }
    if (o->sinks) {
      if (!(pc->sinks = malloc(h * sizeof(float)))) goto nomem;
      memcpy(pc->sinks, o->sinks, h * sizeof(float));
      pc->opts.sinks = pc->sinks;
    }
    if (o->mask) {
      if (!(pc->mask = malloc(nm * sizeof(float)))) goto nomem;
      memcpy(pc->mask, o->mask, nm * sizeof(float));
      pc->opts.mask = pc->mask;
    }
    if (o->lse) {
      pc->lse_out = malloc(nl * sizeof(float));
      pc->lse_ref = malloc(nl * sizeof(double));
      pc->lse_tol = malloc(nl * sizeof(double));
      if (!pc->lse_out || !pc->lse_ref || !pc->lse_tol) goto nomem;
    }
  }
  return pc;
nomem:
  attn_check_prepared_free(pc);
  if (err && err_len) snprintf(err, err_len, "out of memory preparing a check case");
  return NULL;
}

// The reference output. The registered reference kernel runs directly, not through
// attn_kernel_call: its double arithmetic is exact enough for inputs outside the float32
// input domain too (any finite float32 inputs give finite double scores and sums), and
// such a case is still prepared — its verdict is inconclusive, never pass.
// The problem with float32 K/V: how the checker hands its float32 copies to the reference.
attn_problem attn_check_f32_view(const attn_problem *p) {
  attn_problem f = *p;
  f.kv_dtype = ATTN_DTYPE_F32;
  return f;
}

static bool run_reference_on(attn_check_prepared *pc, const float *q, const float *k,
                             const float *v, float *out, char *err, size_t err_len);

// The reference on the inputs as the mode reads them (tq, tk, tv: already rounded, so it
// runs in F32 on them — bitwise what the reference computes in the mode from the stored
// inputs, tests/unit/test_compute_modes.c).
static bool run_reference(attn_check_prepared *pc, char *err, size_t err_len) {
  return run_reference_on(pc, pc->tq, pc->tk, pc->tv, pc->ref, err, err_len);
}

static bool run_reference_on(attn_check_prepared *pc, const float *q, const float *k,
                             const float *v, float *out, char *err, size_t err_len) {
  const attn_kernel *ref = attn_kernel_find("reference");
  if (!ref) {
    if (err && err_len) snprintf(err, err_len, "the reference kernel is not registered");
    return false;
  }
  static const attn_exec kExec = {0};
  attn_problem p = attn_check_f32_view(&pc->p);  // K and V: float32 copies of the stored values
  p.compute = ATTN_COMPUTE_F32;                  // Q, K, V: already as the mode reads them
  const size_t ws_bytes = attn_kernel_workspace(ref, &p, &kExec);
  void *ws = ws_bytes && ws_bytes <= SIZE_MAX - 63
                 ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63)
                 : NULL;
  if (ws_bytes && !ws) {
    if (err && err_len) snprintf(err, err_len, "out of memory for the reference's workspace");
    return false;
  }
  attn_options o = pc->opts;  // the reference writes its LSE to scratch (checked in double)
  if (p.opts) {
    o.lse = pc->lse_out;
    p.opts = &o;
  }
  const int rc = ref->run(&p, &kExec, q, k, v, out, ws);
  free(ws);
  if (rc != ATTN_OK) {
    if (err && err_len) snprintf(err, err_len, "the reference kernel failed with status %d", rc);
    return false;
  }
  return true;
}

// The storage error of a conversion case: the reference on the float32 K/V before storage
// against the reference on the stored values (max |Δ| and max |Δ| / tol).
static bool storage_error(attn_check_prepared *pc, char *err, size_t err_len) {
  pc->has_storage = false;
  if (!pc->k32 || !pc->v32) return true;
  const size_t n = attn_o_elems(&pc->p);
  float *o32 = malloc(n * sizeof *o32);
  if (!o32) {
    if (err && err_len) snprintf(err, err_len, "out of memory for the storage-error reference");
    return false;
  }
  float *lse_keep = pc->lse_out;  // no LSE from this run (lse_out NULL: not written)
  pc->lse_out = NULL;
  // K/V before storage, rounded as the mode reads them (when it rounds them)
  const attn_problem *p = &pc->p;
  const size_t rows = (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv;
  const bool rkv = attn_compute_rounds_kv(p->compute, ATTN_DTYPE_F32);
  float *kr = rkv ? malloc(attn_k_elems(p) * sizeof(float)) : NULL;
  float *vr = rkv ? malloc(attn_v_elems(p) * sizeof(float)) : NULL;
  bool ok = !rkv || (kr && vr);
  if (ok && rkv) {
    attn_compute_round_kv(p->compute, ATTN_DTYPE_F32, pc->k32, rows, p->head_dim_qk, kr);
    attn_compute_round_kv(p->compute, ATTN_DTYPE_F32, pc->v32, rows, p->head_dim_v, vr);
  }
  if (!ok && err && err_len) snprintf(err, err_len, "out of memory for the storage-error inputs");
  ok =
      ok && run_reference_on(pc, pc->tq, rkv ? kr : pc->k32, rkv ? vr : pc->v32, o32, err, err_len);
  free(kr);
  free(vr);
  pc->lse_out = lse_keep;
  if (ok) {
    pc->has_storage = true;
    pc->storage_abs = pc->storage_ratio = 0.0;
    for (size_t i = 0; i < n; i++) {
      const double d = fabs((double)o32[i] - (double)pc->ref[i]);
      if (!(d <= pc->storage_abs)) pc->storage_abs = d;  // NaN propagates
      const double r = d == 0.0 ? 0.0 : (pc->tol[i] > 0.0 ? d / pc->tol[i] : INFINITY);
      if (!(r <= pc->storage_ratio)) pc->storage_ratio = r;
    }
  }
  free(o32);
  return ok;
}

// The compute mode's error against FP32: the reference in F32 on the same stored inputs
// (q, k, v) against the reference in the mode (check.h).
static bool compute_error(attn_check_prepared *pc, char *err, size_t err_len) {
  pc->has_compute = false;
  if (pc->p.compute == ATTN_COMPUTE_F32) return true;
  const size_t n = attn_o_elems(&pc->p);
  float *o32 = malloc(n * sizeof *o32);
  if (!o32) {
    if (err && err_len) snprintf(err, err_len, "out of memory for the compute-error reference");
    return false;
  }
  float *lse_keep = pc->lse_out;
  pc->lse_out = NULL;
  const bool ok = run_reference_on(pc, pc->q, pc->k, pc->v, o32, err, err_len);
  pc->lse_out = lse_keep;
  if (ok) {
    pc->has_compute = true;
    pc->compute_abs = 0.0;
    for (size_t i = 0; i < n; i++) {
      const double d = fabs((double)o32[i] - (double)pc->ref[i]);
      if (!(d <= pc->compute_abs)) pc->compute_abs = d;  // NaN propagates
    }
  }
  free(o32);
  return ok;
}

bool attn_check_compute_error(const attn_check_prepared *pc, double *max_abs, double *rel) {
  bool has = pc->has_compute;
  double abs_err = pc->compute_abs, ref = pc->ref_max_abs;
  if (pc->seq) {  // a layout case: over its sequences' dense cases (NaN propagates)
    has = false, abs_err = 0.0, ref = 0.0;
    for (int64_t b = 0; b < pc->p.batch; b++) {
      const attn_check_prepared *s = pc->seq[b];
      if (!s || !s->has_compute) continue;
      has = true;
      if (!(s->compute_abs <= abs_err)) abs_err = s->compute_abs;
      if (s->ref_max_abs > ref) ref = s->ref_max_abs;
    }
  }
  if (max_abs) *max_abs = has ? abs_err : 0.0;
  if (rel) *rel = !has ? 0.0 : ref > 0.0 ? abs_err / ref : abs_err;
  return has;
}

bool attn_check_storage_error(const attn_check_prepared *pc, double *max_abs, double *ratio) {
  if (max_abs) *max_abs = pc->has_storage ? pc->storage_abs : 0.0;
  if (ratio) *ratio = pc->has_storage ? pc->storage_ratio : 0.0;
  return pc->has_storage;
}

// For a non-F32 problem: k32/v32 (float32, before storage) → ks/vs (stored) → k/v (the
// stored values as float32, exact).
static void store_kv(attn_check_prepared *pc, const float *k32, const float *v32) {
  const attn_problem *p = &pc->p;
  const size_t rows = (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv;
  attn_quantize_rows(p->kv_dtype, k32, rows, p->head_dim_qk, pc->ks);
  attn_quantize_rows(p->kv_dtype, v32, rows, p->head_dim_v, pc->vs);
  attn_dequantize_rows(p->kv_dtype, pc->ks, rows, p->head_dim_qk, pc->k);
  attn_dequantize_rows(p->kv_dtype, pc->vs, rows, p->head_dim_v, pc->v);
}

// Keeps float32 K/V (pc->k, pc->v hold them) as k32/v32 and stores them as kv_dtype.
static bool convert_kv(attn_check_prepared *pc, char *err, size_t err_len) {
  if (pc->p.kv_dtype == ATTN_DTYPE_F32) return true;
  pc->k32 = pc->k, pc->v32 = pc->v;
  pc->k = malloc(attn_k_elems(&pc->p) * sizeof(float));
  pc->v = malloc(attn_v_elems(&pc->p) * sizeof(float));
  if (!pc->k || !pc->v) {
    if (err && err_len) snprintf(err, err_len, "out of memory converting K/V");
    return false;
  }
  store_kv(pc, pc->k32, pc->v32);
  return true;
}

// The inputs as the compute mode reads them (tq, tk, tv), from the stored ones.
static bool round_inputs(attn_check_prepared *pc, char *err, size_t err_len) {
  const attn_problem *p = &pc->p;
  const attn_compute c = p->compute;
  pc->tq = pc->q, pc->tk = pc->k, pc->tv = pc->v;
  if (c == ATTN_COMPUTE_F32) return true;
  const size_t rows_kv = (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv;
  const bool rkv = attn_compute_rounds_kv(c, p->kv_dtype);
  pc->qr = malloc(attn_q_elems(p) * sizeof(float));
  if (rkv) {
    pc->kr = malloc(attn_k_elems(p) * sizeof(float));
    pc->vr = malloc(attn_v_elems(p) * sizeof(float));
  }
  if (!pc->qr || (rkv && (!pc->kr || !pc->vr))) {
    if (err && err_len) snprintf(err, err_len, "out of memory rounding the inputs");
    return false;
  }
  attn_compute_round_q(c, pc->q, (size_t)p->batch * (size_t)p->heads * (size_t)p->seq_q,
                       p->head_dim_qk, pc->qr);
  pc->tq = pc->qr;
  if (rkv) {  // the float32 copies of the stored values, rounded to the mode's type
    attn_compute_round_kv(c, ATTN_DTYPE_F32, pc->k, rows_kv, p->head_dim_qk, pc->kr);
    attn_compute_round_kv(c, ATTN_DTYPE_F32, pc->v, rows_kv, p->head_dim_v, pc->vr);
    pc->tk = pc->kr, pc->tv = pc->vr;
  }
  return true;
}

// Reference output, the tolerance, and what stops a case from being conclusive. The input
// domain is checked on the problem as kernels get it (its K/V type and compute mode).
static bool finish_prepare(attn_check_prepared *pc, char *err, size_t err_len) {
  const void *kk = pc->ks ? pc->ks : (const void *)pc->k;
  const void *vv = pc->vs ? pc->vs : (const void *)pc->v;
  // validated by prepare_common: the domain check without its own re-validation
  if (attn_inputs_domain(&pc->p, pc->q, kk, vv, pc->domain, sizeof pc->domain) == ATTN_OK)
    pc->domain[0] = '\0';
  return round_inputs(pc, err, err_len) && run_reference(pc, err, err_len) &&
         attn_check_tolerances(pc, err, err_len) && storage_error(pc, err, err_len) &&
         compute_error(pc, err, err_len);
}

static attn_check_prepared *prepare_case(const attn_check_case *c, char *err, size_t err_len) {
  if (c->layout.kind != ATTN_LAYOUT_DENSE) return attn_check_prepare_layout(c, err, err_len);
  attn_problem p = c->problem;
  attn_options o = c->problem.opts ? *c->problem.opts : c->opts;
  float *slopes = NULL, *sinks = NULL, *mask = NULL;
  bool any = c->problem.opts != NULL;
  if (!c->problem.opts) {
    const size_t h = p.heads > 0 ? (size_t)p.heads : 1;
    o.lse = NULL;
    any = o.window || o.align != ATTN_ALIGN_BOTTOM_RIGHT || o.softcap != 0.0f ||
          o.alibi_max_bias != 0.0f || o.alibi_slopes || o.sinks || o.mask || c->gen;
    if (c->gen & ATTN_CHECK_GEN_SLOPES && (slopes = malloc(h * sizeof(float)))) {
      uint64_t st = c->seed * 7 + 5;
      for (size_t t = 0; t < h; t++) slopes[t] = (float)(1.25 * attn_rand_uniform(&st) - 0.25);
      o.alibi_slopes = slopes;
    }
    if (c->gen & (ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_SINKS_HIGH) &&
        (sinks = malloc(h * sizeof(float)))) {
      const bool high = c->gen & ATTN_CHECK_GEN_SINKS_HIGH;
      attn_rand_sinks(sinks, h, high ? 30.0 : 0.0, c->seed * 7 + 6, ATTN_NORMAL_U1_HALF_OPEN);
      o.sinks = sinks;
    }
    if (c->gen & ATTN_CHECK_GEN_MASK && attn_problem_validate(&p, NULL, 0)) {
      const size_t n = (o.mask_per_head ? (size_t)p.batch * (size_t)p.heads : 1) * (size_t)p.seq_q *
                       (size_t)p.seq_kv;
      if ((mask = malloc(n * sizeof(float)))) {
        attn_rand_mask(mask, n, (size_t)p.seq_q, (size_t)p.seq_kv, ATTN_MASK_STYLE_CHECK,
                       c->seed * 7 + 4);
        o.mask = mask;
      }
    }
    if (c->gen & ATTN_CHECK_GEN_LSE) o.lse = (float *)&o;  // a marker: LSE is checked
  }
  if (any) p.opts = &o;
  attn_check_prepared *pc = NULL;
  if ((c->gen & ATTN_CHECK_GEN_SLOPES && !slopes) ||
      (c->gen & (ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_SINKS_HIGH) && !sinks)) {
    if (err && err_len) snprintf(err, err_len, "out of memory generating the option arrays");
  } else if (c->gen & ATTN_CHECK_GEN_MASK && !mask && attn_problem_validate(&p, NULL, 0)) {
    if (err && err_len) snprintf(err, err_len, "out of memory generating the mask");
  } else {
    pc = prepare_common(&p, err, err_len);
  }
  free(slopes);
  free(sinks);
  free(mask);
  if (!pc) return NULL;
  attn_check_fill(c, pc->q, pc->k, pc->v);
  if (!convert_kv(pc, err, err_len) || !finish_prepare(pc, err, err_len)) {
    attn_check_prepared_free(pc);
    return NULL;
  }
  return pc;
}

static attn_check_prepared *prepare_inputs(const attn_problem *p, const float *q, const void *k,
                                           const void *v, char *err, size_t err_len) {
  if (p && p->layout) return attn_check_prepare_layout_inputs(p, q, k, v, err, err_len);
  attn_check_prepared *pc = prepare_common(p, err, err_len);
  if (!pc) return NULL;
  memcpy(pc->q, q, attn_q_elems(p) * sizeof(float));
  if (p->kv_dtype == ATTN_DTYPE_F32) {
    memcpy(pc->k, k, attn_k_elems(p) * sizeof(float));
    memcpy(pc->v, v, attn_v_elems(p) * sizeof(float));
  } else {  // the stored tensors, and their values as float32
    const size_t rows = (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv;
    memcpy(pc->ks, k, attn_k_bytes(p));
    memcpy(pc->vs, v, attn_v_bytes(p));
    attn_dequantize_rows(p->kv_dtype, pc->ks, rows, p->head_dim_qk, pc->k);
    attn_dequantize_rows(p->kv_dtype, pc->vs, rows, p->head_dim_v, pc->v);
  }
  if (!finish_prepare(pc, err, err_len)) {
    attn_check_prepared_free(pc);
    return NULL;
  }
  return pc;
}

static attn_check_prepared *prepare_convert(const attn_problem *p, const float *q, const float *k32,
                                            const float *v32, char *err, size_t err_len) {
  if (p && p->layout) {  // layouts are prepared from their stored K/V (check/layout.c)
    if (err && err_len)
      snprintf(err, err_len, "a layout problem is prepared from stored K/V (prepare_inputs)");
    return NULL;
  }
  attn_check_prepared *pc = prepare_common(p, err, err_len);
  if (!pc) return NULL;
  memcpy(pc->q, q, attn_q_elems(p) * sizeof(float));
  memcpy(pc->k, k32, attn_k_elems(p) * sizeof(float));
  memcpy(pc->v, v32, attn_v_elems(p) * sizeof(float));
  if (!convert_kv(pc, err, err_len) || !finish_prepare(pc, err, err_len)) {
    attn_check_prepared_free(pc);
    return NULL;
  }
  return pc;
}

// Every prepare runs in round-to-nearest, whatever the caller's rounding mode: the K/V
// types' quantization of float32 inputs, the compute mode's rounding of Q (int8: a
// division and rintf per element), the reference and the bounds are the contract's, as the
// kernels compute in it (attn_kernel_run's FP environment). The caller's mode is restored.
static int nearest_enter(void) {
  const int mode = fegetround();
  if (mode != FE_TONEAREST) fesetround(FE_TONEAREST);
  return mode;
}

static void nearest_leave(int mode) {
  if (mode != FE_TONEAREST) fesetround(mode);
}

attn_check_prepared *attn_check_prepare(const attn_check_case *c, char *err, size_t err_len) {
  const int mode = nearest_enter();
  attn_check_prepared *pc = prepare_case(c, err, err_len);
  nearest_leave(mode);
  return pc;
}

attn_check_prepared *attn_check_prepare_inputs(const attn_problem *p, const float *q, const void *k,
                                               const void *v, char *err, size_t err_len) {
  const int mode = nearest_enter();
  attn_check_prepared *pc = prepare_inputs(p, q, k, v, err, err_len);
  nearest_leave(mode);
  return pc;
}

attn_check_prepared *attn_check_prepare_convert(const attn_problem *p, const float *q,
                                                const float *k32, const float *v32, char *err,
                                                size_t err_len) {
  const int mode = nearest_enter();
  attn_check_prepared *pc = prepare_convert(p, q, k32, v32, err, err_len);
  nearest_leave(mode);
  return pc;
}

bool attn_check_case_native(const attn_kernel *k, const attn_check_case *c) {
  static const float kMarker = 0.0f;  // stands for a generated array: only presence counts
  attn_problem p = attn_check_f32_view(&c->problem);
  attn_options o = c->problem.opts ? *c->problem.opts : c->opts;
  if (!c->problem.opts) {
    if (c->gen & ATTN_CHECK_GEN_SLOPES) o.alibi_slopes = &kMarker;
    if (c->gen & (ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_SINKS_HIGH)) o.sinks = &kMarker;
    if (c->gen & ATTN_CHECK_GEN_MASK) o.mask = &kMarker;
    o.lse = c->gen & ATTN_CHECK_GEN_LSE ? (float *)&o : NULL;  // a marker: LSE is wanted
  }
  p.opts = &o;
  return attn_kernel_native(k, &p);
}
