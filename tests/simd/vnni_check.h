// SPDX-License-Identifier: MIT
// vnni_check.h — the checks of an INT8 flash kernel's compute mode (attn.h, "Compute
// modes"; docs/low-precision-kernels.md), shared by test_flash_vnni.c (flash__avx512vnni),
// test_flash_avxvnni.c (flash__avxvnni and its test twin) and test_flash_avx2int8.c. A
// test includes it once (static state: the random stream and the block dots under test)
// and calls:
//   • vnni_block_dots(dots, rows, keys): the kernel's exported integer block dots (vpdpbusd
//     with the +128 offset on K, or vpmaddubsw's sign form) equal the contract's Σ_t q_t·k_t
//     exactly, for extreme bytes (±127, all −127, zero blocks, K bytes −128), random
//     blocks, 1..rows rows, 1..keys keys (tails), 1–5 blocks;
//   • vnni_checker_fails_bugs(dots, keys): test kernels built on those dots with one bug
//     each — K's bytes read as unsigned (no offset correction: the signed/unsigned mix-up)
//     and every block scaled by block 0's d_k — fail the checker, while the same kernel
//     without the bug passes;
//   • vnni_shapes(k, quick): the checker (the INT8 reference over Q8_0-quantized Q) passes
//     the kernel natively over decode (MHA, GQA 2/3/4 rows per K/V head, MQA 8 rows),
//     split-KV (automatic and kv_split 3), causal prefill with rows that see nothing,
//     cross lengths, head dims 32–160 and head_dim_v ≠ head_dim_qk, negative and tiny
//     scale; 1 and 2 threads give bitwise the same output, nothing is written past O;
//   • vnni_f32_mode(k, f32k): F32 mode is f32k's, bitwise;
//   • vnni_refused(k, unit): without its unit k is unavailable and refused, O untouched;
//   • vnni_same_outputs(a, b): two kernels of the same arithmetic agree bitwise.
#pragma once

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "flash/flash_vnni.h"
#include "test_util.h"

enum { kGuard = 64 };
static const float kSentinel = 1234.5f;

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 32);
}
static float urand(void) {  // uniform in [-1, 1)
  return (float)(rnd() >> 8) * 0x1p-23f - 1.0f;
}

// ── The integer block dots, exactly ─────────────────────────────────────────────────
static int8_t byte_of(int kind) {
  switch (kind) {
    case 0:
      return 127;
    case 1:
      return -127;
    case 2:
      return 0;
    default:
      return (int8_t)((int)(rnd() % 255) - 127);
  }
}

static void vnni_block_dots(flash_vnni_dots_fn *dots, int max_rows, int max_keys) {
  enum { kMaxNb = 5, kMaxRows = 4, kMaxKeys = 16 };
  attn_block_q8_0 q[kMaxRows * kMaxNb], kk[kMaxKeys * kMaxNb];
  int32_t out[kMaxRows * kMaxKeys * kMaxNb];
  if (max_rows > kMaxRows || max_keys > kMaxKeys) {
    EXPECT(0, "block dots: %d rows × %d keys is beyond the test's buffers", max_rows, max_keys);
    return;
  }
  int cases = 0;
  // all +127, all −127, zeros, random, ±127 mixed ×2, and K's bytes −128 or ±127 against
  // Q's ±127 (−128 is a byte a stored cache may hold, though the quantizer never writes it)
  for (int kind = 0; kind < 7; kind++)
    for (int nb = 1; nb <= kMaxNb; nb += 2)
      for (int nrows = 1; nrows <= max_rows; nrows++)
        for (int nk = 1; nk <= max_keys; nk += (nk < 4 ? 1 : 5)) {
          for (int i = 0; i < nrows * nb; i++)
            for (int t = 0; t < 32; t++)
              q[i].qs[t] = kind < 4 ? byte_of(kind) : (rnd() & 1 ? 127 : -127);
          for (int i = 0; i < nk * nb; i++) {
            kk[i].d = 0x3c00;  // 1.0: not read by the dots
            for (int t = 0; t < 32; t++)
              kk[i].qs[t] = kind < 4    ? byte_of(kind == 0 ? 1 : kind)
                            : kind == 6 ? (int8_t)(rnd() % 3   ? -128
                                                   : rnd() & 1 ? 127
                                                               : -127)
                                        : (rnd() & 1 ? 127 : -127);
          }
          dots(nrows, q, nb, kk, (size_t)nb * sizeof(attn_block_q8_0), nk, out);
          for (int r = 0; r < nrows; r++)
            for (int c = 0; c < nk; c++)
              for (int b = 0; b < nb; b++) {
                int32_t want = 0;
                for (int t = 0; t < 32; t++) want += q[r * nb + b].qs[t] * kk[c * nb + b].qs[t];
                const int32_t got = out[(r * nk + c) * nb + b];
                EXPECT(got == want,
                       "dots kind %d nb %d rows %d keys %d: row %d key %d block %d: %d, want %d",
                       kind, nb, nrows, nk, r, c, b, got, want);
              }
          cases++;
        }
  printf("block dots: %d cases exact\n", cases);
}

// ── Test kernels on the same dots, with or without one bug ──────────────────────────
typedef enum { kHonest, kUnsignedK, kBlock0Scale } bug;

static flash_vnni_dots_fn *g_dots;  // the dots the test kernels run on, g_dots_keys keys at a time
static int g_dots_keys;

// O = softmax(scale·S)·V in double over float32 scores S = Σ_b fma(I_b, d_q·d_k, ·) with
// I_b from g_dots, bent by the bug.
static int dots_kernel(const attn_problem *p, const float *q, const void *kv, const void *vv,
                       float *o, bug which) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, nb = dqk / 32,
                hpg = p->heads / p->kv_heads;
  const size_t krb = attn_kv_row_bytes(ATTN_DTYPE_Q8_0, dqk),
               vrb = attn_kv_row_bytes(ATTN_DTYPE_Q8_0, dv);
  attn_block_q8_0 *qb = malloc((size_t)nb * sizeof *qb);
  int32_t *dots = malloc((size_t)(g_dots_keys * nb) * sizeof *dots);
  double *s = malloc((size_t)p->seq_kv * sizeof *s), *acc = malloc((size_t)dv * sizeof *acc);
  float *vrow = malloc((size_t)dv * sizeof *vrow);
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads; h++)
      for (int64_t i = 0; i < p->seq_q; i++) {
        const size_t head = (size_t)(b * p->kv_heads + h / hpg) * (size_t)p->seq_kv;
        const char *kh = (const char *)kv + head * krb, *vh = (const char *)vv + head * vrb;
        attn_quantize_q8_0_row(q + ((b * p->heads + h) * p->seq_q + i) * dqk, dqk, qb);
        int64_t lo, hi;
        attn_row_keys(p, i, &lo, &hi);
        double mx = -INFINITY;
        for (int64_t j0 = lo; j0 < hi; j0 += g_dots_keys) {
          const int nk = (int)(hi - j0 < g_dots_keys ? hi - j0 : g_dots_keys);
          g_dots(1, qb, nb, kh + (size_t)j0 * krb, krb, nk, dots);
          for (int c = 0; c < nk; c++) {
            const attn_block_q8_0 *kr = (const attn_block_q8_0 *)(kh + (size_t)(j0 + c) * krb);
            float acc32 = 0.0f;
            for (int64_t x = 0; x < nb; x++) {
              int32_t dot = dots[c * nb + x];
              if (which == kUnsignedK)  // k < 0 read as k + 256
                for (int t = 0; t < 32; t++) dot += kr[x].qs[t] < 0 ? 256 * qb[x].qs[t] : 0;
              const uint16_t dk = which == kBlock0Scale ? kr[0].d : kr[x].d;
              acc32 = fmaf((float)dot, attn_f16_to_f32(qb[x].d) * attn_f16_to_f32(dk), acc32);
            }
            s[j0 + c] = (double)(p->scale * acc32);
            mx = s[j0 + c] > mx ? s[j0 + c] : mx;
          }
        }
        double l = 0.0;
        for (int64_t e = 0; e < dv; e++) acc[e] = 0.0;
        for (int64_t j = lo; j < hi; j++) {
          const double w = exp(s[j] - mx);
          l += w;
          attn_dequantize_row(ATTN_DTYPE_Q8_0, vh + (size_t)j * vrb, dv, vrow);
          for (int64_t e = 0; e < dv; e++) acc[e] += w * vrow[e];
        }
        float *oi = o + ((b * p->heads + h) * p->seq_q + i) * dv;
        for (int64_t e = 0; e < dv; e++) oi[e] = l > 0.0 ? (float)(acc[e] / l) : 0.0f;
      }
  free(qb), free(dots), free(s), free(acc), free(vrow);
  return ATTN_OK;
}

#define DOTS_KERNEL(id, which)                                                                  \
  static int id##_run(const attn_problem *p, const attn_exec *e, const float *q, const void *k, \
                      const void *v, float *o, void *ws) {                                      \
    (void)e, (void)ws;                                                                          \
    return dots_kernel(p, q, k, v, o, which);                                                   \
  }                                                                                             \
  static const attn_kernel id = {                                                               \
      .name = #id,                                                                              \
      .summary = "test kernel",                                                                 \
      .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_KV_Q8_0 | ATTN_CAP_COMPUTE_INT8,                   \
      .run = id##_run};
DOTS_KERNEL(dots_honest, kHonest)
DOTS_KERNEL(dots_unsigned_k, kUnsignedK)
DOTS_KERNEL(dots_block0_scale, kBlock0Scale)

// Inputs for the checker: Q and V uniform, K's blocks scaled 1×, 4×, 16× apart (so a wrong
// block scale moves the scores by far more than the bound), K/V stored as q8_0.
static attn_check_prepared *prepare(const attn_problem *p, float amp) {
  const size_t nq = attn_q_elems(p), nk = attn_k_elems(p), nv = attn_v_elems(p);
  float *q = malloc(nq * 4), *kf = malloc(nk * 4), *vf = malloc(nv * 4);
  for (size_t i = 0; i < nq; i++) q[i] = amp * urand();
  for (size_t i = 0; i < nk; i++) kf[i] = amp * urand() * (float)(1 << 2 * ((i / 32) % 3));
  for (size_t i = 0; i < nv; i++) vf[i] = urand();
  char err[256];
  attn_check_prepared *pc = attn_check_prepare_convert(p, q, kf, vf, err, sizeof err);
  EXPECT(pc != NULL, "cannot prepare: %s", err);
  free(q), free(kf), free(vf);
  return pc;
}

// A decode and a small causal case.
static void vnni_checker_fails_bugs(flash_vnni_dots_fn *dots, int keys) {
  g_dots = dots, g_dots_keys = keys;
  attn_problem ps[2] = {attn_problem_make(1, 4, 2, 1, 300, 96, 64, false),
                        attn_problem_make(1, 2, 1, 20, 20, 64, 32, true)};
  for (int i = 0; i < 2; i++) {
    ps[i].kv_dtype = ATTN_DTYPE_Q8_0, ps[i].compute = ATTN_COMPUTE_INT8;
    attn_check_prepared *pc = prepare(&ps[i], 0.5f);
    if (!pc) continue;
    attn_check_result r;
    EXPECT(attn_check_kernel(&dots_honest, pc, NULL, &r), "case %d: honest dots kernel: %s", i,
           r.message);
    EXPECT(!attn_check_kernel(&dots_unsigned_k, pc, NULL, &r) && r.verdict == ATTN_CHECK_FAIL,
           "case %d: unsigned K (no offset correction) passed the checker", i);
    printf("case %d: unsigned K fails, %.3g × tol\n", i, r.worst_ratio);
    EXPECT(!attn_check_kernel(&dots_block0_scale, pc, NULL, &r) && r.verdict == ATTN_CHECK_FAIL,
           "case %d: block 0's d_k for every block passed the checker", i);
    printf("case %d: block-0 scale fails, %.3g × tol\n", i, r.worst_ratio);
    attn_check_prepared_free(pc);
  }
}

// ── The kernel over shapes ───────────────────────────────────────────────────────────
typedef struct vnni_shape {
  int64_t b, h, kvh, sq, skv, dqk, dv;
  bool causal;
  int kv_split;  // attn_exec.kv_split (0: the plan's own)
  float scale;   // 0: attn_problem_make's; otherwise this (−1 for a negative one)
} vnni_shape;

// The shapes, the first kVnniQuickShapes of them for --quick. Rows per group: GQA puts the
// heads of one K/V group in the rows of a task; key counts around the 8- and 16-key groups
// and the 64-key block; head_dim_v passes of every width and 16-column offsets.
static const vnni_shape kVnniShapes[] = {
    {1, 4, 4, 1, 1, 32, 32, false, 0, 0},        // one key
    {1, 4, 4, 1, 17, 64, 64, false, 0, 0},       // MHA decode, key tail
    {2, 8, 2, 1, 200, 128, 128, false, 0, 0},    // GQA 4 rows, split-KV
    {1, 6, 2, 1, 1000, 96, 160, false, 0, 0},    // 3 rows, dv ≠ dqk, passes and a tail
    {1, 4, 2, 1, 129, 64, 32, false, 3, -1.0f},  // 2 rows, kv_split 3, negative scale
    {1, 8, 1, 1, 300, 64, 64, false, 0, 0},      // MQA: 8 rows, two groups
    {1, 2, 1, 37, 37, 64, 64, true, 0, 0},       // causal prefill
    {1, 3, 3, 9, 4, 32, 64, true, 0, 0},         // cross: rows that see nothing
    {1, 2, 2, 5, 70, 160, 32, false, 0, 0},      // 5 blocks, cross
    {1, 4, 2, 2, 65, 64, 64, false, 0, 0.0f},    // key block + 1
    {1, 2, 2, 1, 64, 64, 64, false, 0, 1e-30f},  // tiny scale: all scores ≈ 0
    {1, 6, 2, 3, 7, 32, 96, true, 0, 0},         // keys below one group, 3 rows × 3
};
enum { kVnniQuickShapes = 4 };

// The shape's problem in INT8 mode on q8_0 K/V, and a label.
static attn_problem vnni_problem(const vnni_shape *c, char *what, size_t what_len) {
  attn_problem p = attn_problem_make(c->b, c->h, c->kvh, c->sq, c->skv, c->dqk, c->dv, c->causal);
  p.kv_dtype = ATTN_DTYPE_Q8_0, p.compute = ATTN_COMPUTE_INT8;
  if (c->scale != 0.0f) p.scale = c->scale < 0.0f ? -p.scale : c->scale;
  snprintf(what, what_len, "B%lld H%lld KV%lld Sq%lld Skv%lld D%lld/%lld%s split%d scale %g",
           (long long)c->b, (long long)c->h, (long long)c->kvh, (long long)c->sq, (long long)c->skv,
           (long long)c->dqk, (long long)c->dv, c->causal ? " causal" : "", c->kv_split,
           (double)p.scale);
  return p;
}

// Uniform Q (float32) and K, V quantized to q8_0, for p (malloc'd; the caller frees).
static void vnni_inputs(const attn_problem *p, float **q, void **ks, void **vs) {
  const size_t nq = attn_q_elems(p), nk = attn_k_elems(p), nv = attn_v_elems(p);
  float *kf = malloc(nk * 4), *vf = malloc(nv * 4);
  *q = malloc(nq * 4);
  for (size_t i = 0; i < nq; i++) (*q)[i] = urand();
  for (size_t i = 0; i < nk; i++) kf[i] = urand();
  for (size_t i = 0; i < nv; i++) vf[i] = urand();
  *ks = malloc(attn_k_bytes(p)), *vs = malloc(attn_v_bytes(p));
  attn_quantize_rows(ATTN_DTYPE_Q8_0, kf, nk / (size_t)p->head_dim_qk, p->head_dim_qk, *ks);
  attn_quantize_rows(ATTN_DTYPE_Q8_0, vf, nv / (size_t)p->head_dim_v, p->head_dim_v, *vs);
  free(kf), free(vf);
}

// Runs k on p with `threads` threads into a fresh O with guard sentinels past its end,
// which must stay; returns O (malloc'd).
static float *vnni_run_guarded(const attn_kernel *k, const attn_problem *p, int threads,
                               int kv_split, const float *q, const void *ks, const void *vs,
                               const char *what) {
  const size_t no = attn_o_elems(p);
  char err[256];
  float *o = malloc((no + kGuard) * sizeof(float));
  for (size_t i = 0; i < no + kGuard; i++) o[i] = kSentinel;
  const attn_exec ex = {.threads = threads, .kv_split = kv_split};
  EXPECT(attn_kernel_call(k, p, &ex, q, ks, vs, o, err, sizeof err) == ATTN_OK, "%s: %s: %s",
         k->name, what, err);
  for (size_t i = no; i < no + kGuard; i++)
    EXPECT(o[i] == kSentinel, "%s: %s: wrote past O at %zu", k->name, what, i - no);
  return o;
}

static void vnni_run_shape(const attn_kernel *k, const vnni_shape *c) {
  char what[160];
  const attn_problem p = vnni_problem(c, what, sizeof what);
  attn_check_prepared *pc = prepare(&p, 1.0f);
  if (!pc) return;
  const attn_problem *pp = attn_check_problem(pc);
  attn_check_result r;
  const attn_exec ex2 = {.threads = 2, .kv_split = c->kv_split};
  EXPECT(attn_check_kernel(k, pc, &ex2, &r) && !r.fallback, "%s: %s: %s", k->name, what, r.message);
  // 1 and 2 threads, bitwise; nothing past O. The stored inputs: Q float32, K/V q8_0.
  float *q, *o[2];
  void *ks, *vs;
  vnni_inputs(&p, &q, &ks, &vs);
  for (int t = 0; t < 2; t++) o[t] = vnni_run_guarded(k, pp, t + 1, c->kv_split, q, ks, vs, what);
  EXPECT(memcmp(o[0], o[1], attn_o_elems(&p) * sizeof(float)) == 0,
         "%s: %s: 1 and 2 threads differ", k->name, what);
  free(q), free(ks), free(vs), free(o[0]), free(o[1]);
  attn_check_prepared_free(pc);
}

static void vnni_shapes(const attn_kernel *k, bool quick) {
  const int n = (int)(sizeof kVnniShapes / sizeof kVnniShapes[0]);
  for (int i = 0; i < (quick ? kVnniQuickShapes : n); i++) vnni_run_shape(k, &kVnniShapes[i]);
}

// F32 mode (here on q8_0 K/V): bitwise f32k's.
static void vnni_f32_mode(const attn_kernel *k, const attn_kernel *f32k) {
  attn_problem p = attn_problem_make(1, 4, 2, 3, 77, 64, 32, true);
  p.kv_dtype = ATTN_DTYPE_Q8_0;
  float *q;
  void *ks, *vs;
  vnni_inputs(&p, &q, &ks, &vs);
  float *o1 = vnni_run_guarded(k, &p, 2, 0, q, ks, vs, "F32 mode");
  float *o2 = vnni_run_guarded(f32k, &p, 2, 0, q, ks, vs, "F32 mode");
  EXPECT(memcmp(o1, o2, attn_o_elems(&p) * sizeof(float)) == 0, "%s: F32 mode differs from %s",
         k->name, f32k->name);
  free(q), free(o1), free(o2), free(ks), free(vs);
}

// ── Availability and agreement ───────────────────────────────────────────────────────
// Without its unit: k is unavailable with a reason that names `unit` (as `attnbench list`
// says it), and attn_kernel_call refuses it before any of its instructions run (O untouched).
static void vnni_refused(const attn_kernel *k, const char *unit) {
  char why[128], err[256];
  EXPECT(!attn_kernel_available(k, why, sizeof why) && strstr(why, "needs") && strstr(why, unit),
         "%s without %s: available, or the reason '%s' does not name it", k->name, unit, why);
  attn_problem p = attn_problem_make(1, 2, 1, 1, 40, 32, 32, false);
  p.kv_dtype = ATTN_DTYPE_Q8_0, p.compute = ATTN_COMPUTE_INT8;
  float *q, o[64];
  void *ks, *vs;
  vnni_inputs(&p, &q, &ks, &vs);
  for (int i = 0; i < 64; i++) o[i] = kSentinel;
  const int rc = attn_kernel_call(k, &p, NULL, q, ks, vs, o, err, sizeof err);
  EXPECT(rc == ATTN_ERR_INVALID && strstr(err, "unavailable"), "%s refusal: %d '%s'", k->name, rc,
         err);
  for (int i = 0; i < 64; i++)
    EXPECT(o[i] == kSentinel, "%s: refused call wrote O[%d]", k->name, i);
  free(q), free(ks), free(vs);
  printf("%s: %s, refused\n", k->name, why);
}

// Two kernels computing the same integers and the same float arithmetic after them give
// bitwise the same outputs on every shape (2 threads). Unused where a test has one kernel.
__attribute__((unused)) static void vnni_same_outputs(const attn_kernel *a, const attn_kernel *b) {
  const int n = (int)(sizeof kVnniShapes / sizeof kVnniShapes[0]);
  for (int i = 0; i < n; i++) {
    char what[160];
    const attn_problem p = vnni_problem(&kVnniShapes[i], what, sizeof what);
    float *q;
    void *ks, *vs;
    vnni_inputs(&p, &q, &ks, &vs);
    const int split = kVnniShapes[i].kv_split;
    float *o1 = vnni_run_guarded(a, &p, 2, split, q, ks, vs, what);
    float *o2 = vnni_run_guarded(b, &p, 2, split, q, ks, vs, what);
    EXPECT(memcmp(o1, o2, attn_o_elems(&p) * sizeof(float)) == 0, "%s: %s and %s differ", what,
           a->name, b->name);
    free(q), free(ks), free(vs), free(o1), free(o2);
  }
  printf("%s: bitwise %s over %d shapes\n", a->name, b->name, n);
}
