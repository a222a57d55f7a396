// SPDX-License-Identifier: MIT
// inputs.h — the inputs a benchmark point is timed on, and their export (`attnbench bench
// --export-inputs DIR`) so that other code (the external baselines, docs/baselines.md)
// runs on exactly the same values.
//
// A point's Q, K and V are a function of its problem only: attn_check_fill with the
// normal distribution and ATTN_BENCH_SEED. Cold points rotate over copies with the same
// contents (bench/point.h), so one set describes every copy.
//
// The digest identifies the values: with w_t the IEEE-754 bits of element t of Q, K and V
// concatenated (in that order, C order each) as unsigned 32-bit words,
//     digest = Σ_t w_t · ((2t + 1) · 0x9E3779B1)   mod 2^32
// Every multiplier is odd, so changing any one element changes the digest. The bench
// records it as the counter `inputs_digest` of every point; the export's index and the
// baseline runner compute the same sum, so anyone can verify that two programs saw the
// same inputs.
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

// Q, K, V of a point with problem p (buffers of attn_q/k/v_elems(p) floats).
void attn_bench_fill_inputs(const attn_problem *p, float *q, float *k, float *v);

// The digest above.
uint32_t attn_bench_inputs_digest(const attn_problem *p, const float *q, const float *k,
                                  const float *v);

// Writes into directory dir (created if missing; files of an earlier export are replaced):
//   in<N>.q.npy, in<N>.k.npy, in<N>.v.npy        one set per distinct input (shape and
//                                                  options), float32 in attnbench's layout
//   in<N>.alibi_slopes.npy, .sinks.npy, .mask.npy  the option arrays a point has
//   index.json                                     written last, atomically:
//     {"format": "attnbench-inputs-1", "generator": …, "seed": …,
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
