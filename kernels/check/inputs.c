// SPDX-License-Identifier: MIT
// The seeded random inputs (inputs.h) and the checker's case inputs (check.h).
#include "check/inputs.h"

#include <math.h>

#include "check/check.h"

#define TWO_PI 6.283185307179586
#define INV_2_53 (1.0 / 9007199254740992.0)  // 2^-53

// splitmix64: a tiny, well-mixed generator, so inputs do not depend on libc's rand().
uint64_t attn_rand_u64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double attn_rand_uniform(uint64_t *state) {
  return (double)(attn_rand_u64(state) >> 11) * INV_2_53;
}

// u1 in (0, 1] from a 64-bit draw (the NONZERO form).
static double u1_nonzero(uint64_t w) {
  return ((double)(w >> 11) + 1.0) * INV_2_53;
}

static double box_muller(double u1, double u2) {
  return sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
}

double attn_rand_normal(uint64_t *state, attn_normal_form form) {
  if (form == ATTN_NORMAL_U1_NONZERO) {
    const double u1 = u1_nonzero(attn_rand_u64(state));
    return box_muller(u1, attn_rand_uniform(state));
  }
  const double u1 = attn_rand_uniform(state), u2 = attn_rand_uniform(state);
  return box_muller(u1 > 0 ? u1 : 1e-300, u2);
}

void attn_rand_fill(float *x, size_t n, bool uniform, double magnitude, uint64_t seed) {
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    const double r = uniform ? 2.0 * attn_rand_uniform(&s) - 1.0
                             : attn_rand_normal(&s, ATTN_NORMAL_U1_HALF_OPEN);
    x[i] = (float)(magnitude * r);
  }
}

void attn_rand_sinks(float *out, size_t n, double offset, uint64_t seed, attn_normal_form form) {
  uint64_t s = seed;
  for (size_t t = 0; t < n; t++) {
    const double r = attn_rand_normal(&s, form);
    // offset 0 adds nothing (not even turning a −0 into +0)
    out[t] = (float)(offset != 0.0 ? offset + 2.0 * r : 2.0 * r);
  }
}

void attn_rand_mask(float *out, size_t n, size_t seq_q, size_t seq_kv, attn_mask_style style,
                    uint64_t seed) {
  uint64_t s = seed;
  for (size_t t = 0; t < n; t++) {
    if (style == ATTN_MASK_STYLE_BENCH) {
      const uint64_t w = attn_rand_u64(&s);
      if ((w & 7) == 0) {  // the low 3 bits: 1 in 8
        out[t] = -INFINITY;
        continue;
      }
      out[t] = (float)(2.0 * box_muller(u1_nonzero(w), attn_rand_uniform(&s)));
    } else {
      const size_t i = t / seq_kv % seq_q;
      const double u = attn_rand_uniform(&s), r = attn_rand_normal(&s, ATTN_NORMAL_U1_HALF_OPEN);
      out[t] = (i % 7 == 3 || u < 0.15) ? -INFINITY : (float)(2.0 * r);
    }
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
  const bool uni = c->dist == ATTN_DIST_UNIFORM;
  attn_rand_fill(q, attn_q_elems(p), uni, a, c->seed * 3 + 1);
  attn_rand_fill(k, attn_k_elems(p), uni, a, c->seed * 3 + 2);
  attn_rand_fill(v, attn_v_elems(p), uni, 1.0, c->seed * 3 + 3);
}
