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
#include "cli/check_cmd.h"
#include "cli/commands.h"
#include "cli/option_args.h"
#include "common/cli_args.h"
#include "common/util.h"
#include "io/check_report.h"
#include "io/fileio.h"
#include "io/npy.h"
#include "io/qkv_inputs.h"
#include "machine/placement.h"
#include "tune/tunefile.h"

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
    *t = (kernel_tally){.k = k};
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

// Step 1b: what the option table cannot check: defaults, spellings, combinations.
static cli_status check_options_after_parse(check_options *o) {
  if (o->isolate_arg && !attn_isolate_parse(o->isolate_arg, &o->isolate)) {
    fprintf(stderr, "attnbench check: --isolate '%s': expected plugins, all or none\n",
            o->isolate_arg);
    return CLI_ERROR;
  }
  if (!attn_case_timeout_settle("check", &o->case_timeout, o->case_timeout_given)) return CLI_ERROR;
  if (o->compute_name && !attn_compute_arg("check", o->compute_name, &o->compute)) return CLI_ERROR;
  if (o->kv_dtype_name && !o->o_path) {
    fprintf(stderr,
            "attnbench check: --kv-dtype applies only with --o (the check matrix stores K/V in "
            "every type itself)\n");
    return CLI_ERROR;
  }
  if (o->kv_dtype_name && !attn_kv_dtype_arg("check", o->kv_dtype_name, &o->kv_dtype))
    return CLI_ERROR;
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
      ATTN_COMPUTE_OPTION(&o->compute_name, CLI_STRING,
                          "only the cases of this compute mode (default: every mode); with --o, "
                          "the mode O was computed in (its inputs' rounding and bound)"),
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
      ATTN_CHECK_GATE_OPTIONS(o),
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
       .help = "with --o: queries [batch][heads][seq_q][head_dim_qk] (as run reads them)"},
      {.name = "k",
       .kind = CLI_STRING,
       .dest = &o->k_path,
       .metavar = "K.npy",
       .help = "with --o: keys [batch][kv_heads][seq_kv][head_dim_qk] (as run reads them)"},
      {.name = "v",
       .kind = CLI_STRING,
       .dest = &o->v_path,
       .metavar = "V.npy",
       .help = "with --o: values [batch][kv_heads][seq_kv][head_dim_v] (as run reads them)"},
      ATTN_KV_DTYPE_OPTION(&o->kv_dtype_name,
                           "with --o: K and V were stored as this type before O was computed "
                           "(as run --kv-dtype stores them); the reference reads the stored "
                           "values"),
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
          "tolerance is per output element, derived from a float32 error bound (README).\n"
          "Each (kernel, case) pair passes, fails, or is inconclusive (the bound cannot\n"
          "decide: inputs outside the kernel input domain, or a bound too loose to tell\n"
          "the softmax weights apart). Prints one line per failing or inconclusive pair,\n"
          "a per-kernel summary, then 'N passed, M failed, K inconclusive, S skipped,\n"
          "F fallback' (S: pairs of kernels this CPU cannot run; F: pairs that passed on the\n"
          "shared portable fallback because the kernel does not claim an option of the case —\n"
          "never counted as the kernel's passes). Plug-in kernels run in worker processes\n"
          "(--isolate): a crash, abort, exit() or hang fails that pair by name.",
      .epilog =
          "examples:\n"
          "  attnbench check\n"
          "  attnbench check --quick --kernel blocked --kernel naive --verbose\n"
          "  attnbench check --kernel blocked --filter causal --list-cases\n"
          "  attnbench check --quick --junit check.xml --json check.json\n"
          "  attnbench check --plugin ./mine.so --kernel mine --native-only --case-timeout 10\n"
          "  attnbench check --q q.npy --k k.npy --v v.npy --o o.npy --causal\n"
          "  attnbench check --q q.npy --k k.npy --v v.npy --o o.npy --window 127,0 --softcap 50\n"
          "(--window, --align, --softcap, --alibi, --alibi-slopes, --sinks, --mask and --lse\n"
          "apply with --o only: the options the output was computed with, as `run` takes them)\n"
          "\nexit codes: 0 at least one pair passed and none failed or was inconclusive;\n"
          "1 a pair failed or was inconclusive, nothing was checked, a --kernel cannot run\n"
          "on this CPU (without --allow-skips), or a report could not be written; 2 bad\n"
          "command line or unknown kernel",
      CLI_OPTIONS(opts),
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return st;
  return check_options_after_parse(o);
}

static bool same_config_case(const attn_check_case *a, const attn_check_case *b) {
  const attn_problem *p = &a->problem, *q = &b->problem;
  const attn_options *x = &a->opts, *y = &b->opts;
  return p->batch == q->batch && p->heads == q->heads && p->kv_heads == q->kv_heads &&
         p->seq_q == q->seq_q && p->seq_kv == q->seq_kv && p->head_dim_qk == q->head_dim_qk &&
         p->head_dim_v == q->head_dim_v && p->causal == q->causal && p->scale == q->scale &&
         p->kv_dtype == q->kv_dtype && p->compute == q->compute && x->align == y->align &&
         x->window == y->window && x->window_left == y->window_left &&
         x->window_right == y->window_right && x->softcap == y->softcap &&
         x->alibi_max_bias == y->alibi_max_bias && a->gen == b->gen &&
         memcmp(&a->layout, &b->layout, sizeof a->layout) == 0;
}

// The checker's description of a serving point's batch (its lengths, page size, and
// whether its page table is in pool order); false when the batch has more sequences than
// a check case holds (err says so).
static bool config_layout(const attn_bench_point *pt, attn_check_layout *out, char *err,
                          size_t len) {
  const attn_layout *l = pt->problem.layout;
  memset(out, 0, sizeof *out);
  if (!l) return true;
  if (pt->problem.batch > ATTN_CHECK_MAX_SEQS) {
    snprintf(err, len, "%s: %lld sequences; a check case holds at most %d", pt->name,
             (long long)pt->problem.batch, ATTN_CHECK_MAX_SEQS);
    return false;
  }
  out->kind = l->kind;
  out->seqs = (int)pt->problem.batch;
  int64_t next = 0;  // the pool index a sequential table has next
  for (int64_t b = 0; b < pt->problem.batch; b++) {
    out->q_lens[b] = l->cu_seqlens_q[b + 1] - l->cu_seqlens_q[b];
    out->kv_lens[b] = l->cu_seqlens_kv[b + 1] - l->cu_seqlens_kv[b];
    if (l->kind != ATTN_LAYOUT_PAGED) continue;
    out->page_size = l->page_size;
    const int64_t pages = (out->kv_lens[b] + l->page_size - 1) / l->page_size;
    for (int64_t i = 0; i < pages; i++)
      out->shuffle |= l->page_table[b * l->pages_per_seq + i] != next++;
  }
  return true;
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
    if (!config_layout(pt, &c.layout, err, sizeof err)) {
      fprintf(stderr, "attnbench check: %s\n", err);
      free(*cases);
      *cases = NULL;
      attn_bench_plan_free(&plan);
      return -2;
    }
    c.problem.layout = NULL;  // the checker builds the batch from c.layout
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
    char desc[ATTN_CHECK_DESC_MAX];
    attn_check_case_describe(&(*cases)[c], desc, sizeof desc);
    if (o->filter && !strstr(desc, o->filter)) continue;
    if (o->compute_name && (*cases)[c].problem.compute != o->compute) continue;
    if (o->list_cases) printf("%s\n", desc);
    (*cases)[kept++] = (*cases)[c];
  }
  *n_total = n;
  if (o->compute_name && !o->filter && kept == 0 && !o->list_cases) {
    fprintf(stderr, "attnbench check: --compute %s: no case of that mode (see --list-cases)\n",
            o->compute_name);
    return -2;
  }
  if (o->filter && kept == 0 && !o->list_cases) {
    fprintf(stderr, "attnbench check: --filter '%s' matches no case (see --list-cases)\n",
            o->filter);
    return -2;
  }
  return (long)kept;
}

// Step 3: the pairs — isolated kernels first, in worker processes (before this process
// runs any OpenMP region: isolate.h), then the case loop — the summary, the closing line
// and the reports. Returns the exit code.
static int run_pairs(const check_options *o, const attn_check_case *cases, size_t n_cases,
                     size_t n_total, kernel_tally *sel, long n_sel, uint64_t budget) {
  const attn_input_file inputs[] = {{"sweep config (--config)", o->config_path},
                                    {"tuning file", attn_tune_read_path()}};
  reports rp = {0};
  if (!check_prepare_reports(o, inputs, 2, &rp)) return ATTNBENCH_EXIT_FAILURE;
  long n_run = 0;
  for (long i = 0; i < n_sel; i++) {
    n_run += !sel[i].unavailable;
    sel[i].isolated = attn_isolate_wanted(o->isolate, sel[i].k);
  }
  const bool tty = isatty(STDERR_FILENO);
  const progress pg = {.show = !o->no_progress && (o->progress || tty) && n_run > 0, .tty = tty};
  check_totals tot = {.report = rp.want_junit || rp.want_json ? &rp.recs : NULL};
  const double t_start = attn_now_seconds();
  if (!check_run_isolated(cases, n_cases, sel, n_sel, o, budget, &pg)) {
    check_report_free(&rp.recs);
    return ATTNBENCH_EXIT_FAILURE;
  }
  // Placement by the resolved mode (placement.h) for the team the in-process kernels use.
  if (n_run > 0) {
    char binding[512];
    attn_placement_use_mode(o->bind);
    attn_placement_bind(o->threads, binding, sizeof binding);
  }
  for (size_t c = 0; c < n_cases && n_sel > 0; c++) {
    char desc[ATTN_CHECK_DESC_MAX];
    attn_check_case_describe(&cases[c], desc, sizeof desc);
    if (n_run > 0) check_progress_show(&pg, c, n_cases, desc);
    check_case(&cases[c], c, sel, n_sel, o, budget, &tot, &pg);
  }
  check_progress_clear(&pg);
  const double seconds = attn_now_seconds() - t_start;
  check_print_summary(sel, n_sel, n_cases, n_total, o, seconds);
  printf("%zu passed, %zu failed, %zu inconclusive, %zu skipped, %zu fallback\n", tot.passed,
         tot.failed, tot.inconclusive, tot.skipped, tot.fallback);
  fflush(stdout);
  const bool nothing = tot.passed == 0 && tot.failed == 0 && tot.inconclusive == 0;
  if (nothing)
    fprintf(stderr,
            "attnbench check: nothing was checked (%s): a gate that checks nothing fails; "
            "name kernels this CPU can run (attnbench list --available)\n",
            n_sel == 0        ? "no kernel selected"
            : n_run == 0      ? "every selected kernel is unavailable on this CPU"
            : tot.fallback    ? "every case that ran was the shared fallback's, not the kernel's"
            : tot.not_claimed ? "--native-only: the kernels claim none of the cases"
                              : "no case selected");
  const bool written = check_write_reports(&rp, seconds);
  check_report_free(&rp.recs);
  return tot.failed == 0 && tot.inconclusive == 0 && tot.passed > 0 && written
             ? ATTNBENCH_EXIT_OK
             : ATTNBENCH_EXIT_FAILURE;
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
  o.bind = first.bind;
  o.threads = first.exec.threads;
  uint64_t budget = 0;  // memory the pairs may use (util.h)
  char merr[256];
  if (!attn_memory_budget(&budget, merr, sizeof merr)) {
    fprintf(stderr, "attnbench check: %s\n", merr);
    free(sel);
    free(cases);
    return ATTNBENCH_EXIT_USAGE;
  }
  const int rc = run_pairs(&o, cases, (size_t)n_cases, n_total, sel, n_sel, budget);
  for (long i = 0; i < n_sel; i++) free(sel[i].iso);
  free(sel);
  free(cases);
  return rc;
}
