// SPDX-License-Identifier: MIT
// The NEON low-precision flash kernels (docs/low-precision-kernels.md):
//   flash__neonbf16 (BF16 mode, BFDOT), flash__neonfhm (F16, FMLAL), flash__neondot (INT8, SDOT).
// Each in its own mode:
//   • passes the checker (kernels/check: the mode's reference over the rounded inputs and
//     the bound of the kernel's own roundings) on every compute case of the check matrix
//     for that mode, natively (no fallback), with 1 and 2 threads;
//   • on odd shapes (head_dim and key counts off every tile, causal rows that see nothing,
//     GQA/MQA, split-KV decode, K/V stored as every type the mode reads): the checker
//     passes, the output is bitwise the same for 1 and 2 threads, nothing is written past O;
//   • the mode really ran: the output differs from flash__neon's F32 mode on the same
//     problem somewhere; F32 mode is flash__neon's, bitwise;
//   • must fail: the same kernel run with a scale 1/4 too large fails the checker on
//     most of the mode's matrix cases it runs natively (so the checker can fail these
//     kernels at all; a one-hot softmax, as with the "large" inputs, hides any scale).
// Modes:
//   (none)        the above; exit 77 when the CPU has none of the three units
//   --quick       fewer shapes and matrix cases (the aarch64 cross build under qemu)
//   --expect-all  also asserts that the CPU reports BF16, DotProd and FHM (qemu -cpu max)
//   --masked      run with ATTNBENCH_ISA_MASK hiding the three units: the CPU features are
//                 exactly NEON, and each kernel is reported unavailable ("needs neon-...")
//                 and refused by attn_kernel_call with a one-line error, not run
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "test_util.h"

enum { kGuard = 64 };
static const float kSentinel = 1234.5f;

typedef struct lp_kernel {
  const char *name;
  attn_compute mode;
  uint32_t isa;
  const char *isa_name;
} lp_kernel;

static const lp_kernel kKernels[] = {
    {"flash__neonbf16", ATTN_COMPUTE_BF16, ATTN_ISA_NEON_BF16, "neon-bf16"},
    {"flash__neonfhm", ATTN_COMPUTE_F16, ATTN_ISA_NEON_FHM, "neon-fhm"},
    {"flash__neondot", ATTN_COMPUTE_INT8, ATTN_ISA_NEON_DOTPROD, "neon-dotprod"},
};
enum { kNumKernels = sizeof kKernels / sizeof kKernels[0] };

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static float urand(void) {  // uniform in [-1, 1)
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (float)((g_rng >> 40) * 0x1p-23 - 1.0);
}

// ── The must-fail variant: the kernel under test, handed a scale 1/4 too large ──────
static const attn_kernel *g_inner;
static int wrong_scale_run(const attn_problem *p, const attn_exec *exec, const float *q,
                           const void *k, const void *v, float *o, void *ws) {
  attn_problem bad = *p;
  bad.scale = p->scale * 1.25f;
  return g_inner->run(&bad, exec, q, k, v, o, ws);
}
static size_t wrong_scale_workspace(const attn_problem *p, const attn_exec *exec) {
  return g_inner->workspace(p, exec);
}

// Every matrix case of the kernel's mode: the kernel passes natively (1 and 2 threads);
// the wrong-scale variant fails most of them.
static void matrix_cases(const attn_kernel *k, attn_compute mode, bool quick) {
  const size_t n = attn_check_matrix(quick, NULL, 0);
  attn_check_case *cases = calloc(n, sizeof *cases);
  attn_check_matrix(quick, cases, n);
  attn_kernel bad = *k;
  bad.name = "wrong_scale";
  bad.run = wrong_scale_run;
  bad.workspace = wrong_scale_workspace;
  g_inner = k;
  int ran = 0, native_ran = 0, bad_fails = 0;
  for (size_t i = 0; i < n; i++) {
    if (cases[i].problem.compute != mode) continue;
    const bool native = attn_check_case_native(k, &cases[i]);  // options: the portable path
    char err[256], what[200];
    attn_check_case_describe(&cases[i], what, sizeof what);
    attn_check_prepared *pc = attn_check_prepare(&cases[i], err, sizeof err);
    EXPECT(pc != NULL, "%s: cannot prepare %s: %s", k->name, what, err);
    if (!pc) continue;
    ran++;
    for (int t = 1; t <= 2; t++) {
      const attn_exec ex = {.threads = t};
      attn_check_result r;
      attn_check_kernel(k, pc, &ex, &r);
      EXPECT(r.verdict == ATTN_CHECK_PASS && r.fallback == !native,
             "%s on %s (%d threads): %s%s %s", k->name, what, t, attn_check_verdict_name(r.verdict),
             r.fallback ? " (fallback)" : "", r.message);
    }
    attn_check_result rb;
    attn_check_kernel(&bad, pc, NULL, &rb);
    bad_fails += rb.verdict == ATTN_CHECK_FAIL;
    native_ran += native;
    attn_check_prepared_free(pc);
  }
  printf("  %s: %d %s matrix cases pass (%d natively); the wrong-scale variant fails %d\n", k->name,
         ran, attn_compute_name(mode), native_ran, bad_fails);
  EXPECT(ran > 0, "%s: the matrix has no %s case", k->name, attn_compute_name(mode));
  EXPECT(2 * bad_fails > native_ran, "%s: the wrong-scale variant fails only %d of %d cases",
         k->name, bad_fails, native_ran);
  free(cases);
}

typedef struct shape {
  int64_t b, h, kvh, sq, skv, dqk, dv;
  bool causal;
  float amp;    // Q and K amplitude: larger = peakier softmax
  float scale;  // 0: the default 1/sqrt(dqk)
} shape;

static int g_differs;  // shapes where the mode's output differs from F32 mode's

static void run_shape(const attn_kernel *k, const attn_kernel *f32k, attn_compute mode,
                      const shape *c, attn_dtype t) {
  attn_problem p = attn_problem_make(c->b, c->h, c->kvh, c->sq, c->skv, c->dqk, c->dv, c->causal);
  p.kv_dtype = t;
  p.compute = mode;
  if (c->scale != 0.0f) p.scale = c->scale;
  char err[256], what[200];
  snprintf(what, sizeof what, "%s B%lld H%lld KV%lld Sq%lld Skv%lld D%lld/%lld %s %s", k->name,
           (long long)c->b, (long long)c->h, (long long)c->kvh, (long long)c->sq, (long long)c->skv,
           (long long)c->dqk, (long long)c->dv, c->causal ? "causal" : "full", attn_dtype_name(t));
  if (!attn_problem_validate(&p, err, sizeof err)) {
    EXPECT(0, "%s: invalid: %s", what, err);
    return;
  }
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  const size_t no = attn_o_elems(&p);
  float *q = malloc(nq * 4), *kf = malloc(nk * 4), *vf = malloc(nv * 4), *o[3];
  void *ks = malloc(attn_k_bytes(&p)), *vs = malloc(attn_v_bytes(&p));
  for (int i = 0; i < 3; i++) o[i] = malloc((no + kGuard) * sizeof(float));
  for (size_t i = 0; i < nq; i++) q[i] = c->amp * urand();
  for (size_t i = 0; i < nk; i++) kf[i] = c->amp * urand();
  for (size_t i = 0; i < nv; i++) vf[i] = urand();
  attn_quantize_rows(t, kf, nk / (size_t)c->dqk, c->dqk, ks);
  attn_quantize_rows(t, vf, nv / (size_t)c->dv, c->dv, vs);
  for (int ti = 0; ti < 2; ti++) {
    const attn_exec ex = {.threads = ti + 1};
    for (size_t i = 0; i < no + kGuard; i++) o[ti][i] = kSentinel;
    EXPECT(attn_kernel_call(k, &p, &ex, q, ks, vs, o[ti], err, sizeof err) == ATTN_OK, "%s: %s",
           what, err);
    for (size_t i = no; i < no + kGuard; i++)
      EXPECT(o[ti][i] == kSentinel, "%s: wrote past O at %zu", what, i - no);
  }
  EXPECT(memcmp(o[0], o[1], no * sizeof(float)) == 0, "%s: 1 and 2 threads differ", what);
  // The checker: its reference rounds Q and the stored K/V as the mode says.
  attn_check_prepared *pc = attn_check_prepare_convert(&p, q, kf, vf, err, sizeof err);
  EXPECT(pc != NULL, "%s: cannot prepare the check: %s", what, err);
  if (pc) {
    attn_check_result r;
    const attn_exec ex = {.threads = 2};
    attn_check_kernel(k, pc, &ex, &r);
    EXPECT(r.verdict == ATTN_CHECK_PASS && !r.fallback, "%s: checker: %s %s", what,
           attn_check_verdict_name(r.verdict), r.message);
    attn_check_prepared_free(pc);
  }
  // The same problem in F32 mode (flash__neon): the mode's roundings are not there.
  attn_problem p32 = p;
  p32.compute = ATTN_COMPUTE_F32;
  const attn_exec ex1 = {.threads = 1};
  if (attn_kernel_call(f32k, &p32, &ex1, q, ks, vs, o[2], err, sizeof err) == ATTN_OK &&
      memcmp(o[0], o[2], no * sizeof(float)) != 0)
    g_differs++;
  free(q), free(kf), free(vf), free(ks), free(vs);
  for (int i = 0; i < 3; i++) free(o[i]);
}

// F32 mode: bitwise flash__neon (the same entry point).
static void f32_mode(const attn_kernel *k, const attn_kernel *f32k) {
  attn_problem p = attn_problem_make(1, 4, 2, 37, 61, 64, 32, true);
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
  EXPECT(memcmp(o1, o2, no * 4) == 0, "%s: F32 mode differs from flash__neon", k->name);
  free(q), free(kk), free(v), free(o1), free(o2);
}

static void test_kernel(const lp_kernel *lk, bool quick) {
  const attn_kernel *k = attn_kernel_find(lk->name), *f32k = attn_kernel_find("flash__neon");
  EXPECT(k != NULL && f32k != NULL, "%s and flash__neon are registered", lk->name);
  if (!k || !f32k) return;
  EXPECT((k->caps & attn_compute_cap(lk->mode)) != 0 && (k->required_isa & lk->isa) != 0,
         "%s: the mode's cap and the unit's ISA bit", lk->name);
  static const shape kShapes[] = {
      {1, 2, 1, 7, 13, 32, 5, true, 1.0f, 0.0f},       // tiny, GQA, cross, causal, dv < a vector
      {1, 4, 2, 33, 47, 96, 31, false, 2.0f, 0.0f},    // tails in rows, keys and columns
      {2, 3, 3, 50, 50, 64, 64, true, 1.0f, 0.0f},     // past a 32-row block, causal diagonal
      {1, 8, 2, 1, 300, 128, 128, false, 1.0f, 0.0f},  // GQA decode (split-KV)
      {1, 2, 2, 100, 77, 64, 48, true, 1.0f, 0.0f},    // seq_q > seq_kv: rows that see nothing
      {1, 1, 1, 130, 530, 64, 64, true, 3.0f, 0.0f},   // several K/V tiles, peaky softmax
      {1, 4, 1, 9, 1000, 32, 64, false, 1.0f, 0.0f},   // MQA, a long key range
      {1, 2, 1, 40, 70, 32, 20, true, 2.0f, -0.3f},    // a negative scale
      {1, 1, 1, 5, 19, 33, 7, false, 1.0f, 0.0f},      // odd head_dim (not INT8)
  };
  const attn_dtype types[] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16, ATTN_DTYPE_Q8_0};
  g_differs = 0;
  const size_t nshapes = sizeof kShapes / sizeof kShapes[0];
  for (size_t s = 0; s < nshapes; s++)
    for (int ti = 0; ti < 4; ti++) {
      const shape *c = &kShapes[s];
      const attn_dtype t = types[ti];
      if (lk->mode == ATTN_COMPUTE_INT8 ? t != ATTN_DTYPE_Q8_0 : (quick && ti > 1)) continue;
      if (t == ATTN_DTYPE_Q8_0 && (c->dqk % 32 || c->dv % 32)) continue;
      if (quick && s % 2) continue;
      run_shape(k, f32k, lk->mode, c, t);
    }
  EXPECT(g_differs > 0, "%s: the %s mode never differed from F32 mode: did it run?", lk->name,
         attn_compute_name(lk->mode));
  f32_mode(k, f32k);
  matrix_cases(k, lk->mode, quick);
}

// ATTNBENCH_ISA_MASK hides the units: the kernels are unavailable and refused cleanly.
static void test_masked(void) {
  EXPECT(attn_cpu_features() == ATTN_ISA_NEON, "features 0x%x under the mask, want NEON only",
         (unsigned)attn_cpu_features());
  attn_problem p = attn_problem_make(1, 1, 1, 4, 4, 32, 32, false);
  float q[128] = {0}, kv[128] = {0}, o[128];
  attn_block_q8_0 kq[4] = {{0, {0}}}, vq[4] = {{0, {0}}};
  for (int i = 0; i < kNumKernels; i++) {
    const attn_kernel *k = attn_kernel_find(kKernels[i].name);
    EXPECT(k != NULL, "%s registered", kKernels[i].name);
    if (!k) continue;
    char why[128] = "", err[256] = "";
    EXPECT(!attn_kernel_available(k, why, sizeof why) && strstr(why, kKernels[i].isa_name),
           "%s: unavailable because it needs %s ('%s')", k->name, kKernels[i].isa_name, why);
    p.compute = kKernels[i].mode;
    p.kv_dtype = kKernels[i].mode == ATTN_COMPUTE_INT8 ? ATTN_DTYPE_Q8_0 : ATTN_DTYPE_F32;
    const void *kp = p.kv_dtype == ATTN_DTYPE_Q8_0 ? (const void *)kq : kv;
    const void *vp = p.kv_dtype == ATTN_DTYPE_Q8_0 ? (const void *)vq : kv;
    const int rc = attn_kernel_call(k, &p, NULL, q, kp, vp, o, err, sizeof err);
    EXPECT(rc != ATTN_OK && err[0] && !strchr(err, '\n'), "%s: refused (rc %d, '%s')", k->name, rc,
           err);
    printf("  %s: %s; refused: %s\n", k->name, why, err);
  }
}

int main(int argc, char **argv) {
  bool quick = false, expect_all = false, masked = false;
  for (int i = 1; i < argc; i++) {
    quick |= !strcmp(argv[i], "--quick");
    expect_all |= !strcmp(argv[i], "--expect-all");
    masked |= !strcmp(argv[i], "--masked");
  }
  if (!(attn_cpu_features() & ATTN_ISA_NEON) && !masked) {
    printf("skip: not an aarch64 CPU with NEON\n");
    return TEST_SKIP;
  }
  if (masked) {
    test_masked();
    return test_finish("test_flash_neon_lp --masked");
  }
  char names[128];
  printf("CPU features: %s\n", attn_isa_names(attn_cpu_features(), names, sizeof names));
  if (expect_all) {
    const uint32_t want = ATTN_ISA_NEON_BF16 | ATTN_ISA_NEON_DOTPROD | ATTN_ISA_NEON_FHM;
    EXPECT((attn_cpu_features() & want) == want, "the CPU reports BF16, DotProd and FHM");
    EXPECT(strstr(names, "neon-bf16") && strstr(names, "neon-dotprod") && strstr(names, "neon-fhm"),
           "the names list the units: %s", names);
  }
  int tested = 0;
  for (int i = 0; i < kNumKernels; i++) {
    const attn_kernel *k = attn_kernel_find(kKernels[i].name);
    char why[128] = "";
    if (k && !attn_kernel_available(k, why, sizeof why)) {
      printf("  %s: skipped (%s)\n", k->name, why);
      continue;
    }
    test_kernel(&kKernels[i], quick);
    tested++;
  }
  if (!tested) {
    printf("skip: the CPU has none of BF16, DotProd, FHM\n");
    return TEST_SKIP;
  }
  return test_finish("test_flash_neon_lp");
}
