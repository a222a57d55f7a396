// SPDX-License-Identifier: MIT
// `attnbench bench --config FILE` — expand a sweep config, check each point's kernel on
// its shape, time it with Google Benchmark and write a JSON results file with the
// machine's context (docs/benchmarking.md).
//
// The results file is rewritten atomically after every finished point, so Ctrl-C or a
// crash keeps every point finished so far. Progress goes to stderr:
//     [k/N] name  time  GFLOP/s  % peak  cv  ETA
// Exit status: 0 all points ran; 1 some point failed its check or was refused (too big
// for memory) — it is in the file with error_occurred; 2 bad command line or config.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attn.h"
#include "bench/config.h"
#include "bench/context.h"
#include "bench/point.h"
#include "cli_args.h"
#include "commands.h"
#include "gbench/gbench.h"
#include "placement.h"
#include "topology.h"

// ── interruption ────────────────────────────────────────────────────────────────────
// The file on disk is complete after every point; on SIGINT/SIGTERM we only say where it
// is, drop a half-written temporary, and exit (async-signal-safe calls only).
static char g_sig_msg[4352];
static char g_tmp_path[4200];

static void on_signal(int sig) {
  (void)!write(STDERR_FILENO, g_sig_msg, strlen(g_sig_msg));
  unlink(g_tmp_path);
  _exit(128 + sig);
}

// ── progress ────────────────────────────────────────────────────────────────────────
typedef struct progress {
  double start;
  size_t errors;
  bool quiet;
} progress;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
  if (r->error) pg->errors++;
  if (pg->quiet) return;
  const double elapsed = now_seconds() - pg->start;
  char eta[32];
  format_duration(done ? elapsed / (double)done * (double)(total - done) : 0, eta, sizeof eta);
  if (r->error) {
    fprintf(stderr, "[%zu/%zu] %s  ERROR: %s  ETA %s\n", done, total, r->name, r->error_message, eta);
    return;
  }
  char t[32], cv[32] = "", pk[32] = "";
  format_time(r->seconds, t, sizeof t);
  if (r->cv >= 0) snprintf(cv, sizeof cv, "  cv %.1f%%", 100 * r->cv);
  const double pct = attn_gb_result_counter(r, "%peak", -1);
  if (pct >= 0) snprintf(pk, sizeof pk, "  %5.1f%% peak", pct);
  fprintf(stderr, "[%zu/%zu] %s  %s  %.2f GFLOP/s%s%s  ETA %s\n", done, total, r->name, t,
          attn_gb_result_counter(r, "GFLOP/s", 0), pk, cv, eta);
}

// ── options ─────────────────────────────────────────────────────────────────────────
static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char *value_of(const char *arg) {
  const char *eq = strchr(arg, '=');
  return eq ? eq + 1 : "";
}

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

static bool writable(const char *path) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "attnbench bench: cannot write %s: %s\n", tmp, strerror(errno));
    return false;
  }
  fclose(f);
  unlink(tmp);
  return true;
}

// Runs the sweep once the plan is loaded; returns the exit code.
static int run_plan(attn_bench_plan *plan, attn_bench_state *states, const char *config,
                    const char *out, bool dry_run, bool no_probe, bool quiet, bool user_reps,
                    bool user_min_time, const attn_gb_run_opts *display);

static int bench_main(int argc, char **argv, char **gb_argv, char **our_argv) {
  // Google Benchmark's own flags pass through; a few of them map onto ours.
  int gb_argc = 0, our_argc = 0;
  gb_argv[gb_argc++] = argv[0];
  our_argv[our_argc++] = argv[0];
  const char *display = "none", *gb_out = NULL;
  bool color = false, user_reps = false, user_min_time = false, user_aggr = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!starts_with(a, "--benchmark_")) {
      our_argv[our_argc++] = argv[i];
      continue;
    }
    if (starts_with(a, "--benchmark_format=")) {
      display = value_of(a);
    } else if (starts_with(a, "--benchmark_out=")) {
      gb_out = value_of(a);
    } else if (starts_with(a, "--benchmark_out_format=")) {
      if (strcmp(value_of(a), "json") != 0) {
        fprintf(stderr, "attnbench bench: results files are JSON (--benchmark_out_format=json)\n");
        return ATTNBENCH_EXIT_USAGE;
      }
    } else if (starts_with(a, "--benchmark_color")) {
      color = strcmp(value_of(a), "false") != 0 && strcmp(value_of(a), "no") != 0;
    } else {
      user_reps |= starts_with(a, "--benchmark_repetitions");
      user_min_time |= starts_with(a, "--benchmark_min_time");
      user_aggr |= starts_with(a, "--benchmark_display_aggregates_only") ||
                   starts_with(a, "--benchmark_report_aggregates_only");
      gb_argv[gb_argc++] = argv[i];
    }
  }
  if (strcmp(display, "none") && strcmp(display, "console") && strcmp(display, "json")) {
    fprintf(stderr, "attnbench bench: --benchmark_format must be console, json or none\n");
    return ATTNBENCH_EXIT_USAGE;
  }

  const char *config = NULL, *out = NULL;
  cli_list kernels = {0}, threads = {0};
  bool dry_run = false, no_probe = false, quiet = false;
  const cli_option opts[] = {
      {.name = "config", .kind = CLI_STRING, .dest = &config, .metavar = "FILE", .required = true,
       .help = "sweep config (INI), e.g. configs/default.ini"},
      {.name = "kernel", .kind = CLI_STRING_LIST, .dest = &kernels, .metavar = "NAME",
       .help = "benchmark this kernel instead of the config's"},
      {.name = "threads", .kind = CLI_STRING_LIST, .dest = &threads, .metavar = "N",
       .help = "use this thread count instead of the config's (0 = one per core)"},
      {.name = "out", .kind = CLI_STRING, .dest = &out, .metavar = "FILE",
       .help = "results file (default results/<host>-<date>.json)"},
      {.name = "dry-run", .kind = CLI_FLAG, .dest = &dry_run,
       .help = "print the points and the memory each needs, run nothing"},
      {.name = "no-probe", .kind = CLI_FLAG, .dest = &no_probe,
       .help = "skip the FMA-peak and bandwidth probes (no % peak counter)"},
      {.name = "quiet", .kind = CLI_FLAG, .dest = &quiet, .help = "no progress lines on stderr"},
  };
  const cli_spec spec = {
      .command = "bench",
      .summary = "benchmark kernels over a sweep config with Google Benchmark; JSON results",
      .epilog = "Google Benchmark flags pass through, e.g. --benchmark_repetitions=10,\n"
                "--benchmark_min_time=0.5, --benchmark_filter=REGEX, --benchmark_format=console.\n"
                "Config format, counters and results files: docs/benchmarking.md",
      .options = opts,
      .n_options = sizeof opts / sizeof opts[0],
  };
  const cli_status st = cli_parse(&spec, our_argc, our_argv);
  if (st != CLI_OK) return cli_exit_code(st);
  if (attn_placement_env_bad("bench", NULL)) return ATTNBENCH_EXIT_USAGE;  // ATTNBENCH_TILE_*
  if (gb_out) {
    if (out && strcmp(out, gb_out)) {
      fprintf(stderr, "attnbench bench: --out and --benchmark_out disagree\n");
      return ATTNBENCH_EXIT_USAGE;
    }
    out = gb_out;
  }

  // Overrides from the command line.
  const attn_kernel *ov_kernels[CLI_LIST_MAX];
  int ov_threads[CLI_LIST_MAX];
  for (size_t i = 0; i < kernels.count; i++) {
    ov_kernels[i] = attn_kernel_find(kernels.items[i]);
    if (!ov_kernels[i]) {
      fprintf(stderr, "attnbench bench: unknown kernel '%s'; kernels:", kernels.items[i]);
      for (size_t j = 0; j < attn_kernel_count(); j++) fprintf(stderr, " %s", attn_kernel_at(j)->name);
      fprintf(stderr, "\n");
      return ATTNBENCH_EXIT_USAGE;
    }
  }
  for (size_t i = 0; i < threads.count; i++) {
    int64_t t;
    if (!cli_parse_i64(threads.items[i], 0, 4096, &t)) {
      fprintf(stderr, "attnbench bench: --threads: '%s' is not an integer in [0, 4096]\n",
              threads.items[i]);
      return ATTNBENCH_EXIT_USAGE;
    }
    ov_threads[i] = (int)t;
  }
  const attn_bench_overrides ov = {.kernels = ov_kernels, .kernel_count = kernels.count,
                                   .threads = ov_threads, .thread_count = threads.count,
                                   .physical_cores = attn_bench_physical_cores()};
  attn_bench_plan plan;
  char err[512];
  if (!attn_bench_plan_load(config, &ov, stderr, &plan, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return ATTNBENCH_EXIT_USAGE;
  }
  if (!attn_gb_init(&gb_argc, gb_argv)) {
    attn_bench_plan_free(&plan);
    return ATTNBENCH_EXIT_USAGE;
  }

  attn_bench_state *states = calloc(plan.count ? plan.count : 1, sizeof *states);
  if (!states) {
    attn_bench_plan_free(&plan);
    return ATTNBENCH_EXIT_FAILURE;
  }
  const attn_gb_run_opts display_opts = {.display = display,
                                         .color = color,
                                         .display_aggregates_only = !user_aggr,
                                         .plain_names = true};
  const int rc = run_plan(&plan, states, config, out, dry_run, no_probe, quiet, user_reps,
                          user_min_time, &display_opts);
  attn_bench_release_buffers();
  attn_bench_release_reference();
  attn_bench_plan_free(&plan);
  free(states);
  return rc;
}

static int run_plan(attn_bench_plan *plan, attn_bench_state *states, const char *config,
                    const char *out, bool dry_run, bool no_probe, bool quiet, bool user_reps,
                    bool user_min_time, const attn_gb_run_opts *display) {
  // Memory: refuse points that do not fit (they are reported as errors, not run).
  const uint64_t avail = attn_available_memory();
  char a[32], b[32];
  for (size_t i = 0; i < plan->count; i++) {
    attn_bench_state *s = &states[i];
    s->point = &plan->points[i];
    const uint64_t need = attn_bench_point_bytes(s->point);
    attn_format_bytes(need, a, sizeof a);
    attn_format_bytes(avail, b, sizeof b);
    if (dry_run) printf("%-64s %s\n", s->point->name, a);
    if (avail && (double)need > 0.8 * (double)avail) {
      snprintf(s->refused, sizeof s->refused,
               "refused: needs %s of memory, %s available (limit: 80%% of available)", a, b);
      fprintf(stderr, "note: %s %s\n", s->point->name, s->refused);
    }
  }
  if (dry_run) {
    printf("%zu points; %s available\n", plan->count, attn_format_bytes(avail, b, sizeof b));
    return ATTNBENCH_EXIT_OK;
  }

  char out_buf[4096];
  if (!out) {
    if (!default_out(out_buf, sizeof out_buf)) return ATTNBENCH_EXIT_FAILURE;
    out = out_buf;
  }
  if (!writable(out)) return ATTNBENCH_EXIT_FAILURE;

  if (!quiet && !no_probe) fprintf(stderr, "measuring FMA peaks and read bandwidth...\n");
  attn_bench_add_context(plan, config, !no_probe);
  for (size_t i = 0; i < plan->count; i++) {
    attn_bench_state *s = &states[i];
    if (!no_probe)
      s->peak_gflops = attn_bench_fma_peak(attn_bench_peak_isa(s->point->kernel), s->point->threads);
    const attn_gb_def def = {
        .name = s->point->name,
        .run = attn_bench_run_point,
        .user = s,
        .real_time = true,  // OpenMP kernels: wall-clock time, one Google Benchmark thread
        .repetitions = user_reps ? 0 : s->point->repetitions,
        .min_time = user_min_time ? 0 : s->point->min_time,
        .unit = ATTN_GB_UNIT_US,
    };
    attn_gb_register(&def);
  }

  snprintf(g_tmp_path, sizeof g_tmp_path, "%s.tmp", out);
  snprintf(g_sig_msg, sizeof g_sig_msg,
           "\nattnbench bench: interrupted; the points finished so far are in %s\n", out);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  progress pg = {.start = now_seconds(), .quiet = quiet};
  if (!quiet) fprintf(stderr, "%zu points planned from %s -> %s\n", plan->count, config, out);
  attn_gb_run_opts run = *display;
  run.json_path = out;
  run.progress = on_progress;
  run.progress_user = &pg;
  const size_t ran = attn_gb_run(&run);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (ran == (size_t)-1) return ATTNBENCH_EXIT_FAILURE;
  char took[32];
  format_duration(now_seconds() - pg.start, took, sizeof took);
  fprintf(stderr, "%zu point%s in %s, %zu error%s; results: %s\n", ran, ran == 1 ? "" : "s", took,
          pg.errors, pg.errors == 1 ? "" : "s", out);
  return pg.errors ? ATTNBENCH_EXIT_FAILURE : ATTNBENCH_EXIT_OK;
}

int cmd_bench(int argc, char **argv) {
  char **gb_argv = calloc((size_t)argc + 2, sizeof *gb_argv);
  char **our_argv = calloc((size_t)argc + 1, sizeof *our_argv);
  int rc = ATTNBENCH_EXIT_FAILURE;
  if (gb_argv && our_argv) rc = bench_main(argc, argv, gb_argv, our_argv);
  free(gb_argv);
  free(our_argv);
  return rc;
}
