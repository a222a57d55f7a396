// SPDX-License-Identifier: MIT
// The correctness checker: deterministic inputs, the reference output, an error-bound
// tolerance per output element (derivation in check.h), guard zones around O.
#include "check/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"

#define U32 (1.0 / 16777216.0)                  // float32 unit roundoff 2^-24
#define FLT_MIN_D 0x1p-126                      // smallest normal float32 (FLT_MIN)
enum { kGuard = 64 };                           // guard floats on each side of O
static const uint32_t kGuardBits = 0x7fc0dead;  // a quiet NaN no kernel writes by chance

const char *attn_dist_name(attn_dist d) {
  switch (d) {
    case ATTN_DIST_UNIFORM:
      return "uniform";
    case ATTN_DIST_NORMAL:
      return "normal";
    case ATTN_DIST_LARGE:
      return "large";
  }
  return "?";
}

// ── Deterministic inputs ────────────────────────────────────────────────────────────

// splitmix64: a tiny, well-mixed generator, so inputs do not depend on libc's rand().
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double uniform01(uint64_t *s) {
  return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}
static double normal01(uint64_t *s) {  // Box–Muller
  const double u1 = uniform01(s), u2 = uniform01(s);
  return sqrt(-2.0 * log(u1 > 0 ? u1 : 1e-300)) * cos(6.283185307179586 * u2);
}

static void fill(float *x, size_t n, attn_dist dist, double magnitude, uint64_t seed) {
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    const double r = dist == ATTN_DIST_UNIFORM ? 2.0 * uniform01(&s) - 1.0 : normal01(&s);
    x[i] = (float)(magnitude * r);
  }
}

void attn_check_fill(const attn_check_case *c, float *q, float *k, float *v) {
  const attn_problem *p = &c->problem;
  // LARGE: scale·q·k has standard deviation a²·scale·sqrt(dqk); choose a so that it is
  // about 3e3, which puts the largest scores of a row near ±1e4.
  double a = 1.0;
  if (c->dist == ATTN_DIST_LARGE) {
    const double s = (double)fabsf(p->scale) > 0 ? (double)fabsf(p->scale) : 1.0;
    a = sqrt(3e3 / (s * sqrt((double)p->head_dim_qk)));
  }
  fill(q, attn_q_elems(p), c->dist, a, c->seed * 3 + 1);
  fill(k, attn_k_elems(p), c->dist, a, c->seed * 3 + 2);
  fill(v, attn_v_elems(p), c->dist == ATTN_DIST_UNIFORM ? ATTN_DIST_UNIFORM : ATTN_DIST_NORMAL, 1.0,
       c->seed * 3 + 3);
}

// ── The matrix ──────────────────────────────────────────────────────────────────────

// Sequence pairs: every length of the list with itself, and cross pairs both ways.
static const int64_t kSeqPairs[][2] = {
    {1, 1},     {2, 2},     {3, 3},       {7, 7},     {16, 16},   {31, 31},    {64, 64},
    {100, 100}, {257, 257}, {1024, 1024}, {1, 1024},  {1, 257},   {1, 7},      {7, 1},
    {2, 31},    {31, 2},    {3, 100},     {100, 3},   {16, 64},   {64, 16},    {257, 31},
    {31, 257},  {7, 100},   {100, 7},     {1024, 64}, {64, 1024}, {257, 1024},
};
// Head dims (qk, v): the list, plus pairs with head_dim_v != head_dim_qk.
static const int64_t kHeadDims[][2] = {
    {1, 1},     {2, 2},     {3, 3}, {16, 16}, {33, 33},  {64, 64}, {80, 80},  {96, 96},
    {128, 128}, {256, 256}, {2, 4}, {16, 33}, {64, 128}, {33, 1},  {128, 64},
};
// (heads, kv_heads): MHA, GQA, MQA.
static const int64_t kHeads[][2] = {{1, 1}, {4, 4}, {8, 2}, {4, 1}, {6, 3}};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// Appends a case if there is room; always counts it.
static void add(attn_check_case *out, size_t cap, size_t *n, attn_problem p, attn_dist dist) {
  if (out && *n < cap) out[*n] = (attn_check_case){.problem = p, .dist = dist, .seed = 1000 + *n};
  (*n)++;
}

// Work of a case in (query, key) pairs × heads × width, to keep the matrix fast.
static double case_work(const attn_problem *p) {
  return (double)p->batch * (double)p->heads * (double)p->seq_q * (double)p->seq_kv *
         (double)(p->head_dim_qk + p->head_dim_v);
}

size_t attn_check_matrix(bool quick, attn_check_case *out, size_t cap) {
  size_t n = 0;
  const int64_t quick_max_seq = 100;
  // 1. Every sequence pair, causal off and on, rotating head dims, head layouts,
  //    distributions and batch sizes so that each appears with many lengths.
  for (size_t i = 0; i < COUNT(kSeqPairs); i++) {
    const int64_t sq = kSeqPairs[i][0], skv = kSeqPairs[i][1];
    if (quick && (sq > quick_max_seq || skv > quick_max_seq)) continue;
    for (int causal = 0; causal <= 1; causal++) {
      const size_t r = i * 2 + (size_t)causal;
      const int64_t *hd = kHeadDims[(r * 7) % COUNT(kHeadDims)];
      const int64_t *hk = kHeads[r % COUNT(kHeads)];
      const int64_t batch = (r % 3 == 2) ? 2 : 1;
      attn_problem p = attn_problem_make(batch, hk[0], hk[1], sq, skv, hd[0], hd[1], causal);
      // keep the largest cases affordable for the double reference and naive kernels
      while (case_work(&p) > 3e8 && p.heads > 1) {
        p.heads /= 2;
        if (p.heads % p.kv_heads) p.kv_heads = 1;
      }
      add(out, cap, &n, p, (attn_dist)(r % 3));
    }
  }
  // 2. Every head dim and head layout at moderate lengths, self and cross, both masks.
  for (size_t d = 0; d < COUNT(kHeadDims); d++) {
    for (size_t h = 0; h < COUNT(kHeads); h++) {
      if (quick && h % 2) continue;
      const size_t r = d * COUNT(kHeads) + h;
      const int64_t sq = (r % 2) ? 31 : 17, skv = (r % 4 < 2) ? 31 : 45;
      attn_problem p = attn_problem_make(1 + (int64_t)(r % 2), kHeads[h][0], kHeads[h][1], sq, skv,
                                         kHeadDims[d][0], kHeadDims[d][1], (r / 2) % 2);
      add(out, cap, &n, p, (attn_dist)(r % 3));
    }
  }
  // 3. Large-magnitude scores (a kernel without max-subtraction overflows) at several
  //    widths, and a custom scale.
  for (size_t d = 0; d < COUNT(kHeadDims); d += 3) {
    attn_problem p = attn_problem_make(1, 2, 1, 33, 64, kHeadDims[d][0], kHeadDims[d][1], d % 2);
    add(out, cap, &n, p, ATTN_DIST_LARGE);
  }
  {
    attn_problem p = attn_problem_make(2, 4, 2, 19, 23, 24, 40, true);
    p.scale = 0.3f;
    add(out, cap, &n, p, ATTN_DIST_NORMAL);
  }
  return n;
}

void attn_check_case_describe(const attn_check_case *c, char *buf, size_t len) {
  const attn_problem *p = &c->problem;
  const double default_scale = 1.0 / sqrt((double)p->head_dim_qk);
  char scale[32] = "";
  if (fabs((double)p->scale - default_scale) > 1e-7 * default_scale)
    snprintf(scale, sizeof scale, " scale=%g", p->scale);
  snprintf(buf, len, "B%lld H%lld KV%lld Sq%lld Skv%lld Dqk%lld Dv%lld %s %s%s",
           (long long)p->batch, (long long)p->heads, (long long)p->kv_heads, (long long)p->seq_q,
           (long long)p->seq_kv, (long long)p->head_dim_qk, (long long)p->head_dim_v,
           p->causal ? "causal" : "full", attn_dist_name(c->dist), scale);
}

// ── Prepared cases: reference output and tolerance ──────────────────────────────────

struct attn_check_prepared {
  attn_problem p;
  float *q, *k, *v;
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
};

void attn_check_prepared_free(attn_check_prepared *pc) {
  if (!pc) return;
  free(pc->q);
  free(pc->k);
  free(pc->v);
  free(pc->ref);
  free(pc->tol);
  free(pc);
}

const float *attn_check_reference_output(const attn_check_prepared *pc) {
  return pc->ref;
}

// Tolerance of every output element of one query row (see check.h). s[j] holds the
// double scores of the visible keys, p[j] their reference probabilities. tol_score[d]
// gets the score part of the bound before it is capped at spread[d], the spread of the
// visible V values (check.h, "When the bound says nothing").
static void row_tolerance(const attn_problem *p, const float *qrow, const float *kh,
                          const float *vh, int64_t n, double *s, double *prob, double *e,
                          double *tol_row, double *tol_score, double *spread) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  const double scale = fabs((double)p->scale);
  double m = -INFINITY;
  for (int64_t j = 0; j < n; j++) {
    double dot = 0.0, absdot = 0.0, abssum = 0.0;
    for (int64_t t = 0; t < dqk; t++) {
      const double qt = (double)qrow[t], kt = (double)kh[j * dqk + t];
      const double x = qt * kt;
      dot += x;
      absdot += fabs(x);
      abssum += fabs(qt) + fabs(kt);
    }
    s[j] = (double)p->scale * dot;
    e[j] = (double)(dqk + 2) * U32 * scale * absdot                               // rounding
           + 2.0 * FLT_MIN_D * (1.0 + scale) * (abssum + (double)(2 * dqk + 2));  // DAZ/FTZ
    if (s[j] > m) m = s[j];
  }
  double l = 0.0, e_max = 0.0;
  for (int64_t j = 0; j < n; j++) {
    e[j] += 2.0 * U32 * (fabs(s[j]) + fabs(m));
    if (e[j] > e_max) e_max = e[j];
    prob[j] = exp(s[j] - m);
    l += prob[j];
  }
  const double log_l = log(l);
  for (int64_t j = 0; j < n; j++) prob[j] /= l;
  const double acc_ulps = (3.0 * (double)n + ATTN_CHECK_EXP_ULP + 8.0) * U32;
  for (int64_t d = 0; d < dv; d++) {
    double o = 0.0;
    for (int64_t j = 0; j < n; j++) o += prob[j] * (double)vh[j * dv + d];
    double first = 0.0, exact = 0.0, mag = 0.0, vmax = 0.0, vsum = 0.0, r = 0.0;
    for (int64_t j = 0; j < n; j++) {
      const double vj = (double)vh[j * dv + d];
      first += prob[j] * e[j] * fabs(vj - o);
      // p_j·(e^(E_j+E_max) − 1), in log space where p_j underflows
      const double x = e[j] + e_max;
      exact += fabs(vj - o) * (prob[j] > 1e-300 ? prob[j] * expm1(x) : exp(s[j] - m - log_l + x));
      mag += prob[j] * fabs(vj);
      vsum += fabs(vj);
      if (fabs(vj) > vmax) vmax = fabs(vj);
      if (fabs(vj - o) > r) r = fabs(vj - o);
    }
    const double ftz = 2.0 * FLT_MIN_D * (3.0 * (double)n + 2.0 + vsum + (double)n * vmax);
    // Two valid bounds on the weight-induced error (check.h); weak when even the
    // smaller reaches the spread r, which itself bounds that error.
    tol_score[d] = fmin(2.0 * first + 2.0 * e_max * e_max * vmax, exact);
    spread[d] = r;
    tol_row[d] = fmin(tol_score[d], r) + acc_ulps * mag + ftz;
  }
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
static bool run_reference(attn_check_prepared *pc, char *err, size_t err_len) {
  const attn_kernel *ref = attn_kernel_find("reference");
  if (!ref) {
    if (err && err_len) snprintf(err, err_len, "the reference kernel is not registered");
    return false;
  }
  static const attn_exec kExec = {0};
  const size_t ws_bytes = attn_kernel_workspace(ref, &pc->p, &kExec);
  void *ws = ws_bytes && ws_bytes <= SIZE_MAX - 63
                 ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63)
                 : NULL;
  if (ws_bytes && !ws) {
    if (err && err_len) snprintf(err, err_len, "out of memory for the reference's workspace");
    return false;
  }
  const int rc = ref->run(&pc->p, &kExec, pc->q, pc->k, pc->v, pc->ref, ws);
  free(ws);
  if (rc != ATTN_OK) {
    if (err && err_len) snprintf(err, err_len, "the reference kernel failed with status %d", rc);
    return false;
  }
  return true;
}

// Reference output, the tolerance, and what stops a case from being conclusive.
static bool finish_prepare(attn_check_prepared *pc, char *err, size_t err_len) {
  const attn_problem *p = &pc->p;
  if (attn_inputs_check(p, pc->q, pc->k, pc->v, pc->domain, sizeof pc->domain) == ATTN_OK)
    pc->domain[0] = '\0';
  if (!run_reference(pc, err, err_len)) return false;
  const size_t n_kv = (size_t)p->seq_kv, dv = (size_t)p->head_dim_v;
  double *scratch = malloc((3 * n_kv + 2 * dv) * sizeof(double));
  if (!scratch) {
    if (err && err_len) snprintf(err, err_len, "out of memory computing tolerances");
    return false;
  }
  double *tol_score = scratch + 3 * n_kv, *spread = tol_score + dv;

  pc->n_weak = 0;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads; h++) {
      const int64_t g = attn_kv_head_of(p, h);
      const float *qh = attn_q_head(p, pc->q, b, h);
      const float *kh = attn_k_head(p, pc->k, b, g);
      const float *vh = attn_v_head(p, pc->v, b, g);
      const size_t o_off = (size_t)(attn_o_head(p, pc->ref, b, h) - pc->ref);
      for (int64_t i = 0; i < p->seq_q; i++) {
        const size_t row_off = o_off + (size_t)i * dv;
        double *tol_row = pc->tol + row_off;
        const int64_t n = attn_visible_keys(p, i);
        if (n == 0) {  // no visible key: the output must be exactly zero
          for (size_t d = 0; d < dv; d++) tol_row[d] = 0.0;
          continue;
        }
        row_tolerance(p, qh + i * p->head_dim_qk, kh, vh, n, scratch, scratch + n_kv,
                      scratch + 2 * n_kv, tol_row, tol_score, spread);
        for (size_t d = 0; d < dv; d++) {
          // Uninformative: the score part of the bound reaches the largest error any
          // convex combination of the visible V rows could have, where the choice of
          // weights matters beyond rounding (spread above the rest of the bound).
          const double rest = tol_row[d] - fmin(tol_score[d], spread[d]);
          if (!(tol_score[d] < spread[d]) && spread[d] > rest) {
            if (!pc->n_weak++) {
              pc->first_weak = row_off + d;
              pc->weak_tol = tol_score[d];
              pc->weak_spread = spread[d];
            }
          }
        }
      }
    }
  }
  free(scratch);
  pc->ref_max_abs = 0.0;
  pc->n_nonfinite_ref = 0;
  for (size_t i = 0; i < attn_o_elems(p); i++) {
    if (!isfinite(pc->ref[i]) || !isfinite(pc->tol[i])) {
      if (!pc->n_nonfinite_ref++) pc->first_nonfinite_ref = i;
      continue;
    }
    if (fabs((double)pc->ref[i]) > pc->ref_max_abs) pc->ref_max_abs = fabs((double)pc->ref[i]);
  }
  return true;
}

attn_check_prepared *attn_check_prepare(const attn_check_case *c, char *err, size_t err_len) {
  attn_check_prepared *pc = prepare_common(&c->problem, err, err_len);
  if (!pc) return NULL;
  attn_check_fill(c, pc->q, pc->k, pc->v);
  if (!finish_prepare(pc, err, err_len)) {
    attn_check_prepared_free(pc);
    return NULL;
  }
  return pc;
}

attn_check_prepared *attn_check_prepare_inputs(const attn_problem *p, const float *q,
                                               const float *k, const float *v, char *err,
                                               size_t err_len) {
  attn_check_prepared *pc = prepare_common(p, err, err_len);
  if (!pc) return NULL;
  memcpy(pc->q, q, attn_q_elems(p) * sizeof(float));
  memcpy(pc->k, k, attn_k_elems(p) * sizeof(float));
  memcpy(pc->v, v, attn_v_elems(p) * sizeof(float));
  if (!finish_prepare(pc, err, err_len)) {
    attn_check_prepared_free(pc);
    return NULL;
  }
  return pc;
}

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

bool attn_check_output(const attn_check_prepared *pc, const float *o, attn_check_result *r) {
  memset(r, 0, sizeof *r);
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
  if (pc->n_weak) {
    snprintf(r->message, sizeof r->message, "%s", why);
    return set_verdict(r, ATTN_CHECK_INCONCLUSIVE);
  }
  return set_verdict(r, ATTN_CHECK_PASS);
}

bool attn_check_kernel(const attn_kernel *k, const attn_check_prepared *pc, const attn_exec *exec,
                       attn_check_result *r) {
  memset(r, 0, sizeof *r);
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
  char err[256];
  const int rc = attn_kernel_call(k, &pc->p, exec, pc->q, pc->k, pc->v, o, err, sizeof err);
  if (rc != ATTN_OK) {
    // Refusing inputs outside the domain is the contract, not a wrong answer.
    const bool refused = rc == ATTN_ERR_RANGE && pc->domain[0];
    snprintf(r->message, sizeof r->message, "kernel %s %d: %s",
             refused ? "refused the inputs, status" : "returned", rc, err);
    free(buf);
    return set_verdict(r, refused ? ATTN_CHECK_INCONCLUSIVE : ATTN_CHECK_FAIL);
  }
  size_t clobbered = 0;
  for (size_t i = 0; i < kGuard; i++) {
    clobbered += memcmp(&buf[i], &kGuardBits, sizeof(float)) != 0;
    clobbered += memcmp(&buf[kGuard + n + i], &kGuardBits, sizeof(float)) != 0;
  }
  attn_check_output(pc, o, r);
  if (clobbered) {
    snprintf(r->message, sizeof r->message, "wrote %zu floats outside O (guard zones)", clobbered);
    set_verdict(r, ATTN_CHECK_FAIL);
  }
  free(buf);
  return r->pass;
}
