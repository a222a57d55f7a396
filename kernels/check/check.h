// SPDX-License-Identifier: MIT
//
// check.h — correctness checking of any kernel against the double-precision reference,
// with a tolerance derived from a floating-point error bound (not picked to pass).
// Used by `attnbench check`, the benchmark pre-check and the tests. Depends only on the
// kernel interface (no harness libraries), so it also runs in the aarch64 cross build.
//
// ── The tolerance ───────────────────────────────────────────────────────────────────
// For output element o[i][d] of a row that sees n keys, with reference probabilities p_j
// (double), reference scores s_j, row maximum m, u = 2^-24 (float32 unit roundoff),
// μ = FLT_MIN = 2^-126 (smallest normal float32):
//
//   E_j   = (dqk + 2)·u·scale·Σ_t |q_t·k_jt|  +  2u·(|s_j| + |m|)  +  F_j
//           — a worst-case bound on the error of a float32 score (dot product of length
//           dqk, the scale multiply) and of the subtraction s_j − m;
//   F_j   = 2μ·(1 + scale)·(Σ_t (|q_t| + |k_jt|) + 2·dqk + 2)
//           — flush-to-zero (attn.h). A factor that reads as 0 — a subnormal input q_t
//           (DAZ), or a pre-scaled operand scale·q_t or scale·log2(e)·q_t that flushes —
//           is below μ, so its product loses less than μ·|k_jt| (times scale when the
//           scale is applied afterwards; symmetrically μ·|q_t|): the first sum. A flushed
//           product or partial sum of the dot loses < μ each (2·dqk of them, times scale
//           when the kernel scales after the dot), a flushed scale multiply or s − m < μ:
//           the second. The factor 2 covers log2(e) < 2;
//   T_d   = min( 2·Σ_j p_j·E_j·|v_jd − o_d| + 2·E_max²·max_j |v_jd|,      (first order
//                                                             + second-order remainder)
//                Σ_j p_j·(e^(E_j + E_max) − 1)·|v_jd − o_d| )                 (exact)
//           — two bounds on the effect of the score errors on o_d (below);
//   tol   = min(T_d, R_d),   R_d = max_j |v_jd − o_d|        weights: never beyond R_d
//         + (3n + ATTN_CHECK_EXP_ULP + 8)·u·Σ_j p_j·|v_jd|
//           — float32 accumulation of Σ p_j v_j and of l = Σ p_j (≤ n roundings each, plus
//           up to n online-softmax rescalings), the exp error, the final division;
//         + 2μ·(3n + 2 + Σ_j |v_jd| + n·max_j |v_jd|)
//           — flush-to-zero in the P·V accumulation. With l ≥ 1 (the row maximum gives
//           e^0) every absolute error of the unnormalised accumulator shrinks when divided
//           by l, and a normalised P·V sees the same bounds directly: subnormal v_jd read
//           as 0 (< μ in total, the weights sum to 1), n flushed products p_j·v_jd, n
//           flushed partial sums and ≤ n flushed rescalings α·acc (< μ each), the flushed
//           final quotient (< μ); a flushed probability (e^(s_j−m) < μ, or an exp that
//           returns 0 below ln μ, < 1.4μ) loses < 1.4μ·|v_jd| from the sum and < 1.4μ
//           from l, which moves o by < 1.4μ·n·|o| ≤ 1.4μ·n·max|v|. The factor 2 covers the
//           1.4 and the rounding of these tiny terms.
//
// Score errors: the kernel's weights are w_j = p_j·e^(ε_j) / Σ_k p_k·e^(ε_k) with
// |ε_j| ≤ E_j (the row maximum cancels), and Σ w_j = Σ p_j = 1, so
//   δo_d = Σ_j (w_j − p_j)·(v_jd − o_d).
// To first order w_j/p_j − 1 = ε_j − Σ_k p_k ε_k, which gives the first bound (2E_j ≥
// |ε_j − ε̄|, plus a second-order remainder). Exactly, the denominator lies in
// [e^(−E_max), e^(E_max)], so |w_j/p_j − 1| ≤ e^(E_j + E_max) − 1: the second bound, valid
// for any size of E (evaluated in log space where p_j underflows). And δo_d = Σ_j w_j v_jd
// − o_d, where a convex combination of the v_jd lies within R_d of o_d: |δo_d| ≤ R_d.
// Each is a valid bound; tol uses the smallest.
// ── Options (attn.h, "Attention variants") ──────────────────────────────────────────
// s_j, m and E_j above are those of the *final* scores. The keys are those of
// attn_row_keys whose mask entry is not −inf; a row with none outputs exact zeros (tol 0)
// and LSE −inf (exactly). Each option adds to E_j:
//   softcap c:  the dot-product error E_j and the argument s/c (a multiply by the
//               rounded 1/c: 2u·|s_pre|) make w = E_j + 2u·|s_pre|, which passes through
//               scaled by tanh's largest slope on the interval, sech²(max(0, |s_pre| −
//               w)/c) ≤ 1 (vanishing where tanh saturates);
//               tanh (ATTN_CHECK_TANH_ULP ulp ≤ 2u each) and the multiply by c add
//               (2·ATTN_CHECK_TANH_ULP + 1)·u·|s_j|, a flushed argument 2μ·(1 + c);
//   ALiBi:      the bias slope·(j − i − off) (distance exact below 2^24, else u·|dist|)
//               adds 3u·|bias|, its addition u·|s_j|;
//   mask:       the addition of the (exact) mask value adds u·|s_j|;
//   sinks:      the sink is one more "key" with exact score sink_h and value 0, so the
//               weights of the keys sum to less than 1 and every bound above holds over
//               keys ∪ {sink} (R_d includes |0 − o_d|); |m| in the 2u·(|s_j| + |m|) term
//               is max(|key maximum|, |maximum with the sink|), since a kernel may shift
//               by either; one more addition enters l (n + 1 terms).
// LSE: log Σ_j e^(s_j + ε_j) − log Σ_j e^(s_j) ≤ max_keys E_j, so
//   tol_lse = max_keys E_j + (3n + ATTN_CHECK_EXP_ULP + 8)·u + 8u·(1 + log n)
//           + 2u·|LSE| + 4nμ
//   (l's accumulation, log (≤ 4 ulp), the final m + log l, flushed probabilities), against
//   the LSE computed in double.
//
// ── Compute modes (attn.h, "Compute modes"; derivation in docs/precision.md) ─────────
// Everything above is evaluated on the inputs as the mode reads them (Q, K, V rounded to
// bf16/f16; Q8_0 Q for int8): the products of those are exact in float32 (int8: exact
// integer block sums, one rounding per block scale), so the float32 bound covers them.
// bf16 and f16 add the kernel's rounding of p: |p̂ − p| ≤ u_p·p + a·[p < p_min] with
// u_p = 2^-8 (bf16) / 2^-11 (f16), a = 0 / 2^-25, p_min = 2^-14 (f16), giving per element
//   + g·( u_p·Σ_j p_j·(|v_jd| + |v_jd − o_d|) + a·Σ_{j small} (|v_jd| + |v_jd − o_d|) ),
//   g = 2·e^(2E_max), key j small when e^(s_j − m − E_j − E_max) < p_min,
// and to the LSE g·(u_p + n_small·a).
//
// Outside the domain of attn_inputs_check (attn.h) a float32 kernel's scores or
// accumulator may overflow; the bound assumes that does not happen.
//
// ── When the bound says nothing: pass, fail, inconclusive ───────────────────────────
// Whatever the scores' errors, the kernel's weights are some convex combination, so the
// weight-induced error of element d is at most R_d = max_j |v_jd − o_d| (the spread of
// the visible V values around the answer). If the score part of the bound T_d reaches
// R_d while R_d exceeds the rest of the bound (so the weighting matters at all beyond
// rounding and flush-to-zero), then every weighting of the
// visible rows — all zeros when the values straddle 0, the wrong row, the mean — passes
// at d: the element is *uninformative*. (With Q and K near ±3e38, E_j ~ 1e70 and a kernel
// writing zeros would be inside tol.) The verdict of a case is:
//   inconclusive  the inputs are outside the input domain (non-finite, scores or the V
//                 accumulation could overflow float32 — attn_inputs_check's reason), or
//                 the reference or a tolerance is not finite; a kernel refusing such
//                 inputs with ATTN_ERR_RANGE is inconclusive too;
//   fail          the kernel returned an error, wrote outside O (guard zones), left an
//                 element unwritten or non-finite, or some |o − ref| > tol (a valid
//                 bound exceeded is a wrong answer, however loose the bound);
//   inconclusive  otherwise, if any element is uninformative;
//   pass          otherwise. A pass therefore means: every element within a bound that
//                 is tighter than the choice of softmax weights.
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
// The error budget (ulp of the result) for a kernel's tanh (softcap), over all of float32.
#define ATTN_CHECK_TANH_ULP 4

typedef enum attn_dist {
  ATTN_DIST_UNIFORM = 0,  // Q, K, V uniform in [-1, 1)
  ATTN_DIST_NORMAL = 1,   // Q, K, V standard normal
  ATTN_DIST_LARGE = 2,    // Q, K normal scaled so that |scores| reach about 1e4; V normal
} attn_dist;

const char *attn_dist_name(attn_dist d);

// Arrays the checker generates for a case (attn_check_case.gen), from its seed.
enum {
  ATTN_CHECK_GEN_SLOPES = 1u << 0,      // explicit ALiBi slopes: uniform [-0.25, 1), per head
  ATTN_CHECK_GEN_SINKS = 1u << 1,       // sinks: normal × 2 per head
  ATTN_CHECK_GEN_SINKS_HIGH = 1u << 2,  // sinks: 30 + normal (dominate every row)
  ATTN_CHECK_GEN_MASK = 1u << 3,        // additive mask: normal × 2, 15% −inf, rows i ≡ 3
                                        // (mod 7) all −inf; layout by opts.mask_per_head
  ATTN_CHECK_GEN_LSE = 1u << 4,         // ask for (and check) the LSE output
};

// A serving layout for a case (attn.h, "Serving layouts"), built by the checker: the
// lengths, the pages and their order. kind DENSE (0) = the case is dense.
#define ATTN_CHECK_MAX_SEQS 64  // the largest serving batch of the shipped configs
typedef struct attn_check_layout {
  attn_layout_kind kind;
  int seqs;                              // sequences, 1..ATTN_CHECK_MAX_SEQS (problem.batch
                                         // and seq_q, seq_kv are set from the lengths)
  int64_t q_lens[ATTN_CHECK_MAX_SEQS];   // q_len_b >= 0
  int64_t kv_lens[ATTN_CHECK_MAX_SEQS];  // kv_len_b >= 0
  int64_t page_size;                     // PAGED: tokens per page
  bool shuffle;                          // PAGED: pages in a seeded random order of the pool
  int64_t shared_pages;                  // PAGED: every sequence b > 0 uses sequence 0's first
                                         // pages (up to this many full pages both have) —
                                         // prefix caching
  int64_t spare_pages;                   // PAGED: pages no sequence uses (random contents)
} attn_check_layout;

typedef struct attn_check_case {
  attn_problem problem;  // problem.opts is the options' source when not NULL (its arrays
                         // are copied); otherwise opts and gen below
  attn_dist dist;
  uint64_t seed;
  attn_options opts;         // option values; arrays given here are copied, NULL ones may be
                             // generated (gen); lse is ignored (the checker owns the output)
  uint32_t gen;              // ATTN_CHECK_GEN_* bits
  attn_check_layout layout;  // a ragged or paged batch; zero = dense
} attn_check_case;

// The default shape matrix for `attnbench check` (quick = a fast subset). Returns the
// number of cases; writes min(count, cap) of them to out (out may be NULL to count).
size_t attn_check_matrix(bool quick, attn_check_case *out, size_t cap);

// "B2 H8 KV2 Sq7 Skv100 Dqk33 Dv16 causal normal", then the options, e.g.
// " window=15,0 align=top-left softcap=50 alibi=8 sinks mask lse", and a layout case's
// lengths and pages (" paged q_lens=… kv_lens=… page=16 shuffled"). ATTN_CHECK_DESC_MAX
// holds the longest: two lists of ATTN_CHECK_MAX_SEQS lengths of up to 20 characters and
// their commas (2·64·21 = 2688) with the shape, options and page words (< 400).
#define ATTN_CHECK_DESC_MAX 3072
void attn_check_case_describe(const attn_check_case *c, char *buf, size_t len);

// Deterministic inputs for a case (a function of dist and seed only), float32 whatever
// problem.kv_dtype is (attn_check_prepare then stores K and V as that type).
void attn_check_fill(const attn_check_case *c, float *q, float *k, float *v);

// A case prepared once and checked against any number of kernels: inputs, the
// reference output and the per-element tolerance. Every prepare computes in
// round-to-nearest whatever the caller's rounding mode (restored on return), so the
// stored K/V, the mode's rounding of Q, the reference and the bounds do not depend on it.
typedef struct attn_check_prepared attn_check_prepared;

// NULL if the case is invalid or memory is short (err says which). A case with a layout is
// prepared as one dense case per sequence, from that sequence's rows gathered by the
// checker (kernels/check/layout.c); a kernel runs on the packed or paged tensors and each
// sequence's rows of its output are compared with their own reference and tolerance. Inputs outside
// the input domain are prepared (the reference runs in double); their verdict is inconclusive.
attn_check_prepared *attn_check_prepare(const attn_check_case *c, char *err, size_t err_len);
// The same from caller-supplied inputs (copied, with the arrays of p->opts; LSE is
// checked when p->opts->lse is set, the pointer itself is not used). k and v are stored
// as p->kv_dtype; the reference computes from those stored values.
// A problem with a layout is prepared sequence by sequence as above (its layout arrays are
// copied too); attn_check_reference_output is then NULL (each sequence has its own).
attn_check_prepared *attn_check_prepare_inputs(const attn_problem *p, const float *q, const void *k,
                                               const void *v, char *err, size_t err_len);
// The same from float32 K and V that are first stored as p->kv_dtype (core/convert.h's
// rounding); the storage error is then known (attn_check_storage_error). Also what
// attn_check_prepare does for a case with a non-F32 kv_dtype (generated float32 K/V). Not for a
// problem with a layout (use attn_check_prepare_inputs with the stored K/V).
attn_check_prepared *attn_check_prepare_convert(const attn_problem *p, const float *q,
                                                const float *k32, const float *v32, char *err,
                                                size_t err_len);
// The storage error of a prepared conversion case (non-F32 kv_dtype, float32 K/V known):
// *max_abs = max |ref32 − ref| and *ratio = max |ref32 − ref| / tol over O, where ref32 is
// the reference on the float32 K/V and ref (and tol) the reference on the stored values.
// It is what the storage type costs, not a kernel error (no verdict uses it). Returns
// false (and zeros) when it is not known: F32 K/V, or stored inputs given directly.
bool attn_check_storage_error(const attn_check_prepared *pc, double *max_abs, double *ratio);
// max |ref| over O (finite elements): the scale of the storage type's relative error
// max |ref32 − ref| / max |ref|.
double attn_check_reference_max_abs(const attn_check_prepared *pc);
// The error the compute mode's input rounding introduces (attn.h, "Compute modes"): the
// reference in F32 on the same stored inputs against the reference in the mode.
// *max_abs = max |ref_mode − ref_f32| over O, *rel = that / max |ref_mode| (the output
// scale); for a layout case the largest over its sequences. What the mode costs, not a
// kernel error (no verdict uses it). Returns false (and zeros) for an F32 case.
bool attn_check_compute_error(const attn_check_prepared *pc, double *max_abs, double *rel);
void attn_check_prepared_free(attn_check_prepared *pc);
const float *attn_check_reference_output(const attn_check_prepared *pc);

typedef enum attn_check_verdict {
  ATTN_CHECK_PASS = 0,
  ATTN_CHECK_FAIL = 1,
  ATTN_CHECK_INCONCLUSIVE = 2,  // no verdict possible; the message gives the reason
} attn_check_verdict;

// "pass", "fail", "inconclusive".
const char *attn_check_verdict_name(attn_check_verdict v);

typedef struct attn_check_result {
  attn_check_verdict verdict;
  bool pass;           // verdict == ATTN_CHECK_PASS
  double max_abs_err;  // max |o − ref|
  double max_rel_err;  // max |o − ref| / max |ref|
  double worst_ratio;  // max |o − ref| / tol over elements (pass needs ≤ 1)
  size_t worst_index;  // flat index into O of the worst element
  bool fallback;       // the shared portable path ran, not the kernel's own code: the case
                       // uses an option the kernel does not claim (attn_kernel_native)
  bool fp_leak;        // the kernel returned with the FP environment changed (a failure)
  // The case's compute mode and the error its input rounding introduces against FP32
  // (attn_check_compute_error): the mode's, not the kernel's. has_compute false for F32.
  attn_compute compute;
  bool has_compute;
  double compute_abs_err, compute_rel_err;
  char message[320];  // empty on pass; otherwise what failed or why inconclusive
} attn_check_result;

// Whether case c runs kernel k's own code (true) or the shared portable fallback (false):
// the options the case uses, generated arrays included, against k->caps. The K/V type
// does not enter (a kernel that does not read it gets float32 copies and runs its code).
bool attn_check_case_native(const attn_kernel *k, const attn_check_case *c);

// Runs kernel k on the prepared case (with guard zones around O) through
// attn_kernel_call and compares. Returns r->pass (r->verdict has the three-way verdict).
// r->fallback says whose code ran; a kernel that leaves the FP environment changed
// (attn_kernel_call restores it) fails, with both states in the message.
bool attn_check_kernel(const attn_kernel *k, const attn_check_prepared *pc, const attn_exec *exec,
                       attn_check_result *r);

// The reference LSE [batch][heads][seq_q] in double (NULL unless the case checks LSE).
const double *attn_check_reference_lse(const attn_check_prepared *pc);
// The prepared problem: its opts (if any) point to the prepared copies of the arrays.
const attn_problem *attn_check_problem(const attn_check_prepared *pc);

// Compares an output the caller already computed (lse: the kernel's LSE output, or NULL
// when the case does not check LSE). Returns r->pass.
bool attn_check_output_lse(const attn_check_prepared *pc, const float *o, const float *lse,
                           attn_check_result *r);
// Compares an output the caller already computed (O only: attn_check_output_lse also
// checks the LSE). Returns r->pass.
bool attn_check_output(const attn_check_prepared *pc, const float *o, attn_check_result *r);

#ifdef __cplusplus
}
#endif
