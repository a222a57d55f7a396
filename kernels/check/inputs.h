// SPDX-License-Identifier: MIT
//
// inputs.h — the seeded random inputs of attnbench: one generator (splitmix64 → uniform →
// Box–Muller normal) and one mask maker, used by the checker's cases and by the harness's
// benchmark inputs, so a seed means the same values everywhere. Depends on libc/libm only.
//
// Two Box–Muller forms exist because two input sets were recorded with them and must stay
// bit-identical (results and baselines name their seeds):
//   ATTN_NORMAL_U1_HALF_OPEN  u1 = k·2^-53 in [0, 1) (u1 = 0 read as 1e-300), then u2
//                             — the checker's cases and the benchmark's Q, K, V;
//   ATTN_NORMAL_U1_NONZERO    u1 = (k + 1)·2^-53 in (0, 1], then u2
//                             — the benchmark's sinks and mask.
// Both give N(0, 1): r = sqrt(−2 ln u1)·cos(2π u2).
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum attn_normal_form {
  ATTN_NORMAL_U1_HALF_OPEN = 0,
  ATTN_NORMAL_U1_NONZERO = 1,
} attn_normal_form;

// splitmix64: advances *state and returns the next 64-bit value.
uint64_t attn_rand_u64(uint64_t *state);
// Uniform in [0, 1) with 53 random bits.
double attn_rand_uniform(uint64_t *state);
// A standard normal deviate (two draws).
double attn_rand_normal(uint64_t *state, attn_normal_form form);

// x[i] = (float)(magnitude·r_i) for n draws from `seed`: r uniform in [−1, 1) when
// uniform, else standard normal (ATTN_NORMAL_U1_HALF_OPEN).
void attn_rand_fill(float *x, size_t n, bool uniform, double magnitude, uint64_t seed);

// out[t] = (float)(offset + 2·r_t) for n normal draws from `seed` (offset 0: exactly
// (float)(2·r_t)): per-head sink logits.
void attn_rand_sinks(float *out, size_t n, double offset, uint64_t seed, attn_normal_form form);

// The additive masks: −inf ("key removed") or 2·N(0, 1) ("a bias of the scores' size").
typedef enum attn_mask_style {
  // The checker's: per element a uniform u then a normal r (HALF_OPEN); −inf when u < 0.15
  // or when the element's row i = (t / seq_kv) mod seq_q has i ≡ 3 (mod 7) (rows that see
  // no key at all), else 2r.
  ATTN_MASK_STYLE_CHECK = 0,
  // The benchmark's: per element one draw w; −inf when w's low 3 bits are 0 (1 in 8),
  // else 2r with u1 from w and u2 from the next draw (NONZERO).
  ATTN_MASK_STYLE_BENCH = 1,
} attn_mask_style;

// n mask elements from `seed`, laid out as [..][seq_q][seq_kv] (n a multiple of
// seq_q·seq_kv; only the CHECK style reads the row index).
void attn_rand_mask(float *out, size_t n, size_t seq_q, size_t seq_kv, attn_mask_style style,
                    uint64_t seed);

#ifdef __cplusplus
}
#endif
