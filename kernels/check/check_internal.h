// SPDX-License-Identifier: MIT
// check_internal.h — the prepared case shared by the checker's files (not installed):
// prepare.c builds it, tolerance.c fills its reference-derived bounds, verdict.c reads it.
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "check/check.h"

struct attn_check_prepared {
  attn_problem p;  // p.opts points to opts below when the case has options
  attn_options opts;
  float *slopes, *sinks, *mask;  // copies of the options' arrays (NULL when absent)
  float *lse_out;                // the reference kernel's LSE output (scratch)
  double *lse_ref, *lse_tol;     // [batch][heads][seq_q], NULL unless LSE is checked
  float *q, *k, *v;              // float32 inputs; K and V hold the *stored* values (kv_dtype)
  void *ks, *vs;                 // K and V as stored (kv_dtype), what kernels get; NULL for F32
  float *k32, *v32;              // the float32 K and V before storage (conversion cases only)
  // The storage error (check.h): the reference on k32/v32 against the reference on the
  // stored values. has_storage: k32/v32 were given (or generated) for a non-F32 type.
  bool has_storage;
  double storage_abs, storage_ratio;
  // The inputs as the compute mode reads them (attn.h, "Compute modes"): the reference and
  // the tolerance use these. They alias q, k, v when the mode does not round them; the
  // owned copies are qr, kr, vr (NULL otherwise).
  const float *tq, *tk, *tv;
  float *qr, *kr, *vr;
  // The error the mode's input rounding introduces (check.h, attn_check_compute_error):
  // max |ref − ref_f32| with ref_f32 the reference in F32 on the same stored inputs.
  bool has_compute;
  double compute_abs;
  float *ref;   // reference output, O layout
  double *tol;  // per-element tolerance, O layout
  double ref_max_abs;
  // Why no verdict can be pass (check.h, "When the bound says nothing"): the inputs are
  // outside the kernel input domain (domain[] holds attn_inputs_check's message), the
  // reference or a tolerance is not finite, or the bound is uninformative somewhere.
  char domain[256];
  size_t n_nonfinite_ref, first_nonfinite_ref;
  size_t n_weak, first_weak;     // elements whose bound admits every convex combination
  double weak_tol, weak_spread;  // at first_weak: score part of tol, max_j |v_jd − o_d|
  // LSE rows whose bound says nothing (lse_tol +inf: the allowed rounding of p may take
  // the keys' normaliser to 0 under a dominant sink); counted when the case has an LSE
  size_t n_weak_lse, first_weak_lse;
  // A layout case (check/layout.c): p.layout points to layout, whose arrays are below; q,
  // k, v (and ks, vs) are the packed / pooled tensors; seq[b] is sequence b's dense case
  // (NULL when it has no query or no key); ref and tol are unused.
  attn_layout layout;
  int64_t *cu_q, *cu_kv;
  int32_t *page_table;
  attn_check_prepared **seq;
  bool layout_lse;  // the layout case checks the LSE output ([heads][total_q])
};

// Layout cases (check/layout.c): prepare, compare an output, free the layout parts.
attn_check_prepared *attn_check_prepare_layout(const attn_check_case *c, char *err, size_t err_len);
attn_check_prepared *attn_check_prepare_layout_inputs(const attn_problem *p, const float *q,
                                                      const void *k, const void *v, char *err,
                                                      size_t err_len);
bool attn_check_output_layout(const attn_check_prepared *pc, const float *o, const float *lse,
                              attn_check_result *r);
void attn_check_layout_free(attn_check_prepared *pc);
// " paged q_lens=5,1 kv_lens=9,40 page=4 shuffled" (empty for a dense case).
void attn_check_layout_describe(const attn_check_layout *l, char *buf, size_t len);

// The problem with float32 K/V: how the checker hands its float32 copies to the reference.
attn_problem attn_check_f32_view(const attn_problem *p);

// The per-element tolerances, the LSE reference and tolerance, the uninformative elements
// and the reference's finiteness (check.h), from pc->ref, the inputs and the options.
bool attn_check_tolerances(attn_check_prepared *pc, char *err, size_t err_len);
