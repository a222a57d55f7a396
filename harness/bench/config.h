// SPDX-License-Identifier: MIT
//
// config.h — benchmark sweep configs (INI, parsed with inih) expanded into points.
//
// Each [section] is one sweep; every value is a comma-separated list and the sweep is
// the cartesian product of the lists (format and keys: docs/benchmarking.md):
//
//   [prefill]
//   kernels  = blocked, flash__avx512   ; or "all": every available kernel but reference;
//                                       ; "all, -naive" drops one
//   batch    = 1
//   heads    = 8
//   kv_heads = 8, 2, 1                  ; each must divide heads (default: heads)
//   d_model  = 512, 1024                ; head_dim = d_model / heads ...
//   head_dim =                          ; ... or head_dim directly (not both)
//   head_dim_v =                        ; default: head_dim
//   seq_len  = 128, 256, 512            ; query rows
//   seq_kv   =                          ; default: seq_len (else cross-attention)
//   causal   = false, true
//   threads  = 1, 2                     ; 0 = one per physical core (default: 1)
//   repetitions = 5                     ; optional; --benchmark_repetitions overrides
//   min_time = 0.1                      ; optional seconds per repetition
//   cold_inputs = true                  ; optional (default false): rotate over copies of
//                                       ; the inputs so every call reads them from DRAM
//   align    = bottom-right, top-left   ; attention variants (attn.h), each a list swept
//   window   = none, 4095:0, inf:128    ;   like the others: LEFT:RIGHT, a side inf =
//   softcap  = 0, 50                    ;   unbounded; softcap c > 0 (0 off); alibi
//   alibi    = 0, 8                     ;   max_bias (0 off); sinks: per-head logits
//   sinks    = off, on                  ;   generated from the seed; mask: an additive
//   mask     = none, random             ;   [seq_q][seq_kv] mask; lse: the kernel also
//   lse      = false, true              ;   writes the log-sum-exp (attn_bench_opts)
//   regtile  = 12x32/8x32               ; optional, one value: the register-tile variant
//                                       ;   (name or index; every kernel must have it)
//   kv_split = 4                        ; optional, one value: attn_exec.kv_split (0..4096)
//   kv_lens  = longtail:32:4096:1       ; a serving sweep (docs/serving.md, bench/serving.h):
//   q_lens   = decode, prefill:1:512    ;   per-sequence lengths instead of batch, seq_len
//   page_size = 0, 16                   ;   and seq_kv; 0 = ragged K/V, else paged
//   page_order = sequential, shuffled   ;   pages in order or scattered through the pool
//   compute  = f32, bf16, f16, int8     ; optional list (default f32): compute modes (attn.h),
//                                       ;   int8 only with kv_dtype q8_0 (other K/V types
//                                       ;   skip it); point names end in /compute:MODE
//
// Any error (unknown key, bad number, empty list, d_model not divisible by heads,
// kv_heads not dividing heads, unknown kernel, threads above ATTN_MAX_THREADS, more than
// ATTN_BENCH_MAX_POINTS points, NUL bytes, text after a [section] header, ...) is
// reported as "FILE:LINE: message" before anything runs.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// The most points a config may expand to, counted before duplicates are dropped (the
// sum over sweeps of the product of each sweep's list lengths); more is an error.
enum { ATTN_BENCH_MAX_POINTS = 100000 };
// The size of a point's name buffer (attn_bench_point.name), terminator included. The
// longest names the config's limits allow (a 64-character kernel name, every size 2^30,
// every option at its longest, serving parts of 32 characters) are about 380 characters.
enum { ATTN_BENCH_NAME_MAX = 448 };

// The attention variants of a point (attn.h "Attention variants"), as values: the arrays
// (sinks, LSE output) are made by the point runner (bench/point.h). All zero = none.
typedef struct attn_bench_opts {
  attn_align align;
  bool window;  // window_left/right apply (ATTN_WINDOW_UNBOUNDED for a side)
  int64_t window_left, window_right;
  float softcap;         // 0 = off
  float alibi_max_bias;  // 0 = off
  bool sinks;            // sink logits sinks[h] = 2·N(0,1) from a fixed seed (attn_bench_sinks)
  bool mask;             // an additive mask [seq_q][seq_kv] (broadcast), attn_bench_mask
  bool lse;              // the kernel writes the LSE [batch][heads][seq_q] too (and it is checked)
} attn_bench_opts;

typedef struct attn_bench_point {
  const attn_kernel *kernel;
  attn_problem problem;  // opts is NULL here: the options are in `opts` below
  attn_bench_opts opts;
  int threads;           // kernel threads, >= 1 (1 for kernels without ATTN_CAP_THREADS)
  int repetitions;       // 0: Google Benchmark's default / flag
  double min_time;       // 0: Google Benchmark's default / flag
  bool cold_inputs;      // rotate over input copies larger than the LLC (bench/point.h)
  char regtile[32];      // the register-tile variant asked for ("" = not given: environment,
                         // tuning file, else 0 — core/settings.h)
  int kv_split;          // attn_exec.kv_split asked for (−1 = not given, as regtile)
  unsigned from_cli;     // bit (1u << attn_setting) set: threads / regtile / kv_split above
                         // came from the command line's overrides, not the config
  bool threads_default;  // threads = 0: not given (threads is the resolver's default)
  char sweep[48];        // the [section] it came from
  char name[ATTN_BENCH_NAME_MAX];  // "flash__avx512/B1/H8/KV8/Sq2048/Skv2048/D64/causal/T2",
                                   // a serving point's "/q=…/kv=…/page16s", then the options that
                                   // differ from none, e.g. "/win4095:0/softcap50/sinks/lse"
                                   // (attn_bench_opts_name), then "/cold", "/rt<index>" and
                                   // "/split<N>" when regtile / kv_split are given. Never cut: a
                                   // name that does not fit is a config error (a cut name could
                                   // equal another point's, and that point would be dropped).
} attn_bench_point;

typedef struct attn_bench_overrides {
  const attn_kernel *const *kernels;  // if kernel_count > 0: replaces every sweep's kernels
  size_t kernel_count;
  const int *threads;  // if thread_count > 0: replaces every sweep's threads
  size_t thread_count;
  int physical_cores;            // what threads = 0 means (the resolver's default thread count)
  const char *regtile;           // if not NULL: replaces every sweep's regtile (bench --regtile)
  int kv_split;                  // if >= 0: replaces every sweep's kv_split (bench --kv-split); a
                                 // zero-initialised struct must set −1 for "none"
  bool kv_split_set;             // kv_split above applies
  const attn_compute *computes;  // if compute_count > 0: replaces every sweep's compute list
  size_t compute_count;          // (bench --compute); int8 runs on q8_0 K/V points only
} attn_bench_overrides;

typedef struct attn_bench_plan {
  attn_bench_point *points;
  size_t count;
  // The layouts of serving points (problem.layout points into them; bench/serving.h),
  // owned by the plan.
  struct attn_serving_batch **batches;
  size_t batch_count;
  // The config's text as the loader read it (NUL-terminated, owned): the file is read
  // once, so what the results file records is what was swept, a FIFO or /dev/stdin too.
  char *config_text;
  // Why points were left out, for a plan with none (count 0): the points whose kernel this
  // CPU cannot run, and those an int8 compute mode skipped (int8 runs on q8_0 K/V only).
  size_t unavailable, compute_skipped;
} attn_bench_plan;

// Parses path and expands every sweep. Returns true on success; otherwise false and
// "FILE:LINE: message" (or "FILE: message") in err. Kernels named in the config that this
// CPU cannot run are left out, with a note on `notes` (may be NULL). Identical points from
// several sweeps are kept once, with the first sweep's repetitions and min_time (a note
// when a later sweep gives others).
bool attn_bench_plan_load(const char *path, const attn_bench_overrides *ov, FILE *notes,
                          attn_bench_plan *plan, char *err, size_t err_len);
void attn_bench_plan_free(attn_bench_plan *plan);

// The stable, readable benchmark name of a point's shape (see attn_bench_point.name).
// Returns the name's whole length, as snprintf: >= len means buf holds a cut copy.
size_t attn_bench_point_name(const attn_kernel *k, const attn_problem *p, int threads, char *buf,
                             size_t len);

// True if any option of o differs from none.
bool attn_bench_opts_any(const attn_bench_opts *o);
// The options' part of a point's name: "" for none, else "/top-left", "/winL:R" (inf for an
// unbounded side), "/softcapC", "/alibiB", "/sinks", "/mask", "/lse" in that order.
// Returns the whole length, as snprintf: >= len means buf holds a cut copy.
size_t attn_bench_opts_name(const attn_bench_opts *o, char *buf, size_t len);
// Sets the option values of *out from o (arrays NULL: sinks and lse are the caller's).
void attn_bench_opts_apply(const attn_bench_opts *o, attn_options *out);

#ifdef __cplusplus
}
#endif
