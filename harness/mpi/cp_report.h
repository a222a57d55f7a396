// SPDX-License-Identifier: MIT
// cp_report.h — what `attnbench-mpi` measures and writes (docs/mpi.md "Results"): the
// point-to-point probe, per run and rank the compute, exposed and full communication
// time per step, the hidden fraction, end-to-end time and tokens/s, the check verdict, the
// model's prediction for the same run; the results JSON (rank 0, atomically); --predict.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "check/check.h"
#include "mpi/cp_config.h"
#include "mpi/cp_run.h"

typedef struct cp_report_run_sum {
  cp_run_spec spec;
  attn_problem whole;
  attn_options opts;
  double measured_s;  // end-to-end time
  double rate;        // a rank's kernel rate on cores of its own (cp_model_calibrate)
  double copy_bw;     // the probe's copy rate into fresh memory
} cp_report_run_sum;

typedef struct cp_report {
  int rank, ranks;
  bool quiet;
  double lat_s[CP_MAX_STEPS], bw[CP_MAX_STEPS];  // probe, rank 0 ↔ peer (rank 0 only)
  double lat_max, bw_min;
  double copy_bw;            // bytes/s of a memcpy into fresh memory (the slowest rank)
  int cores;                 // cores the ranks time-share (all on one machine), else 0
  double predict_latency_s;  // link latency of the recorded predictions (--predict-latency-us)
  char *json;                // the "runs" array's items so far (rank 0)
  size_t json_len, json_cap;
  bool json_failed;  // out of memory growing json: its text is cut, never written
  size_t n_runs;
  cp_report_run_sum runs[CP_MAX_RUNS];
} cp_report;

// Validates the output path before any work (fileio.h's contract); config is an input.
bool cp_report_prepare(const char *out, const char *config, char *err, size_t err_len);
// Every rank: runs the probe and finds whether the ranks share one machine's cores.
bool cp_report_begin(cp_report *rep, int rank, int ranks, bool quiet, double predict_latency_s,
                     char *err, size_t err_len);
// Every rank: collects the ranks' timings on rank 0, which prints and records the run.
bool cp_report_run(cp_report *rep, const cp_run_spec *r, const cp_job *job, const cp_result *res,
                   const char *verdict, const attn_check_result *cr, char *err, size_t err_len);
// Rank 0: the model's predictions for 8 and 64 nodes at 25, 100 and 400 Gb/s, per run (one
// rank per node at the run's calibrated rate; the same figures the JSON records).
void cp_report_predict(const cp_report *rep, FILE *f);
// Rank 0: the results JSON.
bool cp_report_write(const cp_report *rep, const char *out, char *err, size_t err_len);
void cp_report_free(cp_report *rep);
