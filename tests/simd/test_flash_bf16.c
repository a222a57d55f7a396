// SPDX-License-Identifier: MIT
// flash__avx512bf16 in the BF16 compute mode (attn.h, "Compute modes") against a float64
// reference over the bf16-rounded Q, K and V, with the bound of the kernel's own
// roundings (docs/low-precision-kernels.md):
//   |O − O_ref| ≤ W·(2^-8 + (e^(2Δ) − 1) + 2γ(seq_kv + 4) + 2^-22) + 2^-100
// per element, W = Σ_j w_j·|v_j| (w = the reference softmax weights), Δ = the bound on a
// score's float32 error (γ(dqk + 4)·|scale|·Σ|q||k|, plus 2u·(|s| + |m|) for the base-2
// exponent's roundings — c₂ = fl(|scale|·log₂e) acting on s − m, the fma — with the shift
// m's own rounding common to the row and cancelling, plus the exponential's few ulp), u =
// 2^-24, γ(n) = n·u / (1 − n·u). 2^-8 is the rounding of p
// to bf16, the rest float32 arithmetic.
// Over odd sizes and tails (head_dim odd, below/at/above the 8×48 and 6×64 register tiles
// and the 48-row block), causal (with rows that see nothing), GQA/MQA, decode rows,
// split-KV, K/V stored as f32, bf16, f16 and q8_0, threads 1 and 2; and:
//   • bitwise the same output for 1 and 2 threads, and with K/V tiles packed once per call
//     (16-row tasks) as with each task packing its own; nothing written past O;
//   • the bf16 path really ran: somewhere the output differs from flash__avx512 in F32 on
//     the same rounded inputs (that one does not round p);
//   • the decode route (flash/flash_bf16_route.h: a BF16 cache, at most
//     FLASH_BF16_DECODE_ROWS query rows per K/V head) is bitwise flash__avx512 in F32 on
//     bf16(Q) and the stored K/V, and some case takes it;
//   • F32 mode is flash__avx512's, bitwise;
//   • the checker (kernels/check: the BF16 mode's reference and tolerance) passes it too.
// Exit 77 when the CPU lacks AVX512_BF16.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "flash/flash_bf16_route.h"
#include "test_util.h"

enum { kGuard = 64 };
static const float kSentinel = 1234.5f;
static int g_differs = 0;  // cases where BF16 mode differs from F32 mode
static int g_shared = 0;   // cases whose 16-row tasks share K/V tiles packed once
static int g_route = 0;    // cases that take the decode route

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float urand(void) {  // uniform in [-1, 1)
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (float)((g_rng >> 40) * 0x1p-23 - 1.0);
}

static float bf16r(float x) {
  return attn_bf16_to_f32(attn_f32_to_bf16(x));
}

static double gamma_n(double n) {
  const double u = 0x1p-24;
  return n * u / (1.0 - n * u);
}

// The reference over rounded qr, kr, vr and the bound per element; returns the largest
// error / bound ratio (> 1: a failure, reported).
static double compare(const attn_problem *p, const float *qr, const float *kr, const float *vr,
                      const float *o, const char *what) {
  const int64_t dqk = p->head_dim_qk, dv = p->head_dim_v, hpg = p->heads / p->kv_heads;
  double worst = 0.0;
  double *s = malloc((size_t)p->seq_kv * sizeof *s), *sa = malloc((size_t)p->seq_kv * sizeof *sa);
  int reported = 0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads; h++)
      for (int64_t i = 0; i < p->seq_q; i++) {
        const int64_t g = h / hpg;
        const float *qi = qr + ((b * p->heads + h) * p->seq_q + i) * dqk;
        const float *kg = kr + (b * p->kv_heads + g) * p->seq_kv * dqk;
        const float *vg = vr + (b * p->kv_heads + g) * p->seq_kv * dv;
        const float *oi = o + ((b * p->heads + h) * p->seq_q + i) * dv;
        int64_t lo, hi;
        attn_row_keys(p, i, &lo, &hi);
        double mx = -INFINITY, delta = 0.0;
        for (int64_t j = lo; j < hi; j++) {
          double acc = 0.0, aacc = 0.0;
          for (int64_t d = 0; d < dqk; d++) {
            acc += (double)qi[d] * kg[j * dqk + d];
            aacc += fabs((double)qi[d] * kg[j * dqk + d]);
          }
          s[j] = p->scale * acc;
          sa[j] = fabs(p->scale) * aacc;
          mx = s[j] > mx ? s[j] : mx;
          const double dj = gamma_n((double)dqk + 4) * sa[j] + 0x1p-23 * fabs(s[j]);
          delta = dj > delta ? dj : delta;
        }
        if (hi > lo) delta += 0x1p-23 * fabs(mx);  // the exponent's roundings grow with the shift
        delta += 8 * 0x1p-24;                      // the exponential's error, as a score error
        double l = 0.0;
        for (int64_t j = lo; j < hi; j++) l += exp(s[j] - mx);
        const double rel = 0x1p-8 + expm1(2 * delta) + 2 * gamma_n((double)p->seq_kv + 4) + 0x1p-22;
        for (int64_t e = 0; e < dv; e++) {
          double ref = 0.0, w = 0.0;
          for (int64_t j = lo; j < hi; j++) {
            const double pj = exp(s[j] - mx) / l;
            ref += pj * vg[j * dv + e];
            w += pj * fabs(vg[j * dv + e]);
          }
          const double bound = w * rel + 0x1p-100, err = fabs((double)oi[e] - ref);
          const double ratio = err / bound;
          if (!(ratio <= 1.0) && reported++ < 3)
            EXPECT(0,
                   "%s: O[%lld][%lld][%lld][%lld] = %.9g, reference %.9g, error %.3g > bound %.3g",
                   what, (long long)b, (long long)h, (long long)i, (long long)e, oi[e], ref, err,
                   bound);
          if (ratio > worst || ratio != ratio) worst = ratio != ratio ? INFINITY : ratio;
        }
      }
  free(s);
  free(sa);
  return worst;
}

typedef struct shape {
  int64_t b, h, kvh, sq, skv, dqk, dv;
  bool causal;
  float amp;       // Q and K amplitude: larger = peakier softmax
  bool set_scale;  // scale below instead of 1/sqrt(dqk)
  float scale;
} shape;

static double run_case(const attn_kernel *k, const attn_kernel *f32k, const shape *c,
                       attn_dtype t) {
  attn_problem p = attn_problem_make(c->b, c->h, c->kvh, c->sq, c->skv, c->dqk, c->dv, c->causal);
  p.kv_dtype = t;
  p.compute = ATTN_COMPUTE_BF16;
  if (c->set_scale) p.scale = c->scale;
  char err[256], what[200];
  snprintf(what, sizeof what, "B%lld H%lld KV%lld Sq%lld Skv%lld D%lld/%lld %s %s", (long long)c->b,
           (long long)c->h, (long long)c->kvh, (long long)c->sq, (long long)c->skv,
           (long long)c->dqk, (long long)c->dv, c->causal ? "causal" : "full", attn_dtype_name(t));
  if (!attn_problem_validate(&p, err, sizeof err)) {
    EXPECT(0, "%s: invalid: %s", what, err);
    return INFINITY;
  }
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  const size_t no = attn_o_elems(&p);
  const size_t krows = nk / (size_t)c->dqk, vrows = nv / (size_t)c->dv;
  float *q = malloc(nq * 4), *kf = malloc(nk * 4), *vf = malloc(nv * 4);
  float *qr = malloc(nq * 4), *kr = malloc(nk * 4), *vr = malloc(nv * 4);
  void *ks = malloc(attn_k_bytes(&p)), *vs = malloc(attn_v_bytes(&p));
  float *o[3];
  for (int i = 0; i < 3; i++) o[i] = malloc((no + kGuard) * sizeof(float));
  for (size_t i = 0; i < nq; i++) q[i] = c->amp * urand();
  for (size_t i = 0; i < nk; i++) kf[i] = c->amp * urand();
  for (size_t i = 0; i < nv; i++) vf[i] = urand();
  // The kernel gets Q and the stored K/V unrounded; the reference bf16(Q), bf16(stored).
  attn_quantize_rows(t, kf, krows, c->dqk, ks);
  attn_quantize_rows(t, vf, vrows, c->dv, vs);
  attn_dequantize_rows(t, ks, krows, c->dqk, kr);
  attn_dequantize_rows(t, vs, vrows, c->dv, vr);
  for (size_t i = 0; i < nq; i++) qr[i] = bf16r(q[i]);
  for (size_t i = 0; i < nk; i++) kr[i] = bf16r(kr[i]);
  for (size_t i = 0; i < nv; i++) vr[i] = bf16r(vr[i]);
  double worst = 0.0;
  for (int ti = 0; ti < 2; ti++) {
    const attn_exec ex = {.threads = ti + 1};
    for (size_t i = 0; i < no + kGuard; i++) o[ti][i] = kSentinel;
    const int rc = attn_kernel_call(k, &p, &ex, q, ks, vs, o[ti], err, sizeof err);
    EXPECT(rc == ATTN_OK, "%s: %s", what, err);
    if (rc != ATTN_OK) break;
    for (size_t i = no; i < no + kGuard; i++)
      EXPECT(o[ti][i] == kSentinel, "%s: wrote past O at %zu", what, i - no);
    const double r = compare(&p, qr, kr, vr, o[ti], what);
    worst = r > worst ? r : worst;
  }
  EXPECT(memcmp(o[0], o[1], no * sizeof(float)) == 0, "%s: 1 and 2 threads differ", what);
  // 16-row tasks: several read each K/V head, so its tiles are packed once per call
  // (workspace grows by them) instead of by each task; each row's sums are the same.
  const bool route = t == ATTN_DTYPE_BF16 && c->sq * (c->h / c->kvh) <= FLASH_BF16_DECODE_ROWS;
  if (c->sq > 16 && c->sq <= 256 && !route) {
    const attn_exec exd = {.threads = 2}, ex16 = {.threads = 2, .tile_q = 16};
    g_shared += k->workspace(&p, &ex16) > k->workspace(&p, &exd);  // (not under split-KV)
    const int rc = attn_kernel_call(k, &p, &ex16, q, ks, vs, o[2], err, sizeof err);
    EXPECT(rc == ATTN_OK && memcmp(o[0], o[2], no * sizeof(float)) == 0,
           "%s: K/V tiles packed once per call differ from packed per task", what);
  }
  // The checker's own verdict: its reference rounds the inputs as the mode says.
  attn_check_prepared *pc = attn_check_prepare_convert(&p, q, kf, vf, err, sizeof err);
  EXPECT(pc != NULL, "%s: cannot prepare the check: %s", what, err);
  if (pc) {
    attn_check_result cr;
    const attn_exec ex2 = {.threads = 2};
    EXPECT(attn_check_kernel(k, pc, &ex2, &cr) && !cr.fallback, "%s: checker: %s", what,
           cr.message);
    attn_check_prepared_free(pc);
  }
  // The same rounded problem in F32 mode on flash__avx512: p is not rounded there.
  attn_problem p32 = attn_problem_make(c->b, c->h, c->kvh, c->sq, c->skv, c->dqk, c->dv, c->causal);
  p32.scale = p.scale;
  const attn_exec ex1 = {.threads = 1};
  const int rc32 = attn_kernel_call(f32k, &p32, &ex1, qr, kr, vr, o[2], err, sizeof err);
  EXPECT(rc32 == ATTN_OK, "%s: flash__avx512: %s", what, err);
  if (route) {  // F32 FMAs on exact bf16 values, p unrounded: the F32 kernel's bits
    g_route++;
    EXPECT(rc32 != ATTN_OK || memcmp(o[0], o[2], no * sizeof(float)) == 0,
           "%s: the decode route differs from flash__avx512 in F32 on bf16(Q)", what);
  } else if (rc32 == ATTN_OK && memcmp(o[0], o[2], no * sizeof(float)) != 0) {
    g_differs++;
  }
  free(q), free(kf), free(vf), free(qr), free(kr), free(vr), free(ks), free(vs);
  for (int i = 0; i < 3; i++) free(o[i]);
  return worst;
}

// F32 mode: bitwise flash__avx512 (the same entry point).
static void f32_mode(const attn_kernel *k, const attn_kernel *f32k) {
  attn_problem p = attn_problem_make(1, 4, 2, 37, 61, 40, 24, true);
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  const size_t no = attn_o_elems(&p);
  float *q = malloc(nq * 4), *kk = malloc(nk * 4), *v = malloc(nv * 4);
  float *o1 = malloc(no * 4), *o2 = malloc(no * 4);
  for (size_t i = 0; i < nq; i++) q[i] = urand();
  for (size_t i = 0; i < nk; i++) kk[i] = urand();
  for (size_t i = 0; i < nv; i++) v[i] = urand();
  char err[256];
  const attn_exec ex = {.threads = 2};
  EXPECT(attn_kernel_call(k, &p, &ex, q, kk, v, o1, err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(attn_kernel_call(f32k, &p, &ex, q, kk, v, o2, err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(memcmp(o1, o2, no * 4) == 0, "F32 mode differs from flash__avx512");
  free(q), free(kk), free(v), free(o1), free(o2);
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  const attn_kernel *k = attn_kernel_find("flash__avx512bf16");
  const attn_kernel *f32k = attn_kernel_find("flash__avx512");
  char why[128];
  if (!k || !f32k || !attn_kernel_available(k, why, sizeof why)) {
    printf("skip: flash__avx512bf16 %s\n", k ? why : "not built");
    return TEST_SKIP;
  }
  EXPECT((k->caps & ATTN_CAP_COMPUTE_BF16) != 0, "flash__avx512bf16 lacks ATTN_CAP_COMPUTE_BF16");
  static const shape kShapes[] = {
      {1, 1, 1, 1, 1, 1, 1, false, 1.0f, false, 0.0f},        // the smallest problem
      {1, 2, 1, 7, 13, 3, 5, true, 1.0f, false, 0.0f},        // odd dims, GQA, cross, causal
      {1, 4, 2, 33, 47, 17, 31, false, 2.0f, false, 0.0f},    // odd head_dim, tails everywhere
      {2, 3, 3, 50, 50, 64, 64, true, 1.0f, false, 0.0f},     // row block + 2, causal diagonal
      {1, 8, 2, 1, 300, 128, 128, false, 1.0f, false, 0.0f},  // GQA decode (split-KV)
      {1, 2, 2, 100, 77, 80, 48, true, 1.0f, false, 0.0f},  // seq_q > seq_kv: rows that see nothing
      {1, 1, 1, 130, 530, 65, 64, true, 3.0f, false, 0.0f},  // several K/V tiles, peaky softmax
      {1, 4, 1, 9, 1000, 64, 64, false, 1.0f, false, 0.0f},  // MQA, 9 rows per task
      {1, 2, 1, 96, 96, 128, 100, true, 1.0f, false, 0.0f},  // two row blocks, dv not whole vectors
      {1, 1, 1, 8, 48, 32, 96, false, 1.0f, false, 0.0f},    // exactly one register tile
      {1, 2, 1, 40, 70, 33, 20, true, 2.0f, true, -0.3f},    // negative scale: sign in Q̂
      {1, 2, 2, 20, 50, 16, 16, true, 1.0f, true, 0.0f},     // scale 0: uniform weights
      {1, 2, 1, 300, 333, 64, 48, true, 1.0f, false, 0.0f},  // two query blocks: shared tiles
  };
  const attn_dtype types[] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16, ATTN_DTYPE_Q8_0};
  double worst = 0.0;
  const size_t nshapes = sizeof kShapes / sizeof kShapes[0];
  for (size_t s = 0; s < nshapes; s++)
    for (int ti = 0; ti < (quick ? 2 : 4); ti++) {
      const shape *c = &kShapes[s];
      if (types[ti] == ATTN_DTYPE_Q8_0 && (c->dqk % 32 || c->dv % 32)) continue;
      const double r = run_case(k, f32k, c, types[ti]);
      worst = r > worst ? r : worst;
    }
  EXPECT(g_differs > 0, "BF16 mode never differed from F32 mode: is p rounded at all?");
  EXPECT(g_shared > 0, "no case packed its K/V tiles once per call");
  EXPECT(g_route > 0, "no case took the decode route");
  f32_mode(k, f32k);
  printf(
      "flash__avx512bf16 BF16 mode: worst error / bound %.3f; differs from F32 mode in %d "
      "cases; %d cases with K/V tiles packed once per call; %d on the decode route\n",
      worst, g_differs, g_shared, g_route);
  return test_finish("test_flash_bf16");
}
