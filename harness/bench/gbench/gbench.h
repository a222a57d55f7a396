// SPDX-License-Identifier: MIT
//
// gbench.h — a plain C interface to Google Benchmark (the project's only C++ lives in
// gbench.cc behind this header). Google Benchmark does the timing: iteration counts,
// warm-up, repetitions and their aggregates (mean, median, stddev, cv), --benchmark_*
// flags, and the JSON writer. It does not check results; callers do that before timing.
//
// Usage:
//   attn_gb_init(&argc, argv);                    // consumes --benchmark_* flags
//   attn_gb_add_context("cpu_model", "...");      // extra "context" entries in the JSON
//   attn_gb_register(&(attn_gb_def){.name = "x/B1", .run = fn, .user = p, .real_time = true});
//   attn_gb_run(&(attn_gb_run_opts){.save_json = save, .save_user = &file});
//
//   static void fn(attn_gb_state *st, void *user) {
//     /* untimed setup */
//     while (attn_gb_keep_running(st)) { /* timed body */ }
//     attn_gb_set_counter(st, "GFLOP/s", flops * 1e-9, ATTN_GB_RATE_PER_ITER);
//   }
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_gb_state attn_gb_state;  // opaque: benchmark::State

typedef void (*attn_gb_run_fn)(attn_gb_state *state, void *user);

// What one finished benchmark measured, for progress lines and summaries. With
// repetitions it describes the median; cv is the coefficient of variation of the
// repetitions' real time (-1 without repetitions).
typedef struct attn_gb_result {
  const char *name;
  const char *label;
  bool error;
  const char *error_message;
  double seconds;  // real time per iteration (median over repetitions)
  double cv;       // stddev / mean over repetitions, or -1
  int64_t repetitions;
  size_t counter_count;  // the user counters, rates already divided by time
  const char *const *counter_names;
  const double *counter_values;
} attn_gb_result;

// Called once per finished benchmark (after its repetitions and aggregates are in the
// results file). done counts finished benchmarks; total is how many will run.
typedef void (*attn_gb_progress_fn)(void *user, const attn_gb_result *result, size_t done,
                                    size_t total);

// The value of a counter in a result; fallback if it has none by that name.
double attn_gb_result_counter(const attn_gb_result *r, const char *name, double fallback);

typedef enum attn_gb_unit {
  ATTN_GB_UNIT_DEFAULT = 0,
  ATTN_GB_UNIT_NS,
  ATTN_GB_UNIT_US,
  ATTN_GB_UNIT_MS,
  ATTN_GB_UNIT_S,
} attn_gb_unit;

// One benchmark. Zero-initialised fields mean "Google Benchmark's default (or the
// matching --benchmark_* flag)".
typedef struct attn_gb_def {
  const char *name;     // full benchmark name (copied)
  attn_gb_run_fn run;   // called once per measurement attempt / repetition
  void *user;           // passed to run; must outlive attn_gb_run
  const int64_t *args;  // optional benchmark arguments (attn_gb_range), appended to the name
  size_t arg_count;
  bool real_time;   // time in wall-clock time (needed for multi-threaded kernels)
  int repetitions;  // > 0: repetitions (aggregates are reported when > 1)
  double min_time;  // > 0: minimum seconds per repetition
  attn_gb_unit unit;
} attn_gb_def;

// How a counter is reported.
typedef enum attn_gb_counter_kind {
  ATTN_GB_PLAIN = 0,          // the value as set
  ATTN_GB_RATE_PER_ITER = 1,  // value per iteration ÷ seconds per iteration (a rate)
  ATTN_GB_AVG_PER_ITER = 2,   // value ÷ iterations
} attn_gb_counter_kind;

// Parses and removes Google Benchmark's --benchmark_* flags from argv (argv[0] is the
// program name). Returns false (and prints why) if a flag is malformed.
bool attn_gb_init(int *argc, char **argv);

// Adds key: value to the "context" object of every report written after this call.
void attn_gb_add_context(const char *key, const char *value);

// Registers a benchmark. Returns false if def is incomplete.
bool attn_gb_register(const attn_gb_def *def);

// Receives the complete results document (Google Benchmark's JSON: context and every
// benchmark reported so far) after every report. Return false if it could not be saved
// (after printing why): the sweep stops — benchmarks not yet run are skipped without
// running — and attn_gb_run returns (size_t)-1.
typedef bool (*attn_gb_save_fn)(void *user, const char *json, size_t len);

typedef struct attn_gb_run_opts {
  attn_gb_save_fn save_json;  // optional: see attn_gb_save_fn
  void *save_user;
  const char *display;           // "console" (default), "compact", "json" or "none" — on stdout
  bool color;                    // console colours
  bool display_aggregates_only;  // with repetitions, show only the aggregates on stdout
                                 // (the results file keeps every repetition)
  bool plain_names;              // report names as registered (+ args), without Google
                                 // Benchmark's /min_time:…/repeats:…/real_time suffixes (those
                                 // facts stay in each run's fields)
  attn_gb_progress_fn progress;
  void *progress_user;
} attn_gb_run_opts;

// Runs every registered benchmark (honouring a --benchmark_filter given to attn_gb_init;
// attnbench bench never passes one: it selects points by their displayed names before
// registering them, cmd_bench.c). Returns the number run,
// or (size_t)-1 if save_json failed (the sweep stopped there).
size_t attn_gb_run(const attn_gb_run_opts *opts);

// Inside a run callback.
bool attn_gb_keep_running(attn_gb_state *state);
void attn_gb_pause(attn_gb_state *state);   // stop the timer (untimed work follows)
void attn_gb_resume(attn_gb_state *state);  // restart it
// Marks the benchmark as failed: it is reported with error_occurred and this message,
// and its timing loop does not run. Return from the callback after calling it.
void attn_gb_skip_with_error(attn_gb_state *state, const char *message);
bool attn_gb_error_occurred(const attn_gb_state *state);
void attn_gb_set_counter(attn_gb_state *state, const char *name, double value,
                         attn_gb_counter_kind kind);
void attn_gb_set_label(attn_gb_state *state, const char *label);
int64_t attn_gb_range(const attn_gb_state *state, size_t index);
int64_t attn_gb_iterations(const attn_gb_state *state);
// Keeps the compiler from discarding a computation whose result is at p.
void attn_gb_do_not_optimize(const void *p);

#ifdef __cplusplus
}
#endif
