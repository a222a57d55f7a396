// SPDX-License-Identifier: MIT
// ss_speed_body.h — stream_speed's loops, compiled once per ISA (ss_speed_avx2.c,
// ss_speed_avx512.c define SS_OPS and include the ISA's vec_*.h first). The loops stand
// for flash decode's inner loops with everything else taken away (docs/perf-tools.md):
// what widening K costs next to the FMAs, and which read orders the
// hardware prefetchers follow while the core is busy with arithmetic.
#include <math.h>
#include <string.h>

#include "simd/kv_widen.h"
#include "ss_speed.h"

#define SS_CAT2(a, b) a##_##b
#define SS_CAT(a, b) SS_CAT2(a, b)
#define SS_FN(name) SS_CAT(SS_OPS, name)

// The lanes of a[0 .. n) added into a double (the loops' results, so nothing is dead code).
static double SS_FN(vsum)(const vf_t *a, int n) {
  float buf[VF_W];
  double s = 0.0;
  for (int i = 0; i < n; i++) {
    vf_store(buf, a[i]);
    for (int x = 0; x < VF_W; x++) s += buf[x];
  }
  return s;
}

// reps × n/SS_WK steps of SS_WK widened K vectors, each used by 4 query rows: 4·SS_WK
// independent FMAs per step — flash decode's G = 4 score groups (4 rows × 4 keys in 32
// registers, 4 × 2 in AVX2's 16: FL_DEC_ACC).
#define SS_WK (sizeof(vf_t) == 64 ? 4 : 2)
#define SS_WIDEN_LOOP(LOAD)                                                          \
  vf_t q[4], a[4][4];                                                                \
  for (int r = 0; r < 4; r++) {                                                      \
    q[r] = vf_set1(0.5f + 0.125f * (float)r);                                        \
    for (int c = 0; c < 4; c++) a[r][c] = vf_zero();                                 \
  }                                                                                  \
  for (int64_t rep = 0; rep < reps; rep++)                                           \
    for (int64_t i = 0; i + (int64_t)SS_WK <= n; i += SS_WK) {                       \
      vf_t kv[4];                                                                    \
      for (int c = 0; c < (int)SS_WK; c++) kv[c] = LOAD(i + c);                      \
      for (int r = 0; r < 4; r++)                                                    \
        for (int c = 0; c < (int)SS_WK; c++) a[r][c] = vf_fma(q[r], kv[c], a[r][c]); \
    }                                                                                \
  return SS_FN(vsum)(&a[0][0], 4 * 4);

static double SS_FN(widen_f32)(const float *k, int64_t n, int64_t reps){
#define SS_LOAD(i) vf_load(k + (i)*VF_W)
    SS_WIDEN_LOOP(SS_LOAD)
#undef SS_LOAD
} KV_F16C static double SS_FN(widen_f16)(const uint16_t *k, int64_t n, int64_t reps) {
#define SS_LOAD(i) kv_w_f16(k + (i)*VF_W)
  SS_WIDEN_LOOP(SS_LOAD)
#undef SS_LOAD
}
static double SS_FN(widen_bf16)(const uint16_t *k, int64_t n, int64_t reps){
#define SS_LOAD(i) kv_w_bf16(k + (i)*VF_W)
    SS_WIDEN_LOOP(SS_LOAD)
#undef SS_LOAD
}  // q8_0: each vector d·q (the block scale widened per vector, as flash decode's P·V does).
KV_F16C static double SS_FN(widen_q8_0)(const attn_block_q8_0 *k, int64_t n, int64_t reps) {
#define SS_LOAD(i)                                         \
  vf_mul(kv_w_scale_f16c(k[(i)*VF_W / ATTN_Q8_0_BLOCK].d), \
         kv_w_i8(k[(i)*VF_W / ATTN_Q8_0_BLOCK].qs + (i)*VF_W % ATTN_Q8_0_BLOCK))
  SS_WIDEN_LOOP(SS_LOAD)
#undef SS_LOAD
}
#undef SS_WIDEN_LOOP

static double SS_FN(widen)(attn_dtype t, const void *k, int64_t n, int64_t reps) {
  switch (t) {
    case ATTN_DTYPE_F16:
      return kv_have_f16c() ? SS_FN(widen_f16)(k, n, reps) : NAN;
    case ATTN_DTYPE_BF16:
      return SS_FN(widen_bf16)(k, n, reps);
    case ATTN_DTYPE_Q8_0:
      return kv_have_f16c() ? SS_FN(widen_q8_0)(k, n, reps) : NAN;
    default:
      return SS_FN(widen_f32)(k, n, reps);
  }
}

// The vectors of the 64-byte line at p, FL FMAs on them (8 independent chains, acc).
#define SS_LV (64 / (int)sizeof(vf_t))  // vectors per line
static inline __attribute__((always_inline)) void SS_FN(line)(const char *p, const char *pf,
                                                              const int FL, vf_t *acc, vf_t q) {
  if (pf) __builtin_prefetch(pf, 0, 2);
  vf_t x[SS_LV];
  for (int i = 0; i < SS_LV; i++) x[i] = vf_load((const float *)p + i * VF_W);
  for (int f = 0; f < FL; f++) acc[f & 7] = vf_fma(x[f % SS_LV], q, acc[f & 7]);
  if (FL == 0)  // reads only: keep the loads
    for (int i = 0; i < SS_LV; i++) acc[i & 7] = vf_add(acc[i & 7], x[i]);
}

// One block of `block` bytes at p front to back (pf: the same offsets of the block ahead).
static inline __attribute__((always_inline)) void SS_FN(linear)(const char *p, const char *pf,
                                                                size_t block, const int FL,
                                                                vf_t *acc, vf_t q) {
  for (size_t o = 0; o < block; o += 64) SS_FN(line)(p + o, pf ? pf + o : NULL, FL, acc, q);
}

static inline __attribute__((always_inline)) double SS_FN(stream_fl)(const ss_stream_args *g,
                                                                     const int FL) {
  vf_t acc[8];
  for (int i = 0; i < 8; i++) acc[i] = vf_zero();
  const vf_t q = vf_set1(0.5f);
  const size_t B = g->block, rb = g->row_bytes, nb = g->bytes / B;
  for (size_t j = 0; j < nb; j++) {
    const char *k = g->k + j * B, *v = g->v + j * B;
    const char *kp = g->prefetch && j + 1 < nb ? k + B : NULL;
    const char *vp = g->prefetch && j + 1 < nb ? v + B : NULL;
    if (g->pattern == SS_KROWS) {  // krows K rows at a time, a line of each in turn
      const size_t nr = B / rb, kr = (size_t)g->krows;
      for (size_t r0 = 0; r0 < nr; r0 += kr)
        for (size_t o = 0; o < rb; o += 64)
          for (size_t r = r0; r < r0 + kr && r < nr; r++)
            SS_FN(line)(k + r * rb + o, kp ? kp + r * rb + o : NULL, FL, acc, q);
    } else {
      SS_FN(linear)(k, kp, B, FL, acc, q);
    }
    if (g->pattern == SS_HALFROWS) {  // two passes: first halves of the rows, then second
      const size_t nr = B / rb, h = rb / 2;
      for (size_t half = 0; half < 2; half++)
        for (size_t r = 0; r < nr; r++)
          for (size_t o = half * h; o < half * h + h; o += 64)
            SS_FN(line)(v + r * rb + o, vp ? vp + r * rb + o : NULL, FL, acc, q);
    } else {
      SS_FN(linear)(v, vp, B, FL, acc, q);
    }
  }
  return SS_FN(vsum)(acc, 8);
}

static double SS_FN(stream)(const ss_stream_args *g) {
  switch (g->fma_line) {  // a constant per instance: the chains stay in registers
    case 0:
      return SS_FN(stream_fl)(g, 0);
    case 2:
      return SS_FN(stream_fl)(g, 2);
    case 4:
      return SS_FN(stream_fl)(g, 4);
    case 8:
      return SS_FN(stream_fl)(g, 8);
    case 16:
      return SS_FN(stream_fl)(g, 16);
    default:
      return -1.0;
  }
}

const ss_speed_ops SS_OPS = {VF_W, SS_FN(widen), SS_FN(stream)};
