// SPDX-License-Identifier: MIT
// attnbench-mpi — context-parallel attention over MPI (docs/mpi.md):
//   mpirun -np N attnbench-mpi [--config FILE | shape options] [--out results.json]
// Every rank parses the same arguments and validates its runs; the ranks agree on the
// verdict before any run, so a refusal on one rank ends every rank with exit 2. A watchdog
// (--timeout, per result) ends a rank whose peers died or hang; the job then stops with that
// message. Rank 0 checks the gathered output against the double reference, prints one line
// per run and rewrites the results JSON (atomically) after each.
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/check.h"
#include "common/cli_args.h"
#include "mpi/cp_config.h"
#include "mpi/cp_report.h"
#include "mpi/cp_run.h"

// ── The watchdog ───────────────────────────────────────────────────────────────────────

static char g_alarm_msg[200];
static void on_alarm(int sig) {
  (void)sig;
  const ssize_t w = write(2, g_alarm_msg, strlen(g_alarm_msg));
  (void)w;
  _exit(3);
}
// Installs the handler; watchdog_rearm then gives the next result `seconds`.
static void watchdog_install(int rank, int seconds) {
  snprintf(g_alarm_msg, sizeof g_alarm_msg,
           "attnbench-mpi: rank %d: no result within --timeout %d s (a rank died, hangs or the "
           "run is too long); stopping the job\n",
           rank, seconds);
  struct sigaction sa = {.sa_handler = on_alarm};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
}
static void watchdog_rearm(int seconds) {
  alarm((unsigned)seconds);
}

// Test only: ATTNBENCH_MPI_TEST_FAULT = exit:R (rank R exits at once), hang:R (rank R
// stops answering), merge (every rank merges with equal weights: a broken merge), stall:R
// (rank R sleeps 0.3 s inside each run's first compute step, as if it lost its core).
static void test_fault(int rank, bool *bad_merge, double *stall_s) {
  const char *f = getenv("ATTNBENCH_MPI_TEST_FAULT");
  if (!f || !*f) return;
  if (strcmp(f, "merge") == 0) {
    *bad_merge = true;
    return;
  }
  int r = -1;
  if (sscanf(f, "exit:%d", &r) == 1 && r == rank) _exit(1);
  if (sscanf(f, "hang:%d", &r) == 1 && r == rank)
    for (;;) pause();
  if (sscanf(f, "stall:%d", &r) == 1 && r == rank) *stall_s = 0.3;
}

// ── The command line ───────────────────────────────────────────────────────────────────

typedef struct args {
  const char *config, *out, *strategy, *kernel, *kv_dtype, *window;
  int64_t batch, heads, kv_heads, seq, head_dim, head_dim_v, seed;
  int threads, timeout;
  double alibi, softcap, predict_latency_us;
  bool causal, lse, no_check, predict, quiet, dry_run;
} args;

// A config file sets every run's shape and options: a run option beside it is refused
// rather than silently ignored.
static int refuse_beside_config(const cli_option *opts, const bool *given, int n) {
  static const char *const kWithConfig[] = {
      "config", "out", "timeout", "predict", "predict-latency-us", "dry-run", "quiet"};
  for (int i = 0; i < n; i++) {
    bool allowed = false;
    for (size_t j = 0; j < sizeof kWithConfig / sizeof kWithConfig[0]; j++)
      allowed |= strcmp(opts[i].name, kWithConfig[j]) == 0;
    if (given[i] && !allowed) {
      fprintf(stderr,
              "attnbench-mpi: --%s cannot be combined with --config (the config file sets every "
              "run's shape and options)\n",
              opts[i].name);
      return CLI_ERROR;
    }
  }
  return CLI_OK;
}

static const args kDefaultArgs = {.strategy = "ring",
                                  .kv_dtype = "f32",
                                  .window = "none",
                                  .batch = 1,
                                  .heads = 8,
                                  .head_dim = 64,
                                  .seed = 1,
                                  .threads = 1,
                                  .timeout = 600,
                                  .predict_latency_us = 2.0};

static int parse_args(int argc, char **argv, args *a) {
  *a = kDefaultArgs;
  cli_option opts[] = {
      {.name = "config",
       .kind = CLI_STRING,
       .dest = &a->config,
       .metavar = "FILE",
       .help = "runs from an INI file (configs/mpi.ini); else one run from the options below"},
      {.name = "out",
       .kind = CLI_STRING,
       .dest = &a->out,
       .metavar = "PATH",
       .help = "results JSON (written by rank 0, atomically)"},
      {.name = "strategy",
       .kind = CLI_STRING,
       .dest = &a->strategy,
       .metavar = "S",
       .help = "ring | zigzag | allgather | ulysses (default ring)"},
      {.name = "kernel",
       .kind = CLI_STRING,
       .dest = &a->kernel,
       .metavar = "NAME",
       .help = "any registered kernel, or a comma-separated preference list: the first one "
               "available on this CPU runs (default " CP_DEFAULT_KERNELS ")"},
      {.name = "threads",
       .kind = CLI_INT,
       .dest = &a->threads,
       .min = 0,
       .max = ATTN_MAX_THREADS,
       .metavar = "N",
       .help = "threads per rank (default 1; 0 = OpenMP default)"},
      {.name = "batch",
       .kind = CLI_INT64,
       .dest = &a->batch,
       .min = 1,
       .max = 1 << 20,
       .metavar = "B",
       .help = "batch (default 1)"},
      {.name = "heads",
       .kind = CLI_INT64,
       .dest = &a->heads,
       .min = 1,
       .max = 1 << 20,
       .metavar = "H",
       .help = "query heads (default 8)"},
      {.name = "kv-heads",
       .kind = CLI_INT64,
       .dest = &a->kv_heads,
       .min = 1,
       .max = 1 << 20,
       .metavar = "H",
       .help = "K/V heads (default heads)"},
      {.name = "seq-len",
       .kind = CLI_INT64,
       .dest = &a->seq,
       .min = 1,
       .max = INT64_C(1) << 40,
       .metavar = "S",
       .help = "sequence length (required without --config)"},
      {.name = "head-dim",
       .kind = CLI_INT64,
       .dest = &a->head_dim,
       .min = 1,
       .max = 1 << 20,
       .metavar = "D",
       .help = "head dim of Q and K (default 64)"},
      {.name = "head-dim-v",
       .kind = CLI_INT64,
       .dest = &a->head_dim_v,
       .min = 1,
       .max = 1 << 20,
       .metavar = "D",
       .help = "head dim of V (default head-dim)"},
      {.name = "causal", .kind = CLI_FLAG, .dest = &a->causal, .help = "causal mask"},
      {.name = "window",
       .kind = CLI_STRING,
       .dest = &a->window,
       .metavar = "L:R",
       .help = "sliding window (inf = unbounded side)"},
      {.name = "alibi",
       .kind = CLI_DOUBLE,
       .dest = &a->alibi,
       .fmin = 0,
       .fmax = 126,
       .metavar = "B",
       .help = "ALiBi max_bias (0 off)"},
      {.name = "softcap",
       .kind = CLI_DOUBLE,
       .dest = &a->softcap,
       .fmin = 0,
       .fmax = 1e18,
       .metavar = "C",
       .help = "logit soft-cap (0 off)"},
      {.name = "kv-dtype",
       .kind = CLI_STRING,
       .dest = &a->kv_dtype,
       .metavar = "T",
       .help = "f32 | f16 | bf16 | q8_0"},
      {.name = "lse", .kind = CLI_FLAG, .dest = &a->lse, .help = "gather and check the LSE too"},
      {.name = "no-check",
       .kind = CLI_FLAG,
       .dest = &a->no_check,
       .help = "skip the reference check (large runs)"},
      {.name = "seed",
       .kind = CLI_INT64,
       .dest = &a->seed,
       .min = 0,
       .max = INT64_MAX,
       .metavar = "N",
       .help = "input seed (default 1)"},
      {.name = "timeout",
       .kind = CLI_INT,
       .dest = &a->timeout,
       .min = 1,
       .max = 1 << 20,
       .metavar = "S",
       .help = "stop the job after S seconds without a result (default 600)"},
      {.name = "predict",
       .kind = CLI_FLAG,
       .dest = &a->predict,
       .help = "print the model's times for 8 and 64 nodes at 25/100/400 Gb/s"},
      {.name = "predict-latency-us",
       .kind = CLI_DOUBLE,
       .dest = &a->predict_latency_us,
       .fmin = 0,
       .fmax = 1e6,
       .metavar = "US",
       .help = "link latency of the predictions (--predict, JSON; default 2)"},
      {.name = "dry-run",
       .kind = CLI_FLAG,
       .dest = &a->dry_run,
       .help = "validate and list the runs, run nothing"},
      {.name = "quiet", .kind = CLI_FLAG, .dest = &a->quiet, .help = "print only errors"},
  };
  enum { kOpts = sizeof opts / sizeof opts[0] };
  bool given[kOpts] = {0};
  for (int i = 0; i < kOpts; i++) opts[i].given = &given[i];
  const cli_spec spec = {.command = "mpi",
                         .program = "attnbench-mpi",
                         .summary = "context-parallel attention over MPI (docs/mpi.md)",
                         CLI_OPTIONS(opts)};
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK || !a->config) return st;
  return refuse_beside_config(opts, given, kOpts);
}

// Runs parse_args with rank 0's output only: ranks given the same arguments reach the same
// verdict, so the other ranks' copies of a message or the help are dropped. Ranks given
// other arguments (an MPMD launch) may not: the ranks agree on the parse (agree_parsed).
static int parse_args_once(int argc, char **argv, args *a, int rank) {
  int saved[2] = {-1, -1};
  if (rank != 0) {
    fflush(stdout), fflush(stderr);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      saved[0] = dup(1), saved[1] = dup(2);
      dup2(null, 1), dup2(null, 2);
      close(null);
    }
  }
  const int rc = parse_args(argc, argv, a);
  if (saved[0] >= 0 || saved[1] >= 0) {
    fflush(stdout), fflush(stderr);
    if (saved[0] >= 0) dup2(saved[0], 1), close(saved[0]);
    if (saved[1] >= 0) dup2(saved[1], 2), close(saved[1]);
  }
  return rc;
}

// The runs of the command line or the config; false with a message.
static bool collect_runs(const args *a, cp_runs *runs, char *err, size_t err_len) {
  if (a->config) return cp_config_load(a->config, runs, err, err_len);
  if (a->seq == 0) {
    snprintf(err, err_len, "give --seq-len (or --config FILE)");
    return false;
  }
  cp_run_spec *r = &runs->run[runs->count++];
  *r = (cp_run_spec){.batch = a->batch,
                     .heads = a->heads,
                     .kv_heads = a->kv_heads ? a->kv_heads : a->heads,
                     .seq = a->seq,
                     .head_dim = a->head_dim,
                     .head_dim_v = a->head_dim_v ? a->head_dim_v : a->head_dim,
                     .causal = a->causal,
                     .lse = a->lse,
                     .check = !a->no_check,
                     .alibi = (float)a->alibi,
                     .softcap = (float)a->softcap,
                     .threads = a->threads,
                     .seed = (uint64_t)a->seed};
  if ((a->alibi > 0 && r->alibi == 0.0f) || (a->softcap > 0 && r->softcap == 0.0f)) {
    snprintf(err, err_len, "--%s %g rounds to 0 in float32 (use 0 to turn it off)",
             a->alibi > 0 && r->alibi == 0.0f ? "alibi" : "softcap",
             a->alibi > 0 && r->alibi == 0.0f ? a->alibi : a->softcap);
    return false;
  }
  if (!cp_strategy_parse(a->strategy, &r->strategy)) {
    snprintf(err, err_len, "--strategy '%s': want ring, zigzag, allgather or ulysses", a->strategy);
    return false;
  }
  if (!attn_dtype_parse(a->kv_dtype, &r->kv_dtype)) {
    snprintf(err, err_len, "--kv-dtype '%s': want f32, f16, bf16 or q8_0", a->kv_dtype);
    return false;
  }
  if (!cp_parse_window(a->window, &r->window, &r->window_left, &r->window_right)) {
    snprintf(err, err_len, "--window '%s': want none or LEFT:RIGHT (inf = unbounded)", a->window);
    return false;
  }
  char e[480];
  if (!a->kernel) {
    cp_default_kernel(r->kernel, sizeof r->kernel);
  } else if (!cp_pick_kernel(a->kernel, r->kernel, sizeof r->kernel, e, sizeof e)) {
    snprintf(err, err_len, "--kernel: %s", e);
    return false;
  }
  snprintf(r->name, sizeof r->name, "%s/S%lld/%s%s", a->strategy, (long long)r->seq, a->kv_dtype,
           r->causal ? "/causal" : "");
  return true;
}

// Rank 0: the gathered output and LSE against the double reference of the whole problem.
static attn_check_verdict check_run(const cp_run_spec *r, const cp_job *job, const cp_result *res,
                                    attn_check_result *cr) {
  const attn_problem *w = &job->whole;
  attn_options o = w->opts ? *w->opts : (attn_options){0};
  float lse_dummy = 0.0f;
  o.lse = r->lse ? &lse_dummy : NULL;  // prepare copies the problem; lse only says "check it"
  attn_problem p = *w;
  p.opts = (r->lse || w->opts) ? &o : NULL;
  const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), nv = attn_v_elems(&p);
  float *q = malloc(nq * sizeof(float)), *k = malloc(nk * sizeof(float)),
        *v = malloc(nv * sizeof(float));
  attn_check_verdict verdict = ATTN_CHECK_FAIL;
  char err[256] = "out of memory";
  attn_check_prepared *pc = NULL;
  if (q && k && v) {
    cp_fill(q, r->seed, 0, w->batch, w->heads, 0, w->seq_q, w->head_dim_qk);
    cp_fill(k, r->seed, 1, w->batch, w->kv_heads, 0, w->seq_kv, w->head_dim_qk);
    cp_fill(v, r->seed, 2, w->batch, w->kv_heads, 0, w->seq_kv, w->head_dim_v);
    pc = attn_check_prepare_convert(&p, q, k, v, err, sizeof err);
  }
  if (pc) {
    attn_check_output_lse(pc, res->o, r->lse ? res->lse : NULL, cr);
    verdict = cr->verdict;
  } else {
    snprintf(cr->message, sizeof cr->message, "cannot prepare the reference: %s", err);
  }
  attn_check_prepared_free(pc);
  free(q), free(k), free(v);
  return verdict;
}

// Runs one spec on every rank; rank 0 checks, reports and appends to the JSON.
static bool run_one(const cp_run_spec *r, int rank, int ranks, bool bad_merge, double stall_s,
                    cp_report *rep, int *status) {
  cp_job job = {.lse = r->lse,
                .kernel = attn_kernel_find(r->kernel),
                .exec = {.threads = r->threads},
                .strategy = r->strategy,
                .seed = r->seed,
                .comm = MPI_COMM_WORLD,
                .rank = rank,
                .ranks = ranks,
                .fault_merge = bad_merge,
                .fault_stall_s = stall_s};
  job.whole = cp_run_problem(r, &job.opts);
  if (job.whole.opts) job.whole.opts = &job.opts;
  static cp_result res;
  char err[512] = "";
  if (!cp_run(&job, &res, err, sizeof err)) {
    fprintf(stderr, "attnbench-mpi: %s\n", err);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return false;
  }
  attn_check_result cr = {.verdict = ATTN_CHECK_PASS};
  attn_check_verdict verdict = ATTN_CHECK_PASS;
  if (rank == 0 && r->check) {
    verdict = check_run(r, &job, &res, &cr);
    if (verdict == ATTN_CHECK_FAIL) *status = 1;
  }
  if (!cp_report_run(rep, r, &job, &res, r->check ? attn_check_verdict_name(verdict) : "off", &cr,
                     err, sizeof err)) {
    fprintf(stderr, "attnbench-mpi: %s\n", err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  cp_result_free(&res);
  return true;
}

// Resolves threads 0 (the OpenMP default) to the count the kernels will use, so the model
// divides by it and the results record it; false with a message when that count is over
// the kernels' cap.
static bool resolve_threads(cp_runs *runs, char *err, size_t err_len) {
  const int def = omp_get_max_threads();
  for (size_t i = 0; i < runs->count; i++) {
    cp_run_spec *r = &runs->run[i];
    if (r->threads != 0) continue;
    if (def < 1 || def > ATTN_MAX_THREADS) {
      snprintf(err, err_len, "%s: threads 0 is the OpenMP default %d, outside [1, %d]", r->name,
               def, ATTN_MAX_THREADS);
      return false;
    }
    r->threads = def;
  }
  return true;
}

// Every rank validates alone (a config file or a kernel may differ between nodes), then the
// ranks agree: if any refused, the lowest refusing rank prints its reason (prefixed with its
// rank unless every rank refused) and every rank returns false, so all exit alike.
static bool agree_valid(bool ok, const char *err, int rank, int ranks) {
  int mine[2] = {ok ? INT_MAX : rank, ok ? 0 : 1}, all[2] = {ok ? INT_MAX : rank, ok ? 0 : 1};
  if (MPI_Allreduce(&mine[0], &all[0], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS ||
      MPI_Allreduce(&mine[1], &all[1], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
    fprintf(stderr, "attnbench-mpi: rank %d: MPI_Allreduce failed agreeing on the input\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (all[0] == INT_MAX) return true;
  if (all[0] == rank) {
    if (all[1] == ranks)
      fprintf(stderr, "attnbench-mpi: %s\n", err);
    else
      fprintf(stderr, "attnbench-mpi: rank %d: %s\n", rank, err);
  }
  return false;
}

// The ranks' parses agreed: true when every rank parsed its arguments. Otherwise every
// rank returns false (none waits for another in a collective), and the lowest rank whose
// parse failed, if its output was dropped (not rank 0), parses again to print its message.
static bool agree_parsed(int rc, int argc, char **argv, int rank) {
  int mine = rc == CLI_OK ? INT_MAX : rank, first = mine;
  if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) {
    fprintf(stderr, "attnbench-mpi: rank %d: MPI_Allreduce failed agreeing on the input\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (first == INT_MAX) return true;
  if (first == rank && rank != 0) {
    args again;
    fprintf(stderr, "attnbench-mpi: rank %d's command line:\n", rank);
    parse_args(argc, argv, &again);
    // Out of this process before the ranks finalize: rank 0's exit code ends the job, and
    // output still buffered here (--help's usage on stdout) was lost with it.
    fflush(stdout);
    fflush(stderr);
  }
  return false;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  args a;
  const int rc = parse_args_once(argc, argv, &a, rank);
  if (!agree_parsed(rc, argc, argv, rank)) {  // every rank ends here alike
    MPI_Finalize();
    return rc != CLI_OK ? cli_exit_code(rc) : 2;
  }
  // Every rank validates (what it reads: the config, its CPU's kernels), then all agree.
  // Only rank 0 writes the results, so only it checks --out.
  static cp_runs runs;
  char err[512] = "";
  bool ok = collect_runs(&a, &runs, err, sizeof err) && resolve_threads(&runs, err, sizeof err);
  for (size_t i = 0; ok && i < runs.count; i++)
    ok = cp_run_validate(&runs.run[i], ranks, err, sizeof err);
  if (ok && rank == 0 && a.out && !cp_report_prepare(a.out, a.config, err, sizeof err)) ok = false;
  if (!agree_valid(ok, err, rank, ranks)) {
    MPI_Finalize();
    return 2;
  }
  // Each rank read its own config (a file per node): they must describe the same runs, or
  // the ranks would wait in different collectives or merge different problems.
  unsigned long long digest = cp_runs_digest(&runs), first = digest;
  if (MPI_Bcast(&first, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    fprintf(stderr, "attnbench-mpi: rank %d: MPI_Bcast failed agreeing on the runs\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  snprintf(err, sizeof err,
           "its runs (%zu) differ from rank 0's: every rank must read the same config and "
           "options (only kernel and threads may differ between nodes)",
           runs.count);
  if (!agree_valid(digest == first, err, rank, ranks)) {
    MPI_Finalize();
    return 2;
  }
  if (a.dry_run) {
    for (size_t i = 0; rank == 0 && i < runs.count; i++) printf("%s\n", runs.run[i].name);
    if (rank == 0) printf("%zu runs on %d ranks\n", runs.count, ranks);
    MPI_Finalize();
    return 0;
  }
  // The watchdog gives each result (the probe, then every run) --timeout seconds.
  watchdog_install(rank, a.timeout);
  watchdog_rearm(a.timeout);
  bool bad_merge = false;
  double stall_s = 0.0;
  test_fault(rank, &bad_merge, &stall_s);
  static cp_report rep;
  int status = 0;
  if (!cp_report_begin(&rep, rank, ranks, a.quiet, a.predict_latency_us * 1e-6, err, sizeof err)) {
    fprintf(stderr, "attnbench-mpi: %s\n", err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < runs.count; i++) {
    watchdog_rearm(a.timeout);
    run_one(&runs.run[i], rank, ranks, bad_merge, stall_s, &rep, &status);
    // the file holds every finished run, so a later run that fails or hangs loses only itself
    if (rank == 0 && a.out && !cp_report_write(&rep, a.out, err, sizeof err)) {
      fprintf(stderr, "attnbench-mpi: %s\n", err);
      status = 1;
    }
  }
  if (rank == 0 && a.predict) cp_report_predict(&rep, stdout);
  cp_report_free(&rep);
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  alarm(0);
  MPI_Finalize();
  return status;
}
