// SPDX-License-Identifier: MIT
//
// cp_config.h — the runs of `attnbench-mpi`: from the command line (one run) or from an
// INI file (inih; configs/mpi.ini, docs/mpi.md). Each [section] is a sweep: the keys
// strategy, seq_len, kv_dtype and causal take comma-separated lists and the section runs
// their product; the others take one value:
//
//   [small]
//   strategy = ring, zigzag, allgather, ulysses
//   seq_len  = 64, 101          ; rank-independent shapes: any rank count may run them
//   batch = 1    heads = 4    kv_heads = 2    head_dim = 32    head_dim_v = 32
//   causal   = true, false
//   window   = none             ; or LEFT:RIGHT (a side inf = unbounded)
//   alibi    = 0                ; ALiBi max_bias (0 off)
//   softcap  = 0
//   kv_dtype = f32, f16, bf16, q8_0
//   lse      = true             ; gather and check the LSE too
//   kernel   = flash__avx512
//   threads  = 1                ; per rank (0 = the OpenMP default)
//   check    = true             ; compare with the double reference on rank 0
//   seed     = 1
//
// Every rank parses the same file and refuses the same errors ("FILE:LINE: message")
// before any communication.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "mpi/cp_kernel.h"
#include "mpi/cp_plan.h"

#define CP_MAX_RUNS 256

typedef struct cp_run_spec {
  char name[96];  // "section/strategy/S<seq>/<kv_dtype>[/causal]"
  cp_strategy strategy;
  int64_t batch, heads, kv_heads, seq, head_dim, head_dim_v;
  bool causal, lse, check;
  bool window;
  int64_t window_left, window_right;
  float alibi, softcap;
  attn_dtype kv_dtype;
  char kernel[ATTN_KERNEL_NAME_MAX + 1];
  int threads;
  uint64_t seed;
} cp_run_spec;

typedef struct cp_runs {
  size_t count;
  cp_run_spec run[CP_MAX_RUNS];
} cp_runs;

// Parses path into runs (appending). False with "FILE:LINE: message" in err.
bool cp_config_load(const char *path, cp_runs *runs, char *err, size_t err_len);

// A digest of what the runs compute (count, names, strategies, shapes, options, K/V
// types, seeds; not the kernel or thread count, which may differ between CPUs): the ranks
// compare theirs before any run, since each rank reads its own config file.
uint64_t cp_runs_digest(const cp_runs *runs);

// Parses a window "none" or "LEFT:RIGHT" (inf = unbounded). False on anything else.
bool cp_parse_window(const char *s, bool *window, int64_t *left, int64_t *right);

// The checks every rank makes, identically, before communicating: the problem (attn.h
// validation), the kernel (registered, available), the rank count against the strategy
// (seq >= ranks, zigzag 2·ranks; Ulysses heads >= ranks). False with one line in err.
bool cp_run_validate(const cp_run_spec *r, int ranks, char *err, size_t err_len);

// The global problem of a run (opts points to *o, whose lse is NULL).
attn_problem cp_run_problem(const cp_run_spec *r, attn_options *o);
