// SPDX-License-Identifier: MIT
// inputs.h — the inputs a benchmark point is timed on, and their export (`attnbench bench
// --export-inputs DIR`) so that other code (the external baselines, docs/baselines.md)
// runs on exactly the same values.
//
// A point's Q, K and V are a function of its problem only: attn_check_fill with the
// normal distribution and ATTN_BENCH_SEED. Cold points rotate over copies with the same
// contents (attn_bench_input_copies below), so one set describes every copy.
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
// (no options = all of these 0); a serving point (attn.h "Serving layouts") then adds its
// layout block: kind (1 ragged, 2 paged), page_size, num_pages, pages_per_seq ((low,
// high) each; 0 for ragged), cu_seqlens_q[0..batch] and cu_seqlens_kv[0..batch] ((low,
// high) each), then the page-table entries each sequence uses (ceil(kv_len_b /
// page_size) of row b, in sequence order; none for ragged). Every multiplier is odd, so changing
// any one element or scalar changes the digest, and a replaced option array or option value is
// another problem. The bench records it as the counter `inputs_digest` of every point; the export's
// index and the baseline runner (baselines/external/attn_baseline.py) compute the same sum over
// what they read, so anyone can verify that two programs ran the same problem on the same inputs.
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

// The point runner (bench/point.c) defines the three functions below with the buffers it
// fills; they are declared here, with the seeds, because they describe the inputs.

// cold_inputs points: how many copies of Q, K, V and O the timed loop rotates over (one
// per call, in turn), so that together they are at least ATTN_BENCH_COLD_LLC_FACTOR × the
// last-level cache (hwloc; all LLCs together) and at least ATTN_BENCH_COLD_MIN_BYTES:
// every call then reads its inputs from DRAM, as one decode step of a model whose KV cache
// spans many layers does, instead of finding part of them in the cache where the previous
// call left them (MQA decode at seq_kv 32768: 32 MiB of K+V against a 32 MiB L3).
// 1 for other points; at most ATTN_BENCH_COLD_MAX_COPIES.
#define ATTN_BENCH_COLD_LLC_FACTOR 4
#define ATTN_BENCH_COLD_MIN_BYTES ((uint64_t)64 << 20)
#define ATTN_BENCH_COLD_MAX_COPIES 64
int attn_bench_input_copies(const attn_bench_point *pt);

// The sink logits of a point with sinks = on: sinks[h] = 2·N(0,1) for h < heads, a normal
// deviate (Box–Muller over splitmix64 from `seed`) scaled like the check matrix's sinks
// (ATTN_CHECK_GEN_SINKS): the same order as the scores of normal Q and K at the default
// scale, so the sink takes a visible but not dominant share of each row. Every point uses
// seed ATTN_BENCH_SINK_SEED, so its sinks depend on the head count only.
#define ATTN_BENCH_SINK_SEED UINT64_C(20240608)
void attn_bench_sinks(int64_t heads, uint64_t seed, float *out);

// The additive mask of a point with mask = random: mask[i][j] for i < seq_q, j < seq_kv
// (broadcast over batch and heads), −inf with probability 1/8, else 2·N(0,1) (splitmix64
// from `seed`, Box–Muller): keys removed at random plus a bias of the scores' size, so no
// key range can be skipped and about 1/8 of the pairs are masked. Seed
// ATTN_BENCH_MASK_SEED; the reduced check shape gets the mask of its own size.
#define ATTN_BENCH_MASK_SEED UINT64_C(20240609)
void attn_bench_mask(int64_t seq_q, int64_t seq_kv, uint64_t seed, float *out);

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
// kernel and thread count of a shape). A serving point (docs/serving.md) writes what its
// kernels read: Q [total_q][heads][Dqk] packed by tokens; K and V packed [total_kv]
// [kv_heads][D] (ragged) or the pools [num_pages][kv_heads][page_size][D] (paged, every
// slot: unused ones hold generated values no sequence reads), float32 before any
// storage type; and its entry gets
//     "layout": {"kind": "ragged"|"paged", "page_size", "num_pages", "pages_per_seq"
//                (paged), "cu_seqlens_q": [batch+1], "cu_seqlens_kv": [batch+1],
//                "page_table": [[the pages sequence b uses], …] (paged)}
// with "problem"'s batch the sequences and seq_q/seq_kv the largest lengths.
// Returns false with a message in err.
bool attn_bench_export_inputs(const attn_bench_plan *plan, const char *dir, char *err,
                              size_t err_len);

#ifdef __cplusplus
}
#endif
