// SPDX-License-Identifier: MIT
//
// cp_run.h — one context-parallel run over MPI (docs/mpi.md): every rank fills its shard
// of Q, K and V (deterministic in the global position, so no rank reads another's
// inputs), runs the strategy with any registered kernel and merges by log-sum-exp; the
// output and LSE are gathered on rank 0. Also the point-to-point probe.
#pragma once

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "attn.h"
#include "mpi/cp_plan.h"

#define CP_MAX_STEPS 4096  // the most ranks (ring steps) a run records

typedef struct cp_job {
  attn_problem whole;  // seq_q == seq_kv; whole.opts = &opts or NULL
  attn_options opts;   // causal window, ALiBi max_bias, softcap; lse is owned by the run
  bool lse;            // gather and check the LSE too
  const attn_kernel *kernel;
  attn_exec exec;
  cp_strategy strategy;
  uint64_t seed;
  MPI_Comm comm;
  int rank, ranks;
  bool fault_merge;      // test only: merge with equal weights (a broken merge)
  double fault_stall_s;  // test only: sleep this long in the first compute step (a lost core)
} cp_job;

typedef struct cp_step_time {
  double compute_s;  // this rank's kernel calls and merges in the step (wall time)
  double cpu_s;      // CPU time of the rank's process (all threads) in those calls and merges
  double wait_s;     // time blocked on the step's messages after its compute (exposed)
  double alone_s;    // the same messages exchanged without compute (the full cost)
} cp_step_time;

typedef struct cp_result {
  int steps;
  cp_step_time step[CP_MAX_STEPS];  // this rank's
  double total_s;                   // end to end on this rank (after a barrier)
  double compute_s, comm_s;         // sums over steps (comm: exposed)
  double cpu_s;                     // the sum of the steps' cpu_s
  double flops;                     // useful flops of this rank's kernel calls
  double comm_bytes;                // bytes this rank sent
  bool fallback;  // some kernel call ran the shared portable path (attn_kernel_native false)
  // rank 0 after cp_gather: [B][H][S][Dv] and [B][H][S] (NULL elsewhere)
  float *o, *lse;
} cp_result;

// Runs the job; every rank calls it. On an MPI or kernel error: false and a message in
// err (the caller aborts the job).
bool cp_run(const cp_job *job, cp_result *res, char *err, size_t err_len);
void cp_result_free(cp_result *res);

// CPU seconds the calling process has used, all its threads (CLOCK_PROCESS_CPUTIME_ID): the
// time a rank ran. Wall time (MPI_Wtime) also counts the time it waited for a core.
double cp_cpu_now(void);

// The deterministic input value of tensor t (0 Q, 1 K, 2 V) at (b, head, global row, d):
// uniform in [−1, 1) from a hash of the seed and the coordinates.
float cp_input_value(uint64_t seed, int t, int64_t b, int64_t head, int64_t row, int64_t d);
// Fills dst [batch][heads][rows][width] with the values of global rows [row0, row0 + rows).
void cp_fill(float *dst, uint64_t seed, int t, int64_t batch, int64_t heads, int64_t row0,
             int64_t rows, int64_t width);

// Ping-pong between rank 0 and every other rank: latency (half a round trip of 8 bytes)
// and bandwidth (bytes / half round trip of 4 MiB messages), the median of repeats.
// lat_s / bw_bytes_s have ranks entries (entry 0 unused); valid on rank 0. *copy_bytes_s
// (every rank): the slowest rank's rate of a memcpy into freshly mapped memory (48 MiB,
// median of 3): what the collective strategies' packing and unpacking into new buffers costs.
bool cp_probe(MPI_Comm comm, double *lat_s, double *bw_bytes_s, double *copy_bytes_s, char *err,
              size_t err_len);
