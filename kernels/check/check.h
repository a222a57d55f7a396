// SPDX-License-Identifier: MIT
//
// check.h — correctness checking of any kernel against the double-precision reference,
// with a tolerance derived from a floating-point error bound (not picked to pass).
// Used by `attnbench check`, the benchmark pre-check and the tests. Depends only on the
// kernel interface (no harness libraries), so it also runs in the aarch64 cross build.
//
// ── The tolerance ───────────────────────────────────────────────────────────────────
// For output element o[i][d] of a row that sees n keys, with reference probabilities p_j
// (double), reference scores s_j, row maximum m, u = 2^-24 (float32 unit roundoff):
//
//   E_j   = (dqk + 2)·u·scale·Σ_t |q_t·k_jt|  +  2u·(|s_j| + |m|)
//           — a worst-case bound on the error of a float32 score (dot product of length
//           dqk, the scale multiply) and of the subtraction s_j − m.
//   tol   = 2·Σ_j p_j·E_j·|v_jd − o_d|                 first-order effect of score errors
//         + 2·E_max²·max_j |v_jd|                      second-order remainder
//         + (3n + ATTN_CHECK_EXP_ULP + 8)·u·Σ_j p_j·|v_jd|
//           — float32 accumulation of Σ p_j v_j and of l = Σ p_j (≤ n roundings each, plus
//           up to n online-softmax rescalings), the exp error, the final division.
//
// A perturbation ε_j of each score changes p_j by the factor exp(ε_j − Σ_k p_k ε_k), so
// |δo_d| ≤ Σ_j p_j·|ε_j − ε̄|·|v_jd − o_d| to first order; the first term bounds that.
// An element passes iff |o − ref| ≤ tol; a case passes iff every element passes, no
// output is NaN/Inf, the kernel wrote nothing outside O (guard zones) and returned OK.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// The error budget (in ulp of the result) allowed for a kernel's exp approximation.
// Every exp a kernel uses must stay within this bound over [-88, 0]; the SIMD exp's
// measured bound is documented in the README.
#define ATTN_CHECK_EXP_ULP 8

typedef enum attn_dist {
  ATTN_DIST_UNIFORM = 0,  // Q, K, V uniform in [-1, 1)
  ATTN_DIST_NORMAL = 1,   // Q, K, V standard normal
  ATTN_DIST_LARGE = 2,    // Q, K normal scaled so that |scores| reach about 1e4; V normal
} attn_dist;

const char *attn_dist_name(attn_dist d);

typedef struct attn_check_case {
  attn_problem problem;
  attn_dist dist;
  uint64_t seed;
} attn_check_case;

// The default shape matrix for `attnbench check` (quick = a fast subset). Returns the
// number of cases; writes min(count, cap) of them to out (out may be NULL to count).
size_t attn_check_matrix(bool quick, attn_check_case *out, size_t cap);

// "B2 H8 KV2 Sq7 Skv100 Dqk33 Dv16 causal normal"
void attn_check_case_describe(const attn_check_case *c, char *buf, size_t len);

// Deterministic inputs for a case (a function of dist and seed only).
void attn_check_fill(const attn_check_case *c, float *q, float *k, float *v);

// A case prepared once and checked against any number of kernels: inputs, the
// reference output and the per-element tolerance.
typedef struct attn_check_prepared attn_check_prepared;

// NULL if the case is invalid or memory is short (err says which).
attn_check_prepared *attn_check_prepare(const attn_check_case *c, char *err, size_t err_len);
// The same from caller-supplied inputs (copied).
attn_check_prepared *attn_check_prepare_inputs(const attn_problem *p, const float *q,
                                               const float *k, const float *v, char *err,
                                               size_t err_len);
void attn_check_prepared_free(attn_check_prepared *pc);
const float *attn_check_reference_output(const attn_check_prepared *pc);

typedef struct attn_check_result {
  bool pass;
  double max_abs_err;      // max |o − ref|
  double max_rel_err;      // max |o − ref| / max |ref|
  double worst_ratio;      // max |o − ref| / tol over elements (pass needs ≤ 1)
  size_t worst_index;      // flat index into O of the worst element
  char message[192];       // empty on pass; otherwise what failed
} attn_check_result;

// Runs kernel k on the prepared case (with guard zones around O) and compares.
// Returns r->pass.
bool attn_check_kernel(const attn_kernel *k, const attn_check_prepared *pc, const attn_exec *exec,
                       attn_check_result *r);

// Compares an output the caller already computed. Returns r->pass.
bool attn_check_output(const attn_check_prepared *pc, const float *o, attn_check_result *r);

#ifdef __cplusplus
}
#endif
