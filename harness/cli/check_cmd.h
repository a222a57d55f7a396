// SPDX-License-Identifier: MIT
// The parts of `attnbench check` (cmd_check.c: options, kernel and case selection, the
// run; check_pairs.c: one (kernel, case) pair's verdict, in the process or in a worker
// process, tallies and the summary; check_output.c: the reports and --o). Internal to
// harness/cli.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "check/check.h"
#include "cli/option_args.h"
#include "common/cli_args.h"
#include "io/check_report.h"
#include "io/fileio.h"
#include "plugins/isolate.h"
#include "resolve/resolve.h"

// Command-line options of `check`.
typedef struct check_options {
  cli_list names;
  bool quick, verbose, progress, no_progress, list_cases, allow_skips;
  bool native_only;  // --native-only: only the cases a kernel claims
  const char *filter;
  const char *compute_name;  // --compute: only the cases of this mode (with --o: O's mode)
  attn_compute compute;
  const char *config_path;             // --config: the cases of a sweep config (config_cases)
  const char *junit_path, *json_path;  // reports (check_report.h)
  exec_args x;              // execution settings (option_args.h; resolved per pair by resolve.h)
  attn_setting_layer cli;   // ... as the resolver's command-line layer
  attn_bind_mode bind;      // the resolved binding (the first case's; resolve.h)
  int threads;              // ... and thread count, for the team in-process kernels use
  const char *isolate_arg;  // --isolate=plugins|all|none (isolate.h)
  attn_isolate_mode isolate;
  double case_timeout;  // --case-timeout: seconds per (kernel, case) in a worker
  bool case_timeout_given;
  // --o: check an output computed elsewhere (a framework, the user's own code).
  const char *q_path, *k_path, *v_path, *o_path;
  const char *kv_dtype_name;  // --kv-dtype: K and V were stored as this type for O (NULL: as read)
  attn_dtype kv_dtype;
  bool causal, scale_given;
  double scale;
  option_args opt;  // with --o: the attention options O was computed with (option_args.h)
} check_options;

// The options that decide how kernels are run for the gate: --native-only, --isolate,
// --case-timeout (entries of check's option table; o a check_options *).
#define ATTN_CHECK_GATE_OPTIONS(o)                                                         \
  {.name = "native-only",                                                                  \
   .kind = CLI_FLAG,                                                                       \
   .dest = &(o)->native_only,                                                              \
   .help =                                                                                 \
       "only the cases each kernel claims (its caps): leave out the pairs that would run " \
       "the shared fallback"},                                                             \
      {.name = "isolate",                                                                  \
       .kind = CLI_STRING,                                                                 \
       .dest = &(o)->isolate_arg,                                                          \
       .metavar = "WHICH",                                                                 \
       .help =                                                                             \
           "run kernels in worker processes, so a crash, exit() or hang is a named "       \
           "failure: plugins (default), all, or none (no fork)"},                          \
      ATTN_CASE_TIMEOUT_OPTION(&(o)->case_timeout, &(o)->case_timeout_given)

// One (kernel, case) pair's outcome: computed in the process or in a worker and sent
// over its pipe (plain data, one atomic write).
typedef enum pair_kind {
  PAIR_NONE = 0,      // not run (yet)
  PAIR_RESULT,        // the kernel ran: r holds the verdict
  PAIR_HARNESS_FAIL,  // decided without a verdict: refused, not prepared, the worker ended
  PAIR_NOT_CLAIMED,   // --native-only and the case would run the shared fallback
} pair_kind;

typedef struct pair_outcome {
  int32_t kind;  // pair_kind
  uint32_t case_index;
  attn_check_result r;  // PAIR_RESULT
  char message[400];    // PAIR_HARNESS_FAIL: the reason
  double seconds;       // wall time of the kernel's check (PAIR_RESULT)
  bool has_storage;     // the case's K/V storage error (check.h), as its worker saw it
  double storage_abs, storage_rel;
} pair_outcome;

typedef struct kernel_tally {
  const attn_kernel *k;
  bool unavailable;  // cannot run on this CPU: every pair is skipped
  char why[96];      // the reason, e.g. "needs avx512f"
  size_t passed, failed, inconclusive, skipped;
  size_t fallback;     // passed on the shared fallback: not the kernel's passes
  size_t not_claimed;  // --native-only: left out
  double worst_ratio;  // max over cases of max |o − ref| / tol
  double max_rel_err;  // max over cases of max |o − ref| / max |ref|
  double seconds;      // wall time inside attn_check_kernel (run + compare)
  bool isolated;       // runs in a worker process (isolate.h)
  pair_outcome *iso;   // isolated: the outcome per case, filled before the case loop
} kernel_tally;

// Counts over (kernel, case) pairs; report (when --junit/--json) gets one record each.
typedef struct check_totals {
  size_t passed, failed, inconclusive, skipped, fallback, not_claimed;
  check_report *report;  // NULL without reports
} check_totals;

// Progress on stderr ("[k/N] case"), cleared before anything goes to stdout.
typedef struct progress {
  bool show, tty;
} progress;

void check_progress_clear(const progress *pg);
void check_progress_show(const progress *pg, size_t c, size_t n, const char *desc);

// Runs every isolated kernel of sel over all cases, each in worker processes (a new
// worker after one ends early), filling its iso[] outcomes. Must run before the
// process's first OpenMP parallel region (isolate.h). False after an out-of-memory or
// fork message (exit 1).
bool check_run_isolated(const attn_check_case *cases, size_t n_cases, kernel_tally *sel, long n_sel,
                        const check_options *o, uint64_t budget, const progress *pg);

// One case against every selected kernel: in-process kernels run on the case prepared
// once, isolated ones contribute their iso[] outcome. Prints and tallies each pair.
void check_case(const attn_check_case *cc, size_t case_index, kernel_tally *sel, long n_sel,
                const check_options *o, uint64_t budget, check_totals *tot, const progress *pg);

// The per-kernel table and the K/V storage table (stdout), the timing line (stderr).
void check_print_summary(const kernel_tally *sel, long n_sel, size_t n_cases, size_t n_total,
                         const check_options *o, double seconds);

// The report files (--junit, --json), validated before any work.
typedef struct reports {
  attn_output junit, json;
  bool want_junit, want_json;
  check_report recs;
} reports;

bool check_prepare_reports(const check_options *o, const attn_input_file *inputs, size_t n_inputs,
                           reports *rp);
bool check_write_reports(reports *rp, double seconds);

// --o: check an output computed elsewhere. Returns the exit code.
int check_given_output(const check_options *o);
