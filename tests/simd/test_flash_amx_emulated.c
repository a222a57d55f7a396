// SPDX-License-Identifier: MIT
// flash__amxbf16's BF16 body (kernels/flash/flash_amx_body.h: packing, tiling, online
// softmax) run on the portable emulation of the AMX tiles (amx_tiles_emu.h, TDPBF16PS's
// semantics in C; the body's twin flash_amx_emulated_twin.c) on any CPU with AVX512_BF16,
// checked by the checker in the BF16 compute mode (its reference over the bf16-rounded
// inputs and the bound of the rounding of p):
//   • every shape of the matrix passes (odd head dims below/at/above the 32-element Q̂
//     chunk and the 16-column V̂ tile, key counts around the 32-key block, causal with
//     rows that see nothing, GQA/MQA decode rows stacked in one tile, negative and zero
//     scale, K/V stored as f32, bf16, f16, q8_0; key counts across the 256-key softmax
//     span, row counts across the 32-row task, odd numbers of V column tiles), threads 1
//     and 2 bitwise equal;
//   • the emulated TDPBF16PS itself against the instruction's formula (exact sums);
//   • must fail: with the emulated TDPBF16PS pairing the wrong halves of B (a VNNI pair
//     interleave the wrong way round) the same checker fails the kernel;
//   • the softmax's 2^x (bk_exp2) within BK_EXP2_REL of 2^x in double over [−126, 0]
//     (a 2^-16 grid of every unit interval), 1 at 0, and exactly 0 below −126 (FTZ) out
//     to about −2·10^6, so no subnormal p ever reaches the sums;
//   • detection: where cpuid lacks AMX-TILE or AMX-BF16, attn_cpu_features() has no
//     ATTN_ISA_AMXBF16 and the real flash__amxbf16 is unavailable with "needs amx-bf16";
//     where it is available, the real kernel passes the same matrix.
// Without AVX512_BF16 (and so without AMX) nothing runs but the detection: exit 77 (skip).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amx_tiles_emu.h"
#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "flash_amx_emulated_twin.h"
#include "test_util.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static float urand(void) {  // uniform in [-1, 1)
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (float)((g_rng >> 40) * 0x1p-23 - 1.0);
}

typedef struct shape {
  int64_t b, h, kvh, sq, skv, dqk, dv;
  bool causal;
  float amp;    // Q and K amplitude (larger: a peakier softmax)
  float scale;  // NAN: 1/sqrt(dqk)
} shape;

// Runs k on case c (K/V stored as t) through the checker with 1 and 2 threads. Returns
// the number of runs the checker passed (0..2); the outputs of the two runs must agree.
static int check_case(const attn_kernel *k, const shape *c, attn_dtype t, bool expect_pass) {
  attn_problem p = attn_problem_make(c->b, c->h, c->kvh, c->sq, c->skv, c->dqk, c->dv, c->causal);
  p.kv_dtype = t;
  p.compute = ATTN_COMPUTE_BF16;
  if (c->scale == c->scale) p.scale = c->scale;
  char err[256], what[160];
  snprintf(what, sizeof what, "%s B%lld H%lld KV%lld Sq%lld Skv%lld D%lld/%lld %s %s", k->name,
           (long long)c->b, (long long)c->h, (long long)c->kvh, (long long)c->sq, (long long)c->skv,
           (long long)c->dqk, (long long)c->dv, c->causal ? "causal" : "full", attn_dtype_name(t));
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  float *q = malloc(nq * 4), *kf = malloc(nk * 4), *vf = malloc(nv * 4);
  for (size_t i = 0; i < nq; i++) q[i] = c->amp * urand();
  for (size_t i = 0; i < nk; i++) kf[i] = c->amp * urand();
  for (size_t i = 0; i < nv; i++) vf[i] = urand();
  void *ks = malloc(attn_k_bytes(&p)), *vs = malloc(attn_v_bytes(&p));
  attn_quantize_rows(t, kf, nk / (size_t)c->dqk, c->dqk, ks);
  attn_quantize_rows(t, vf, nv / (size_t)c->dv, c->dv, vs);
  attn_check_prepared *pc = attn_check_prepare_convert(&p, q, kf, vf, err, sizeof err);
  EXPECT(pc != NULL, "%s: cannot prepare: %s", what, err);
  int passed = 0;
  if (pc) {
    const size_t no = attn_o_elems(&p);
    float *out[2] = {malloc(no * 4), malloc(no * 4)};
    for (int ti = 0; ti < 2; ti++) {
      attn_check_result r;
      const attn_exec ex = {.threads = ti + 1};
      const bool ok = attn_check_kernel(k, pc, &ex, &r);
      EXPECT(!r.fallback, "%s: ran the portable fallback, not the AMX body", what);
      if (expect_pass) EXPECT(ok, "%s, %d thread(s): %s", what, ti + 1, r.message);
      passed += ok;
      // The same run once more, for the determinism check (the checker keeps no output).
      EXPECT(attn_kernel_call(k, &p, &ex, q, ks, vs, out[ti], err, sizeof err) == ATTN_OK, "%s: %s",
             what, err);
    }
    if (expect_pass)
      EXPECT(memcmp(out[0], out[1], no * 4) == 0, "%s: 1 and 2 threads differ", what);
    free(out[0]), free(out[1]);
    attn_check_prepared_free(pc);
  }
  free(q), free(kf), free(vf), free(ks), free(vs);
  return passed;
}

static const shape kShapes[] = {
    {1, 1, 1, 1, 1, 1, 1, false, 1.0f, NAN},        // the smallest problem
    {1, 2, 1, 7, 13, 3, 5, true, 1.0f, NAN},        // odd dims, GQA, cross, causal
    {1, 4, 2, 33, 47, 17, 31, false, 2.0f, NAN},    // odd head_dim, tails everywhere
    {2, 3, 3, 50, 50, 64, 64, true, 1.0f, NAN},     // 4 row blocks, causal diagonal
    {1, 8, 2, 1, 300, 128, 128, false, 1.0f, NAN},  // GQA decode: 4 heads' rows in a tile
    {1, 2, 2, 40, 27, 80, 48, true, 1.0f, NAN},     // seq_q > seq_kv: rows that see nothing
    {1, 1, 1, 20, 130, 65, 16, true, 3.0f, NAN},    // Q̂ chunk + 1, peaky softmax
    {1, 16, 1, 1, 64, 32, 33, false, 1.0f, NAN},    // MQA decode: exactly one row tile
    {1, 1, 1, 17, 32, 33, 17, false, 1.0f, NAN},    // one key block exactly, tiles + 1
    {1, 1, 1, 16, 33, 31, 15, true, 1.0f, NAN},     // one row tile, key block + 1
    {1, 2, 1, 40, 70, 33, 20, true, 2.0f, -0.3f},   // negative scale: sign in Q̂
    {1, 2, 2, 20, 50, 16, 16, true, 1.0f, 0.0f},    // scale 0: uniform weights
    {1, 2, 1, 45, 600, 64, 48, true, 2.0f, NAN},    // 3 spans, 2 + 1 row tiles, 3 V tiles
    {1, 1, 1, 300, 300, 96, 80, true, 1.5f, NAN},   // causal across spans and 10 tasks
    {1, 4, 1, 9, 513, 40, 64, false, 1.0f, NAN},    // 36 rows: a 4-row task; span + 1 key
};
enum { kShapeCount = sizeof kShapes / sizeof kShapes[0] };

static void run_matrix(const attn_kernel *k) {
  const attn_dtype types[] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16, ATTN_DTYPE_Q8_0};
  for (int s = 0; s < kShapeCount; s++)
    for (int ti = 0; ti < 4; ti++) {
      const shape *c = &kShapes[s];
      if (types[ti] == ATTN_DTYPE_Q8_0 && (c->dqk % 32 || c->dv % 32)) continue;
      if (ti > 0 && s % 3 != 0) continue;  // stored types on every third shape
      check_case(k, c, types[ti], true);
    }
}

// The emulated TDPBF16PS against the SDM's formula written out directly, on small integers
// (every sum exact, so only the indexing is tested): C[m][n] = Σ_k Σ_t A[m][2k+t]·B[k][2n+t],
// with a 12-row × 10-pair shape (loads zero the rest of a tile) and a strided A.
static void emulator_semantics(void) {
  enum { M = 12, K = 10, N = 9 };
  uint16_t a[M][40], b[K][2 * N];  // A with a row stride of 40 elements (80 bytes)
  for (int m = 0; m < M; m++)
    for (int e = 0; e < 40; e++) a[m][e] = attn_f32_to_bf16((float)((m * 7 + e * 3) % 11 - 5));
  for (int k = 0; k < K; k++)
    for (int e = 0; e < 2 * N; e++) b[k][e] = attn_f32_to_bf16((float)((k * 5 + e) % 7 - 3));
  float c[M][N];
  memset(c, 0, sizeof c);
  amx_tilecfg cfg;
  amx_tilecfg_init(&cfg);
  amx_tilecfg_set(&cfg, 0, M, 4 * N);  // C
  amx_tilecfg_set(&cfg, 1, M, 4 * K);  // A: K pairs per row
  amx_tilecfg_set(&cfg, 2, K, 4 * N);  // B: K pair rows of N pairs
  AMX_TILE_CONFIG(&cfg);
  AMX_TILE_ZERO(0);
  AMX_TILE_LOAD(1, a, 80);
  AMX_TILE_LOAD(2, b, 4 * N);
  AMX_TILE_DPBF16PS(0, 1, 2);
  AMX_TILE_STORE(0, c, 4 * N);
  AMX_TILE_RELEASE();
  int bad = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double want = 0.0;
      for (int k = 0; k < K; k++)
        for (int t = 0; t < 2; t++)
          want += (double)attn_bf16_to_f32(a[m][2 * k + t]) * attn_bf16_to_f32(b[k][2 * n + t]);
      bad += c[m][n] != (float)want;
    }
  EXPECT(bad == 0, "emulated tdpbf16ps differs from the formula in %d of %d elements", bad, M * N);
}

// bk_exp2 against exp2 in double, through the twin (the kernel header needs the AVX-512
// flags this file is not built with).
enum { EXP2_N = 1 << 16 };
static void exp2_bound(void) {
  const double kRel = flash_amx_emulated_twin_exp2_rel;
  static float x[EXP2_N], y[EXP2_N];
  double worst = 0.0, worst_x = 0.0;
  int bad_tail = 0;
  for (int e = 0; e <= 126; e++) {  // x = −e + f, f on a grid of 2^-16 over [0, 1)
    for (int i = 0; i < EXP2_N; i++) x[i] = (float)(-e + i * 0x1p-16);
    flash_amx_emulated_twin_exp2(x, y, EXP2_N);
    for (int i = 0; i < EXP2_N; i++) {
      const double want = exp2((double)x[i]), rel = fabs((double)y[i] / want - 1.0);
      if (!(rel <= worst)) worst = rel, worst_x = x[i];
    }
  }
  EXPECT(worst <= kRel, "bk_exp2 error %.3g relative at x = %.9g (bound %.3g)", worst, worst_x,
         kRel);
  printf("bk_exp2: worst relative error %.3g over [-126, 0] (bound %.3g)\n", worst, kRel);
  for (int i = 0; i < EXP2_N; i++)  // below −126: steps of 2^-12, then geometric to ~−2.3e6
    x[i] = i < EXP2_N / 2 ? nextafterf(-126.0f, -INFINITY) - (float)i * 0x1p-12f
                          : -126.0f * powf(1.0003f, (float)(i - EXP2_N / 2));
  flash_amx_emulated_twin_exp2(x, y, EXP2_N);
  for (int i = 0; i < EXP2_N; i++) bad_tail += isfinite(x[i]) && x[i] < -126.0f && y[i] != 0.0f;
  EXPECT(bad_tail == 0, "bk_exp2 gave %d nonzero results below -126", bad_tail);
  x[0] = 0.0f;
  flash_amx_emulated_twin_exp2(x, y, 16);
  EXPECT(y[0] == 1.0f, "bk_exp2(0) = %.9g", y[0]);
}

// Where cpuid has no AMX, the unit is not detected and the real kernel is refused.
// Returns whether the real kernel ran the matrix.
static bool detection(void) {
  const attn_kernel *real = attn_kernel_find("flash__amxbf16");
  bool cpu_amx = false;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, NULL) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    cpu_amx = (d & (1u << 22)) && (d & (1u << 24));
  }
#endif
  if (!cpu_amx)
    EXPECT(!(attn_cpu_features() & ATTN_ISA_AMXBF16), "amx-bf16 detected on a CPU without AMX");
  if (!real) {
    printf("flash__amxbf16 not built (the compiler lacks the AMX flags)\n");
    return false;
  }
  char why[128] = "";
  const bool avail = attn_kernel_available(real, why, sizeof why);
  EXPECT(avail == ((attn_cpu_features() & real->required_isa) == real->required_isa),
         "flash__amxbf16 availability disagrees with the detected ISA");
  if (!(attn_cpu_features() & ATTN_ISA_AMXBF16))
    EXPECT(!avail && strstr(why, "amx-bf16"), "flash__amxbf16 without AMX: '%s'", why);
  if (avail) {
    run_matrix(real);
    printf("flash__amxbf16 (hardware tiles) passed the matrix too\n");
  } else {
    printf("flash__amxbf16: %s%s%s\n", why, *attn_cpu_features_note() ? "; " : "",
           attn_cpu_features_note());
  }
  return avail;
}

int main(void) {
  emulator_semantics();
  const attn_kernel *twin = &flash_amx_emulated_twin;
  const bool body = (attn_cpu_features() & twin->required_isa) == twin->required_isa;
  if (body) {
    exp2_bound();
    run_matrix(twin);
    // Must fail: B's pairs read the wrong way round in both GEMMs.
    flash_amx_emulated_twin_swap_pairs(1);
    int passed = 0;
    for (int s = 1; s < 4; s++) passed += check_case(twin, &kShapes[s], ATTN_DTYPE_F32, false);
    EXPECT(passed == 0, "the checker passed %d run(s) with the pair interleave swapped", passed);
    flash_amx_emulated_twin_swap_pairs(0);
  } else {
    printf("the emulated body needs avx512f + avx512bf16 (the CPU lacks one): not run\n");
  }
  if (!detection() && !body) {
    printf("test_flash_amx_emulated: skipped (only the detection ran)\n");
    return g_failures ? test_finish("test_flash_amx_emulated") : TEST_SKIP;
  }
  return test_finish("test_flash_amx_emulated");
}
