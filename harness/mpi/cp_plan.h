// SPDX-License-Identifier: MIT
//
// cp_plan.h — the MPI-free half of context parallelism (docs/mpi.md): how a sequence is
// cut into chunks and dealt to ranks, the kernel problem of one (query chunk, key chunk)
// pair with its exact diagonal offset, the log-sum-exp merge of partial outputs, and the
// time model. harness/mpi/cp_run.c moves the data; tests/mpi test this part without MPI.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cp_strategy {
  CP_RING = 0,       // contiguous shards; K/V rotate around the ring, overlapped
  CP_ZIGZAG = 1,     // ring over zigzag shards (chunks r and 2N−1−r): balanced causal work
  CP_ALLGATHER = 2,  // K/V gathered once (zigzag shards under a causal mask), then local
  CP_ULYSSES = 3,    // all-to-all: sequence shards → head shards, full attention, and back
} cp_strategy;
#define CP_STRATEGY_COUNT 4

const char *cp_strategy_name(cp_strategy s);
bool cp_strategy_parse(const char *s, cp_strategy *out);

// Rank r's chunks of a sequence of seq rows over n ranks: contiguous (one chunk) or
// zigzag (chunks r and 2n−1−r of 2n near-equal chunks). Chunk lengths differ by at most
// one row; any seq >= n (contiguous) or >= 2n (zigzag) works.
typedef struct cp_shard {
  int count;         // 1 or 2
  int64_t start[2];  // global first row of each chunk
  int64_t len[2];    // rows of each chunk
  int64_t rows;      // len[0] + len[1]
} cp_shard;

// The balanced cut: piece i of n of [0, total) starts at total·i/n.
int64_t cp_cut(int64_t total, int64_t n, int64_t i);

// Ulysses' split of the heads over n ranks: rank d holds the query heads
// [cp_cut(heads, n, d), cp_cut(heads, n, d + 1)) and reads the K/V heads [*k0, *k1) of
// their groups (under GQA a K/V head whose group is split goes to each rank holding part
// of it; none for a rank without query heads: *k0 == *k1).
void cp_ulysses_kv_heads(int64_t heads, int64_t kv_heads, int n, int d, int64_t *k0, int64_t *k1);
cp_shard cp_shard_of(int64_t seq, int ranks, int rank, bool zigzag);
// Whether the strategy deals zigzag shards (zigzag; allgather under a causal mask).
bool cp_uses_zigzag(cp_strategy s, bool causal);

// The problem of query rows [qo, qo + lq) against keys [ko, ko + lk) of a self-attention
// problem `whole` (seq_q == seq_kv, opts may be NULL), written to *p and *o (p->opts = o
// or NULL). The mask is exact: an explicit offset qo − ko only where needed (window,
// ALiBi, or a causal diagonal other than bottom-right); a causal pair whose every key is
// visible becomes non-causal. lse (may be NULL) is set as the LSE output.
// Returns false when the pair sees no key at all (skip it).
bool cp_pair_problem(const attn_problem *whole, int64_t qo, int64_t lq, int64_t ko, int64_t lk,
                     float *lse, attn_problem *p, attn_options *o);

// Merges a partial result (o_part [rows][dv], lse_part [rows]) into an accumulator
// (acc [rows][dv], lacc [rows], both double; lacc −inf = empty):
//     m = max(L, l),  O ← (e^(L−m)·O + e^(l−m)·o) / (e^(L−m) + e^(l−m)),  L ← m + log(…).
// A row with l = −inf (it saw nothing) leaves the accumulator unchanged. The merge is
// exact in real arithmetic and commutative up to rounding (double here, so the result
// rounded to float32 is within one float32 rounding of the exact merge).
void cp_merge(double *acc, double *lacc, const float *o_part, const float *lse_part, int64_t rows,
              int64_t dv);

// ── The time model (docs/mpi.md "The model") ───────────────────────────────────────────
typedef struct cp_model_in {
  cp_strategy strategy;
  attn_problem whole;  // the global problem (batch, heads, seq, dims, causal; opts for window)
  int ranks;
  double flops_per_s;       // one rank's attention rate on cores of its own (useful flops)
  double latency_s;         // link latency per message
  double bytes_per_s;       // link bandwidth
  int threads;              // threads per rank (<= 0: 1)
  int cores;                // cores all ranks time-share (one machine); 0: every rank has its own
  double copy_bytes_per_s;  // local copies into fresh buffers (allgather, Ulysses); 0: free
} cp_model_in;

typedef struct cp_model_out {
  double total_s;    // predicted end-to-end time
  double compute_s;  // the busiest rank's compute (wall time, time sharing included)
  double comm_s;     // communication not hidden behind compute
} cp_model_out;

// Processor sharing (time sharing): n jobs start together, job i needing work[i] seconds
// on `threads` cores of its own; while k jobs are unfinished each advances at
// min(1, cores / (k·threads)) (cores <= 0: at 1). Writes each job's finish time to
// finish[i] (may be NULL) and returns the last one.
double cp_share_makespan(const double *work, int n, int threads, int cores, double *finish);

// Predicts the strategy's time from per-pair compute (attn_flops of each chunk pair at
// flops_per_s, the ranks of a step time-sharing `cores`) and message sizes at the link's
// latency and bandwidth. Ring steps cost max(compute of the step, latency +
// bytes/bandwidth); the gather of the output to rank 0 is not part of the time.
// rank_compute_s (may be NULL; [ranks]) receives each rank's predicted compute wall time.
cp_model_out cp_model_predict(const cp_model_in *in, double *rank_compute_s);

// The rate on cores of its own from the time each rank ran its compute (measured_run_s
// [ranks]: CPU seconds of its kernel calls and merges over its threads): the model's work
// at rate 1 (its compute with cores of its own, no sharing), summed over the ranks, over
// the measured sum — Σ flops / Σ run. Run time, not wall time: a rank that waits for a core
// (time sharing, or any other process) runs no slower, and a rank off the critical path
// may wait without changing the measured time. in->flops_per_s and in->cores are ignored.
double cp_model_calibrate(const cp_model_in *in, const double *measured_run_s);

#ifdef __cplusplus
}
#endif
