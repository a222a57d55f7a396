// SPDX-License-Identifier: MIT
// The correctness checker: deterministic inputs, the reference output, an error-bound
// tolerance per output element (derivation in check.h), guard zones around O.
#include "check/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"

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

// Appends a case with options (attn.h, "Attention variants").
static void add_opt(attn_check_case *out, size_t cap, size_t *n, attn_problem p, attn_dist dist,
                    attn_options o, uint32_t gen) {
  if (out && *n < cap)
    out[*n] =
        (attn_check_case){.problem = p, .dist = dist, .seed = 1000 + *n, .opts = o, .gen = gen};
  (*n)++;
}

// 4. The options, alone and combined. Window sizes W (left = W − 1) around the key tiles
//    of the kernels (16, 32, 64, 128: 1, tile − 1, tile, tile + 1, more than seq_kv);
//    both alignments with seq_q above, equal to and below seq_kv; softcap with huge
//    scores; sinks on rows that see nothing.
static void options_cases(bool quick, attn_check_case *out, size_t cap, size_t *n) {
  static const int64_t kWindows[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 300};
  for (size_t w = 0; w < COUNT(kWindows); w++) {
    if (quick && w % 3 != 0 && w != COUNT(kWindows) - 1) continue;
    const int64_t sq = (w % 3 == 1) ? 150 : 200, skv = (w % 3 == 2) ? 150 : 200;
    attn_problem p = attn_problem_make(1, 2, 1, sq, skv, 32, 32, w % 2 == 0);
    const attn_options o = {
        .window = true,
        .window_left = kWindows[w] - 1,
        .window_right = w % 2 == 0 ? 0 : (w % 4 == 1 ? 3 : ATTN_WINDOW_UNBOUNDED),
        .align = w % 5 == 2 ? ATTN_ALIGN_TOP_LEFT : ATTN_ALIGN_BOTTOM_RIGHT};
    add_opt(out, cap, n, p, (attn_dist)(w % 2), o, w % 4 == 0 ? ATTN_CHECK_GEN_LSE : 0);
  }
  // alignments × (seq_q > seq_kv, ==, <), causal and a two-sided window
  static const int64_t kAlignSeqs[][2] = {{40, 17}, {17, 17}, {17, 40}, {1, 33}, {33, 1}};
  for (size_t a = 0; a < COUNT(kAlignSeqs); a++) {
    for (int align = 0; align <= 1; align++) {
      for (int win = 0; win <= 1; win++) {
        if (quick && win && a % 2) continue;
        attn_problem p =
            attn_problem_make(1, 4, 2, kAlignSeqs[a][0], kAlignSeqs[a][1], 16, 24, !win);
        const attn_options o = {
            .align = (attn_align)align, .window = win, .window_left = 5, .window_right = 2};
        add_opt(out, cap, n, p, ATTN_DIST_NORMAL, o, ATTN_CHECK_GEN_LSE);
      }
    }
  }
  // softcap: moderate scores, and huge ones (LARGE: |s| ~ 1e4, capped at 50 or 5)
  add_opt(out, cap, n, attn_problem_make(1, 2, 2, 33, 47, 64, 64, false), ATTN_DIST_NORMAL,
          (attn_options){.softcap = 1.5f}, 0);
  add_opt(out, cap, n, attn_problem_make(2, 4, 2, 31, 31, 64, 64, true), ATTN_DIST_LARGE,
          (attn_options){.softcap = 50.0f}, ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 2, 1, 17, 64, 128, 64, false), ATTN_DIST_LARGE,
          (attn_options){.softcap = 5.0f}, 0);
  // ALiBi: the max_bias rule for a power-of-two and another head count, explicit slopes
  add_opt(out, cap, n, attn_problem_make(1, 8, 2, 45, 45, 32, 32, true), ATTN_DIST_NORMAL,
          (attn_options){.alibi_max_bias = 8.0f}, 0);
  add_opt(out, cap, n, attn_problem_make(1, 6, 3, 20, 57, 16, 16, false), ATTN_DIST_UNIFORM,
          (attn_options){.alibi_max_bias = 8.0f}, ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(2, 4, 4, 57, 20, 33, 16, true), ATTN_DIST_NORMAL,
          (attn_options){.align = ATTN_ALIGN_TOP_LEFT}, ATTN_CHECK_GEN_SLOPES);
  // sinks: plain, dominating, on rows that see nothing (causal seq_q > seq_kv, a window
  // that leaves the top rows empty, a mask with all −inf rows)
  add_opt(out, cap, n, attn_problem_make(1, 4, 2, 31, 31, 32, 32, false), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 4, 1, 16, 40, 32, 32, true), ATTN_DIST_UNIFORM,
          (attn_options){0}, ATTN_CHECK_GEN_SINKS_HIGH);
  add_opt(out, cap, n, attn_problem_make(1, 2, 2, 40, 16, 16, 16, true), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 2, 2, 40, 16, 16, 16, false), ATTN_DIST_NORMAL,
          (attn_options){.window = true, .window_left = 2, .window_right = 0},
          ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 2, 1, 24, 24, 16, 16, false), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  // additive masks: broadcast and per (batch, head), with −inf entries and rows
  add_opt(out, cap, n, attn_problem_make(1, 4, 2, 29, 37, 32, 16, false), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_MASK);
  add_opt(out, cap, n, attn_problem_make(2, 2, 1, 37, 29, 16, 32, true), ATTN_DIST_UNIFORM,
          (attn_options){.mask_per_head = true}, ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  // LSE alone
  add_opt(out, cap, n, attn_problem_make(2, 4, 2, 33, 65, 64, 64, true), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 2, 2, 1, 300, 64, 64, false), ATTN_DIST_LARGE,
          (attn_options){0}, ATTN_CHECK_GEN_LSE);
  // everything at once
  add_opt(out, cap, n, attn_problem_make(2, 4, 2, 70, 90, 32, 48, true), ATTN_DIST_NORMAL,
          (attn_options){.window = true,
                         .window_left = 32,
                         .window_right = 0,
                         .softcap = 20.0f,
                         .alibi_max_bias = 8.0f,
                         .align = ATTN_ALIGN_TOP_LEFT},
          ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 6, 2, 90, 70, 64, 64, false), ATTN_DIST_UNIFORM,
          (attn_options){.window = true,
                         .window_left = 16,
                         .window_right = 16,
                         .softcap = 2.0f,
                         .mask_per_head = true},
          ATTN_CHECK_GEN_SLOPES | ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
}

// 5. The low-precision K/V types (attn.h, "K/V element types"): MHA, GQA decode, MQA
//    with dv != dqk, cross both ways, large scores, and the options, for each type (q8_0
//    needs head dims that are multiples of 32; f16 and bf16 also get odd ones).
static void kv_type_cases(bool quick, attn_check_case *out, size_t cap, size_t *n) {
  static const attn_dtype kTypes[] = {ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_Q8_0};
  for (size_t t = 0; t < COUNT(kTypes); t++) {
    const bool q8 = kTypes[t] == ATTN_DTYPE_Q8_0;
    attn_problem ps[] = {
        attn_problem_make(1, 4, 4, 33, 100, 64, 64, false),
        attn_problem_make(2, 8, 2, 1, 257, 128, 128, false),
        attn_problem_make(1, 4, 1, 64, 64, 32, 64, true),
        attn_problem_make(1, 2, 2, 100, 7, q8 ? 96 : 33, q8 ? 32 : 16, true),
        attn_problem_make(1, 2, 1, 7, 100, q8 ? 32 : 3, q8 ? 128 : 5, false),
        attn_problem_make(1, 2, 1, 33, 64, 64, 64, true),
    };
    for (size_t i = 0; i < COUNT(ps); i++) {
      if (quick && i % 2) continue;
      ps[i].kv_dtype = kTypes[t];
      add(out, cap, n, ps[i], i == 5 ? ATTN_DIST_LARGE : (attn_dist)((i + t) % 2));
    }
    attn_problem p = attn_problem_make(2, 4, 2, 70, 90, 32, 64, true);
    p.kv_dtype = kTypes[t];
    add_opt(out, cap, n, p, ATTN_DIST_NORMAL,
            (attn_options){.window = true, .window_left = 32, .window_right = 0, .softcap = 20.0f},
            ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  }
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
  options_cases(quick, out, cap, &n);
  kv_type_cases(quick, out, cap, &n);
  return n;
}

void attn_check_case_describe(const attn_check_case *c, char *buf, size_t len) {
  const attn_problem *p = &c->problem;
  const double default_scale = 1.0 / sqrt((double)p->head_dim_qk);
  char scale[32] = "";
  if (fabs((double)p->scale - default_scale) > 1e-7 * default_scale)
    snprintf(scale, sizeof scale, " scale=%g", p->scale);
  char kv[16] = "";
  if (p->kv_dtype != ATTN_DTYPE_F32)
    snprintf(kv, sizeof kv, " kv=%s", attn_dtype_name(p->kv_dtype));
  int w = snprintf(buf, len, "B%lld H%lld KV%lld Sq%lld Skv%lld Dqk%lld Dv%lld %s %s%s%s",
                   (long long)p->batch, (long long)p->heads, (long long)p->kv_heads,
                   (long long)p->seq_q, (long long)p->seq_kv, (long long)p->head_dim_qk,
                   (long long)p->head_dim_v, p->causal ? "causal" : "full", attn_dist_name(c->dist),
                   scale, kv);
  const attn_options *o = p->opts ? p->opts : &c->opts;
  const uint32_t gen = p->opts ? 0 : c->gen;
  char opt[200] = "", *at = opt;
  const char *end = opt + sizeof opt;
#define OPT_APPEND(...) \
  (at += snprintf(at, (size_t)(end - at), __VA_ARGS__), at = at < end ? at : (char *)end - 1)
  if (o->window) {
    OPT_APPEND(" window=");
    if (o->window_left == ATTN_WINDOW_UNBOUNDED)
      OPT_APPEND("inf");
    else
      OPT_APPEND("%lld", (long long)o->window_left);
    if (o->window_right == ATTN_WINDOW_UNBOUNDED)
      OPT_APPEND(",inf");
    else
      OPT_APPEND(",%lld", (long long)o->window_right);
  }
  if (o->align == ATTN_ALIGN_TOP_LEFT) OPT_APPEND(" align=top-left");
  if (o->softcap > 0.0f) OPT_APPEND(" softcap=%g", (double)o->softcap);
  if (o->alibi_max_bias > 0.0f) OPT_APPEND(" alibi=%g", (double)o->alibi_max_bias);
  if (o->alibi_slopes || gen & ATTN_CHECK_GEN_SLOPES) OPT_APPEND(" alibi-slopes");
  if (o->sinks || gen & ATTN_CHECK_GEN_SINKS) OPT_APPEND(" sinks");
  if (gen & ATTN_CHECK_GEN_SINKS_HIGH) OPT_APPEND(" sinks-high");
  if (o->mask || gen & ATTN_CHECK_GEN_MASK) OPT_APPEND(o->mask_per_head ? " mask/head" : " mask");
  if (o->lse || gen & ATTN_CHECK_GEN_LSE) OPT_APPEND(" lse");
#undef OPT_APPEND
  if (w >= 0 && (size_t)w < len) snprintf(buf + w, len - (size_t)w, "%s", opt);
}

// ── Prepared cases: reference output and tolerance ──────────────────────────────────

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
  free(pc->ks);
  free(pc->vs);
  free(pc->k32);
  free(pc->v32);
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
const double *attn_check_reference_lse(const attn_check_prepared *pc) {
  return pc->lse_ref;
}
const attn_problem *attn_check_problem(const attn_check_prepared *pc) {
  return &pc->p;
}

// Tolerance of every output element of one query row (see check.h). The row's keys are
// key[0..n) (indices into K/V); key[n] == -1 is the sink when has_sink (score sink, value
// 0). s[j], prob[j], e[j]: final double score, reference probability and score-error
// bound of entry j. tol_score[d] gets the score part of the bound before it is capped at
// spread[d], the spread of the visible V values (check.h, "When the bound says nothing").
// *lse and *lse_tol get the row's LSE (double) and its tolerance.
static void row_tolerance(const attn_problem *p, const attn_head_opts *ho, int64_t i,
                          const float *qrow, const float *kh, const float *vh, const int64_t *key,
                          int64_t n, double *s, double *prob, double *e, double *tol_row,
                          double *tol_score, double *spread, double *lse, double *lse_tol) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v;
  const double scale = fabs((double)p->scale);
  const int64_t n_all = n + (ho->has_sink ? 1 : 0);
  double m = -INFINITY;
  for (int64_t t = 0; t < n; t++) {
    const int64_t j = key[t];
    double dot = 0.0, absdot = 0.0, abssum = 0.0;
    for (int64_t c = 0; c < dqk; c++) {
      const double qt = (double)qrow[c], kt = (double)kh[j * dqk + c];
      const double x = qt * kt;
      dot += x;
      absdot += fabs(x);
      abssum += fabs(qt) + fabs(kt);
    }
    double x = (double)p->scale * dot;
    double et = (double)(dqk + 2) * U32 * scale * absdot                               // rounding
                + 2.0 * FLT_MIN_D * (1.0 + scale) * (abssum + (double)(2 * dqk + 2));  // DAZ/FTZ
    if (ho->softcap > 0.0f) {  // tanh' ≤ 1: et carries over; argument, tanh, × c
      const double c = (double)ho->softcap;
      const double capped = c * tanh(x / c);
      et += 2.0 * U32 * fabs(x) + (2.0 * ATTN_CHECK_TANH_ULP + 1.0) * U32 * fabs(capped) +
            2.0 * FLT_MIN_D * (1.0 + c);
      x = capped;
    }
    if (ho->slope != 0.0f) {
      const double bias = (double)ho->slope * (double)(j - i - ho->off);
      x += bias;
      et += 3.0 * U32 * fabs(bias) + U32 * fabs(x);
    }
    if (ho->mask) {
      x += (double)ho->mask[(size_t)i * (size_t)p->seq_kv + (size_t)j];
      et += U32 * fabs(x);
    }
    s[t] = x;
    e[t] = et;
    if (x > m) m = x;
  }
  const double m_keys = m;
  if (ho->has_sink) {
    s[n] = (double)ho->sink;
    e[n] = 0.0;
    if (s[n] > m) m = s[n];
  }
  // the shift a kernel subtracts: the key maximum or the maximum with the sink
  const double m_abs = fmax(fabs(m), fabs(m_keys));
  double l = 0.0, l_keys = 0.0, e_max = 0.0, e_max_keys = 0.0;
  for (int64_t t = 0; t < n_all; t++) {
    e[t] += 2.0 * U32 * (fabs(s[t]) + m_abs);
    if (e[t] > e_max) e_max = e[t];
    if (t < n && e[t] > e_max_keys) e_max_keys = e[t];
    prob[t] = exp(s[t] - m);
    l += prob[t];
    if (t < n) l_keys += exp(s[t] - m_keys);
  }
  const double log_l = log(l);
  for (int64_t t = 0; t < n_all; t++) prob[t] /= l;
  const double acc_ulps = (3.0 * (double)n_all + ATTN_CHECK_EXP_ULP + 8.0) * U32;
  *lse = m_keys + log(l_keys);
  *lse_tol = e_max_keys + acc_ulps + 8.0 * U32 * (1.0 + log((double)n)) + 2.0 * U32 * fabs(*lse) +
             4.0 * (double)n * FLT_MIN_D;
  for (int64_t d = 0; d < dv; d++) {
    double o = 0.0;
    for (int64_t t = 0; t < n; t++) o += prob[t] * (double)vh[key[t] * dv + d];
    double first = 0.0, exact = 0.0, mag = 0.0, vmax = 0.0, vsum = 0.0, r = 0.0;
    for (int64_t t = 0; t < n_all; t++) {
      const double vj = t < n ? (double)vh[key[t] * dv + d] : 0.0;  // the sink: value 0
      first += prob[t] * e[t] * fabs(vj - o);
      // p_j·(e^(E_j+E_max) − 1), in log space where p_j underflows
      const double x = e[t] + e_max;
      exact += fabs(vj - o) * (prob[t] > 1e-300 ? prob[t] * expm1(x) : exp(s[t] - m - log_l + x));
      mag += prob[t] * fabs(vj);
      vsum += fabs(vj);
      if (fabs(vj) > vmax) vmax = fabs(vj);
      if (fabs(vj - o) > r) r = fabs(vj - o);
    }
    const double ftz = 2.0 * FLT_MIN_D * (3.0 * (double)n_all + 2.0 + vsum + (double)n_all * vmax);
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
static attn_problem f32_view(const attn_problem *p) {
  attn_problem f = *p;
  f.kv_dtype = ATTN_DTYPE_F32;
  return f;
}

static bool run_reference_on(attn_check_prepared *pc, const float *k, const float *v, float *out,
                             char *err, size_t err_len);

static bool run_reference(attn_check_prepared *pc, char *err, size_t err_len) {
  return run_reference_on(pc, pc->k, pc->v, pc->ref, err, err_len);
}

static bool run_reference_on(attn_check_prepared *pc, const float *k, const float *v, float *out,
                             char *err, size_t err_len) {
  const attn_kernel *ref = attn_kernel_find("reference");
  if (!ref) {
    if (err && err_len) snprintf(err, err_len, "the reference kernel is not registered");
    return false;
  }
  static const attn_exec kExec = {0};
  attn_problem p = f32_view(&pc->p);  // K and V: float32 copies of the stored values
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
  const int rc = ref->run(&p, &kExec, pc->q, k, v, out, ws);
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
  const bool ok = run_reference_on(pc, pc->k32, pc->v32, o32, err, err_len);
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

// Reference output, the tolerance, and what stops a case from being conclusive.
static bool finish_prepare(attn_check_prepared *pc, char *err, size_t err_len) {
  const attn_problem *p = &pc->p;
  const attn_problem pf = f32_view(p);
  if (attn_inputs_check(&pf, pc->q, pc->k, pc->v, pc->domain, sizeof pc->domain) == ATTN_OK)
    pc->domain[0] = '\0';
  if (!run_reference(pc, err, err_len)) return false;
  const size_t n_kv = (size_t)p->seq_kv + 1, dv = (size_t)p->head_dim_v;  // + the sink
  const int64_t rows = p->batch * p->heads * p->seq_q;
  // Rows are independent: in parallel, each thread with its own scratch. The weak-bound
  // bookkeeping keeps the count and the lowest index (as a serial pass would report it).
  size_t n_weak = 0, first_weak = SIZE_MAX;
  double weak_tol = 0.0, weak_spread = 0.0;
  bool oom = false;
#pragma omp parallel reduction(+ : n_weak)
  {
    double *scratch = malloc((3 * n_kv + 2 * dv) * sizeof(double));
    int64_t *key = malloc(n_kv * sizeof *key);
    size_t my_first = SIZE_MAX;
    double my_tol = 0.0, my_spread = 0.0;
    if (!scratch || !key) {
#pragma omp atomic write
      oom = true;
    }
#pragma omp for schedule(dynamic, 8)
    for (int64_t r = 0; r < rows; r++) {
      if (!scratch || !key) continue;
      const int64_t bh = r / p->seq_q, b = bh / p->heads, h = bh % p->heads, i = r % p->seq_q;
      double *tol_score = scratch + 3 * n_kv, *spread = tol_score + dv;
      const int64_t g = attn_kv_head_of(p, h);
      const float *qh = attn_q_head(p, pc->q, b, h);
      const float *kh = attn_k_head(p, pc->k, b, g);
      const float *vh = attn_v_head(p, pc->v, b, g);
      const size_t o_off = (size_t)(attn_o_head(p, pc->ref, b, h) - pc->ref);
      const attn_head_opts ho = attn_head_opts_of(p, b, h);
      const size_t lse_off = (size_t)bh * (size_t)p->seq_q;
      const size_t row_off = o_off + (size_t)i * dv;
      double *tol_row = pc->tol + row_off;
      int64_t lo, hi, n = 0;  // the row's keys: in range and not masked by −inf
      attn_row_keys(p, i, &lo, &hi);
      for (int64_t j = lo; j < hi; j++)
        if (!ho.mask || ho.mask[(size_t)i * (size_t)p->seq_kv + (size_t)j] != -INFINITY)
          key[n++] = j;
      if (n == 0) {  // no visible key: the output must be exactly zero, LSE −inf
        for (size_t d = 0; d < dv; d++) tol_row[d] = 0.0;
        if (pc->lse_ref) pc->lse_ref[lse_off + (size_t)i] = -INFINITY;
        if (pc->lse_tol) pc->lse_tol[lse_off + (size_t)i] = 0.0;
        continue;
      }
      double lse, lse_tol;
      row_tolerance(p, &ho, i, qh + i * p->head_dim_qk, kh, vh, key, n, scratch, scratch + n_kv,
                    scratch + 2 * n_kv, tol_row, tol_score, spread, &lse, &lse_tol);
      if (pc->lse_ref) pc->lse_ref[lse_off + (size_t)i] = lse;
      if (pc->lse_tol) pc->lse_tol[lse_off + (size_t)i] = lse_tol;
      for (size_t d = 0; d < dv; d++) {
        // Uninformative: the score part of the bound reaches the largest error any
        // convex combination of the visible V rows could have, where the choice of
        // weights matters beyond rounding (spread above the rest of the bound).
        const double rest = tol_row[d] - fmin(tol_score[d], spread[d]);
        if (!(tol_score[d] < spread[d]) && spread[d] > rest) {
          n_weak++;
          if (row_off + d < my_first) {
            my_first = row_off + d;
            my_tol = tol_score[d];
            my_spread = spread[d];
          }
        }
      }
    }
#pragma omp critical(attn_check_weak)
    if (my_first < first_weak) {
      first_weak = my_first;
      weak_tol = my_tol;
      weak_spread = my_spread;
    }
    free(scratch);
    free(key);
  }
  if (oom) {
    if (err && err_len) snprintf(err, err_len, "out of memory computing tolerances");
    return false;
  }
  pc->n_weak = n_weak;
  if (n_weak) {
    pc->first_weak = first_weak;
    pc->weak_tol = weak_tol;
    pc->weak_spread = weak_spread;
  }
  pc->ref_max_abs = 0.0;
  pc->n_nonfinite_ref = 0;
  for (size_t i = 0; i < attn_o_elems(p); i++) {
    if (!isfinite(pc->ref[i]) || !isfinite(pc->tol[i])) {
      if (!pc->n_nonfinite_ref++) pc->first_nonfinite_ref = i;
      continue;
    }
    if (fabs((double)pc->ref[i]) > pc->ref_max_abs) pc->ref_max_abs = fabs((double)pc->ref[i]);
  }
  return storage_error(pc, err, err_len);
}

// The generated option arrays of a case (attn_check_case.gen), from its seed.
static void gen_mask(const attn_problem *p, float *mask, size_t n, uint64_t seed) {
  uint64_t st = seed;
  const size_t skv = (size_t)p->seq_kv, sq = (size_t)p->seq_q;
  for (size_t t = 0; t < n; t++) {
    const size_t i = t / skv % sq;
    const double u = uniform01(&st), r = normal01(&st);
    mask[t] = (i % 7 == 3 || u < 0.15) ? -INFINITY : (float)(2.0 * r);
  }
}

attn_check_prepared *attn_check_prepare(const attn_check_case *c, char *err, size_t err_len) {
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
      for (size_t t = 0; t < h; t++) slopes[t] = (float)(1.25 * uniform01(&st) - 0.25);
      o.alibi_slopes = slopes;
    }
    if (c->gen & (ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_SINKS_HIGH) &&
        (sinks = malloc(h * sizeof(float)))) {
      uint64_t st = c->seed * 7 + 6;
      const bool high = c->gen & ATTN_CHECK_GEN_SINKS_HIGH;
      for (size_t t = 0; t < h; t++) sinks[t] = (float)((high ? 30.0 : 0.0) + 2.0 * normal01(&st));
      o.sinks = sinks;
    }
    if (c->gen & ATTN_CHECK_GEN_MASK && attn_problem_validate(&p, NULL, 0)) {
      const size_t n = (o.mask_per_head ? (size_t)p.batch * (size_t)p.heads : 1) * (size_t)p.seq_q *
                       (size_t)p.seq_kv;
      if ((mask = malloc(n * sizeof(float)))) {
        gen_mask(&p, mask, n, c->seed * 7 + 4);
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

attn_check_prepared *attn_check_prepare_inputs(const attn_problem *p, const float *q, const void *k,
                                               const void *v, char *err, size_t err_len) {
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

attn_check_prepared *attn_check_prepare_convert(const attn_problem *p, const float *q,
                                                const float *k32, const float *v32, char *err,
                                                size_t err_len) {
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
  return attn_check_output_lse(pc, o, NULL, r);
}

// LSE outputs beyond tolerance or non-finite where the reference is finite; -inf must be
// exactly -inf. Returns the count and the first bad index in *first.
static size_t lse_mismatches(const attn_check_prepared *pc, const float *lse, size_t *first) {
  const size_t n = (size_t)pc->p.batch * (size_t)pc->p.heads * (size_t)pc->p.seq_q;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const double want = pc->lse_ref[i], got = (double)lse[i];
    const bool ok = want == -INFINITY ? got == -INFINITY
                                      : (isfinite(got) && fabs(got - want) <= pc->lse_tol[i]);
    if (!ok && !bad++) *first = i;
  }
  return bad;
}

bool attn_check_output_lse(const attn_check_prepared *pc, const float *o, const float *lse,
                           attn_check_result *r) {
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
  // The LSE output, with its own guard zones, when the case checks it.
  const size_t n_lse =
      pc->lse_ref ? (size_t)pc->p.batch * (size_t)pc->p.heads * (size_t)pc->p.seq_q : 0;
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
  const int rc = attn_kernel_call(k, &p, exec, pc->q, kk, vv, o, err, sizeof err);
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
  attn_check_output_lse(pc, o, lse_buf ? lse_buf + kGuard : NULL, r);
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
