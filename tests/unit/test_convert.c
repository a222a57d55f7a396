// SPDX-License-Identifier: MIT
// The K/V element types (attn.h "K/V element types", kernels/core/convert.h): every f16
// and bf16 bit pattern round-trips; float32 → f16/bf16 rounds to nearest even (ties,
// overflow to inf, NaN kept, f16 subnormals), checked against an independent oracle on
// random floats; q8_0's block rules (all-zero block, the ±127 clamp, ties of q, a
// non-finite element); sizes, names and validation; the float32 conversion fallback of
// attn_kernel_run (workspace, and a float32-only kernel sees exactly the stored values;
// a native one the stored tensors) and the input check on the stored values.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attn.h"
#include "core/convert.h"
#include "test_util.h"

static float bits_f(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}
static uint32_t f_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static uint64_t g_rng = 0x243f6a8885a308d3ull;
static uint32_t rnd32(void) {  // xorshift64*
  g_rng ^= g_rng >> 12, g_rng ^= g_rng << 25, g_rng ^= g_rng >> 27;
  return (uint32_t)((g_rng * 0x2545f4914f6cdd1dull) >> 32);
}

// The nearest-even f16 of x by search over the ordered non-negative f16 values (an oracle
// independent of the bit tricks): the candidates around |x| by value, in double.
static uint16_t f16_oracle(float x) {
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  const double a = fabs((double)x);
  if (a >= 65520.0) return sign | 0x7c00;  // halfway to 2^16 and above: inf
  uint16_t lo = 0, hi = 0x7bff;            // largest h with value <= a, by bisection
  while (lo < hi) {
    const uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    if ((double)attn_f16_to_f32(mid) <= a)
      lo = mid;
    else
      hi = (uint16_t)(mid - 1);
  }
  const double below = attn_f16_to_f32(lo);
  if (below == a || lo == 0x7bff) return sign | lo;  // exact (65504..65520 handled above)
  const double above = attn_f16_to_f32((uint16_t)(lo + 1));
  const double dl = a - below, du = above - a;
  const uint16_t h = (dl < du || (dl == du && !(lo & 1))) ? lo : (uint16_t)(lo + 1);
  return sign | h;
}

static void test_f16(void) {
  // every non-NaN pattern round-trips; NaN stays NaN
  size_t bad = 0;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    const float f = attn_f16_to_f32((uint16_t)h);
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (nan ? !isnan(f) || !isnan(attn_f16_to_f32(attn_f32_to_f16(f))) : attn_f32_to_f16(f) != h)
      bad++;
  }
  EXPECT(bad == 0, "%zu f16 patterns do not round-trip", bad);
  // values
  EXPECT(attn_f16_to_f32(0x3c00) == 1.0f && attn_f16_to_f32(0xc000) == -2.0f, "1 and -2");
  EXPECT(attn_f16_to_f32(0x7bff) == 65504.0f, "largest finite f16");
  EXPECT(attn_f16_to_f32(0x0001) == 0x1p-24f && attn_f16_to_f32(0x03ff) == 1023 * 0x1p-24f,
         "f16 subnormals");
  EXPECT(attn_f16_to_f32(0x0400) == 0x1p-14f, "smallest normal f16");
  EXPECT(isinf(attn_f16_to_f32(0x7c00)) && attn_f16_to_f32(0xfc00) < 0, "inf");
  // round to nearest, ties to even
  EXPECT(attn_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00, "tie 1 + 2^-11 → 1 (even)");
  EXPECT(attn_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02, "tie 1 + 3·2^-11 → 1 + 2^-9 (even)");
  EXPECT(attn_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01, "just above a tie rounds up");
  EXPECT(attn_f32_to_f16(2047.5f) == attn_f32_to_f16(2048.0f), "tie at 2047.5 → 2048");
  // overflow
  EXPECT(attn_f32_to_f16(65504.0f) == 0x7bff && attn_f32_to_f16(65519.0f) == 0x7bff,
         "65519 rounds to 65504");
  EXPECT(attn_f32_to_f16(65520.0f) == 0x7c00 && attn_f32_to_f16(-65520.0f) == 0xfc00,
         "65520 (the tie above 65504) → ±inf");
  EXPECT(attn_f32_to_f16(1e10f) == 0x7c00 && attn_f32_to_f16(FLT_MAX) == 0x7c00, "overflow → inf");
  EXPECT(attn_f32_to_f16(INFINITY) == 0x7c00 && attn_f32_to_f16(-INFINITY) == 0xfc00, "inf");
  // NaN kept (quiet), including a signalling NaN whose payload is in the low bits only
  const uint16_t qn = attn_f32_to_f16(NAN), sn = attn_f32_to_f16(bits_f(0x7f800001u));
  EXPECT((qn & 0x7c00) == 0x7c00 && (qn & 0x3ff), "NaN → NaN (0x%04x)", qn);
  EXPECT((sn & 0x7c00) == 0x7c00 && (sn & 0x200), "sNaN → quiet NaN, not inf (0x%04x)", sn);
  // subnormals, gradual underflow with RNE
  EXPECT(attn_f32_to_f16(0x1p-24f) == 0x0001, "2^-24 → smallest subnormal");
  EXPECT(attn_f32_to_f16(0x1p-25f) == 0x0000, "2^-25 (tie) → 0 (even)");
  EXPECT(attn_f32_to_f16(-0x1p-25f) == 0x8000, "-2^-25 → -0");
  EXPECT(attn_f32_to_f16(0x1p-25f * 1.0001f) == 0x0001, "just above 2^-25 → 2^-24");
  EXPECT(attn_f32_to_f16(1.5f * 0x1p-24f) == 0x0002, "1.5·2^-24 (tie) → 2·2^-24 (even)");
  EXPECT(attn_f32_to_f16(2.5f * 0x1p-24f) == 0x0002, "2.5·2^-24 (tie) → 2·2^-24 (even)");
  EXPECT(attn_f32_to_f16(1023.5f * 0x1p-24f) == 0x0400, "1023.5·2^-24 → smallest normal");
  EXPECT(attn_f32_to_f16(1e-30f) == 0 && attn_f32_to_f16(0x1p-149f) == 0, "tiny → 0");
  // random floats (every exponent) against the oracle
  size_t wrong = 0;
  uint32_t first = 0;
  for (int i = 0; i < 300000; i++) {
    uint32_t x = rnd32();
    if (i % 2) x = (x & 0x807fffffu) | ((102u + rnd32() % 40u) << 23);  // the f16 range
    const float f = bits_f(x);
    if (isnan(f)) continue;
    if (attn_f32_to_f16(f) != f16_oracle(f) && !wrong++) first = x;
  }
  EXPECT(wrong == 0, "%zu floats round differently from the oracle (first 0x%08x)", wrong, first);
#ifdef __FLT16_MAX__
  // and against the compiler's _Float16 (IEEE RNE conversion), where it has one
  size_t cwrong = 0;
  for (int i = 0; i < 300000; i++) {
    uint32_t x = (rnd32() & 0x807fffffu) | ((100u + rnd32() % 45u) << 23);
    const _Float16 h = (_Float16)bits_f(x);
    uint16_t hb;
    memcpy(&hb, &h, 2);
    cwrong += attn_f32_to_f16(bits_f(x)) != hb;
  }
  EXPECT(cwrong == 0, "%zu floats differ from the compiler's _Float16", cwrong);
#endif
}

static void test_bf16(void) {
  size_t bad = 0, layout = 0;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    const float f = attn_bf16_to_f32((uint16_t)h);
    layout += f_bits(f) != h << 16;  // the top half of a binary32
    const bool nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    if (nan ? !isnan(attn_bf16_to_f32(attn_f32_to_bf16(f))) : attn_f32_to_bf16(f) != h) bad++;
  }
  EXPECT(bad == 0 && layout == 0, "%zu bf16 patterns do not round-trip, %zu not bits << 16", bad,
         layout);
  EXPECT(attn_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80, "tie 1 + 2^-8 → 1 (even)");
  EXPECT(attn_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82, "tie 1 + 3·2^-8 → 1 + 2^-6 (even)");
  EXPECT(attn_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81, "above a tie rounds up");
  EXPECT(attn_f32_to_bf16(FLT_MAX) == 0x7f80, "FLT_MAX rounds to inf");
  EXPECT(attn_f32_to_bf16(bits_f(0x7f7f7fffu)) == 0x7f7f, "just below the tie stays finite");
  EXPECT(attn_f32_to_bf16(-INFINITY) == 0xff80, "-inf");
  const uint16_t sn = attn_f32_to_bf16(bits_f(0x7f800001u));
  EXPECT((sn & 0x7f80) == 0x7f80 && (sn & 0x7f), "sNaN → NaN, not inf (0x%04x)", sn);
  EXPECT(attn_f32_to_bf16(bits_f(0x00000001u)) == 0x0000, "the smallest subnormal → +0");
  EXPECT(attn_f32_to_bf16(bits_f(0x00018000u)) == 0x0002, "subnormal tie → even");
  // random: the result is one of the two neighbours, the nearer, ties even
  size_t wrong = 0;
  for (int i = 0; i < 300000; i++) {
    const uint32_t x = rnd32();
    const float f = bits_f(x);
    if (isnan(f) || isinf(f)) continue;
    const uint32_t lo = x & 0xffff0000u, hi = lo + 0x10000u;  // the neighbours (same sign)
    const double a = fabs((double)f), vl = fabs((double)bits_f(lo));
    // above the largest bf16 the next value is 2^128 (the overflow threshold is halfway)
    const double vh = (hi & 0x7fffffffu) == 0x7f800000u ? 0x1p128 : fabs((double)bits_f(hi));
    const double dl = a - vl, dh = vh - a;
    const uint16_t want =
        (uint16_t)((dl < dh || (dl == dh && !((lo >> 16) & 1))) ? lo >> 16 : hi >> 16);
    wrong += attn_f32_to_bf16(f) != want;
  }
  EXPECT(wrong == 0, "%zu floats round to the wrong bf16 neighbour", wrong);
}

static void test_q8_0(void) {
  EXPECT(sizeof(attn_block_q8_0) == 34, "block is 34 bytes");
  float x[64], y[64];
  attn_block_q8_0 b[2];
  // all-zero block: d = 0, q = 0, dequantizes to zeros
  memset(x, 0, sizeof x);
  x[40] = 1.0f;  // the second block is not zero
  attn_quantize_q8_0_row(x, 64, b);
  bool zero = b[0].d == 0;
  for (int t = 0; t < 32; t++) zero &= b[0].qs[t] == 0;
  EXPECT(zero, "all-zero block: d = 0 and q = 0");
  EXPECT(attn_f16_to_f32(b[1].d) == attn_f16_to_f32(attn_f32_to_f16(1.0f / 127.0f)) &&
             b[1].qs[8] == 127,
         "max element → 127 (d = f16(max/127), got d %g q %d)", (double)attn_f16_to_f32(b[1].d),
         b[1].qs[8]);
  // ties of q round to even: d = 1/16 exactly (amax = 127/16)
  for (int t = 0; t < 32; t++) x[t] = 0.0f;
  x[0] = 127.0f / 16.0f, x[1] = 2.5f / 16.0f, x[2] = -3.5f / 16.0f, x[3] = 0.5f / 16.0f;
  x[4] = -127.0f / 16.0f;
  attn_quantize_q8_0_row(x, 32, b);
  EXPECT(attn_f16_to_f32(b[0].d) == 1.0f / 16.0f, "d = 1/16 (got %g)",
         (double)attn_f16_to_f32(b[0].d));
  EXPECT(b[0].qs[0] == 127 && b[0].qs[4] == -127, "±max → ±127");
  EXPECT(b[0].qs[1] == 2 && b[0].qs[2] == -4 && b[0].qs[3] == 0,
         "ties: 2.5 → 2, -3.5 → -4, 0.5 → 0 (got %d %d %d)", b[0].qs[1], b[0].qs[2], b[0].qs[3]);
  // the clamp: an amax whose f16(amax/127) rounds down, so amax/d > 127.5
  float amax = 0.0f;  // (only where d is an f16 subnormal: elsewhere f16's 2^-11 is too fine)
  for (float a = 1e-6f; a < 1e-2f && amax == 0.0f; a *= 1.0001f) {
    const float d = attn_f16_to_f32(attn_f32_to_f16(a / 127.0f));
    if (d > 0.0f && rintf(a / d) > 127.0f) amax = a;
  }
  EXPECT(amax > 0.0f, "found an amax that needs the clamp");
  for (int t = 0; t < 32; t++) x[t] = (t % 2 ? -1.0f : 1.0f) * amax * (float)t / 31.0f;
  attn_quantize_q8_0_row(x, 32, b);
  EXPECT(b[0].qs[31] == -127 && b[0].qs[30] <= 127, "clamped to -127 (got %d)", b[0].qs[31]);
  // dequantization: exactly d·q; error of a random block at most d/2 (+ the clamp)
  for (int t = 0; t < 64; t++) x[t] = (float)((int)(rnd32() % 2001) - 1000) / 37.0f;
  attn_quantize_q8_0_row(x, 64, b);
  attn_dequantize_row(ATTN_DTYPE_Q8_0, b, 64, y);
  double worst = 0.0;
  for (int t = 0; t < 64; t++) {
    const float d = attn_f16_to_f32(b[t / 32].d);
    EXPECT(y[t] == d * (float)b[t / 32].qs[t % 32], "dequantized element %d is d·q", t);
    EXPECT(attn_kv_elem(ATTN_DTYPE_Q8_0, b, 64, (size_t)t) == y[t], "attn_kv_elem q8_0 %d", t);
    const double e = fabs((double)y[t] - (double)x[t]) / (double)d;
    if (e > worst) worst = e;
  }
  EXPECT(worst <= 0.5 + 1e-3, "q8_0 error %g·d > d/2", worst);
  // a non-finite element or a scale overflow makes the block NaN
  x[5] = INFINITY;
  attn_quantize_q8_0_row(x, 64, b);
  attn_dequantize_row(ATTN_DTYPE_Q8_0, b, 64, y);
  EXPECT(isnan(y[0]) && isnan(y[31]) && !isnan(y[32]), "inf element: its block is NaN");
  for (int t = 0; t < 32; t++) x[t] = 1e7f;
  attn_quantize_q8_0_row(x, 32, b);
  attn_dequantize_row(ATTN_DTYPE_Q8_0, b, 32, y);
  EXPECT(isnan(y[0]), "max|x|/127 above 65504: NaN (got %g)", (double)y[0]);
}

static void test_sizes_and_names(void) {
  EXPECT(attn_kv_row_bytes(ATTN_DTYPE_F32, 64) == 256 &&
             attn_kv_row_bytes(ATTN_DTYPE_F16, 64) == 128 &&
             attn_kv_row_bytes(ATTN_DTYPE_BF16, 3) == 6 &&
             attn_kv_row_bytes(ATTN_DTYPE_Q8_0, 64) == 68 &&
             attn_kv_row_bytes(ATTN_DTYPE_Q8_0, 128) == 136,
         "row bytes");
  EXPECT(attn_kv_row_bytes((attn_dtype)7, 64) == 0 && attn_kv_row_bytes(ATTN_DTYPE_F16, 0) == 0,
         "row bytes of an unknown type or dim 0");
  EXPECT(attn_kv_row_bytes(ATTN_DTYPE_F32, INT64_MAX) == SIZE_MAX, "row bytes saturate");
  attn_problem p = attn_problem_make(2, 8, 2, 1, 100, 64, 128, false);
  EXPECT(attn_k_bytes(&p) == attn_k_elems(&p) * 4 && attn_v_bytes(&p) == attn_v_elems(&p) * 4,
         "F32 bytes");
  p.kv_dtype = ATTN_DTYPE_Q8_0;
  EXPECT(attn_k_bytes(&p) == 2 * 2 * 100 * 68 && attn_v_bytes(&p) == 2 * 2 * 100 * 136,
         "Q8_0 bytes");
  char err[256];
  EXPECT(attn_problem_validate(&p, err, sizeof err), "q8_0 with 64/128: %s", err);
  p.head_dim_v = 48;
  EXPECT(!attn_problem_validate(&p, err, sizeof err) && strstr(err, "q8_0") &&
             strstr(err, "multiples of 32"),
         "q8_0 with head_dim_v 48 refused: %s", err);
  p.head_dim_v = 64, p.kv_dtype = (attn_dtype)9;
  EXPECT(!attn_problem_validate(&p, err, sizeof err) && strstr(err, "kv_dtype"),
         "unknown kv_dtype refused: %s", err);
  static const char *const names[] = {"f32", "f16", "bf16", "q8_0"};
  for (int t = 0; t < ATTN_DTYPE_COUNT; t++) {
    attn_dtype d = ATTN_DTYPE_F32;
    EXPECT(strcmp(attn_dtype_name((attn_dtype)t), names[t]) == 0, "name of %d", t);
    EXPECT(attn_dtype_parse(names[t], &d) && d == (attn_dtype)t, "parse %s", names[t]);
  }
  EXPECT(!attn_dtype_parse("F16", NULL) && !attn_dtype_parse("q8", NULL) &&
             !attn_dtype_parse("", NULL) && !attn_dtype_parse(NULL, NULL),
         "bad names refused");
  char buf[96];
  EXPECT(strcmp(attn_isa_names(ATTN_ISA_F16C | ATTN_ISA_AVX512BF16 | ATTN_ISA_AVX512FP16, buf,
                               sizeof buf),
                "f16c avx512bf16 avx512fp16") == 0,
         "ISA names: %s", buf);
}

// A kernel that records the K and V it was given (a copy of their first bytes, and where
// they were: the workspace is freed when attn_kernel_call returns).
static unsigned char g_seen_k[5 * 32 * 4], g_seen_v[5 * 64 * 4];
static const void *g_seen_k_at;
static attn_dtype g_seen_type;
static int record_run(const attn_problem *p, const attn_exec *e, const float *q, const void *k,
                      const void *v, float *o, void *ws) {
  (void)e, (void)q, (void)ws;
  const size_t kb = attn_k_bytes(p), vb = attn_v_bytes(p);
  memcpy(g_seen_k, k, kb < sizeof g_seen_k ? kb : sizeof g_seen_k);
  memcpy(g_seen_v, v, vb < sizeof g_seen_v ? vb : sizeof g_seen_v);
  g_seen_k_at = k, g_seen_type = p->kv_dtype;
  memset(o, 0, attn_o_elems(p) * sizeof *o);
  return ATTN_OK;
}

static void test_fallback(void) {
  const attn_kernel rec = {.name = "record", .summary = "test", .run = record_run};
  attn_problem p = attn_problem_make(1, 2, 1, 3, 5, 32, 64, false);
  p.kv_dtype = ATTN_DTYPE_BF16;
  EXPECT(!attn_kernel_kv_native(&rec, &p), "a float32-only kernel is not native for bf16");
  EXPECT(attn_kernel_workspace(&rec, &p, NULL) >= (attn_k_elems(&p) + attn_v_elems(&p)) * 4,
         "the workspace holds the float32 copies");
  float q[3 * 2 * 32], k32[5 * 32], v32[5 * 64], o[3 * 2 * 64];
  for (size_t i = 0; i < sizeof q / sizeof *q; i++) q[i] = 0.01f * (float)(i % 13);
  for (size_t i = 0; i < 5 * 32; i++) k32[i] = 0.1f * (float)i - 3.3f;
  for (size_t i = 0; i < 5 * 64; i++) v32[i] = 1.0f / (float)(i + 1);
  uint16_t ks[5 * 32], vs[5 * 64];
  attn_quantize_rows(ATTN_DTYPE_BF16, k32, 5, 32, ks);
  attn_quantize_rows(ATTN_DTYPE_BF16, v32, 5, 64, vs);
  char err[256];
  EXPECT(attn_kernel_call(&rec, &p, NULL, q, ks, vs, o, err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(g_seen_type == ATTN_DTYPE_F32, "the kernel ran on an F32 problem");
  bool same = true;
  for (size_t i = 0; same && i < 5 * 32; i++) {
    float x;
    memcpy(&x, g_seen_k + 4 * i, 4);
    same = x == attn_bf16_to_f32(ks[i]);
  }
  for (size_t i = 0; same && i < 5 * 64; i++) {
    float x;
    memcpy(&x, g_seen_v + 4 * i, 4);
    same = x == attn_bf16_to_f32(vs[i]);
  }
  EXPECT(same, "the kernel saw exactly the stored bf16 values as float32");
  // a native kernel gets the stored tensors themselves
  const attn_kernel nat = {
      .name = "native", .summary = "t", .caps = ATTN_CAP_KV_BF16, .run = record_run};
  EXPECT(attn_kernel_call(&nat, &p, NULL, q, ks, vs, o, err, sizeof err) == ATTN_OK, "%s", err);
  EXPECT(g_seen_type == ATTN_DTYPE_BF16 && g_seen_k_at == (const void *)ks,
         "a native kernel reads the bf16 tensors in place");
  // the input domain is checked on the stored values: an f16 inf is refused
  p.kv_dtype = ATTN_DTYPE_F16;
  uint16_t kh[5 * 32], vh[5 * 64];
  attn_quantize_rows(ATTN_DTYPE_F16, k32, 5, 32, kh);
  attn_quantize_rows(ATTN_DTYPE_F16, v32, 5, 64, vh);
  vh[7] = 0x7c00;
  EXPECT(attn_kernel_call(&rec, &p, NULL, q, kh, vh, o, err, sizeof err) == ATTN_ERR_RANGE &&
             strstr(err, "V[0][0][0][7]"),
         "an f16 inf in V is refused: %s", err);
}

int main(void) {
  test_f16();
  test_bf16();
  test_q8_0();
  test_sizes_and_names();
  test_fallback();
  return test_finish("test_convert");
}
