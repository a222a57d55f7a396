// SPDX-License-Identifier: MIT
// `attnbench check` — every selected, available kernel against the float64 reference
// over the check matrix (kernels/check/check.h: shapes, inputs, tolerance derivation).
// Each case is prepared once (inputs, reference output, per-element tolerance) and every
// kernel runs on it. Output (stdout):
//     FAIL <kernel> <case>: max abs err …, err/tol …: <message>     one line per failure
//     INCONCLUSIVE <kernel> <case>: …: <reason>                      one per inconclusive pair
//     per-kernel summary table
//     N passed, M failed, K inconclusive, S skipped                 always the last line
// N, M, K and S count (kernel, case) pairs (verdicts: kernels/check/check.h; a pair is
// skipped when its kernel cannot run on this CPU). Exit 0 iff M == 0, K == 0 and N > 0:
// an inconclusive pair exits 1 like a failure, and so does a run that checked nothing.
// A kernel named with --kernel that cannot run here is an error (exit 1) unless
// --allow-skips; without --kernel, unavailable kernels are skipped. --junit / --json
// write one record per pair (check_report.h).
// The command runs in named steps: parse_options, select_cases, select_kernels,
// prepare_reports, then check_case per case (record per pair), print_summary,
// write_reports.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attn.h"
#include "bench/config.h"
#include "bench/point.h"
#include "check/check.h"
#include "cli/commands.h"
#include "cli/option_args.h"
#include "common/cli_args.h"
#include "common/util.h"
#include "io/check_report.h"
#include "io/fileio.h"
#include "io/npy.h"
#include "io/qkv_inputs.h"
#include "machine/placement.h"
#include "machine/resolve.h"
#include "tune/tunefile.h"

typedef struct kernel_tally {
  const attn_kernel *k;
  bool unavailable;  // cannot run on this CPU: every pair is skipped
  char why[96];      // the reason, e.g. "needs avx512f"
  size_t passed, failed, inconclusive, skipped;
  double worst_ratio;    // max over cases of max |o − ref| / tol
  double max_rel_err;    // max over cases of max |o − ref| / max |ref|
  double seconds;        // wall time inside attn_check_kernel (run + compare)
  double storage_ratio;  // max over its non-f32 cases of the storage err/tol (check.h); -1 none
} kernel_tally;

// The storage error per K/V type over the cases prepared (check.h,
// attn_check_storage_error): the table after the per-kernel one.
typedef struct storage_tally {
  size_t cases[ATTN_DTYPE_COUNT];
  double max_abs[ATTN_DTYPE_COUNT], max_ratio[ATTN_DTYPE_COUNT];
} storage_tally;
static storage_tally g_storage;

// Records a prepared case's storage error (no-op for f32 cases); returns its err/tol or -1.
static double note_storage(const attn_check_case *cc, const attn_check_prepared *pc) {
  double abs_err, ratio;
  if (!attn_check_storage_error(pc, &abs_err, &ratio)) return -1.0;
  const int t = (int)cc->problem.kv_dtype;
  g_storage.cases[t]++;
  if (!(abs_err <= g_storage.max_abs[t])) g_storage.max_abs[t] = abs_err;
  if (!(ratio <= g_storage.max_ratio[t])) g_storage.max_ratio[t] = ratio;
  return ratio;
}

// Selects kernels: all of the registry when names is empty, else the named ones (in
// registry order, duplicates merged). Unavailable ones are kept, marked, and get a note:
// their pairs count as skipped. A named kernel that is unavailable is an error unless
// allow_skips (a gate must not pass by checking nothing). Returns the number selected,
// or -1 after an "unknown kernel" error (exit 2), -2 after an "unavailable" one (exit 1).
static long select_kernels(const cli_list *names, bool allow_skips, kernel_tally *sel) {
  for (size_t j = 0; j < names->count; j++) {
    if (!attn_kernel_find(names->items[j])) {
      attn_report_unknown_kernel("check", names->items[j]);
      return -1;
    }
  }
  long n = 0, refused = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    bool wanted = names->count == 0;
    for (size_t j = 0; j < names->count; j++) wanted |= strcmp(names->items[j], k->name) == 0;
    if (!wanted) continue;
    kernel_tally *t = &sel[n++];
    *t = (kernel_tally){.k = k, .storage_ratio = -1.0};
    if (attn_kernel_available(k, t->why, sizeof t->why)) continue;
    t->unavailable = true;
    if (names->count && !allow_skips) {
      fprintf(stderr,
              "attnbench check: kernel '%s' cannot run on this CPU (%s): nothing would check "
              "it; drop --kernel %s, or pass --allow-skips to report its pairs as skipped\n",
              k->name, t->why, k->name);
      refused++;
    } else {
      fprintf(stderr, "note: skipping %s: unavailable on this CPU (%s)\n", k->name, t->why);
    }
  }
  return refused ? -2 : n;
}

// Command-line options of `check`.
typedef struct check_options {
  cli_list names;
  bool quick, verbose, progress, no_progress, list_cases, allow_skips;
  const char *filter;
  const char *config_path;             // --config: the cases of a sweep config (config_cases)
  const char *junit_path, *json_path;  // reports (check_report.h)
  exec_args x;             // execution settings (option_args.h; resolved per pair by resolve.h)
  attn_setting_layer cli;  // ... as the resolver's command-line layer
  // --o: check an output computed elsewhere (a framework, the user's own code).
  const char *q_path, *k_path, *v_path, *o_path;
  bool causal, scale_given;
  double scale;
  option_args opt;  // with --o: the attention options O was computed with (option_args.h)
} check_options;

// Step 1: parse the command line. Returns CLI_OK or the status to exit with.
static cli_status parse_options(int argc, char **argv, check_options *o) {
  const cli_option opts[] = {
      {.name = "kernel",
       .kind = CLI_STRING_LIST,
       .dest = &o->names,
       .metavar = "NAME",
       .help = "check only this kernel (default: every available kernel)"},
      ATTN_EXEC_ARGS_CLI(&o->x),
      {.name = "quick",
       .kind = CLI_FLAG,
       .dest = &o->quick,
       .help = "a fast subset of the matrix (sequences <= 100)"},
      {.name = "filter",
       .kind = CLI_STRING,
       .dest = &o->filter,
       .metavar = "TEXT",
       .help = "only cases whose description contains TEXT (e.g. 'causal', 'Sq1 ', 'Dqk33')"},
      {.name = "config",
       .kind = CLI_STRING,
       .dest = &o->config_path,
       .metavar = "FILE",
       .help = "instead of the matrix: one case per problem of a bench sweep config (shape and\n"
               "options, at the bench's check size; its kernels and threads are not used)"},
      {.name = "list-cases",
       .kind = CLI_FLAG,
       .dest = &o->list_cases,
       .help = "print the selected cases (one description per line) and exit"},
      {.name = "allow-skips",
       .kind = CLI_FLAG,
       .dest = &o->allow_skips,
       .help = "a --kernel that cannot run on this CPU counts its pairs as skipped instead "
               "of failing the command"},
      {.name = "junit",
       .kind = CLI_STRING,
       .dest = &o->junit_path,
       .metavar = "FILE",
       .help = "also write a JUnit XML report: one testcase per (kernel, case), suite = kernel"},
      {.name = "json",
       .kind = CLI_STRING,
       .dest = &o->json_path,
       .metavar = "FILE",
       .help = "also write a JSON report: one result per (kernel, case)"},
      {.name = "verbose",
       .kind = CLI_FLAG,
       .dest = &o->verbose,
       .help = "also print a line for every passing pair"},
      {.name = "progress",
       .kind = CLI_FLAG,
       .dest = &o->progress,
       .help = "show [k/N] progress on stderr even when it is not a terminal"},
      {.name = "no-progress",
       .kind = CLI_FLAG,
       .dest = &o->no_progress,
       .help = "never show progress"},
      {.name = "o",
       .kind = CLI_STRING,
       .dest = &o->o_path,
       .metavar = "O.npy",
       .help = "instead of kernels: check this output (computed elsewhere) of --q/--k/--v"},
      {.name = "q",
       .kind = CLI_STRING,
       .dest = &o->q_path,
       .metavar = "Q.npy",
       .help = "with --o: queries, float32 [batch][heads][seq_q][head_dim_qk]"},
      {.name = "k",
       .kind = CLI_STRING,
       .dest = &o->k_path,
       .metavar = "K.npy",
       .help = "with --o: keys, float32 [batch][kv_heads][seq_kv][head_dim_qk]"},
      {.name = "v",
       .kind = CLI_STRING,
       .dest = &o->v_path,
       .metavar = "V.npy",
       .help = "with --o: values, float32 [batch][kv_heads][seq_kv][head_dim_v]"},
      {.name = "causal",
       .kind = CLI_FLAG,
       .dest = &o->causal,
       .help = "with --o: the bottom-right aligned causal mask (j <= i + seq_kv - seq_q)"},
      {.name = "scale",
       .kind = CLI_DOUBLE,
       .dest = &o->scale,
       .given = &o->scale_given,
       .metavar = "S",
       .help = "with --o: score scale (default 1/sqrt(head_dim_qk))"},
      ATTN_OPTION_ARGS_CLI(&o->opt,
                           "with --o: the LSE computed with O, float32 "
                           "[batch][heads][seq_q]; checked too"),
  };
  const cli_spec spec = {
      .command = "check",
      .summary =
          "Check kernels against the float64 reference over a matrix of shapes (sequence\n"
          "lengths 1..1024 incl. cross both ways, head dims 1..256 incl. Dv != Dqk, MHA/GQA/\n"
          "MQA, batch > 1, causal on/off, uniform/normal/large-magnitude inputs). The\n"
          "tolerance is per output element, derived from a float32 error bound (docs/checker.md).\n"
          "Each (kernel, case) pair passes, fails, or is inconclusive (the bound cannot\n"
          "decide: inputs outside the kernel input domain, or a bound too loose to tell\n"
          "the softmax weights apart). Prints one line per failing or inconclusive pair,\n"
          "a per-kernel summary, then 'N passed, M failed, K inconclusive, S skipped'\n"
          "(S: pairs of kernels this CPU cannot run).",
      .epilog =
          "examples:\n"
          "  attnbench check\n"
          "  attnbench check --quick --kernel blocked --kernel naive --verbose\n"
          "  attnbench check --kernel blocked --filter causal --list-cases\n"
          "  attnbench check --quick --junit check.xml --json check.json\n"
          "  attnbench check --q q.npy --k k.npy --v v.npy --o o.npy --causal\n"
          "  attnbench check --q q.npy --k k.npy --v v.npy --o o.npy --window 127,0 --softcap 50\n"
          "(--window, --align, --softcap, --alibi, --alibi-slopes, --sinks, --mask and --lse\n"
          "apply with --o only: the options the output was computed with, as `run` takes them)\n"
          "\nexit codes: 0 at least one pair passed and none failed or was inconclusive;\n"
          "1 a pair failed or was inconclusive, nothing was checked, a --kernel cannot run\n"
          "on this CPU (without --allow-skips), or a report could not be written; 2 bad\n"
          "command line or unknown kernel",
      .options = opts,
      .n_options = sizeof opts / sizeof opts[0],
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return st;
  if (attn_resolve_env_bad("check")) return CLI_ERROR;  // ATTNBENCH_TILE_* etc.
  if (attn_placement_bind_bad("check", o->x.bind)) return CLI_ERROR;
  exec_args_layer(&o->x, &o->cli);
  if (o->progress && o->no_progress) {
    fprintf(stderr, "attnbench check: --progress and --no-progress exclude each other\n");
    return CLI_ERROR;
  }
  const option_args *a = &o->opt;
  if (!o->o_path && (a->window || a->align || a->softcap_given || a->alibi_given ||
                     a->slopes_path || a->sinks_path || a->mask_path || a->lse_path)) {
    fprintf(stderr,
            "attnbench check: --window, --align, --softcap, --alibi, --alibi-slopes, --sinks, "
            "--mask and --lse apply only with --o (the check matrix has its own option cases)\n");
    return CLI_ERROR;
  }
  if (option_args_validate("check", a) >= 0) return CLI_ERROR;
  return CLI_OK;
}

static bool same_config_case(const attn_check_case *a, const attn_check_case *b) {
  const attn_problem *p = &a->problem, *q = &b->problem;
  const attn_options *x = &a->opts, *y = &b->opts;
  return p->batch == q->batch && p->heads == q->heads && p->kv_heads == q->kv_heads &&
         p->seq_q == q->seq_q && p->seq_kv == q->seq_kv && p->head_dim_qk == q->head_dim_qk &&
         p->head_dim_v == q->head_dim_v && p->causal == q->causal && p->scale == q->scale &&
         x->align == y->align && x->window == y->window && x->window_left == y->window_left &&
         x->window_right == y->window_right && x->softcap == y->softcap &&
         x->alibi_max_bias == y->alibi_max_bias && a->gen == b->gen;
}

// --config: one case per distinct problem of the sweep config's points — shape and
// options (bench/config.h), on the shape the bench checks it at (attn_bench_check_shape),
// normal inputs; sinks and masks generated by the checker (ATTN_CHECK_GEN_SINKS: 2·N(0,1)
// per head, the bench's distribution; ATTN_CHECK_GEN_MASK: 2·N(0,1), 15% −inf and whole
// −inf rows, harsher than the bench's) and the LSE checked for lse points. The config's kernels
// and threads are not used (--kernel, --threads choose). Returns the number of cases
// (*cases allocated), -1 after an out-of-memory message, -2 after a config error.
static long config_cases(const char *path, attn_check_case **cases) {
  // One kernel (any: the reference is always available) and one thread count, so the
  // plan has one point per problem of the config.
  const attn_kernel *ref = attn_kernel_find("reference");
  const int one = 1;
  const attn_bench_overrides ov = {
      .kernels = &ref, .kernel_count = 1, .threads = &one, .thread_count = 1};
  attn_bench_plan plan;
  char err[512];
  if (!attn_bench_plan_load(path, &ov, NULL, &plan, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return -2;
  }
  *cases = calloc(plan.count ? plan.count : 1, sizeof **cases);
  if (!*cases) {
    attn_bench_plan_free(&plan);
    fprintf(stderr, "attnbench check: out of memory\n");
    return -1;
  }
  size_t n = 0;
  for (size_t i = 0; i < plan.count; i++) {
    const attn_bench_point *pt = &plan.points[i];
    attn_check_case c = {.dist = ATTN_DIST_NORMAL, .seed = 20240607};
    c.problem = attn_bench_check_shape(&pt->problem);
    attn_bench_opts_apply(&pt->opts, &c.opts);
    c.gen = (pt->opts.sinks ? ATTN_CHECK_GEN_SINKS : 0) |
            (pt->opts.mask ? ATTN_CHECK_GEN_MASK : 0) | (pt->opts.lse ? ATTN_CHECK_GEN_LSE : 0);
    bool dup = false;  // cold and warm points, several thread counts: one problem
    for (size_t j = 0; j < n && !dup; j++) dup = same_config_case(&(*cases)[j], &c);
    if (!dup) (*cases)[n++] = c;
  }
  attn_bench_plan_free(&plan);
  return (long)n;
}

// Step 2: the case matrix (or --config's cases), narrowed by --filter (order kept);
// --list-cases prints it. Returns the kept count (*cases allocated, *n_total = matrix
// size), or -1 after a message (out of memory: exit 1) / -2 (--filter matches nothing,
// or a bad --config: exit 2).
static long select_cases(const check_options *o, attn_check_case **cases, size_t *n_total) {
  size_t n = 0;
  if (o->config_path) {
    const long nc = config_cases(o->config_path, cases);
    if (nc < 0) return nc;
    n = (size_t)nc;
  } else {
    n = attn_check_matrix(o->quick, NULL, 0);
    *cases = calloc(n ? n : 1, sizeof **cases);
    if (!*cases) {
      fprintf(stderr, "attnbench check: out of memory\n");
      return -1;
    }
    attn_check_matrix(o->quick, *cases, n);
  }
  size_t kept = 0;
  for (size_t c = 0; c < n; c++) {
    char desc[192];
    attn_check_case_describe(&(*cases)[c], desc, sizeof desc);
    if (o->filter && !strstr(desc, o->filter)) continue;
    if (o->list_cases) printf("%s\n", desc);
    (*cases)[kept++] = (*cases)[c];
  }
  *n_total = n;
  if (o->filter && kept == 0 && !o->list_cases) {
    fprintf(stderr, "attnbench check: --filter '%s' matches no case (see --list-cases)\n",
            o->filter);
    return -2;
  }
  return (long)kept;
}

// Counts over (kernel, case) pairs; report (when --junit/--json) gets one record each.
typedef struct check_totals {
  size_t passed, failed, inconclusive, skipped;
  check_report *report;  // NULL without reports
} check_totals;

// Progress on stderr ("[k/N] case"), cleared before anything goes to stdout.
typedef struct progress {
  bool show, tty;
} progress;

static void progress_clear(const progress *pg) {
  if (pg->show && pg->tty) fputs("\r\033[K", stderr);
}

static void progress_show(const progress *pg, size_t c, size_t n, const char *desc) {
  if (!pg->show) return;
  fprintf(stderr, "%s[%zu/%zu] %s", pg->tty ? "\r\033[K" : "", c + 1, n, desc);
  if (!pg->tty) fputc('\n', stderr);
  fflush(stderr);
}

// A failure the harness decided without running the kernel ("cannot prepare the case",
// "refused: …"): counted and printed like a failing pair.
static void record_harness_failure(kernel_tally *t, check_totals *tot, const char *desc,
                                   const char *message) {
  printf("FAIL %s %s: %s\n", t->k->name, desc, message);
  t->failed++, tot->failed++;
  if (tot->report)
    check_report_add(tot->report, t->k->name, desc, CHECK_FAIL, message, NAN, NAN, NAN, 0.0);
}

// A pair of a kernel this CPU cannot run: counted (and reported) as skipped, no line.
static void record_skip(kernel_tally *t, check_totals *tot, const char *desc) {
  t->skipped++, tot->skipped++;
  if (!tot->report) return;
  char msg[160];
  snprintf(msg, sizeof msg, "unavailable on this CPU (%s)", t->why);
  check_report_add(tot->report, t->k->name, desc, CHECK_SKIPPED, msg, NAN, NAN, NAN, 0.0);
}

// Records one pair's verdict in the kernel's tally and the totals, and prints its line:
//   FAIL|INCONCLUSIVE <kernel> <case>: max abs err …, err/tol … (worst at …): <reason>
//   ok   <kernel> <case>: …                                       (--verbose only)
static void record(kernel_tally *t, check_totals *tot, const char *desc, const attn_check_result *r,
                   double seconds, bool verbose, const progress *pg) {
  if (r->worst_ratio > t->worst_ratio) t->worst_ratio = r->worst_ratio;
  if (r->max_rel_err > t->max_rel_err) t->max_rel_err = r->max_rel_err;
  const char *reason = r->message[0] ? r->message : attn_check_verdict_name(r->verdict);
  check_verdict v = CHECK_PASS;
  switch (r->verdict) {
    case ATTN_CHECK_PASS:
      t->passed++, tot->passed++;
      if (!verbose) break;
      progress_clear(pg);
      printf("ok   %s %s: max abs err %.3g, err/tol %.3g\n", t->k->name, desc, r->max_abs_err,
             r->worst_ratio);
      break;
    case ATTN_CHECK_FAIL:
    case ATTN_CHECK_INCONCLUSIVE: {
      const bool fail = r->verdict == ATTN_CHECK_FAIL;
      if (fail)
        t->failed++, tot->failed++, v = CHECK_FAIL;
      else
        t->inconclusive++, tot->inconclusive++, v = CHECK_INCONCLUSIVE;
      progress_clear(pg);
      printf("%s %s %s: max abs err %.3g, err/tol %.3g (worst at flat index %zu): %s\n",
             fail ? "FAIL" : "INCONCLUSIVE", t->k->name, desc, r->max_abs_err, r->worst_ratio,
             r->worst_index, reason);
      break;
    }
  }
  if (tot->report)
    check_report_add(tot->report, t->k->name, desc, v, v == CHECK_PASS ? NULL : reason,
                     r->max_abs_err, r->max_rel_err, r->worst_ratio, seconds);
  fflush(stdout);
}

// Step 3: one case against every selected kernel (prepared once). Kernels this CPU
// cannot run get a skipped pair each. A (kernel, case) pair whose check would not fit in
// memory (util.h's estimate against the budget) is a failure with a "refused: …"
// reason, never a crash.
static void check_case(const attn_check_case *cc, kernel_tally *sel, long n_sel,
                       const check_options *o, uint64_t budget, check_totals *tot,
                       const progress *pg) {
  char desc[192], err[256], refused[160] = "refused: ";
  attn_check_case_describe(cc, desc, sizeof desc);
  long n_run = 0;
  for (long i = 0; i < n_sel; i++) n_run += !sel[i].unavailable;
  if (n_run == 0) {
    for (long i = 0; i < n_sel; i++) record_skip(&sel[i], tot, desc);
    return;
  }
  attn_check_prepared *pc = NULL;
  if (attn_memory_refused(attn_check_bytes(&cc->problem, NULL, NULL), budget, refused + 9,
                          sizeof refused - 9))
    snprintf(err, sizeof err, "%s", refused);
  else
    pc = attn_check_prepare(cc, err, sizeof err);
  if (!pc) {  // the harness could not build the case: every kernel counts as failed
    progress_clear(pg);
    char msg[300];
    snprintf(msg, sizeof msg, "cannot prepare the case: %s", err);
    for (long i = 0; i < n_sel; i++) {
      if (sel[i].unavailable)
        record_skip(&sel[i], tot, desc);
      else
        record_harness_failure(&sel[i], tot, desc, msg);
    }
    fflush(stdout);
    return;
  }
  const double storage = note_storage(cc, pc);
  for (long i = 0; i < n_sel; i++) {
    if (sel[i].unavailable) {
      record_skip(&sel[i], tot, desc);
      continue;
    }
    if (storage > sel[i].storage_ratio) sel[i].storage_ratio = storage;
    // The settings `run` would use for this kernel on this problem (resolve.h; the
    // command line's were checked up front, so this fails only for a tuning file's variant).
    attn_settings st;
    if (attn_resolve(sel[i].k, &cc->problem, &o->cli, NULL, 0, &st, NULL, refused + 9,
                     sizeof refused - 9) != 0) {
      progress_clear(pg);
      record_harness_failure(&sel[i], tot, desc, refused);
      fflush(stdout);
      continue;
    }
    if (o->x.explain) attn_resolve_print(stdout, sel[i].k, &cc->problem, &st);
    const attn_exec ex = st.exec;
    if (attn_memory_refused(attn_check_bytes(&cc->problem, sel[i].k, &ex), budget, refused + 9,
                            sizeof refused - 9)) {
      progress_clear(pg);
      record_harness_failure(&sel[i], tot, desc, refused);
      fflush(stdout);
      continue;
    }
    attn_check_result r;
    const double t0 = attn_now_seconds();
    attn_check_kernel(sel[i].k, pc, &ex, &r);
    const double dt = attn_now_seconds() - t0;
    sel[i].seconds += dt;
    record(&sel[i], tot, desc, &r, dt, o->verbose, pg);
  }
  attn_check_prepared_free(pc);
}

// The storage error per K/V type (check.h): what f16, bf16 and q8_0 storage cost against
// float32 K/V on the matrix's cases of that type, whatever the kernel.
static void print_storage(void) {
  bool any = false;
  for (int t = 1; t < ATTN_DTYPE_COUNT; t++) any |= g_storage.cases[t] > 0;
  if (!any) return;
  printf("\n%-7s  %5s  %22s  %18s\n", "kv type", "cases", "storage max abs error",
         "storage err/tol");
  for (int t = 1; t < ATTN_DTYPE_COUNT; t++)
    if (g_storage.cases[t])
      printf("%-7s  %5zu  %22.3g  %18.3g\n", attn_dtype_name((attn_dtype)t), g_storage.cases[t],
             g_storage.max_abs[t], g_storage.max_ratio[t]);
}

// Step 4: the per-kernel table (stdout) and the timing line (stderr).
static void print_summary(const kernel_tally *sel, long n_sel, size_t n_cases, size_t n_total,
                          const check_options *o, double seconds) {
  if (n_sel <= 0) return;
  int w = 6;
  for (long i = 0; i < n_sel; i++) {
    const int len = (int)strlen(sel[i].k->name);
    if (len > w) w = len;
  }
  printf("\n%-*s  %6s  %6s  %12s  %7s  %13s  %11s  %17s  %8s\n", w, "kernel", "passed", "failed",
         "inconclusive", "skipped", "worst err/tol", "max rel err", "kv storage err/tol", "time s");
  for (long i = 0; i < n_sel; i++) {
    char st[32] = "-";  // no non-f32 case ran for the kernel
    if (sel[i].storage_ratio >= 0) snprintf(st, sizeof st, "%.3g", sel[i].storage_ratio);
    printf("%-*s  %6zu  %6zu  %12zu  %7zu  %13.3g  %11.3g  %17s  %8.2f\n", w, sel[i].k->name,
           sel[i].passed, sel[i].failed, sel[i].inconclusive, sel[i].skipped, sel[i].worst_ratio,
           sel[i].max_rel_err, st, sel[i].seconds);
  }
  print_storage();
  char threads[48] = "as resolved per pair";
  if (o->x.threads > 0) snprintf(threads, sizeof threads, "%d", o->x.threads);
  fprintf(stderr, "%zu of %zu cases x %ld kernels in %.1f s (threads=%s)\n", n_cases, n_total,
          n_sel, seconds, threads);
}

// The report files, validated before any work (fileio.h: what may be replaced, not an
// input, not each other).
typedef struct reports {
  attn_output junit, json;
  bool want_junit, want_json;
  check_report recs;
} reports;

static bool prepare_reports(const check_options *o, const attn_input_file *inputs, size_t n_inputs,
                            reports *rp) {
  char err[ATTN_OUT_PATH_MAX + 512];
  rp->want_junit = o->junit_path != NULL;
  rp->want_json = o->json_path != NULL;
  if (rp->want_junit &&
      !attn_output_prepare(&rp->junit, o->junit_path, inputs, n_inputs, err, sizeof err)) {
    fprintf(stderr, "attnbench check: cannot write the JUnit report (--junit): %s\n", err);
    return false;
  }
  if (rp->want_json) {
    attn_input_file more[8];
    size_t n = 0;
    for (; n < n_inputs && n < 7; n++) more[n] = inputs[n];
    if (rp->want_junit) more[n++] = (attn_input_file){"JUnit report (--junit)", o->junit_path};
    if (!attn_output_prepare(&rp->json, o->json_path, more, n, err, sizeof err)) {
      fprintf(stderr, "attnbench check: cannot write the JSON report (--json): %s\n", err);
      return false;
    }
    if (rp->want_junit && strcmp(rp->junit.target, rp->json.target) == 0) {
      fprintf(stderr, "attnbench check: --junit and --json name the same file (%s)\n",
              o->json_path);
      return false;
    }
  }
  return true;
}

// Writes the reports (after the closing line). False after a message.
static bool write_reports(reports *rp, double seconds) {
  if (!rp->want_junit && !rp->want_json) return true;
  char err[ATTN_OUT_PATH_MAX + 512];
  bool ok = true;
  if (rp->recs.oom) {
    fprintf(stderr, "attnbench check: out of memory collecting the report; none written\n");
    return false;
  }
  if (rp->want_junit &&
      !check_report_write_junit(&rp->recs, &rp->junit, seconds, err, sizeof err)) {
    fprintf(stderr, "attnbench check: cannot write the JUnit report: %s\n", err);
    ok = false;
  }
  if (rp->want_json && !check_report_write_json(&rp->recs, &rp->json, seconds, err, sizeof err)) {
    fprintf(stderr, "attnbench check: cannot write the JSON report: %s\n", err);
    ok = false;
  }
  return ok;
}

// --o: an output computed outside attnbench (PyTorch, ONNX Runtime, the user's own code)
// against the float64 reference of its inputs, with the same per-element bound and the
// same three verdicts as every kernel. One pair: "check: pass|FAIL|inconclusive (…)" and
// the usual closing line; in the reports its suite is "output" and its case the O path.
static int check_given_output(const check_options *o) {
  if (!o->q_path || !o->k_path || !o->v_path) {
    fprintf(stderr,
            "attnbench check: --o needs --q, --k and --v (the inputs O was computed from)\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (o->names.count || o->quick || o->filter || o->list_cases || o->allow_skips) {
    fprintf(stderr,
            "attnbench check: --o checks one given output; --kernel, --quick, --filter, "
            "--list-cases and --allow-skips do not apply\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (o->scale_given && !isfinite((float)o->scale)) {
    fprintf(stderr, "attnbench check: --scale %g does not fit in float32\n", o->scale);
    return ATTNBENCH_EXIT_USAGE;
  }
  const attn_input_file inputs[] = {{"Q input (--q)", o->q_path},
                                    {"K input (--k)", o->k_path},
                                    {"V input (--v)", o->v_path},
                                    {"output checked (--o)", o->o_path},
                                    {"LSE checked (--lse)", o->opt.lse_path}};
  reports rp = {0};
  if (!prepare_reports(o, inputs, o->opt.lse_path ? 5 : 4, &rp)) return ATTNBENCH_EXIT_FAILURE;
  int rc = ATTNBENCH_EXIT_FAILURE;
  named_array q = {"Q", "[batch][heads][seq_q][head_dim_qk]", o->q_path, {0}};
  named_array k = {"K", "[batch][kv_heads][seq_kv][head_dim_qk]", o->k_path, {0}};
  named_array v = {"V", "[batch][kv_heads][seq_kv][head_dim_v]", o->v_path, {0}};
  npy_array out = {0}, lse = {0}, slopes = {0}, sinks = {0}, mask = {0};
  attn_check_prepared *pc = NULL;
  attn_problem p;
  attn_options opts;
  char err[ATTN_OUT_PATH_MAX + 512], sb[400];
  if (!qkv_load("check", &q) || !qkv_load_kv("check", &k) || !qkv_load_kv("check", &v) ||
      !qkv_derive_problem("check", &q, &k, &v, o->causal, &p))
    goto done;
  if (o->scale_given) p.scale = (float)o->scale;
  if (!option_args_load("check", &o->opt, &p, &opts, &slopes, &sinks, &mask)) goto done;
  if (o->opt.lse_path) {
    if (!npy_read_f32(o->opt.lse_path, &lse, err, sizeof err)) {
      fprintf(stderr, "attnbench check: --lse: %s\n", err);
      goto done;
    }
    const int64_t lw[3] = {p.batch, p.heads, p.seq_q};
    if (lse.ndim != 3 || memcmp(lse.shape, lw, sizeof lw) != 0) {
      char wb[128];
      fprintf(stderr,
              "attnbench check: --lse %s has shape %s; Q makes it %s [batch][heads][seq_q]\n",
              o->opt.lse_path, npy_shape_string(lse.ndim, lse.shape, sb, sizeof sb),
              npy_shape_string(3, lw, wb, sizeof wb));
      goto done;
    }
    opts.lse = lse.data;  // marks the LSE as wanted; the check reads it as given
  }
  p.opts = &opts;
  if (!attn_problem_validate(&p, err, sizeof err)) {
    fprintf(stderr, "attnbench check: %s\n", err);
    goto done;
  }
  if (!npy_read_f32(o->o_path, &out, err, sizeof err)) {
    fprintf(stderr, "attnbench check: O: %s\n", err);
    goto done;
  }
  const int64_t want[4] = {p.batch, p.heads, p.seq_q, p.head_dim_v};
  if (out.ndim != 4 || memcmp(out.shape, want, sizeof want) != 0) {
    char wb[128];
    fprintf(stderr,
            "attnbench check: O (%s) has shape %s; Q, K and V make it %s "
            "[batch][heads][seq_q][head_dim_v]\n",
            o->o_path, npy_shape_string(out.ndim, out.shape, sb, sizeof sb),
            npy_shape_string(4, want, wb, sizeof wb));
    goto done;
  }
  const double t0 = attn_now_seconds();
  pc = attn_check_prepare_inputs(&p, q.a.data, k.a.half ? (const void *)k.a.half : k.a.data,
                                 v.a.half ? (const void *)v.a.half : v.a.data, err, sizeof err);
  if (!pc) {
    fprintf(stderr, "attnbench check: cannot compute the reference: %s\n", err);
    goto done;
  }
  attn_check_result r;
  attn_check_output_lse(pc, out.data, o->opt.lse_path ? lse.data : NULL, &r);
  const double dt = attn_now_seconds() - t0;
  const char *verdict = r.verdict == ATTN_CHECK_PASS   ? "pass"
                        : r.verdict == ATTN_CHECK_FAIL ? "FAIL"
                                                       : "inconclusive";
  printf(
      "check: %s (max abs err %.3g, max rel err %.3g, err/tol %.3g, worst at flat index %zu%s%s)\n",
      verdict, r.max_abs_err, r.max_rel_err, r.worst_ratio, r.worst_index, r.message[0] ? "; " : "",
      r.message);
  printf("%d passed, %d failed, %d inconclusive, 0 skipped\n", r.verdict == ATTN_CHECK_PASS,
         r.verdict == ATTN_CHECK_FAIL, r.verdict == ATTN_CHECK_INCONCLUSIVE);
  fflush(stdout);
  const check_verdict cv = r.verdict == ATTN_CHECK_PASS   ? CHECK_PASS
                           : r.verdict == ATTN_CHECK_FAIL ? CHECK_FAIL
                                                          : CHECK_INCONCLUSIVE;
  const char *reason = r.message[0] ? r.message : attn_check_verdict_name(r.verdict);
  if (rp.want_junit || rp.want_json)
    check_report_add(&rp.recs, "output", o->o_path, cv, cv == CHECK_PASS ? NULL : reason,
                     r.max_abs_err, r.max_rel_err, r.worst_ratio, dt);
  const bool written = write_reports(&rp, dt);
  rc = r.verdict == ATTN_CHECK_PASS && written ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
done:
  check_report_free(&rp.recs);
  attn_check_prepared_free(pc);
  npy_free(&out);
  npy_free(&lse);
  npy_free(&slopes);
  npy_free(&sinks);
  npy_free(&mask);
  npy_free(&q.a);
  npy_free(&k.a);
  npy_free(&v.a);
  return rc;
}

int cmd_check(int argc, char **argv) {
  check_options o = {0};
  const cli_status st = parse_options(argc, argv, &o);
  if (st != CLI_OK) return cli_exit_code(st);
  if (o.config_path && (o.o_path || o.q_path || o.k_path || o.v_path)) {
    fprintf(stderr, "attnbench check: --config checks kernels; --o/--q/--k/--v do not apply\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (o.o_path || o.q_path || o.k_path || o.v_path) {
    if (!o.o_path) {
      fprintf(stderr, "attnbench check: --q/--k/--v need --o (the output to check)\n");
      return ATTNBENCH_EXIT_USAGE;
    }
    return check_given_output(&o);
  }
  if (o.config_path && o.quick) {
    fprintf(stderr, "attnbench check: --config replaces the matrix; --quick does not apply\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (o.list_cases && (o.junit_path || o.json_path)) {
    fprintf(stderr, "attnbench check: --list-cases checks nothing; --junit/--json do not apply\n");
    return ATTNBENCH_EXIT_USAGE;
  }

  attn_check_case *cases = NULL;
  size_t n_total = 0;
  const long n_cases = select_cases(&o, &cases, &n_total);
  if (n_cases < 0 || o.list_cases) {
    free(cases);
    if (n_cases == -1) return ATTNBENCH_EXIT_FAILURE;
    if (n_cases == -2) return ATTNBENCH_EXIT_USAGE;
    return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
  }
  const int tune_rc = attn_tune_setup("check", o.x.tune_file);  // a bad tuning file: exit 1
  if (tune_rc) {
    free(cases);
    return tune_rc;
  }
  kernel_tally *sel = calloc(attn_kernel_count() + 1, sizeof *sel);
  if (!sel) {
    fprintf(stderr, "attnbench check: out of memory\n");
    free(cases);
    return ATTNBENCH_EXIT_FAILURE;
  }
  const long n_sel = select_kernels(&o.names, o.allow_skips, sel);
  if (n_sel < 0) {
    free(sel);
    free(cases);
    return n_sel == -1 ? ATTNBENCH_EXIT_USAGE : ATTNBENCH_EXIT_FAILURE;
  }
  // The user's settings once, up front, for every kernel checked (the first case's
  // problem; the tuning file's entries are per pair): a --regtile (or ATTNBENCH_REGTILE)
  // a kernel does not have, or OMP_NUM_THREADS above the thread cap, is one message.
  attn_settings first = {0};
  for (long i = 0; n_cases > 0 && i < n_sel; i++) {
    char why[512];
    attn_setting_fault fault;
    if (attn_resolve(sel[i].k, &cases[0].problem, &o.cli, NULL, ATTN_RESOLVE_NO_TUNE_FILE, &first,
                     &fault, why, sizeof why) != 0) {
      fprintf(stderr, "attnbench check: %s%s\n", why,
              fault.field == ATTN_SETTING_REGTILE ? " (choose the kernels with --kernel)" : "");
      free(sel);
      free(cases);
      return attn_resolve_exit_code(&fault);
    }
  }
  // Placement by the resolved mode (placement.h) for the team the kernels will use.
  if (n_cases > 0 && n_sel > 0) {
    char binding[512];
    attn_placement_use_mode(first.bind);
    attn_placement_bind(first.exec.threads, binding, sizeof binding);
  }
  long n_run = 0;
  for (long i = 0; i < n_sel; i++) n_run += !sel[i].unavailable;

  uint64_t budget = 0;  // memory the pairs may use (util.h)
  char merr[256];
  if (!attn_memory_budget(&budget, merr, sizeof merr)) {
    fprintf(stderr, "attnbench check: %s\n", merr);
    free(sel);
    free(cases);
    return ATTNBENCH_EXIT_USAGE;
  }
  reports rp = {0};
  if (!prepare_reports(&o, NULL, 0, &rp)) {
    free(sel);
    free(cases);
    return ATTNBENCH_EXIT_FAILURE;
  }

  const bool tty = isatty(STDERR_FILENO);
  const progress pg = {.show = !o.no_progress && (o.progress || tty) && n_run > 0, .tty = tty};
  check_totals tot = {.report = rp.want_junit || rp.want_json ? &rp.recs : NULL};
  const double t_start = attn_now_seconds();
  for (long c = 0; c < n_cases && n_sel > 0; c++) {
    char desc[192];
    attn_check_case_describe(&cases[c], desc, sizeof desc);
    if (n_run > 0) progress_show(&pg, (size_t)c, (size_t)n_cases, desc);
    check_case(&cases[c], sel, n_sel, &o, budget, &tot, &pg);
  }
  progress_clear(&pg);
  const double seconds = attn_now_seconds() - t_start;
  print_summary(sel, n_sel, (size_t)n_cases, n_total, &o, seconds);
  printf("%zu passed, %zu failed, %zu inconclusive, %zu skipped\n", tot.passed, tot.failed,
         tot.inconclusive, tot.skipped);
  fflush(stdout);
  const bool nothing = tot.passed == 0 && tot.failed == 0 && tot.inconclusive == 0;
  if (nothing)
    fprintf(stderr,
            "attnbench check: nothing was checked (%s): a gate that checks nothing fails; "
            "name kernels this CPU can run (attnbench list --available)\n",
            n_sel == 0   ? "no kernel selected"
            : n_run == 0 ? "every selected kernel is unavailable on this CPU"
                         : "no case selected");
  const bool written = write_reports(&rp, seconds);
  check_report_free(&rp.recs);
  free(sel);
  free(cases);
  return tot.failed == 0 && tot.inconclusive == 0 && tot.passed > 0 && written
             ? ATTNBENCH_EXIT_OK
             : ATTNBENCH_EXIT_FAILURE;
}
