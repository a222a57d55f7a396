// SPDX-License-Identifier: MIT
// inputs.h — the inputs a benchmark point is timed on, and their export (`attnbench bench
// --export-inputs DIR`) so that other code (the external baselines, docs/baselines.md)
// runs on exactly the same values.
//
// A point's Q, K and V are a function of its problem only: attn_check_fill with the
// normal distribution and ATTN_BENCH_SEED. Cold points rotate over copies with the same
// contents (bench/point.h), so one set describes every copy.
//
// The digest identifies the problem and its values: over the unsigned 32-bit words w_t
//     digest = Σ_t w_t · ((2t + 1) · 0x9E3779B1)   mod 2^32
// where w is, in this order: the IEEE-754 bits of every element of Q, K and V (C order
// each; K and V as float32, before any storage type); then of each option array the
// problem has, alibi_slopes [heads], sinks [heads], mask ([seq_q][seq_kv] or
// [batch][heads][seq_q][seq_kv]); then ATTN_BENCH_DIGEST_SCALARS words:
//     batch, heads, kv_heads, seq_q, seq_kv, head_dim_qk, head_dim_v   (low, high) each
//     causal (0/1), bits(scale),
//     align (1 = top-left), window (0/1), window_left, window_right   ((low, high) each,
//                                          two's complement; both 0 without a window)
//     bits(softcap), bits(alibi_max_bias),
//     has alibi_slopes, has sinks, has mask, mask_per_head (with a mask), lse wanted (0/1)
// (no options = all of these 0). Every multiplier is odd, so changing any one element or
// scalar changes the digest, and a replaced option array or option value is another
// problem. The bench records it as the counter `inputs_digest` of every point; the
// export's index and the baseline runner (baselines/external/attn_baseline.py) compute the
// same sum over what they read, so anyone can verify that two programs ran the same
// problem on the same inputs.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "bench/config.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ATTN_BENCH_SEED = 20240607 };
enum { ATTN_BENCH_DIGEST_SCALARS = 29 };  // words of the scalar block of the digest

// Q, K, V of a point with problem p (buffers of attn_q/k/v_elems(p) floats).
void attn_bench_fill_inputs(const attn_problem *p, float *q, float *k, float *v);

// The digest above (p->opts's arrays and values included; K and V as float32).
uint32_t attn_bench_inputs_digest(const attn_problem *p, const float *q, const float *k,
                                  const float *v);

// Writes into directory dir (created if missing; files of an earlier export are replaced):
//   in<N>.q.npy, in<N>.k.npy, in<N>.v.npy        one set per distinct input (shape and
//                                                  options), float32 in attnbench's layout
//   in<N>.alibi_slopes.npy, .sinks.npy, .mask.npy  the option arrays a point has
//   index.json                                     written last, atomically:
//     {"format": "attnbench-inputs-2", "generator": …, "seed": …,
//      "inputs": {"in0": {"key": …, "q": "in0.q.npy", "k": …, "v": …, "digest": …,
//                         "problem": {batch, heads, …, causal, scale},
//                         "options": {align, window_left, …}}, …},
//      "points": {"<point name>": {"inputs": "in0", "input_copies": C}, …}}
// key is the point name without the kernel and thread segments (the same for every
// kernel and thread count of a shape). Returns false with a message in err.
bool attn_bench_export_inputs(const attn_bench_plan *plan, const char *dir, char *err,
                              size_t err_len);

#ifdef __cplusplus
}
#endif
