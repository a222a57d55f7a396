// SPDX-License-Identifier: MIT
// flash__avx512vnni in the INT8 compute mode (attn.h, "Compute modes";
// docs/low-precision-kernels.md):
//   • its integer block dot products (vpdpbusd with the +128 offset on K) equal the
//     contract's Σ_t q_t·k_t exactly, for extreme bytes (±127, all −127, zero blocks),
//     random blocks, 1–4 rows, 1–16 keys (tails), 1–5 blocks;
//   • the checker (the INT8 reference over Q8_0-quantized Q) passes it natively over
//     decode (MHA, GQA 2/3/4 rows per K/V head, MQA 8 rows), split-KV (automatic and
//     kv_split 3), causal prefill with rows that see nothing, cross lengths, head dims
//     32–160 and head_dim_v ≠ head_dim_qk, negative and zero scale; 1 and 2 threads give
//     bitwise the same output, nothing is written past O; F32 mode is flash__avx512's;
//   • the checker can fail: test kernels built on the same VNNI dots with one bug each —
//     K's bytes read as unsigned (no offset correction: the signed/unsigned mix-up) and
//     every block scaled by block 0's d_k — fail it, while the same kernel without the
//     bug passes.
// Exit 77 when the CPU lacks AVX512_VNNI.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "flash/flash_avx512vnni.h"
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

static void block_dots(void) {
  enum { kMaxNb = 5 };
  attn_block_q8_0 q[FLASH_VNNI_ROWS * kMaxNb], kk[FLASH_VNNI_KEYS * kMaxNb];
  int32_t out[FLASH_VNNI_ROWS * FLASH_VNNI_KEYS * kMaxNb];
  int cases = 0;
  for (int kind = 0; kind < 6; kind++)  // all +127, all −127, zeros, random, ±127 mixed ×2
    for (int nb = 1; nb <= kMaxNb; nb += 2)
      for (int nrows = 1; nrows <= FLASH_VNNI_ROWS; nrows++)
        for (int nk = 1; nk <= FLASH_VNNI_KEYS; nk += (nk < 4 ? 1 : 5)) {
          for (int i = 0; i < nrows * nb; i++)
            for (int t = 0; t < 32; t++)
              q[i].qs[t] = kind < 4 ? byte_of(kind) : (rnd() & 1 ? 127 : -127);
          for (int i = 0; i < nk * nb; i++) {
            kk[i].d = 0x3c00;  // 1.0: not read by the dots
            for (int t = 0; t < 32; t++)
              kk[i].qs[t] = kind < 4 ? byte_of(kind == 0 ? 1 : kind) : (rnd() & 1 ? 127 : -127);
          }
          flash_avx512vnni_block_dots(nrows, q, nb, kk, (size_t)nb * sizeof(attn_block_q8_0), nk,
                                      out);
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

// O = softmax(scale·S)·V in double over float32 scores S = Σ_b fma(I_b, d_q·d_k, ·) with
// I_b from flash_avx512vnni_block_dots, bent by the bug.
static int dots_kernel(const attn_problem *p, const float *q, const void *kv, const void *vv,
                       float *o, bug which) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, nb = dqk / 32,
                hpg = p->heads / p->kv_heads;
  const size_t krb = attn_kv_row_bytes(ATTN_DTYPE_Q8_0, dqk),
               vrb = attn_kv_row_bytes(ATTN_DTYPE_Q8_0, dv);
  attn_block_q8_0 *qb = malloc((size_t)nb * sizeof *qb);
  int32_t *dots = malloc((size_t)(FLASH_VNNI_KEYS * nb) * sizeof *dots);
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
        for (int64_t j0 = lo; j0 < hi; j0 += FLASH_VNNI_KEYS) {
          const int nk = (int)(hi - j0 < FLASH_VNNI_KEYS ? hi - j0 : FLASH_VNNI_KEYS);
          flash_avx512vnni_block_dots(1, qb, nb, kh + (size_t)j0 * krb, krb, nk, dots);
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

// A decode and a small causal case, K's blocks scaled 1×, 4×, 16× apart (so a wrong block
// scale moves the scores by far more than the bound).
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

static void checker_fails_bugs(void) {
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
typedef struct shape {
  int64_t b, h, kvh, sq, skv, dqk, dv;
  bool causal;
  int kv_split;  // attn_exec.kv_split (0: the plan's own)
  float scale;   // 0: attn_problem_make's; otherwise this (−1 for a negative one)
} shape;

static void run_shape(const attn_kernel *k, const shape *c) {
  attn_problem p = attn_problem_make(c->b, c->h, c->kvh, c->sq, c->skv, c->dqk, c->dv, c->causal);
  p.kv_dtype = ATTN_DTYPE_Q8_0, p.compute = ATTN_COMPUTE_INT8;
  if (c->scale != 0.0f) p.scale = c->scale < 0.0f ? -p.scale : c->scale;
  char what[160], err[256];
  snprintf(what, sizeof what, "B%lld H%lld KV%lld Sq%lld Skv%lld D%lld/%lld%s split%d scale %g",
           (long long)c->b, (long long)c->h, (long long)c->kvh, (long long)c->sq, (long long)c->skv,
           (long long)c->dqk, (long long)c->dv, c->causal ? " causal" : "", c->kv_split,
           (double)p.scale);
  attn_check_prepared *pc = prepare(&p, 1.0f);
  if (!pc) return;
  const attn_problem *pp = attn_check_problem(pc);
  attn_check_result r;
  const attn_exec ex2 = {.threads = 2, .kv_split = c->kv_split};
  EXPECT(attn_check_kernel(k, pc, &ex2, &r) && !r.fallback, "%s: %s", what, r.message);
  // 1 and 2 threads, bitwise; nothing past O. The stored inputs: Q float32, K/V q8_0.
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  const size_t no = attn_o_elems(&p);
  float *q = malloc(nq * 4), *kf = malloc(nk * 4), *vf = malloc(nv * 4);
  for (size_t i = 0; i < nq; i++) q[i] = urand();
  for (size_t i = 0; i < nk; i++) kf[i] = urand();
  for (size_t i = 0; i < nv; i++) vf[i] = urand();
  void *ks = malloc(attn_k_bytes(&p)), *vs = malloc(attn_v_bytes(&p));
  attn_quantize_rows(ATTN_DTYPE_Q8_0, kf, nk / (size_t)c->dqk, c->dqk, ks);
  attn_quantize_rows(ATTN_DTYPE_Q8_0, vf, nv / (size_t)c->dv, c->dv, vs);
  float *o[2];
  for (int t = 0; t < 2; t++) {
    o[t] = malloc((no + kGuard) * sizeof(float));
    for (size_t i = 0; i < no + kGuard; i++) o[t][i] = kSentinel;
    const attn_exec ex = {.threads = t + 1, .kv_split = c->kv_split};
    EXPECT(attn_kernel_call(k, pp, &ex, q, ks, vs, o[t], err, sizeof err) == ATTN_OK, "%s: %s",
           what, err);
    for (size_t i = no; i < no + kGuard; i++)
      EXPECT(o[t][i] == kSentinel, "%s: wrote past O at %zu", what, i - no);
  }
  EXPECT(memcmp(o[0], o[1], no * sizeof(float)) == 0, "%s: 1 and 2 threads differ", what);
  free(q), free(kf), free(vf), free(ks), free(vs), free(o[0]), free(o[1]);
  attn_check_prepared_free(pc);
}

// F32 mode (here on q8_0 K/V): bitwise flash__avx512.
static void f32_mode(const attn_kernel *k, const attn_kernel *f32k) {
  attn_problem p = attn_problem_make(1, 4, 2, 3, 77, 64, 32, true);
  p.kv_dtype = ATTN_DTYPE_Q8_0;
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  const size_t no = attn_o_elems(&p);
  float *q = malloc(nq * 4), *kf = malloc(nk * 4), *vf = malloc(nv * 4);
  float *o1 = malloc(no * 4), *o2 = malloc(no * 4);
  for (size_t i = 0; i < nq; i++) q[i] = urand();
  for (size_t i = 0; i < nk; i++) kf[i] = urand();
  for (size_t i = 0; i < nv; i++) vf[i] = urand();
  void *ks = malloc(attn_k_bytes(&p)), *vs = malloc(attn_v_bytes(&p));
  attn_quantize_rows(ATTN_DTYPE_Q8_0, kf, nk / 64, 64, ks);
  attn_quantize_rows(ATTN_DTYPE_Q8_0, vf, nv / 32, 32, vs);
  char err[256];
  const attn_exec ex = {.threads = 2};
  EXPECT(attn_kernel_call(k, &p, &ex, q, ks, vs, o1, err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(attn_kernel_call(f32k, &p, &ex, q, ks, vs, o2, err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(memcmp(o1, o2, no * 4) == 0, "F32 mode differs from flash__avx512");
  free(q), free(kf), free(vf), free(o1), free(o2), free(ks), free(vs);
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  if (!(attn_cpu_features() & ATTN_ISA_AVX512VNNI)) {
    printf("test_flash_vnni: skipped (no avx512vnni)\n");
    return TEST_SKIP;
  }
  const attn_kernel *k = attn_kernel_find("flash__avx512vnni");
  const attn_kernel *f32k = attn_kernel_find("flash__avx512");
  EXPECT(k && f32k, "kernels not registered");
  if (!k || !f32k) return test_finish("test_flash_vnni");
  block_dots();
  checker_fails_bugs();
  const shape shapes[] = {
      {1, 4, 4, 1, 1, 32, 32, false, 0, 0},        // one key
      {1, 4, 4, 1, 17, 64, 64, false, 0, 0},       // MHA decode, key tail
      {2, 8, 2, 1, 200, 128, 128, false, 0, 0},    // GQA 4 rows, split-KV
      {1, 6, 2, 1, 1000, 96, 160, false, 0, 0},    // 3 rows, dv ≠ dqk, passes of 64 + 32
      {1, 4, 2, 1, 129, 64, 32, false, 3, -1.0f},  // 2 rows, kv_split 3, negative scale
      {1, 8, 1, 1, 300, 64, 64, false, 0, 0},      // MQA: 8 rows, two groups
      {1, 2, 1, 37, 37, 64, 64, true, 0, 0},       // causal prefill
      {1, 3, 3, 9, 4, 32, 64, true, 0, 0},         // cross: rows that see nothing
      {1, 2, 2, 5, 70, 160, 32, false, 0, 0},      // 5 blocks, cross
      {1, 4, 2, 2, 65, 64, 64, false, 0, 0.0f},    // key block + 1
      {1, 2, 2, 1, 64, 64, 64, false, 0, 1e-30f},  // tiny scale: all scores ≈ 0
  };
  const int n = (int)(sizeof shapes / sizeof shapes[0]);
  for (int i = 0; i < (quick ? 4 : n); i++) run_shape(k, &shapes[i]);
  f32_mode(k, f32k);
  return test_finish("test_flash_vnni");
}
