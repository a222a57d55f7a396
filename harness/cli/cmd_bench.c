// SPDX-License-Identifier: MIT
// `attnbench bench --config FILE` — expand a sweep config, check each point's kernel on
// its shape, time it with Google Benchmark and write a JSON results file with the
// machine's context (docs/benchmarking.md).
//
// The results file is replaced atomically (fileio.h) after every finished point, so
// Ctrl-C or a crash keeps every point finished so far; the run holds a lock on
// "<out>.lock" so a second bench on the same file fails at once; the first save that
// fails (disk full, ...) stops the sweep. Progress goes to stderr:
//     [k/N] name  time  GFLOP/s  % peak  % roofline (bandwidth|FMA)  [% adjacent bw]  cv  ETA
// --export-inputs DIR writes every point's inputs first (bench/inputs.h); --baselines LIST
// then runs the external baselines on them into the same results file (bench/baselines.h).
// Exit status: 0 all points ran; 1 some point failed its check or was refused (too big
// for memory) — it is in the file with error_occurred — or the results could not be
// saved, or --out is in use, or the inputs could not be exported, or a baseline was not
// installed or failed; 2 bad command line or config (also a --benchmark_repetitions or
// --benchmark_min_time out of range, gb_number_ok), a config that leaves no point to run
// on this CPU (nothing_to_run), or a --benchmark_filter that is not a regex or selects no
// point (select_points).
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attn.h"
#include "bench/adjacent.h"
#include "bench/baselines.h"
#include "bench/config.h"
#include "bench/context.h"
#include "bench/gbench/gbench.h"
#include "bench/inputs.h"
#include "bench/point.h"
#include "cli/commands.h"
#include "cli/option_args.h"
#include "common/cli_args.h"
#include "common/util.h"
#include "io/fileio.h"
#include "machine/placement.h"
#include "machine/topology.h"
#include "plugins/isolate.h"
#include "resolve/resolve.h"
#include "tune/tunefile.h"

// ── progress ────────────────────────────────────────────────────────────────────────
typedef struct progress {
  double start;
  size_t errors, finished;
  bool quiet;  // nothing per point
  bool show;   // a line per finished point (else only failed points get one)
} progress;

static void format_duration(double s, char *buf, size_t len) {
  const long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60)
    snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(buf, len, "%lds", t);
}

static void format_time(double s, char *buf, size_t len) {
  if (s >= 1)
    snprintf(buf, len, "%.3g s", s);
  else if (s >= 1e-3)
    snprintf(buf, len, "%.3g ms", s * 1e3);
  else
    snprintf(buf, len, "%.3g us", s * 1e6);
}

static void on_progress(void *user, const attn_gb_result *r, size_t done, size_t total) {
  progress *pg = user;
  pg->finished++;
  if (r->error) pg->errors++;
  if (pg->quiet || (!pg->show && !r->error)) return;
  const double elapsed = attn_now_seconds() - pg->start;
  char eta[32];
  format_duration(done ? elapsed / (double)done * (double)(total - done) : 0, eta, sizeof eta);
  if (r->error) {
    fprintf(stderr, "[%zu/%zu] %s  ERROR: %s  ETA %s\n", done, total, r->name, r->error_message,
            eta);
    return;
  }
  char t[32], cv[32] = "", pk[32] = "", roof[48] = "", adj[48] = "";
  format_time(r->seconds, t, sizeof t);
  if (r->cv >= 0) snprintf(cv, sizeof cv, "  cv %.1f%%", 100 * r->cv);
  const double pct = attn_gb_result_counter(r, "%peak", -1);
  if (pct >= 0) snprintf(pk, sizeof pk, "  %5.1f%% peak", pct);
  const double rl = attn_gb_result_counter(r, "%roofline", -1);
  if (rl >= 0)
    snprintf(roof, sizeof roof, "  %5.1f%% roofline (%s)", rl,
             attn_gb_result_counter(r, "memory_bound", 0) > 0 ? "bandwidth" : "FMA");
  const double ab = attn_gb_result_counter(r, "%adj_bw", -1);
  if (ab >= 0)
    snprintf(adj, sizeof adj, "  %5.1f%% adjacent bw (%.1f GB/s)", ab,
             attn_gb_result_counter(r, "adj_bw_GB/s", 0));
  fprintf(stderr, "[%zu/%zu] %s  %s  %.2f GFLOP/s%s%s%s%s  ETA %s\n", done, total, r->name, t,
          attn_gb_result_counter(r, "GFLOP/s", 0), pk, roof, adj, cv, eta);
}

// ── options ─────────────────────────────────────────────────────────────────────────
typedef struct bench_args {
  const char *config, *out;
  cli_list kernels, gb_flags, computes;
  cli_int_list threads;
  bool dry_run, no_probe, no_adjacent_probe, quiet, progress, no_progress;
  exec_args x;             // --tile-q/-kv, --regtile, --kv-split, --bind, --tune-file, --explain
  const char *export_dir;  // --export-inputs (bench/inputs.h)
  const char *baselines;   // --baselines LIST: scripts/bench-baselines after the sweep
  const char *bl_venv;     // --baselines-venv DIR (else $ATTNBENCH_BASELINES_VENV, …)
  bool require_bl;         // --require-baselines: a baseline that cannot run is an error
  double case_timeout;     // --case-timeout: a plug-in kernel's call limit (isolate.h)
  bool case_timeout_given;
  // from the --benchmark_* flags attnbench interprets itself
  const char *display;
  const char *filter;  // --benchmark_filter (NULL: every point)
  bool color, user_reps, user_min_time, user_aggr;
  // the rest, for Google Benchmark (argv[0] first)
  char *gb_argv[CLI_LIST_MAX + 2];
  int gb_argc;
} bench_args;

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char *value_of(const char *arg) {
  const char *eq = strchr(arg, '=');
  return eq ? eq + 1 : "";
}

// Our options; --benchmark_* flags are collected verbatim by the parser's passthrough.
static int parse_args(int argc, char **argv, bench_args *a) {
  const cli_option opts[] = {
      {.name = "config",
       .kind = CLI_STRING,
       .dest = &a->config,
       .metavar = "FILE",
       .required = true,
       .help = "sweep config (INI), e.g. configs/default.ini"},
      {.name = "kernel",
       .kind = CLI_STRING_LIST,
       .dest = &a->kernels,
       .metavar = "NAME",
       .help = "benchmark this kernel instead of the config's"},
      ATTN_EXEC_THREADS_OPTION(&a->threads, CLI_INT_LIST,
                               "use this thread count instead of the config's (0 = one per core)"),
      ATTN_EXEC_TILE_OPTIONS(&a->x),
      ATTN_EXEC_VARIANT_OPTIONS(&a->x),
      ATTN_EXEC_BIND_OPTION(&a->x),
      ATTN_EXEC_TUNE_FILE_OPTION(&a->x.tune_file, ATTN_EXEC_TUNE_FILE_HELP),
      ATTN_EXEC_EXPLAIN_OPTION(&a->x),
      ATTN_COMPUTE_OPTION(&a->computes, CLI_STRING_LIST,
                          "use this compute mode instead of the config's `compute` (repeatable; "
                          "int8 runs on the q8_0 K/V points only)"),
      {.name = "out",
       .kind = CLI_STRING,
       .dest = &a->out,
       .metavar = "FILE",
       .help = "results file (default results/<host>-<date>.json)"},
      {.name = "dry-run",
       .kind = CLI_FLAG,
       .dest = &a->dry_run,
       .help = "print the points and the memory each needs, run nothing"},
      {.name = "no-probe",
       .kind = CLI_FLAG,
       .dest = &a->no_probe,
       .help = "skip the FMA-peak and bandwidth probes (no % peak counter)"},
      {.name = "no-adjacent-probe",
       .kind = CLI_FLAG,
       .dest = &a->no_adjacent_probe,
       .help = "do not probe the bandwidth right before and after each timed run of a "
               "memory-bound point (no %adj_bw counter)"},
      {.name = "quiet", .kind = CLI_FLAG, .dest = &a->quiet, .help = "no progress lines on stderr"},
      ATTN_CASE_TIMEOUT_OPTION(&a->case_timeout, &a->case_timeout_given),
      {.name = "progress",
       .kind = CLI_FLAG,
       .dest = &a->progress,
       .help = "a [k/N] line per point on stderr even when it is not a terminal"},
      {.name = "no-progress",
       .kind = CLI_FLAG,
       .dest = &a->no_progress,
       .help = "no [k/N] line per point (failed points still get one)"},
      {.name = "export-inputs",
       .kind = CLI_STRING,
       .dest = &a->export_dir,
       .metavar = "DIR",
       .help = "write every point's Q/K/V (.npy) and DIR/index.json first (with --dry-run: only)"},
      {.name = "baselines",
       .kind = CLI_STRING,
       .dest = &a->baselines,
       .metavar = "LIST",
       .help = "then run external baselines on the points' own inputs into the same file: "
               "torch_sdpa,ort_attention,ggml_flash_attn,… or FILE.py, or 'all' (installed ones)"},
      {.name = "baselines-venv",
       .kind = CLI_STRING,
       .dest = &a->bl_venv,
       .metavar = "DIR",
       .help = "the baselines' virtual environment (default $ATTNBENCH_BASELINES_VENV, else "
               ".venv-baselines)"},
      {.name = "require-baselines",
       .kind = CLI_FLAG,
       .dest = &a->require_bl,
       .help = "with --baselines: a baseline that cannot run (not installed) fails the command, "
               "also with 'all'"},
  };
  const cli_spec spec = {
      .command = "bench",
      .summary = "benchmark kernels over a sweep config with Google Benchmark; JSON results",
      .epilog =
          "Google Benchmark flags pass through, e.g. --benchmark_repetitions=10,\n"
          "--benchmark_min_time=0.5, --benchmark_format=console (every counter) or\n"
          "--benchmark_format=compact (time, GFLOP/s, GB/s, % of roofline, % adjacent bw).\n"
          "--benchmark_filter=REGEX selects points by the names --dry-run prints (POSIX\n"
          "extended regex; ^ and $ anchor on those names; a leading '-' negates); a filter\n"
          "matching no point is an error (exit 2).\n"
          "--baselines runs scripts/bench-baselines (found through $ATTNBENCH_BENCH_BASELINES,\n"
          "<bin>/../share/attnbench/scripts, or this build's source tree) on the results file\n"
          "with the exported inputs; its environment comes from scripts/setup-baselines\n"
          "(docs/baselines.md).\n"
          "Config format, counters and results files: docs/benchmarking.md",
      CLI_OPTIONS(opts),
      .passthrough_prefix = "benchmark_",
      .passthrough = &a->gb_flags,
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);
  if (attn_resolve_env_bad("bench")) return ATTNBENCH_EXIT_USAGE;  // ATTNBENCH_TILE_* etc.
  if (attn_placement_bind_bad("bench", a->x.bind)) return ATTNBENCH_EXIT_USAGE;
  if (!attn_case_timeout_settle("bench", &a->case_timeout, a->case_timeout_given))
    return ATTNBENCH_EXIT_USAGE;
  if (a->progress && a->no_progress) {
    fprintf(stderr, "attnbench bench: --progress and --no-progress exclude each other\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (a->baselines && (!*a->baselines || strchr(a->baselines, ' '))) {
    fprintf(stderr,
            "attnbench bench: --baselines '%s': want comma-separated names (no spaces) or 'all'\n",
            a->baselines);
    return ATTNBENCH_EXIT_USAGE;
  }
  if ((a->bl_venv || a->require_bl) && !a->baselines) {
    fprintf(stderr,
            "attnbench bench: --baselines-venv and --require-baselines go with --baselines\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (a->baselines && a->dry_run) {
    fprintf(stderr,
            "attnbench bench: --baselines runs the baselines after the sweep; --dry-run "
            "runs nothing\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  const int tune_rc = attn_tune_setup("bench", a->x.tune_file);  // a bad tuning file: exit 1
  if (tune_rc) return tune_rc;
  return -1;
}

// A whole number (digits only: no sign, blank or fraction) in [lo, hi] from t up to end.
static bool whole_in(const char *t, const char *end, long lo, long hi, long *out) {
  if (t == end || end - t > 9) return false;
  long v = 0;
  for (const char *p = t; p < end; p++) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
  }
  *out = v;
  return v >= lo && v <= hi;
}

// --benchmark_repetitions=N and --benchmark_min_time=S, checked before anything runs or
// the results file is opened: Google Benchmark aborts on a negative count
// (std::length_error, the results file emptied and its lock left) and takes a min_time
// <= 0 silently. N: a whole number in 1..1000 (the config key's range). S: a finite
// number > 0, plain or with 's', or a whole number of iterations with 'x' (the forms
// Google Benchmark >= 1.8 reads; 1.7 reads the plain number and refuses the suffixes
// itself). Returns false after the message.
static bool gb_number_ok(const char *f) {
  static const char kReps[] = "--benchmark_repetitions", kMin[] = "--benchmark_min_time";
  const size_t lr = sizeof kReps - 1, lm = sizeof kMin - 1;
  const bool reps = !strncmp(f, kReps, lr) && (f[lr] == '=' || !f[lr]);
  const bool min = !strncmp(f, kMin, lm) && (f[lm] == '=' || !f[lm]);
  if (!reps && !min) return true;
  const char *v = f[reps ? lr : lm] == '=' ? f + (reps ? lr : lm) + 1 : "";
  const size_t n = strlen(v);
  long whole;
  if (reps) {
    if (whole_in(v, v + n, 1, 1000, &whole)) return true;
    fprintf(stderr, "attnbench bench: %s: want a whole number in 1..1000\n", f);
    return false;
  }
  if (n && v[n - 1] == 'x' && whole_in(v, v + n - 1, 1, 1000000000L, &whole)) return true;
  char *end;
  errno = 0;
  const double x = strtod(v, &end);
  const bool digits = n && ((*v >= '0' && *v <= '9') || *v == '.');  // no sign, blank, inf
  if (digits && end != v && !errno && (!*end || !strcmp(end, "s")) && x > 0 && x <= 1e6)
    return true;
  fprintf(stderr,
          "attnbench bench: %s: want seconds > 0 (e.g. 0.5 or 0.5s, at most 1e6) or a whole "
          "number of iterations (e.g. 100x)\n",
          f);
  return false;
}

// Interprets --benchmark_format/_out/_out_format/_color (the display and the results
// file are attnbench's) and hands every other --benchmark_* flag to Google Benchmark.
// Returns -1 to go on, else the exit code.
static int split_benchmark_flags(char *argv0, bench_args *a) {
  a->display = "none";
  a->gb_argv[a->gb_argc++] = argv0;
  const char *gb_out = NULL;
  for (size_t i = 0; i < a->gb_flags.count; i++) {
    const char *f = a->gb_flags.items[i];
    if (starts_with(f, "--benchmark_format=")) {
      a->display = value_of(f);
    } else if (starts_with(f, "--benchmark_out=")) {
      gb_out = value_of(f);
    } else if (starts_with(f, "--benchmark_out_format=")) {
      if (strcmp(value_of(f), "json") != 0) {
        fprintf(stderr, "attnbench bench: results files are JSON (--benchmark_out_format=json)\n");
        return ATTNBENCH_EXIT_USAGE;
      }
    } else if (starts_with(f, "--benchmark_filter=")) {
      a->filter = value_of(f);  // ours (select_points); the last one given wins
    } else if (starts_with(f, "--benchmark_color")) {
      a->color = strcmp(value_of(f), "false") != 0 && strcmp(value_of(f), "no") != 0;
    } else {
      if (!gb_number_ok(f)) return ATTNBENCH_EXIT_USAGE;
      a->user_reps |= starts_with(f, "--benchmark_repetitions");
      a->user_min_time |= starts_with(f, "--benchmark_min_time");
      a->user_aggr |= starts_with(f, "--benchmark_display_aggregates_only") ||
                      starts_with(f, "--benchmark_report_aggregates_only");
      a->gb_argv[a->gb_argc++] = (char *)f;  // points into argv
    }
  }
  if (strcmp(a->display, "none") && strcmp(a->display, "console") &&
      strcmp(a->display, "compact") && strcmp(a->display, "json")) {
    fprintf(stderr, "attnbench bench: --benchmark_format must be console, compact, json or none\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (gb_out) {
    if (!*gb_out || (a->out && strcmp(a->out, gb_out))) {
      fprintf(stderr, "attnbench bench: --out and --benchmark_out disagree\n");
      return ATTNBENCH_EXIT_USAGE;
    }
    a->out = gb_out;
  }
  return -1;
}

// --kernel / --threads overrides. Returns false after an "unknown kernel" error.
static bool resolve_overrides(const bench_args *a, const attn_kernel **kernels, int *threads,
                              attn_compute *computes, attn_bench_overrides *ov) {
  for (size_t i = 0; i < a->computes.count; i++)
    if (!attn_compute_arg("bench", a->computes.items[i], &computes[i])) return false;
  for (size_t i = 0; i < a->kernels.count; i++) {
    kernels[i] = attn_kernel_find(a->kernels.items[i]);
    if (!kernels[i]) {
      attn_report_unknown_kernel("bench", a->kernels.items[i]);
      return false;
    }
  }
  for (size_t i = 0; i < a->threads.count; i++) threads[i] = (int)a->threads.items[i];
  *ov = (attn_bench_overrides){.kernels = kernels,
                               .kernel_count = a->kernels.count,
                               .threads = threads,
                               .thread_count = a->threads.count,
                               .physical_cores = attn_resolve_default_threads(),
                               .regtile = a->x.regtile,
                               .kv_split = a->x.kv_split_given ? a->x.kv_split : -1,
                               .kv_split_set = a->x.kv_split_given,
                               .computes = computes,
                               .compute_count = a->computes.count};
  return true;
}

// ── --benchmark_filter ─────────────────────────────────────────────────────────────
// The filter selects points by the names users see (attn_bench_point.name, e.g.
// "flash__avx512/B1/H8/KV8/Sq2048/Skv2048/D64/noncausal/T2"), never Google Benchmark's
// internal names (which carry "/min_time:…/repeats:…/real_time"), so ^ and $ anchor on
// the displayed name. It is a POSIX extended regular expression (regcomp REG_EXTENDED),
// searched anywhere in the name unless anchored; as in Google Benchmark, "" and "all"
// select everything and a leading '-' selects the points that do NOT match. Points not
// selected are dropped from the plan before anything is printed, planned or registered;
// the filter is not passed on to Google Benchmark.
// Returns -1 to go on, else the exit code (2: bad regex, or no point matches).
static int select_points(const char *filter, attn_bench_plan *plan) {
  if (!filter || !*filter || strcmp(filter, "all") == 0) return -1;
  const bool negate = filter[0] == '-';
  const char *pattern = negate ? filter + 1 : filter;
  regex_t re;
  const int rc = regcomp(&re, *pattern ? pattern : ".", REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char why[128];
    regerror(rc, &re, why, sizeof why);
    fprintf(stderr,
            "attnbench bench: --benchmark_filter '%s' is not a valid regular expression: %s\n",
            filter, why);
    return ATTNBENCH_EXIT_USAGE;
  }
  const size_t before = plan->count;
  size_t kept = 0;
  for (size_t i = 0; i < plan->count; i++)
    if ((regexec(&re, plan->points[i].name, 0, NULL, 0) == 0) != negate)
      plan->points[kept++] = plan->points[i];  // plain structs: compacting in place is safe
  regfree(&re);
  plan->count = kept;
  if (kept == 0) {  // nothing was moved: points[0] is still the config's first point
    fprintf(stderr,
            "attnbench bench: --benchmark_filter '%s' matches none of the %zu points of the "
            "config (names as --dry-run prints them, e.g. %s)\n",
            filter, before, before ? plan->points[0].name : "(none)");
    return ATTNBENCH_EXIT_USAGE;
  }
  return -1;
}

// ── the results file ────────────────────────────────────────────────────────────────
// results/<host>-<YYYYmmdd-HHMMSS>.json (creating results/)
static bool default_out(char *buf, size_t len) {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  for (char *p = host; *p; p++)
    if (*p == '/' || *p == ' ') *p = '_';
  const time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  if (mkdir("results", 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "attnbench bench: cannot create results/: %s\n", strerror(errno));
    return false;
  }
  snprintf(buf, len, "results/%s-%s.json", host, stamp);
  return true;
}

typedef struct results_file {
  attn_output out;
  const progress *pg;
  bool failed;
} results_file;

// Before any work: a file we may replace (never a file bench reads: the config, the
// tuning file, however chosen) and not in use by another bench (the lock is held until
// close_results).
static bool open_results(results_file *rf, const char *path, const char *config) {
  const attn_input_file inputs[] = {{"config (--config)", config},
                                    {"tuning file", attn_tune_read_path()}};
  char err[ATTN_OUT_PATH_MAX + 512];
  if (!attn_output_prepare(&rf->out, path, inputs, 2, err, sizeof err) ||
      !attn_output_lock(&rf->out, err, sizeof err)) {
    fprintf(stderr, "attnbench bench: cannot write results: %s\n", err);
    return false;
  }
  return true;
}

static void close_results(results_file *rf) {
  attn_output_unlock(&rf->out);
}

// The shim's save callback: replace the file with the document so far. The first
// failure stops the sweep (the shim skips what is left) with one clear message.
static bool save_results(void *user, const char *json, size_t len) {
  results_file *rf = user;
  char err[ATTN_OUT_PATH_MAX + 512];
  const attn_buf part = {json, len};
  if (attn_output_write(&rf->out, &part, 1, err, sizeof err)) return true;
  rf->failed = true;
  fprintf(stderr,
          "attnbench bench: cannot save results: %s; stopping the sweep (%s keeps the %zu "
          "point%s finished before)\n",
          err, rf->out.given, rf->pg->finished, rf->pg->finished == 1 ? "" : "s");
  return false;
}

// ── the sweep ───────────────────────────────────────────────────────────────────────
// Memory: points that do not fit are marked refused (reported as errors, not run).
// With dry_run, prints each point and what it needs. Returns false on a bad
// ATTNBENCH_MEMORY_LIMIT.
static bool plan_memory(attn_bench_plan *plan, attn_bench_state *states, bool dry_run) {
  uint64_t avail = 0;
  char err[256], a[32], b[32];
  if (!attn_memory_budget(&avail, err, sizeof err)) {
    fprintf(stderr, "attnbench bench: %s\n", err);
    return false;
  }
  for (size_t i = 0; i < plan->count; i++) {
    attn_bench_state *s = &states[i];
    s->point = &plan->points[i];
    const uint64_t need = attn_bench_point_bytes(s->point);
    if (dry_run) printf("%-64s %s\n", s->point->name, attn_format_bytes(need, a, sizeof a));
    char why[160];
    if (attn_memory_refused(need, avail, why, sizeof why)) {
      snprintf(s->refused, sizeof s->refused, "refused: %s", why);
      fprintf(stderr, "note: %s %s\n", s->point->name, s->refused);
    }
  }
  if (dry_run)
    printf("%zu points; %s available\n", plan->count, attn_format_bytes(avail, b, sizeof b));
  return true;
}

static void register_points(attn_bench_plan *plan, attn_bench_state *states, const bench_args *a) {
  for (size_t i = 0; i < plan->count; i++) {
    attn_bench_state *s = &states[i];
    s->peak_key = attn_bench_point_peak_key(s->point);
    if (!a->no_probe) {  // memoised: measured once per (unit, ISA, threads) / threads
      s->peak_gflops = attn_bench_unit_peak(s->peak_key, s->point->threads);
      s->bandwidth_gbs = attn_bench_read_bandwidth(s->point->threads);
      s->adjacent_probe = !a->no_adjacent_probe;
    }
    s->min_time = a->user_min_time ? 0 : s->point->min_time;
    const attn_gb_def def = {
        .name = s->point->name,
        .run = attn_bench_run_point,
        .user = s,
        .real_time = true,  // OpenMP kernels: wall-clock time, one Google Benchmark thread
        .repetitions = a->user_reps ? 0 : s->point->repetitions,
        .min_time = s->min_time,
        .unit = ATTN_GB_UNIT_US,
    };
    attn_gb_register(&def);
  }
}

// The names of the sweep's plug-in kernels, comma-separated ("" when none).
static void plugin_kernels(const attn_bench_plan *plan, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < plan->count; i++) {
    const attn_kernel *k = plan->points[i].kernel;
    if (!attn_kernel_origin(k)) continue;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) seen = plan->points[j].kernel == k;
    if (seen) continue;
    const int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", k->name);
    if (w < 0 || (size_t)w >= len - used) break;
    used += (size_t)w;
  }
}

// A plan left with no point: nothing to time, so exit 2 with the reason before the
// results file is touched (an existing one stays as it was); --dry-run says the same as a
// note and goes on to print "0 points". Returns -1 to go on, else the exit code.
static int nothing_to_run(const attn_bench_plan *plan, const bench_args *a) {
  if (plan->count) return -1;
  const char *why = "the config plans no point";
  if (plan->unavailable && plan->compute_skipped)
    why = "the points --compute keeps use kernels this CPU cannot run (see the notes above)";
  else if (plan->unavailable)
    why = "every kernel of the config is one this CPU cannot run (see the notes above)";
  else if (plan->compute_skipped)
    why =
        "--compute keeps no point: int8 runs on kv_dtype q8_0 points only, and the config "
        "has none";
  if (a->dry_run) {
    fprintf(stderr, "note: nothing to run: %s\n", why);
    return -1;
  }
  fprintf(stderr, "attnbench bench: nothing to run from %s: %s; no results written\n", a->config,
          why);
  return ATTNBENCH_EXIT_USAGE;
}

// Runs the sweep once the plan is loaded; returns the exit code.
// *out_used: the results file (set once it is chosen).
static int run_guarded(attn_bench_plan *plan, attn_bench_state *states, const bench_args *a,
                       const char **out_used) {
  if (!plan_memory(plan, states, a->dry_run)) return ATTNBENCH_EXIT_USAGE;
  if (a->dry_run) return ATTNBENCH_EXIT_OK;

  static char out_buf[4096];  // outlives the call: *out_used points here
  const char *out = a->out;
  if (!out) {
    if (!default_out(out_buf, sizeof out_buf)) return ATTNBENCH_EXIT_FAILURE;
    out = out_buf;
  }
  char msg[ATTN_OUT_PATH_MAX + 128];
  snprintf(msg, sizeof msg,
           "\nattnbench bench: interrupted; the points finished so far are in %s\n", out);
  attn_fileio_catch_signals(msg);  // removes temporaries and the lock file
  // [k/N] lines: on a terminal, or when asked (--progress); failures always (not --quiet)
  progress pg = {.quiet = a->quiet,
                 .show = !a->no_progress && (a->progress || isatty(STDERR_FILENO))};
  results_file rf = {.pg = &pg};
  if (!open_results(&rf, out, a->config)) {
    attn_fileio_release_signals();
    return ATTNBENCH_EXIT_FAILURE;
  }
  *out_used = out;  // ours now: the baselines may add to it

  if (!a->quiet && !a->no_probe)
    fprintf(stderr, "measuring compute-unit peaks and read bandwidth...\n");
  attn_bench_add_context(plan, a->config, !a->no_probe);
  if (a->filter) attn_gb_add_context("benchmark_filter", a->filter);
  register_points(plan, states, a);

  pg.start = attn_now_seconds();
  if (!a->quiet) fprintf(stderr, "%zu points planned from %s -> %s\n", plan->count, a->config, out);
  const attn_gb_run_opts run = {.save_json = save_results,
                                .save_user = &rf,
                                .display = a->display,
                                .color = a->color,
                                .display_aggregates_only = !a->user_aggr,
                                .plain_names = true,
                                .progress = on_progress,
                                .progress_user = &pg};
  const size_t ran = attn_gb_run(&run);
  attn_fileio_release_signals();
  close_results(&rf);
  if (ran == (size_t)-1 || rf.failed) return ATTNBENCH_EXIT_FAILURE;
  char took[32];
  format_duration(attn_now_seconds() - pg.start, took, sizeof took);
  fprintf(stderr, "%zu point%s in %s, %zu error%s; results: %s\n", ran, ran == 1 ? "" : "s", took,
          pg.errors, pg.errors == 1 ? "" : "s", out);
  return pg.errors ? ATTNBENCH_EXIT_FAILURE : ATTNBENCH_EXIT_OK;
}

// The plan: the memory plan (which asks each kernel for its workspace), then the sweep. A
// plug-in kernel that ends the process (exit(), a crash) or hangs in any of its calls ends
// the command with its name, exit 1, and no lock or temporary left behind (isolate.h, the
// in-process guard; the hang watch covers the calls point.c brackets).
static int run_plan(attn_bench_plan *plan, attn_bench_state *states, const bench_args *a,
                    const char **out_used) {
  char plugins[512] = "";
  plugin_kernels(plan, plugins, sizeof plugins);
  if (plugins[0]) {
    attn_kernel_guard_arm("bench", plugins);
    attn_kernel_guard_watch(a->case_timeout);  // a call past --case-timeout: a hang
  }
  const int rc = run_guarded(plan, states, a, out_used);
  attn_kernel_guard_disarm();
  return rc;
}

// The command line's settings beyond the points' own (--tile-q, --tile-kv, --bind; the
// threads, regtile and kv_split overrides are in the points), the binding mode for the
// context's binding reports, and with --explain each point's settings (resolve.h).
static void settle_points(const bench_args *a, const attn_bench_plan *plan) {
  exec_args rest = a->x;
  rest.threads = 0, rest.regtile = NULL, rest.kv_split_given = false;
  attn_setting_layer cli;
  exec_args_layer(&rest, &cli);
  attn_bench_set_cli_settings(&cli);
  for (size_t i = 0; i < plan->count; i++) {
    const attn_bench_point *pt = &plan->points[i];
    attn_settings s;
    char err[320];
    if (attn_bench_point_settings(pt, &s, NULL, err, sizeof err) != 0) {
      if (a->x.explain) printf("settings of %s: %s\n", pt->name, err);
      continue;
    }
    if (i == 0) attn_placement_use_mode(s.bind);  // the same for every point
    if (a->x.explain) attn_resolve_print(stdout, pt->kernel, &pt->problem, &s);
  }
  if (a->x.explain) fflush(stdout);
}

int cmd_bench(int argc, char **argv) {
  static bench_args a;  // large (argv copies); one bench per process
  memset(&a, 0, sizeof a);
  int rc = parse_args(argc, argv, &a);
  if (rc < 0) rc = split_benchmark_flags(argv[0], &a);
  if (rc >= 0) return rc;
  const attn_kernel *ov_kernels[CLI_LIST_MAX];
  int ov_threads[CLI_LIST_MAX];
  attn_compute ov_computes[CLI_LIST_MAX];
  attn_bench_overrides ov;
  if (!resolve_overrides(&a, ov_kernels, ov_threads, ov_computes, &ov)) return ATTNBENCH_EXIT_USAGE;

  attn_bench_plan plan;
  char err[ATTN_OUT_PATH_MAX + 512];
  if (!attn_bench_plan_load(a.config, &ov, stderr, &plan, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return ATTNBENCH_EXIT_USAGE;
  }
  attn_bench_state *states = NULL;
  rc = nothing_to_run(&plan, &a);
  if (rc < 0) rc = select_points(a.filter, &plan);
  if (rc >= 0) {
    attn_bench_plan_free(&plan);
    return rc;
  }
  settle_points(&a, &plan);
  states = calloc(plan.count ? plan.count : 1, sizeof *states);
  if (!attn_gb_init(&a.gb_argc, a.gb_argv)) {
    rc = ATTNBENCH_EXIT_USAGE;
  } else if (!states) {
    fprintf(stderr, "attnbench bench: out of memory for %zu points\n", plan.count);
    rc = ATTNBENCH_EXIT_FAILURE;
  } else {
    static attn_baselines_run br;  // large paths; one bench per process
    memset(&br, 0, sizeof br);
    br.list = a.baselines, br.venv = a.bl_venv, br.require = a.require_bl;
    br.export_dir = a.export_dir, br.quiet = a.quiet;
    rc = attn_baselines_prepare(&br, &plan);
    if (rc < 0) {
      const char *out = NULL;
      rc = run_plan(&plan, states, &a, &out);
      const bool ran = rc == ATTNBENCH_EXIT_OK || (rc == ATTNBENCH_EXIT_FAILURE && out);
      const int brc = ran && !a.dry_run ? attn_baselines_finish(&br, out) : 0;
      if (!(ran && !a.dry_run)) attn_baselines_discard(&br);
      if (brc > rc) rc = brc;
    }
  }
  attn_bench_release_buffers();
  attn_bench_release_adjacent_probe();
  attn_bench_release_reference();
  attn_bench_plan_free(&plan);
  free(states);
  return rc;
}
