// SPDX-License-Identifier: MIT
// `attnbench check` — every selected, available kernel against the float64 reference
// over the check matrix (kernels/check/check.h: shapes, inputs, tolerance derivation).
// Each case is prepared once (inputs, reference output, per-element tolerance) and every
// kernel runs on it. Output (stdout):
//     FAIL <kernel> <case>: max abs err …, err/tol …: <message>     one line per failure
//     INCONCLUSIVE <kernel> <case>: …: <reason>                      one per inconclusive pair
//     per-kernel summary table
//     N passed, M failed, K inconclusive                            always the last line
// N, M and K count (kernel, case) pairs (verdicts: kernels/check/check.h). Exit 0 iff
// M == 0 and K == 0; an inconclusive pair exits 1 like a failure.
// The command runs in named steps: parse_options, select_cases, select_kernels, then
// check_case per case (record per pair), print_summary.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attn.h"
#include "check/check.h"
#include "cli_args.h"
#include "commands.h"
#include "placement.h"
#include "fileio.h"
#include "npy.h"
#include "qkv_inputs.h"
#include "util.h"

typedef struct kernel_tally {
  const attn_kernel *k;
  size_t passed, failed, inconclusive;
  double worst_ratio;  // max over cases of max |o − ref| / tol
  double max_rel_err;  // max over cases of max |o − ref| / max |ref|
  double seconds;      // wall time inside attn_check_kernel (run + compare)
} kernel_tally;

// Selects kernels: all of the registry when names is empty, else the named ones (in
// registry order, duplicates merged). Unavailable ones get a note and are skipped.
// Returns the number selected, or -1 after an "unknown kernel" error.
static long select_kernels(const cli_list *names, kernel_tally *sel) {
  for (size_t j = 0; j < names->count; j++) {
    if (!attn_kernel_find(names->items[j])) {
      attn_report_unknown_kernel("check", names->items[j]);
      return -1;
    }
  }
  long n = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    bool wanted = names->count == 0;
    for (size_t j = 0; j < names->count; j++) wanted |= strcmp(names->items[j], k->name) == 0;
    if (!wanted) continue;
    char why[96];
    if (!attn_kernel_available(k, why, sizeof why)) {
      fprintf(stderr, "note: skipping %s: unavailable on this CPU (%s)\n", k->name, why);
      continue;
    }
    sel[n++] = (kernel_tally){.k = k};
  }
  return n;
}

// Command-line options of `check`.
typedef struct check_options {
  cli_list names;
  bool quick, verbose, progress, no_progress, list_cases;
  const char *filter;
  attn_exec exec;
  const char *bind;  // --bind (placement.h)
  // --o: check an output computed elsewhere (a framework, the user's own code).
  const char *q_path, *k_path, *v_path, *o_path;
  bool causal, scale_given;
  double scale;
} check_options;

// Step 1: parse the command line. Returns CLI_OK or the status to exit with.
static cli_status parse_options(int argc, char **argv, check_options *o) {
  const cli_option opts[] = {
      {.name = "kernel",
       .kind = CLI_STRING_LIST,
       .dest = &o->names,
       .metavar = "NAME",
       .help = "check only this kernel (default: every available kernel)"},
      ATTN_PLACEMENT_BIND_OPTION(&o->bind),
      {.name = "quick",
       .kind = CLI_FLAG,
       .dest = &o->quick,
       .help = "a fast subset of the matrix (sequences <= 100)"},
      {.name = "threads",
       .kind = CLI_INT,
       .dest = &o->exec.threads,
       .metavar = "N",
       .min = 0,
       .max = ATTN_MAX_THREADS,
       .help = "threads for parallel kernels (0 = OpenMP default)"},
      {.name = "tile-q",
       .kind = CLI_INT,
       .dest = &o->exec.tile_q,
       .metavar = "N",
       .min = 0,
       .max = 1 << 20,
       .help = "query rows per tile for tiled kernels (0 = kernel default)"},
      {.name = "tile-kv",
       .kind = CLI_INT,
       .dest = &o->exec.tile_kv,
       .metavar = "N",
       .min = 0,
       .max = 1 << 20,
       .help = "key rows per tile for tiled kernels (0 = kernel default)"},
      {.name = "filter",
       .kind = CLI_STRING,
       .dest = &o->filter,
       .metavar = "TEXT",
       .help = "only cases whose description contains TEXT (e.g. 'causal', 'Sq1 ', 'Dqk33')"},
      {.name = "list-cases",
       .kind = CLI_FLAG,
       .dest = &o->list_cases,
       .help = "print the selected cases (one description per line) and exit"},
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
      {.name = "q", .kind = CLI_STRING, .dest = &o->q_path, .metavar = "Q.npy",
       .help = "with --o: queries, float32 [batch][heads][seq_q][head_dim_qk]"},
      {.name = "k", .kind = CLI_STRING, .dest = &o->k_path, .metavar = "K.npy",
       .help = "with --o: keys, float32 [batch][kv_heads][seq_kv][head_dim_qk]"},
      {.name = "v", .kind = CLI_STRING, .dest = &o->v_path, .metavar = "V.npy",
       .help = "with --o: values, float32 [batch][kv_heads][seq_kv][head_dim_v]"},
      {.name = "causal", .kind = CLI_FLAG, .dest = &o->causal,
       .help = "with --o: the bottom-right aligned causal mask (j <= i + seq_kv - seq_q)"},
      {.name = "scale", .kind = CLI_DOUBLE, .dest = &o->scale, .given = &o->scale_given,
       .metavar = "S", .help = "with --o: score scale (default 1/sqrt(head_dim_qk))"},
  };
  const cli_spec spec = {
      .command = "check",
      .summary =
          "Check kernels against the float64 reference over a matrix of shapes (sequence\n"
          "lengths 1..1024 incl. cross both ways, head dims 1..256 incl. Dv != Dqk, MHA/GQA/\n"
          "MQA, batch > 1, causal on/off, uniform/normal/large-magnitude inputs). The\n"
          "tolerance is per output element, derived from a float32 error bound (README).\n"
          "Each (kernel, case) pair passes, fails, or is inconclusive (the bound cannot\n"
          "decide: inputs outside the kernel input domain, or a bound too loose to tell\n"
          "the softmax weights apart). Prints one line per failing or inconclusive pair,\n"
          "a per-kernel summary, then 'N passed, M failed, K inconclusive'.",
      .epilog =
          "examples:\n"
          "  attnbench check\n"
          "  attnbench check --quick --kernel blocked --kernel naive --verbose\n"
          "  attnbench check --kernel blocked --filter causal --list-cases\n"
          "  attnbench check --q q.npy --k k.npy --v v.npy --o o.npy --causal\n"
          "\nexit codes: 0 every pair passed, 1 a pair failed or was inconclusive, 2 bad\n"
          "command line or unknown kernel",
      .options = opts,
      .n_options = sizeof opts / sizeof opts[0],
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return st;
  if (attn_placement_env_bad("check", &o->exec)) return CLI_ERROR;  // ATTNBENCH_TILE_*
  if (attn_placement_bind_bad("check", o->bind)) return CLI_ERROR;
  if (o->progress && o->no_progress) {
    fprintf(stderr, "attnbench check: --progress and --no-progress exclude each other\n");
    return CLI_ERROR;
  }
  return CLI_OK;
}

// Step 2: the case matrix, narrowed by --filter (order kept); --list-cases prints it.
// Returns the kept count (*cases allocated, *n_total = matrix size), or -1 after a
// message (out of memory: exit 1) / -2 (--filter matches nothing: exit 2).
static long select_cases(const check_options *o, attn_check_case **cases, size_t *n_total) {
  const size_t n = attn_check_matrix(o->quick, NULL, 0);
  *cases = calloc(n ? n : 1, sizeof **cases);
  if (!*cases) {
    fprintf(stderr, "attnbench check: out of memory\n");
    return -1;
  }
  attn_check_matrix(o->quick, *cases, n);
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

// Counts over (kernel, case) pairs.
typedef struct check_totals {
  size_t passed, failed, inconclusive;
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

// Records one pair's verdict in the kernel's tally and the totals, and prints its line:
//   FAIL|INCONCLUSIVE <kernel> <case>: max abs err …, err/tol … (worst at …): <reason>
//   ok   <kernel> <case>: …                                       (--verbose only)
static void record(kernel_tally *t, check_totals *tot, const char *desc, const attn_check_result *r,
                   bool verbose, const progress *pg) {
  if (r->worst_ratio > t->worst_ratio) t->worst_ratio = r->worst_ratio;
  if (r->max_rel_err > t->max_rel_err) t->max_rel_err = r->max_rel_err;
  switch (r->verdict) {
    case ATTN_CHECK_PASS:
      t->passed++, tot->passed++;
      if (!verbose) return;
      progress_clear(pg);
      printf("ok   %s %s: max abs err %.3g, err/tol %.3g\n", t->k->name, desc, r->max_abs_err,
             r->worst_ratio);
      break;
    case ATTN_CHECK_FAIL:
    case ATTN_CHECK_INCONCLUSIVE: {
      const bool fail = r->verdict == ATTN_CHECK_FAIL;
      if (fail)
        t->failed++, tot->failed++;
      else
        t->inconclusive++, tot->inconclusive++;
      progress_clear(pg);
      printf("%s %s %s: max abs err %.3g, err/tol %.3g (worst at flat index %zu): %s\n",
             fail ? "FAIL" : "INCONCLUSIVE", t->k->name, desc, r->max_abs_err, r->worst_ratio,
             r->worst_index, r->message[0] ? r->message : attn_check_verdict_name(r->verdict));
      break;
    }
  }
  fflush(stdout);
}

// Step 3: one case against every selected kernel (prepared once).
// A (kernel, case) pair whose check would not fit in memory (util.h's estimate against
// the budget) is a failure with a "refused: …" reason, never a crash.
static void check_case(const attn_check_case *cc, kernel_tally *sel, long n_sel,
                       const check_options *o, uint64_t budget, check_totals *tot,
                       const progress *pg) {
  char desc[192], err[256], refused[160] = "refused: ";
  attn_check_case_describe(cc, desc, sizeof desc);
  attn_check_prepared *pc = NULL;
  if (attn_memory_refused(attn_check_bytes(&cc->problem, NULL, &o->exec), budget, refused + 9,
                          sizeof refused - 9))
    snprintf(err, sizeof err, "%s", refused);
  else
    pc = attn_check_prepare(cc, err, sizeof err);
  if (!pc) {  // the harness could not build the case: every kernel counts as failed
    progress_clear(pg);
    for (long i = 0; i < n_sel; i++) {
      printf("FAIL %s %s: cannot prepare the case: %s\n", sel[i].k->name, desc, err);
      sel[i].failed++;
      tot->failed++;
    }
    fflush(stdout);
    return;
  }
  for (long i = 0; i < n_sel; i++) {
    if (attn_memory_refused(attn_check_bytes(&cc->problem, sel[i].k, &o->exec), budget,
                            refused + 9, sizeof refused - 9)) {
      progress_clear(pg);
      printf("FAIL %s %s: %s\n", sel[i].k->name, desc, refused);
      sel[i].failed++;
      tot->failed++;
      fflush(stdout);
      continue;
    }
    attn_check_result r;
    const double t0 = attn_now_seconds();
    attn_check_kernel(sel[i].k, pc, &o->exec, &r);
    sel[i].seconds += attn_now_seconds() - t0;
    record(&sel[i], tot, desc, &r, o->verbose, pg);
  }
  attn_check_prepared_free(pc);
}

// Step 4: the per-kernel table (stdout) and the timing line (stderr).
static void print_summary(const kernel_tally *sel, long n_sel, size_t n_cases, size_t n_total,
                          const check_options *o, double seconds) {
  if (n_sel <= 0) {
    fprintf(stderr, "attnbench check: no available kernel selected; nothing checked\n");
    return;
  }
  int w = 6;
  for (long i = 0; i < n_sel; i++) {
    const int len = (int)strlen(sel[i].k->name);
    if (len > w) w = len;
  }
  printf("\n%-*s  %6s  %6s  %12s  %13s  %11s  %8s\n", w, "kernel", "passed", "failed",
         "inconclusive", "worst err/tol", "max rel err", "time s");
  for (long i = 0; i < n_sel; i++)
    printf("%-*s  %6zu  %6zu  %12zu  %13.3g  %11.3g  %8.2f\n", w, sel[i].k->name, sel[i].passed,
           sel[i].failed, sel[i].inconclusive, sel[i].worst_ratio, sel[i].max_rel_err,
           sel[i].seconds);
  fprintf(stderr, "%zu of %zu cases x %ld kernels in %.1f s (threads=%d)\n", n_cases, n_total,
          n_sel, seconds, o->exec.threads);
}

// --o: an output computed outside attnbench (PyTorch, ONNX Runtime, the user's own code)
// against the float64 reference of its inputs, with the same per-element bound and the
// same three verdicts as every kernel. One pair: "check: pass|FAIL|inconclusive (…)" and
// the usual closing line.
static int check_given_output(const check_options *o) {
  if (!o->q_path || !o->k_path || !o->v_path) {
    fprintf(stderr, "attnbench check: --o needs --q, --k and --v (the inputs O was computed from)\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (o->names.count || o->quick || o->filter || o->list_cases) {
    fprintf(stderr, "attnbench check: --o checks one given output; --kernel, --quick, --filter and "
                    "--list-cases do not apply\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (o->scale_given && !isfinite((float)o->scale)) {
    fprintf(stderr, "attnbench check: --scale %g does not fit in float32\n", o->scale);
    return ATTNBENCH_EXIT_USAGE;
  }
  int rc = ATTNBENCH_EXIT_FAILURE;
  named_array q = {"Q", "[batch][heads][seq_q][head_dim_qk]", o->q_path, {0}};
  named_array k = {"K", "[batch][kv_heads][seq_kv][head_dim_qk]", o->k_path, {0}};
  named_array v = {"V", "[batch][kv_heads][seq_kv][head_dim_v]", o->v_path, {0}};
  npy_array out = {0};
  attn_check_prepared *pc = NULL;
  attn_problem p;
  char err[ATTN_OUT_PATH_MAX + 512], sb[400];
  if (!qkv_load("check", &q) || !qkv_load("check", &k) || !qkv_load("check", &v) ||
      !qkv_derive_problem("check", &q, &k, &v, o->causal, &p))
    goto done;
  if (o->scale_given) p.scale = (float)o->scale;
  if (!npy_read_f32(o->o_path, &out, err, sizeof err)) {
    fprintf(stderr, "attnbench check: O: %s\n", err);
    goto done;
  }
  const int64_t want[4] = {p.batch, p.heads, p.seq_q, p.head_dim_v};
  if (out.ndim != 4 || memcmp(out.shape, want, sizeof want) != 0) {
    char wb[128];
    fprintf(stderr, "attnbench check: O (%s) has shape %s; Q, K and V make it %s "
                    "[batch][heads][seq_q][head_dim_v]\n", o->o_path,
            npy_shape_string(out.ndim, out.shape, sb, sizeof sb),
            npy_shape_string(4, want, wb, sizeof wb));
    goto done;
  }
  pc = attn_check_prepare_inputs(&p, q.a.data, k.a.data, v.a.data, err, sizeof err);
  if (!pc) {
    fprintf(stderr, "attnbench check: cannot compute the reference: %s\n", err);
    goto done;
  }
  attn_check_result r;
  attn_check_output(pc, out.data, &r);
  const char *verdict = r.verdict == ATTN_CHECK_PASS   ? "pass"
                        : r.verdict == ATTN_CHECK_FAIL ? "FAIL"
                                                       : "inconclusive";
  printf("check: %s (max abs err %.3g, max rel err %.3g, err/tol %.3g, worst at flat index %zu%s%s)\n",
         verdict, r.max_abs_err, r.max_rel_err, r.worst_ratio, r.worst_index,
         r.message[0] ? "; " : "", r.message);
  printf("%d passed, %d failed, %d inconclusive\n", r.verdict == ATTN_CHECK_PASS,
         r.verdict == ATTN_CHECK_FAIL, r.verdict == ATTN_CHECK_INCONCLUSIVE);
  rc = r.verdict == ATTN_CHECK_PASS ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
done:
  attn_check_prepared_free(pc);
  npy_free(&out);
  npy_free(&q.a);
  npy_free(&k.a);
  npy_free(&v.a);
  return rc;
}

int cmd_check(int argc, char **argv) {
  check_options o = {0};
  const cli_status st = parse_options(argc, argv, &o);
  if (st != CLI_OK) return cli_exit_code(st);
  if (o.o_path || o.q_path || o.k_path || o.v_path) {
    if (!o.o_path) {
      fprintf(stderr, "attnbench check: --q/--k/--v need --o (the output to check)\n");
      return ATTNBENCH_EXIT_USAGE;
    }
    return check_given_output(&o);
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
  // The thread cap (attn.h) once, up front: OMP_NUM_THREADS above it would otherwise fail
  // every pair with the same message.
  char exec_err[256];
  if (attn_exec_check(&o.exec, exec_err, sizeof exec_err) != ATTN_OK) {
    fprintf(stderr, "attnbench check: %s\n", exec_err);
    free(cases);
    return ATTNBENCH_EXIT_FAILURE;
  }
  // Placement by --bind (placement.h) for the team the kernels will use.
  char binding[512];
  attn_placement_bind(o.exec.threads > 0 ? o.exec.threads : omp_get_max_threads(), binding,
                      sizeof binding);
  kernel_tally *sel = calloc(attn_kernel_count() + 1, sizeof *sel);
  if (!sel) {
    fprintf(stderr, "attnbench check: out of memory\n");
    free(cases);
    return ATTNBENCH_EXIT_FAILURE;
  }
  const long n_sel = select_kernels(&o.names, sel);
  if (n_sel < 0) {
    free(sel);
    free(cases);
    return ATTNBENCH_EXIT_USAGE;
  }

  uint64_t budget = 0;  // memory the pairs may use (util.h)
  char merr[256];
  if (!attn_memory_budget(&budget, merr, sizeof merr)) {
    fprintf(stderr, "attnbench check: %s\n", merr);
    free(sel);
    free(cases);
    return ATTNBENCH_EXIT_USAGE;
  }

  const bool tty = isatty(STDERR_FILENO);
  const progress pg = {.show = !o.no_progress && (o.progress || tty) && n_sel > 0, .tty = tty};
  check_totals tot = {0};
  const double t_start = attn_now_seconds();
  for (long c = 0; c < n_cases && n_sel > 0; c++) {
    char desc[192];
    attn_check_case_describe(&cases[c], desc, sizeof desc);
    progress_show(&pg, (size_t)c, (size_t)n_cases, desc);
    check_case(&cases[c], sel, n_sel, &o, budget, &tot, &pg);
  }
  progress_clear(&pg);
  print_summary(sel, n_sel, (size_t)n_cases, n_total, &o, attn_now_seconds() - t_start);
  printf("%zu passed, %zu failed, %zu inconclusive\n", tot.passed, tot.failed, tot.inconclusive);
  free(sel);
  free(cases);
  return tot.failed == 0 && tot.inconclusive == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
}
