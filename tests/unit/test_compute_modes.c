// SPDX-License-Identifier: MIT
// Compute modes (attn.h, "Compute modes"): names and validation, the F16 input range, the
// portable path's rounded copies, the reference's input rounding, the checker's bound per
// mode — passed by an honest kernel that rounds p, failed by kernels with a precision bug
// (lowprec_kernels.h) on data built to expose each — and the mode's error against FP32;
// the whole-tensor rounding (attn_compute_round_q/_kv, vectorized) is bit for bit the
// per-element rule.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/attn_internal.h"
#include "core/convert.h"
#include "lowprec_kernels.h"
#include "test_util.h"

static void test_names(void) {
  for (int c = 0; c < ATTN_COMPUTE_COUNT; c++) {
    attn_compute back = ATTN_COMPUTE_COUNT;
    EXPECT(attn_compute_parse(attn_compute_name((attn_compute)c), &back) && (int)back == c,
           "round trip of %s", attn_compute_name((attn_compute)c));
  }
  EXPECT(!strcmp(attn_compute_name(ATTN_COMPUTE_BF16), "bf16"), "bf16 name");
  EXPECT(!strcmp(attn_compute_name((attn_compute)9), "?"), "unknown name");
  EXPECT(!attn_compute_parse("BF16", NULL) && !attn_compute_parse("int4", NULL) &&
             !attn_compute_parse("", NULL) && !attn_compute_parse(NULL, NULL),
         "bad names refused");
  EXPECT(attn_compute_cap(ATTN_COMPUTE_F32) == 0 &&
             attn_compute_cap(ATTN_COMPUTE_INT8) == ATTN_CAP_COMPUTE_INT8,
         "caps");
}

static void test_validation(void) {
  char err[256];
  attn_problem p = attn_problem_make(1, 2, 2, 3, 5, 64, 32, false);
  p.compute = (attn_compute)4;
  EXPECT(!attn_problem_validate(&p, err, sizeof err) && strstr(err, "compute 4"),
         "mode outside the enum: '%s'", err);
  p.compute = ATTN_COMPUTE_INT8;
  EXPECT(!attn_problem_validate(&p, err, sizeof err) && strstr(err, "needs kv_dtype q8_0") &&
             strstr(err, "f32"),
         "int8 on f32 K/V: '%s'", err);
  p.kv_dtype = ATTN_DTYPE_BF16;
  EXPECT(!attn_problem_validate(&p, err, sizeof err) && strstr(err, "bf16"), "int8 on bf16: '%s'",
         err);
  p.kv_dtype = ATTN_DTYPE_Q8_0;
  EXPECT(attn_problem_validate(&p, err, sizeof err), "int8 on q8_0: '%s'", err);
  for (int c = ATTN_COMPUTE_F32; c <= ATTN_COMPUTE_F16; c++) {
    attn_problem f = attn_problem_make(1, 2, 1, 3, 5, 33, 7, true);
    f.compute = (attn_compute)c;
    EXPECT(attn_problem_validate(&f, err, sizeof err), "%s on f32 K/V: '%s'",
           attn_compute_name((attn_compute)c), err);
  }
}

// F16 mode refuses |x| > 65504 and names the element; 65504 itself is fine; F32 takes both.
static void test_f16_range(void) {
  attn_problem p = attn_problem_make(1, 1, 1, 2, 2, 4, 4, false);
  float q[8] = {0}, k[8] = {0}, v[8] = {0};
  char err[256];
  p.compute = ATTN_COMPUTE_F16;
  v[3] = 65504.0f;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "65504 is binary16: %s", err);
  q[6] = -65600.0f;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "Q[0][0][1][2]") && strstr(err, "65504"),
         "Q above 65504: '%s'", err);
  q[6] = 0.0f;
  k[1] = 1e5f;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "K[0][0][0][1]"),
         "K above 65504: '%s'", err);
  p.compute = ATTN_COMPUTE_BF16;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "bf16 takes 1e5: %s", err);
}

// BF16 refuses what rounds to a bfloat16 ±inf (above 0x1.fep127, the largest bfloat16:
// 3.4e38 would — with Q = 0 the score bound alone is 0, so nothing else catches it);
// INT8 refuses a Q element whose block scale max|q|/127 leaves binary16 (K/V are stored
// q8_0 already). Both name the element; F32 takes the same inputs.
static void test_bf16_int8_range(void) {
  char err[256];
  attn_problem p = attn_problem_make(1, 1, 1, 2, 2, 4, 4, false);
  float q[8] = {0}, k[8] = {0}, v[8] = {0};
  p.compute = ATTN_COMPUTE_BF16;
  k[5] = (float)ATTN_BF16_MAX;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "the largest bfloat16: %s",
         err);
  EXPECT(attn_f32_to_bf16(3.4e38f) == 0x7f80, "3.4e38 rounds to bfloat16 +inf");
  k[5] = 3.4e38f;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "K[0][0][1][1]") && strstr(err, "largest bfloat16"),
         "K rounding to bfloat16 inf: '%s'", err);
  p.compute = ATTN_COMPUTE_F32;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "f32 takes 3.4e38: %s", err);

  attn_problem pi = attn_problem_make(1, 1, 1, 1, 2, 32, 32, false);
  pi.kv_dtype = ATTN_DTYPE_Q8_0;
  pi.compute = ATTN_COMPUTE_INT8;
  float qi[32] = {0}, kf[64];
  for (int i = 0; i < 64; i++) kf[i] = 0.25f * (float)(i % 7) - 0.5f;
  attn_block_q8_0 kq[2], vq[2];
  attn_quantize_q8_0_row(kf, 32, &kq[0]), attn_quantize_q8_0_row(kf + 32, 32, &kq[1]);
  memcpy(vq, kq, sizeof vq);
  qi[7] = (float)(127.0 * ATTN_F16_MAX);
  EXPECT(attn_inputs_check(&pi, qi, kq, vq, err, sizeof err) == ATTN_OK, "127·65504: %s", err);
  qi[7] = 1e7f;
  EXPECT(attn_inputs_check(&pi, qi, kq, vq, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "Q[0][0][0][7]") && strstr(err, "8319008"),
         "Q with a block scale beyond binary16: '%s'", err);
}

// The same ranges hold for every sequence of a ragged batch (attn_layout_inputs_check).
static void test_layout_ranges(void) {
  char err[256];
  const int64_t cq[] = {0, 1, 2}, ck[] = {0, 3, 5};
  const attn_layout l = {.kind = ATTN_LAYOUT_RAGGED, .cu_seqlens_q = cq, .cu_seqlens_kv = ck};
  attn_problem p = attn_problem_make(1, 2, 1, 1, 1, 4, 4, true);
  attn_problem_set_layout(&p, &l, 2);
  float q[2 * 2 * 4] = {0}, k[5 * 4] = {0}, v[5 * 4] = {0};
  p.compute = ATTN_COMPUTE_F16;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "zeros: %s", err);
  q[13] = 70000.0f;  // token 1 (sequence 1), head 1, element 1
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "sequence 1, head 1") && strstr(err, "largest binary16"),
         "ragged Q above 65504: '%s'", err);
  q[13] = 0.0f;
  v[17] = 7e4f;  // key 4 = key 1 of sequence 1
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "input V of sequence 1") && strstr(err, "key 1"),
         "ragged V above 65504: '%s'", err);
  p.compute = ATTN_COMPUTE_F32;
  EXPECT(attn_inputs_check(&p, q, k, v, err, sizeof err) == ATTN_OK, "f32 takes 7e4: %s", err);
}

// ── The portable path ────────────────────────────────────────────────────────────────
static attn_problem g_seen;
static float g_q[4096], g_k[4096], g_v[4096];
static const void *g_kptr;

static int probe_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                     const void *v, float *o, void *ws) {
  (void)exec, (void)ws;
  g_seen = *p;
  g_kptr = k;
  memcpy(g_q, q, attn_q_elems(p) * sizeof(float));
  if (p->kv_dtype == ATTN_DTYPE_F32) {
    memcpy(g_k, k, attn_k_elems(p) * sizeof(float));
    memcpy(g_v, v, attn_v_elems(p) * sizeof(float));
  }
  memset(o, 0, attn_o_elems(p) * sizeof(float));
  return ATTN_OK;
}

static void fill(float *x, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((double)(seed >> 11) * 0x1p-53 * 6.0 - 3.0);
  }
}

static void test_portable_path(void) {
  const attn_kernel probe = {
      .name = "probe", .summary = "x", .caps = ATTN_CAP_ALL_SHAPES, .run = probe_run};
  const attn_kernel probe_q8 = {.name = "probe_q8",
                                .summary = "x",
                                .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_KV_Q8_0,
                                .run = probe_run};
  attn_problem p = attn_problem_make(1, 2, 1, 3, 5, 64, 32, false);
  float q[384], k32[320], v32[160], o[192], want[384];
  fill(q, 384, 1), fill(k32, 320, 2), fill(v32, 160, 3);
  char err[256];
  // bf16 on f16 K/V: one pass f16 → float32 → bf16, Q rounded, the kernel runs F32
  uint16_t kh[320], vh[160];
  attn_quantize_rows(ATTN_DTYPE_F16, k32, 5, 64, kh);
  attn_quantize_rows(ATTN_DTYPE_F16, v32, 5, 32, vh);
  p.kv_dtype = ATTN_DTYPE_F16;
  p.compute = ATTN_COMPUTE_BF16;
  EXPECT(attn_kernel_call(&probe, &p, NULL, q, kh, vh, o, err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(g_seen.compute == ATTN_COMPUTE_F32 && g_seen.kv_dtype == ATTN_DTYPE_F32,
         "the kernel sees F32 (got compute %d, kv %d)", (int)g_seen.compute, (int)g_seen.kv_dtype);
  bool ok = true;
  for (int i = 0; i < 384; i++) ok &= g_q[i] == attn_bf16_to_f32(attn_f32_to_bf16(q[i]));
  for (int i = 0; i < 320; i++)
    ok &= g_k[i] == attn_bf16_to_f32(attn_f32_to_bf16(attn_f16_to_f32(kh[i])));
  for (int i = 0; i < 160; i++)
    ok &= g_v[i] == attn_bf16_to_f32(attn_f32_to_bf16(attn_f16_to_f32(vh[i])));
  EXPECT(ok, "bf16 copies of Q and of the f16 K/V");
  size_t qb = 384 * 4, kb = 320 * 4, vb = 160 * 4;  // each a multiple of 64 already
  EXPECT(attn_kernel_workspace(&probe, &p, NULL) == qb + kb + vb, "workspace %zu",
         attn_kernel_workspace(&probe, &p, NULL));
  // f16 on f16 K/V: K/V need no rounding, only the widening; Q rounded to binary16
  p.compute = ATTN_COMPUTE_F16;
  EXPECT(attn_kernel_call(&probe, &p, NULL, q, kh, vh, o, err, sizeof err) == ATTN_OK, "%s", err);
  ok = true;
  for (int i = 0; i < 384; i++) ok &= g_q[i] == attn_f16_to_f32(attn_f32_to_f16(q[i]));
  for (int i = 0; i < 320; i++) ok &= g_k[i] == attn_f16_to_f32(kh[i]);
  EXPECT(ok, "f16 copies");
  // int8 on q8_0 K/V, a kernel that reads q8_0: K/V as stored, Q Q8_0-quantized per 32
  attn_block_q8_0 kq[10], vq[5];
  attn_quantize_rows(ATTN_DTYPE_Q8_0, k32, 5, 64, kq);
  attn_quantize_rows(ATTN_DTYPE_Q8_0, v32, 5, 32, vq);
  p.kv_dtype = ATTN_DTYPE_Q8_0;
  p.compute = ATTN_COMPUTE_INT8;
  EXPECT(attn_kernel_call(&probe_q8, &p, NULL, q, kq, vq, o, err, sizeof err) == ATTN_OK, "%s",
         err);
  EXPECT(g_kptr == (const void *)kq && g_seen.kv_dtype == ATTN_DTYPE_Q8_0 &&
             g_seen.compute == ATTN_COMPUTE_F32,
         "int8: K stays q8_0, the kernel runs F32");
  for (int r = 0; r < 6; r++) {
    attn_block_q8_0 qb8[2];
    attn_quantize_q8_0_row(q + r * 64, 64, qb8);
    attn_dequantize_row(ATTN_DTYPE_Q8_0, qb8, 64, want + r * 64);
  }
  EXPECT(!memcmp(g_q, want, sizeof want), "int8: Q quantized and dequantized per 32-block");
  EXPECT(attn_kernel_workspace(&probe_q8, &p, NULL) == qb, "int8 workspace: Q only");
  // a kernel with the mode's cap gets the inputs untouched
  const attn_kernel probe_bf16 = {.name = "probe_bf16",
                                  .summary = "x",
                                  .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_COMPUTE_BF16,
                                  .run = probe_run};
  p = attn_problem_make(1, 2, 1, 3, 5, 64, 32, false);
  p.compute = ATTN_COMPUTE_BF16;
  EXPECT(attn_kernel_call(&probe_bf16, &p, NULL, q, k32, v32, o, err, sizeof err) == ATTN_OK, "%s",
         err);
  EXPECT(g_seen.compute == ATTN_COMPUTE_BF16 && !memcmp(g_q, q, sizeof q) &&
             attn_kernel_workspace(&probe_bf16, &p, NULL) == 0,
         "native bf16: raw inputs, no copies");
  // ... unless the problem has an option it lacks: the F32 fallback gets rounded copies
  float sinks[2] = {0.5f, -1.0f};
  const attn_options opts = {.sinks = sinks};
  p.opts = &opts;
  EXPECT(attn_kernel_workspace(&probe_bf16, &p, NULL) >= qb + kb + 5 * 32 * 4,
         "fallback with options: copies");
}

// The reference in a mode on the raw inputs equals the reference in F32 on the rounded
// ones, bitwise (so the checker may run it either way).
static void test_reference_rounds(void) {
  const attn_kernel *ref = attn_kernel_find("reference");
  attn_problem p = attn_problem_make(1, 2, 1, 7, 9, 64, 32, true);
  float q[896], k[576], v[288], qr[896], kr[576], vr[288], o1[448], o2[448];
  fill(q, 896, 4), fill(k, 576, 5), fill(v, 288, 6);
  char err[256];
  for (int c = ATTN_COMPUTE_BF16; c <= ATTN_COMPUTE_F16; c++) {
    p.compute = (attn_compute)c;
    EXPECT(attn_kernel_call(ref, &p, NULL, q, k, v, o1, err, sizeof err) == ATTN_OK, "%s", err);
    attn_compute_round_q(p.compute, q, 14, 64, qr);
    attn_compute_round_kv(p.compute, ATTN_DTYPE_F32, k, 9, 64, kr);
    attn_compute_round_kv(p.compute, ATTN_DTYPE_F32, v, 9, 32, vr);
    attn_problem f = p;
    f.compute = ATTN_COMPUTE_F32;
    EXPECT(attn_kernel_call(ref, &f, NULL, qr, kr, vr, o2, err, sizeof err) == ATTN_OK, "%s", err);
    EXPECT(!memcmp(o1, o2, sizeof o1), "reference %s = F32 on rounded inputs",
           attn_compute_name(p.compute));
    bool differs = false;  // and the rounding is real: F32 on the raw inputs differs
    EXPECT(attn_kernel_call(ref, &f, NULL, q, k, v, o2, err, sizeof err) == ATTN_OK, "%s", err);
    for (int i = 0; i < 448; i++) differs |= o1[i] != o2[i];
    EXPECT(differs, "reference %s differs from F32", attn_compute_name(p.compute));
  }
  attn_block_q8_0 kq[18], vq[9];
  attn_quantize_rows(ATTN_DTYPE_Q8_0, k, 9, 64, kq);
  attn_quantize_rows(ATTN_DTYPE_Q8_0, v, 9, 32, vq);
  p.kv_dtype = ATTN_DTYPE_Q8_0;
  p.compute = ATTN_COMPUTE_INT8;
  EXPECT(attn_kernel_call(ref, &p, NULL, q, kq, vq, o1, err, sizeof err) == ATTN_OK, "%s", err);
  attn_compute_round_q(ATTN_COMPUTE_INT8, q, 14, 64, qr);
  attn_problem f = p;
  f.compute = ATTN_COMPUTE_F32;
  EXPECT(attn_kernel_call(ref, &f, NULL, qr, kq, vq, o2, err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(!memcmp(o1, o2, sizeof o1), "reference int8 = F32 on the Q8_0 Q");
}

// ── The checker's bound per mode ─────────────────────────────────────────────────────

// Runs k on the prepared case; returns the verdict (and prints it).
static attn_check_verdict verdict_of(const attn_kernel *k, const attn_check_prepared *pc,
                                     const char *what) {
  attn_check_result r;
  attn_check_kernel(k, pc, NULL, &r);
  printf("  %-18s %-28s %-12s ratio %.3g %s\n", k->name, what, attn_check_verdict_name(r.verdict),
         r.worst_ratio, r.message);
  return r.verdict;
}

// One key with p = 1 and v = 0, then n keys with p = e^-18 ≈ 2^-26 and v = 1: in bfloat16
// those probabilities stay (o ≈ n·e^-18), in binary16 they underflow to 0 (o = 0).
static attn_check_prepared *underflow_case(attn_compute c) {
  enum { N = 4096, DQK = 32, DV = 8 };
  attn_problem p = attn_problem_make(1, 1, 1, 1, N + 1, DQK, DV, false);
  p.scale = 1.0f;
  p.compute = c;
  float *q = calloc(DQK, sizeof(float)), *k = calloc((size_t)(N + 1) * DQK, sizeof(float));
  float *v = calloc((size_t)(N + 1) * DV, sizeof(float));
  q[0] = 1.0f;
  for (int j = 1; j <= N; j++) {
    k[j * DQK] = -18.0f;
    for (int d = 0; d < DV; d++) v[j * DV + d] = 1.0f;
  }
  char err[256];
  attn_check_prepared *pc = attn_check_prepare_inputs(&p, q, k, v, err, sizeof err);
  EXPECT(pc != NULL, "underflow case: %s", err);
  free(q), free(k), free(v);
  return pc;
}

// Equal scores over many keys, V in [0.5, 1.5): a bfloat16 accumulator stalls.
static attn_check_prepared *long_sum_case(void) {
  enum { N = 1024, DQK = 16, DV = 16 };
  attn_problem p = attn_problem_make(1, 1, 1, 4, N, DQK, DV, false);
  p.compute = ATTN_COMPUTE_BF16;
  float *q = calloc(4 * DQK, sizeof(float)), *k = malloc((size_t)N * DQK * sizeof(float));
  float *v = malloc((size_t)N * DV * sizeof(float));
  fill(q, 4 * DQK, 7);
  for (int i = 0; i < 4 * DQK; i++) q[i] *= 0.05f;
  fill(k, (size_t)N * DQK, 8);
  fill(v, (size_t)N * DV, 9);
  for (int i = 0; i < N * DV; i++) v[i] = 1.0f + v[i] / 6.0f;
  char err[256];
  attn_check_prepared *pc = attn_check_prepare_inputs(&p, q, k, v, err, sizeof err);
  EXPECT(pc != NULL, "long-sum case: %s", err);
  free(q), free(k), free(v);
  return pc;
}

// Q whose two 32-blocks differ 100× in magnitude, K the other way round, so that the
// small Q block carries the scores: one scale for 64 elements rounds it to ±1, 0.
static attn_check_prepared *block_case(void) {
  enum { SQ = 8, SKV = 40, DQK = 64, DV = 32 };
  attn_problem p = attn_problem_make(1, 2, 1, SQ, SKV, DQK, DV, false);
  p.kv_dtype = ATTN_DTYPE_Q8_0;
  p.compute = ATTN_COMPUTE_INT8;
  float q[2 * SQ * DQK], k[SKV * DQK], v[SKV * DV];
  fill(q, sizeof q / sizeof q[0], 10), fill(k, sizeof k / sizeof k[0], 11);
  fill(v, sizeof v / sizeof v[0], 12);
  for (int r = 0; r < 2 * SQ; r++)
    for (int d = 32; d < 64; d++) q[r * DQK + d] *= 0.01f;
  for (int j = 0; j < SKV; j++)
    for (int d = 0; d < 64; d++) k[j * DQK + d] *= d < 32 ? 0.01f : 3.0f;
  char err[256];
  attn_check_prepared *pc = attn_check_prepare_convert(&p, q, k, v, err, sizeof err);
  EXPECT(pc != NULL, "block case: %s", err);
  return pc;
}

static void test_checker_bounds(void) {
  attn_check_prepared *bf = underflow_case(ATTN_COMPUTE_BF16);
  attn_check_prepared *f16 = underflow_case(ATTN_COMPUTE_F16);
  attn_check_prepared *ls = long_sum_case();
  attn_check_prepared *bl = block_case();
  if (!bf || !f16 || !ls || !bl) return;
  const attn_kernel *blocked = attn_kernel_find("blocked");
  // p rounded to binary16 when bfloat16 is asked: fails; bfloat16 rounding passes; in F16
  // the underflow is the mode's own and the bound allows it
  EXPECT(verdict_of(&lowprec_p_f16, bf, "bf16 underflow") == ATTN_CHECK_FAIL,
         "p rounded to f16 in bf16 mode must fail");
  EXPECT(verdict_of(&lowprec_honest, bf, "bf16 underflow") == ATTN_CHECK_PASS, "honest bf16");
  EXPECT(verdict_of(&lowprec_honest, f16, "f16 underflow") == ATTN_CHECK_PASS, "honest f16");
  EXPECT(verdict_of(&lowprec_p_f16, f16, "f16 underflow") == ATTN_CHECK_PASS, "f16 in f16");
  EXPECT(verdict_of(blocked, bf, "bf16 underflow") == ATTN_CHECK_PASS, "blocked (portable path)");
  // P·V accumulated in bfloat16: fails
  EXPECT(verdict_of(&lowprec_acc_bf16, ls, "bf16 long sum") == ATTN_CHECK_FAIL,
         "bf16 accumulation must fail");
  EXPECT(verdict_of(&lowprec_honest, ls, "bf16 long sum") == ATTN_CHECK_PASS, "honest long sum");
  // Q quantized per 64: fails; per 32 passes
  EXPECT(verdict_of(&lowprec_q_block64, bl, "int8 blocks") == ATTN_CHECK_FAIL,
         "64-element Q blocks must fail");
  EXPECT(verdict_of(&lowprec_honest, bl, "int8 blocks") == ATTN_CHECK_PASS, "honest int8");
  EXPECT(verdict_of(blocked, bl, "int8 blocks") == ATTN_CHECK_PASS, "blocked int8");
  // the mode's error against FP32 is reported, and is the input rounding's size
  double abs_err = 0, rel = 0;
  EXPECT(attn_check_compute_error(bl, &abs_err, &rel) && rel > 1e-4 && rel < 0.5,
         "int8 compute error %g (relative %g)", abs_err, rel);
  EXPECT(attn_check_compute_error(ls, &abs_err, &rel) && rel > 0 && rel < 0.05,
         "bf16 compute error %g (relative %g)", abs_err, rel);
  attn_check_prepared_free(bf), attn_check_prepared_free(f16), attn_check_prepared_free(ls);
  attn_check_prepared_free(bl);
}

// The LSE bound under a dominant sink (f16): one key with score 0 and v = 1, a sink of
// logit S. A kernel that shifts by the sink and sums the keys' binary16-rounded p for its
// LSE gets S + log(f16(e^-S)). At S = 14 that is 0.0036 off (p = 13.95 subnormal steps
// rounds to 14): within the bound, and a 0.5 error still fails. At S = 16 (p = 1.89 steps
// rounds to 2, 0.058 off; at 17 it would round to 0 and the LSE to −inf) the bound says
// nothing: inconclusive, never a pass.
static attn_check_verdict sink_lse_verdict(float sink, float lse_err, bool rounded_lse) {
  enum { D = 8 };
  attn_problem p = attn_problem_make(1, 1, 1, 1, 1, D, D, false);
  p.scale = 1.0f;
  p.compute = ATTN_COMPUTE_F16;
  float q[D] = {1.0f}, k[D] = {0.0f}, v[D], lse_out = 0.0f;
  for (int d = 0; d < D; d++) v[d] = 1.0f;
  const attn_options opts = {.sinks = &sink, .lse = &lse_out};
  p.opts = &opts;
  char err[256];
  attn_check_prepared *pc = attn_check_prepare_inputs(&p, q, k, v, err, sizeof err);
  EXPECT(pc != NULL, "sink case: %s", err);
  if (!pc) return ATTN_CHECK_FAIL;
  const double pk = exp(-(double)sink);  // the key's p under the sink's shift
  const double ph = (double)attn_f16_to_f32(attn_f32_to_f16((float)pk));
  float o[D];
  for (int d = 0; d < D; d++) o[d] = (float)(pk / (pk + 1.0));
  float lse = (float)((rounded_lse ? (double)sink + log(ph) : 0.0) + (double)lse_err);
  attn_check_result r;
  attn_check_output_lse(pc, o, &lse, &r);
  attn_check_prepared_free(pc);
  return r.verdict;
}

static void test_sink_lse_bound(void) {
  EXPECT(sink_lse_verdict(14.0f, 0.0f, false) == ATTN_CHECK_PASS, "exact LSE, sink 14");
  EXPECT(sink_lse_verdict(14.0f, 0.0f, true) == ATTN_CHECK_PASS,
         "LSE of binary16-rounded p, sink 14");
  EXPECT(sink_lse_verdict(14.0f, 0.5f, false) == ATTN_CHECK_FAIL, "LSE 0.5 off, sink 14");
  EXPECT(sink_lse_verdict(16.0f, 0.0f, true) == ATTN_CHECK_INCONCLUSIVE,
         "sink 16: the LSE bound says nothing");
  EXPECT(sink_lse_verdict(0.0f, 0.01f, false) == ATTN_CHECK_FAIL,
         "no dominant sink: an LSE 0.01 off fails");
}

// The honest kernel passes every compute-mode case of the check matrix (rounding p is
// inside the bound); the buggy ones fail at least one.
static void test_matrix(void) {
  const size_t n = attn_check_matrix(false, NULL, 0);
  attn_check_case *cases = malloc(n * sizeof *cases);
  attn_check_matrix(false, cases, n);
  const attn_kernel *ks[] = {&lowprec_honest, &lowprec_p_f16, &lowprec_acc_bf16,
                             &lowprec_q_block64};
  int fails[4] = {0}, passes[4] = {0}, modes = 0;
  for (size_t i = 0; i < n; i++) {
    if (cases[i].problem.compute == ATTN_COMPUTE_F32) continue;
    modes++;
    char err[256], what[256];
    attn_check_prepared *pc = attn_check_prepare(&cases[i], err, sizeof err);
    EXPECT(pc, "prepare: %s", err);
    if (!pc) continue;
    attn_check_case_describe(&cases[i], what, sizeof what);
    double ce = 0, cr = 0;
    EXPECT(attn_check_compute_error(pc, &ce, &cr), "%s: compute error known", what);
    for (int kk = 0; kk < 4; kk++) {
      attn_check_result r;
      attn_check_kernel(ks[kk], pc, NULL, &r);
      fails[kk] += r.verdict == ATTN_CHECK_FAIL;
      passes[kk] += r.verdict == ATTN_CHECK_PASS;
      if (kk == 0)
        EXPECT(r.verdict == ATTN_CHECK_PASS, "honest on %s: %s %s", what,
               attn_check_verdict_name(r.verdict), r.message);
    }
    attn_check_prepared_free(pc);
  }
  printf(
      "  %d compute-mode cases: honest %d pass; p_f16 %d fail, acc_bf16 %d fail, "
      "q_block64 %d fail\n",
      modes, passes[0], fails[1], fails[2], fails[3]);
  EXPECT(modes >= 20, "the matrix has compute-mode cases (%d)", modes);
  EXPECT(fails[2] > 0 && fails[3] > 0, "the matrix catches bf16 accumulation and Q blocks");
  free(cases);
}

static void test_registered(void) {
  static const attn_kernel *const recs[] = {&lowprec_honest, &lowprec_p_f16, &lowprec_acc_bf16,
                                            &lowprec_q_block64};
  const attn_plugin pl = {ATTN_PLUGIN_ABI_VERSION, sizeof(attn_kernel), 4, recs};
  char err[256];
  EXPECT(attn_registry_add(&pl, "lowprec", err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(attn_kernel_find("lowprec_honest") == &lowprec_honest, "registered");
}

// attn_compute_round_q / _kv (the rounded copies attn_kernel_run makes) against
// attn_compute_round element by element: every rounding boundary of bf16 and f16 (ties,
// the largest finite values, overflow to inf, the f16 subnormal range and its edges, the
// smallest values, NaN with payloads), both signs, plus random bit patterns; from float32
// K/V (one pass) and from bf16 storage (rounded in place).
static void test_rounding_rows(void) {
  static const uint32_t kEdges[] = {
      0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x33000000u, 0x33000001u, 0x337fffffu,
      0x33800000u, 0x33c00000u, 0x34000000u, 0x387fc000u, 0x387fe000u, 0x387ff000u, 0x387fffffu,
      0x38800000u, 0x38801000u, 0x38802000u, 0x38803000u, 0x3f800000u, 0x3f808000u, 0x3f818000u,
      0x3f80ffffu, 0x3f817fffu, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477fffffu, 0x47800000u,
      0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu, 0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fbfe000u,
      0x7f80a000u, 0x7fffffffu, 0x3c00fff0u, 0x3a7fe000u, 0x37ffffffu};
  enum { kN = 4096 };
  float *x = malloc(kN * sizeof *x), *want = malloc(kN * sizeof *want);
  float *got = malloc(kN * sizeof *got);
  uint16_t *xb = malloc(kN * sizeof *xb);
  const size_t ne = sizeof kEdges / sizeof kEdges[0];
  uint64_t r = 0x2545f4914f6cdd1dull;
  for (size_t i = 0; i < kN; i++) {
    uint32_t b;
    if (i < 2 * ne) {
      b = kEdges[i / 2] | (i % 2 ? 0x80000000u : 0u);
    } else {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      b = (uint32_t)(r >> 32);
    }
    memcpy(&x[i], &b, sizeof b);
    xb[i] = attn_f32_to_bf16(x[i]);
  }
  const attn_compute modes[] = {ATTN_COMPUTE_BF16, ATTN_COMPUTE_F16};
  for (int m = 0; m < 2; m++) {
    const attn_compute c = modes[m];
    for (size_t i = 0; i < kN; i++) want[i] = attn_compute_round(c, x[i]);
    attn_compute_round_q(c, x, kN / 64, 64, got);
    EXPECT(memcmp(got, want, kN * sizeof *got) == 0, "%s: Q rounding differs from the rule",
           attn_compute_name(c));
    attn_compute_round_kv(c, ATTN_DTYPE_F32, x, kN / 64, 64, got);
    EXPECT(memcmp(got, want, kN * sizeof *got) == 0, "%s: K/V rounding differs from the rule",
           attn_compute_name(c));
    for (size_t i = 0; i < kN; i++) want[i] = attn_compute_round(c, attn_bf16_to_f32(xb[i]));
    attn_compute_round_kv(c, ATTN_DTYPE_BF16, xb, kN / 64, 64, got);
    EXPECT(memcmp(got, want, kN * sizeof *got) == 0,
           "%s: rounding bf16 K/V in place differs from the rule", attn_compute_name(c));
  }
  free(x), free(want), free(got), free(xb);
}

int main(void) {
  test_names();
  test_rounding_rows();
  test_validation();
  test_f16_range();
  test_bf16_int8_range();
  test_layout_ranges();
  test_portable_path();
  test_reference_rounds();
  test_registered();
  test_checker_bounds();
  test_sink_lse_bound();
  test_matrix();
  return test_finish("test_compute_modes");
}
