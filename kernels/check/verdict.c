// SPDX-License-Identifier: MIT
// Verdicts: a kernel's output (through attn_kernel_call, with guard zones) against the
// prepared reference and tolerance (check.h, "When the bound says nothing").
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_internal.h"
#include "core/attn_internal.h"

enum { kGuard = 64 };                           // guard floats on each side of O
static const uint32_t kGuardBits = 0x7fc0dead;  // a quiet NaN no kernel writes by chance

// ── Comparison ──────────────────────────────────────────────────────────────────────

const char *attn_check_verdict_name(attn_check_verdict v) {
  switch (v) {
    case ATTN_CHECK_PASS:
      return "pass";
    case ATTN_CHECK_FAIL:
      return "fail";
    case ATTN_CHECK_INCONCLUSIVE:
      return "inconclusive";
  }
  return "?";
}

static bool set_verdict(attn_check_result *r, attn_check_verdict v) {
  r->verdict = v;
  r->pass = v == ATTN_CHECK_PASS;
  return r->pass;
}

// The reason a case with no failing element is not a pass, or "" (check.h).
static bool inconclusive_reason(const attn_check_prepared *pc, char *buf, size_t len) {
  if (pc->domain[0]) {
    snprintf(buf, len, "inputs outside the kernel input domain: %s", pc->domain);
  } else if (pc->n_nonfinite_ref) {
    snprintf(buf, len,
             "the reference or its tolerance is not finite at %zu outputs (first at index %zu)",
             pc->n_nonfinite_ref, pc->first_nonfinite_ref);
  } else if (pc->n_weak) {
    snprintf(buf, len,
             "the error bound is uninformative at %zu of %zu outputs: it admits any weighting "
             "of the visible V rows (first at index %zu: score-error bound %.3g >= spread %.3g)",
             pc->n_weak, attn_o_elems(&pc->p), pc->first_weak, pc->weak_tol, pc->weak_spread);
  } else {
    return false;
  }
  return true;
}

// The case's compute-mode error (check.h), next to every verdict.
static void note_compute(const attn_check_prepared *pc, attn_check_result *r) {
  r->compute = pc->p.compute;
  r->has_compute = attn_check_compute_error(pc, &r->compute_abs_err, &r->compute_rel_err);
}

bool attn_check_output(const attn_check_prepared *pc, const float *o, attn_check_result *r) {
  return attn_check_output_lse(pc, o, NULL, r);
}

// LSE outputs beyond tolerance or non-finite where the reference is finite; -inf must be
// exactly -inf; a row whose bound says nothing (+inf) is not judged. Returns the count and
// the first bad index in *first.
static size_t lse_mismatches(const attn_check_prepared *pc, const float *lse, size_t *first) {
  const size_t n = (size_t)pc->p.batch * (size_t)pc->p.heads * (size_t)pc->p.seq_q;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (pc->lse_tol[i] == INFINITY) continue;
    const double want = pc->lse_ref[i], got = (double)lse[i];
    const bool ok = want == -INFINITY ? got == -INFINITY
                                      : (isfinite(got) && fabs(got - want) <= pc->lse_tol[i]);
    if (!ok && !bad++) *first = i;
  }
  return bad;
}

bool attn_check_output_lse(const attn_check_prepared *pc, const float *o, const float *lse,
                           attn_check_result *r) {
  if (pc->seq) return attn_check_output_layout(pc, o, lse, r);  // check/layout.c
  memset(r, 0, sizeof *r);
  note_compute(pc, r);
  const size_t n = attn_o_elems(&pc->p);
  size_t bad = 0, nonfinite = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(o[i])) {
      if (!nonfinite++) r->worst_index = i;
      r->worst_ratio = INFINITY;
      continue;
    }
    const double err = fabs((double)o[i] - (double)pc->ref[i]);
    const double ratio = err == 0.0 ? 0.0 : (pc->tol[i] > 0 ? err / pc->tol[i] : INFINITY);
    if (err > r->max_abs_err) r->max_abs_err = err;
    if (!nonfinite && ratio > r->worst_ratio) {
      r->worst_ratio = ratio;
      r->worst_index = i;
    }
    if (err > pc->tol[i]) bad++;  // false for a NaN tolerance: such a case is inconclusive
  }
  r->max_rel_err = pc->ref_max_abs > 0 ? r->max_abs_err / pc->ref_max_abs : r->max_abs_err;
  char why[sizeof r->message];
  if (inconclusive_reason(pc, why, sizeof why) && (pc->domain[0] || pc->n_nonfinite_ref)) {
    // Outside the domain or without a finite reference nothing is promised: no verdict.
    snprintf(r->message, sizeof r->message, "%s", why);
    return set_verdict(r, ATTN_CHECK_INCONCLUSIVE);
  }
  if (nonfinite) {
    snprintf(r->message, sizeof r->message, "%zu non-finite outputs (first at index %zu)",
             nonfinite, r->worst_index);
    return set_verdict(r, ATTN_CHECK_FAIL);
  }
  if (bad) {
    const size_t w = r->worst_index;
    snprintf(r->message, sizeof r->message,
             "%zu of %zu outputs beyond tolerance; worst at index %zu: got %.9g, want %.9g, "
             "tol %.3g",
             bad, n, w, (double)o[w], (double)pc->ref[w], pc->tol[w]);
    return set_verdict(r, ATTN_CHECK_FAIL);  // a valid bound exceeded: wrong, however loose
  }
  size_t lse_first = 0, lse_bad = lse && pc->lse_ref ? lse_mismatches(pc, lse, &lse_first) : 0;
  if (lse_bad) {
    snprintf(r->message, sizeof r->message,
             "%zu LSE outputs wrong; first at [b*h*seq_q + i] %zu: got %.9g, want %.9g, tol %.3g",
             lse_bad, lse_first, (double)lse[lse_first], pc->lse_ref[lse_first],
             pc->lse_tol[lse_first]);
    return set_verdict(r, ATTN_CHECK_FAIL);
  }
  if (pc->n_weak) {
    snprintf(r->message, sizeof r->message, "%s", why);
    return set_verdict(r, ATTN_CHECK_INCONCLUSIVE);
  }
  if (lse && pc->lse_ref && pc->n_weak_lse) {
    snprintf(r->message, sizeof r->message,
             "the LSE bound is uninformative at %zu rows (first at [b*h*seq_q + i] %zu): the "
             "rounding of p the mode allows may take the keys' sum to 0 beside a dominant sink",
             pc->n_weak_lse, pc->first_weak_lse);
    return set_verdict(r, ATTN_CHECK_INCONCLUSIVE);
  }
  return set_verdict(r, ATTN_CHECK_PASS);
}

bool attn_check_kernel(const attn_kernel *k, const attn_check_prepared *pc, const attn_exec *exec,
                       attn_check_result *r) {
  memset(r, 0, sizeof *r);
  note_compute(pc, r);
  const size_t n = attn_o_elems(&pc->p);
  float *buf = malloc((n + 2 * kGuard) * sizeof(float));
  if (!buf) {
    snprintf(r->message, sizeof r->message, "out of memory for the output buffer");
    return set_verdict(r, ATTN_CHECK_FAIL);
  }
  // Guard zones before and after O, and O itself, start as the guard NaN: a kernel that
  // leaves an element unwritten shows up as a non-finite output.
  for (size_t i = 0; i < n + 2 * kGuard; i++) memcpy(&buf[i], &kGuardBits, sizeof(float));
  float *o = buf + kGuard;
  // The LSE output, with its own guard zones, when the case checks it.
  const bool want_lse = pc->seq ? pc->layout_lse : pc->lse_ref != NULL;
  const size_t n_lse = want_lse ? attn_layout_total_q(&pc->p) * (size_t)pc->p.heads : 0;
  float *lse_buf = NULL;
  attn_problem p = pc->p;
  attn_options opts = pc->opts;
  if (n_lse) {
    if (!(lse_buf = malloc((n_lse + 2 * kGuard) * sizeof(float)))) {
      free(buf);
      snprintf(r->message, sizeof r->message, "out of memory for the LSE buffer");
      return set_verdict(r, ATTN_CHECK_FAIL);
    }
    for (size_t i = 0; i < n_lse + 2 * kGuard; i++) memcpy(&lse_buf[i], &kGuardBits, sizeof(float));
    opts.lse = lse_buf + kGuard;
    p.opts = &opts;
  }
  char err[256];
  const void *kk = pc->ks ? pc->ks : (const void *)pc->k,
             *vv = pc->vs ? pc->vs : (const void *)pc->v;
  attn_run_info info;
  const attn_problem pf = attn_check_f32_view(&p);
  r->fallback = !attn_kernel_native(k, &pf);
  const int rc = attn_kernel_call_info(k, &p, exec, pc->q, kk, vv, o, err, sizeof err, &info);
  if (info.fp_leak) {  // whatever the output: the next kernel on this thread would inherit it
    char given[128], returned[128];
    attn_fp_env_describe(info.fp_given, given, sizeof given);
    attn_fp_env_describe(info.fp_returned, returned, sizeof returned);
    const bool fallback = r->fallback;
    attn_check_output_lse(pc, o, lse_buf ? lse_buf + kGuard : NULL, r);
    r->fallback = fallback, r->fp_leak = true;
    snprintf(r->message, sizeof r->message,
             "left the FP environment changed (restored by the caller): given %.110s, "
             "returned %.110s",
             given, returned);
    free(buf);
    free(lse_buf);
    return set_verdict(r, ATTN_CHECK_FAIL);
  }
  if (rc != ATTN_OK) {
    // Refusing inputs outside the domain is the contract, not a wrong answer.
    const bool refused = rc == ATTN_ERR_RANGE && pc->domain[0];
    snprintf(r->message, sizeof r->message, "kernel %s %d: %s",
             refused ? "refused the inputs, status" : "returned", rc, err);
    free(buf);
    free(lse_buf);
    return set_verdict(r, refused ? ATTN_CHECK_INCONCLUSIVE : ATTN_CHECK_FAIL);
  }
  size_t clobbered = 0, clobbered_lse = 0;
  for (size_t i = 0; i < kGuard; i++) {
    clobbered += memcmp(&buf[i], &kGuardBits, sizeof(float)) != 0;
    clobbered += memcmp(&buf[kGuard + n + i], &kGuardBits, sizeof(float)) != 0;
    if (lse_buf) {
      clobbered_lse += memcmp(&lse_buf[i], &kGuardBits, sizeof(float)) != 0;
      clobbered_lse += memcmp(&lse_buf[kGuard + n_lse + i], &kGuardBits, sizeof(float)) != 0;
    }
  }
  const bool fallback = r->fallback;
  attn_check_output_lse(pc, o, lse_buf ? lse_buf + kGuard : NULL, r);
  r->fallback = fallback;
  if (clobbered || clobbered_lse) {
    snprintf(r->message, sizeof r->message,
             "wrote %zu floats outside O and %zu outside LSE (guard zones)", clobbered,
             clobbered_lse);
    set_verdict(r, ATTN_CHECK_FAIL);
  }
  free(buf);
  free(lse_buf);
  return r->pass;
}
