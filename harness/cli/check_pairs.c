// SPDX-License-Identifier: MIT
// `attnbench check`: one (kernel, case) pair's verdict — in the process, or in a worker
// process for isolated kernels (isolate.h) — its line, its tally and report record, and
// the summary tables (check_cmd.h).
//
// Whose code ran: a pair whose case uses an option the kernel does not claim runs the
// shared portable fallback (attn_kernel_run). Such a pair that passes is counted as
// "fallback", never as the kernel's pass (JUnit: skipped, with the reason); one that
// fails or is inconclusive counts as such (the command would give that answer), marked
// "[shared fallback]".
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/check_cmd.h"
#include "common/util.h"
#include "machine/placement.h"
#include "tune/tunefile.h"

static const char kFallbackReason[] = "ran the shared fallback, not this kernel's code";

// The storage error per K/V type over the cases prepared (check.h,
// attn_check_storage_error): the table after the per-kernel one. It is the type's, not a
// kernel's: the reference on the float32 K/V against the reference on the stored values.
enum { kTallyMax = ATTN_DTYPE_COUNT > ATTN_COMPUTE_COUNT ? ATTN_DTYPE_COUNT : ATTN_COMPUTE_COUNT };
typedef struct storage_tally {
  size_t cases[kTallyMax];
  double max_abs[kTallyMax], max_rel[kTallyMax];
} storage_tally;
static storage_tally g_storage;

// The same per compute mode (check.h, attn_check_compute_error): what the mode's input
// rounding costs against FP32 on the same data, the table after the storage one.
static storage_tally g_compute;  // indexed by attn_compute (ATTN_COMPUTE_COUNT entries)

static void note_compute(const attn_check_result *r) {
  if (!r->has_compute || (unsigned)r->compute >= ATTN_COMPUTE_COUNT) return;
  g_compute.cases[r->compute]++;
  if (!(r->compute_abs_err <= g_compute.max_abs[r->compute]))
    g_compute.max_abs[r->compute] = r->compute_abs_err;
  if (!(r->compute_rel_err <= g_compute.max_rel[r->compute]))
    g_compute.max_rel[r->compute] = r->compute_rel_err;
}

static void note_storage(attn_dtype t, double abs_err, double rel_err) {
  g_storage.cases[t]++;
  if (!(abs_err <= g_storage.max_abs[t])) g_storage.max_abs[t] = abs_err;
  if (!(rel_err <= g_storage.max_rel[t])) g_storage.max_rel[t] = rel_err;
}

// A prepared case's storage error into *out (has_storage false for f32 cases).
static void storage_of(const attn_check_prepared *pc, pair_outcome *out) {
  double ratio;
  out->has_storage = attn_check_storage_error(pc, &out->storage_abs, &ratio);
  const double m = attn_check_reference_max_abs(pc);
  out->storage_rel = m > 0 ? out->storage_abs / m : out->storage_abs;
}

void check_progress_clear(const progress *pg) {
  if (pg->show && pg->tty) fputs("\r\033[K", stderr);
}

void check_progress_show(const progress *pg, size_t c, size_t n, const char *desc) {
  if (!pg->show) return;
  fprintf(stderr, "%s[%zu/%zu] %s", pg->tty ? "\r\033[K" : "", c + 1, n, desc);
  if (!pg->tty) fputc('\n', stderr);
  fflush(stderr);
}

// ── one pair ────────────────────────────────────────────────────────────────────────

// One kernel on a prepared case (pc NULL: prep_err says why it could not be prepared):
// its tiles and variant (tuning file, --regtile/--kv-split), the memory estimate, the run.
static void eval_pair(const attn_check_case *cc, const attn_check_prepared *pc,
                      const char *prep_err, const attn_kernel *k, const check_options *o,
                      uint64_t budget, pair_outcome *out) {
  char refused[300] = "refused: ";
  out->kind = PAIR_HARNESS_FAIL;
  if (!pc) {
    snprintf(out->message, sizeof out->message, "cannot prepare the case: %s", prep_err);
    return;
  }
  // The settings `run` would use for this kernel on this problem (resolve.h; the command
  // line's were checked up front, so this fails only for a tuning file's variant).
  attn_settings st;
  if (attn_resolve(k, &cc->problem, &o->cli, NULL, 0, &st, NULL, refused + 9, sizeof refused - 9) !=
      0) {
    snprintf(out->message, sizeof out->message, "%s", refused);
    return;
  }
  if (o->x.explain) attn_resolve_print(stdout, k, &cc->problem, &st);
  const attn_exec ex = st.exec;
  if (attn_memory_refused(attn_check_bytes(&cc->problem, k, &ex), budget, refused + 9,
                          sizeof refused - 9)) {
    snprintf(out->message, sizeof out->message, "%s", refused);
    return;
  }
  const double t0 = attn_now_seconds();
  attn_check_kernel(k, pc, &ex, &out->r);
  out->seconds = attn_now_seconds() - t0;
  out->kind = PAIR_RESULT;
}

// eval_pair in this process (--isolate=none, or a built-in): a plug-in that ends the
// process, or whose case has not finished after --case-timeout, still ends it with its
// name, the case and exit 1 (isolate.h's guard and its watch), though the reports are
// then not written — isolation is what keeps them.
static void eval_guarded(const attn_check_case *cc, const char *desc, const attn_check_prepared *pc,
                         const char *prep_err, const attn_kernel *k, const check_options *o,
                         uint64_t budget, pair_outcome *out) {
  char who[ATTN_KERNEL_NAME_MAX + ATTN_CHECK_DESC_MAX + 16];
  snprintf(who, sizeof who, "%s, case %s,", k->name, desc);
  const bool guard = attn_kernel_guard_enter("check", k, who, o->case_timeout);
  attn_kernel_guard_call_begin();
  eval_pair(cc, pc, prep_err, k, o, budget, out);
  attn_kernel_guard_call_end();
  attn_kernel_guard_leave(guard);
}

// Prepares case cc (NULL with the reason in err when refused by the memory budget or
// impossible to prepare).
static attn_check_prepared *prepare_case(const attn_check_case *cc, uint64_t budget, char *err,
                                         size_t err_len) {
  char refused[200] = "refused: ";
  if (attn_memory_refused(attn_check_bytes(&cc->problem, NULL, NULL), budget, refused + 9,
                          sizeof refused - 9)) {
    snprintf(err, err_len, "%s", refused);
    return NULL;
  }
  return attn_check_prepare(cc, err, err_len);
}

// ── tallies, lines and records ──────────────────────────────────────────────────────

// A failure decided without a verdict from the kernel's output ("cannot prepare the
// case", "refused: …", "killed by SIGSEGV", "called exit(0)", "timed out …"): counted and
// printed like a failing pair.
static void record_harness_failure(kernel_tally *t, check_totals *tot, const char *desc,
                                   const char *message) {
  printf("FAIL %s %s: %s\n", t->k->name, desc, message);
  t->failed++, tot->failed++;
  if (tot->report)
    check_report_add(tot->report, t->k->name, desc, CHECK_FAIL, CHECK_CODE_NONE, message, NAN, NAN,
                     NAN, 0.0);
}

// A pair of a kernel this CPU cannot run: counted (and reported) as skipped, no line.
static void record_skip(kernel_tally *t, check_totals *tot, const char *desc) {
  t->skipped++, tot->skipped++;
  if (!tot->report) return;
  char msg[160];
  snprintf(msg, sizeof msg, "unavailable on this CPU (%s)", t->why);
  check_report_add(tot->report, t->k->name, desc, CHECK_SKIPPED, CHECK_CODE_NONE, msg, NAN, NAN,
                   NAN, 0.0);
}

// Records one pair's verdict in the kernel's tally and the totals, and prints its line:
//   FAIL|INCONCLUSIVE <kernel> <case>[ [shared fallback]]: max abs err …: <reason>
//   ok|fallback <kernel> <case>: …                                (--verbose only)
static void record(kernel_tally *t, check_totals *tot, const char *desc, const attn_check_result *r,
                   double seconds, bool verbose, const progress *pg) {
  if (r->worst_ratio > t->worst_ratio) t->worst_ratio = r->worst_ratio;
  if (r->max_rel_err > t->max_rel_err) t->max_rel_err = r->max_rel_err;
  const char *reason = r->message[0] ? r->message : attn_check_verdict_name(r->verdict);
  const char *tag = r->fallback ? " [shared fallback]" : "";
  char mode_err[80] = "";  // the mode's own error against FP32, next to the verdict
  if (r->has_compute)
    snprintf(mode_err, sizeof mode_err, "; %s vs f32 rel err %.3g", attn_compute_name(r->compute),
             r->compute_rel_err);
  check_verdict v = CHECK_PASS;
  switch (r->verdict) {
    case ATTN_CHECK_PASS:
      if (r->fallback)
        t->fallback++, tot->fallback++, v = CHECK_FALLBACK, reason = kFallbackReason;
      else
        t->passed++, tot->passed++;
      if (!verbose) break;
      check_progress_clear(pg);
      printf("%s %s %s: max abs err %.3g, err/tol %.3g%s%s\n", r->fallback ? "fallback" : "ok  ",
             t->k->name, desc, r->max_abs_err, r->worst_ratio, r->fallback ? " (not credited)" : "",
             mode_err);
      break;
    case ATTN_CHECK_FAIL:
    case ATTN_CHECK_INCONCLUSIVE: {
      const bool fail = r->verdict == ATTN_CHECK_FAIL;
      if (fail)
        t->failed++, tot->failed++, v = CHECK_FAIL;
      else
        t->inconclusive++, tot->inconclusive++, v = CHECK_INCONCLUSIVE;
      check_progress_clear(pg);
      printf("%s %s %s%s: max abs err %.3g, err/tol %.3g (worst at flat index %zu)%s: %s\n",
             fail ? "FAIL" : "INCONCLUSIVE", t->k->name, desc, tag, r->max_abs_err, r->worst_ratio,
             r->worst_index, mode_err, reason);
      break;
    }
  }
  if (tot->report)
    check_report_add(
        tot->report, t->k->name, desc, v, r->fallback ? CHECK_CODE_FALLBACK : CHECK_CODE_KERNEL,
        v == CHECK_PASS ? NULL : reason, r->max_abs_err, r->max_rel_err, r->worst_ratio, seconds);
  if (tot->report)
    check_report_set_compute(tot->report, attn_compute_name(r->compute),
                             r->has_compute ? r->compute_rel_err : NAN);
  fflush(stdout);
}

static void record_outcome(kernel_tally *t, check_totals *tot, const char *desc,
                           const pair_outcome *po, bool verbose, const progress *pg) {
  switch ((pair_kind)po->kind) {
    case PAIR_RESULT:
      t->seconds += po->seconds;
      record(t, tot, desc, &po->r, po->seconds, verbose, pg);
      break;
    case PAIR_HARNESS_FAIL:
      check_progress_clear(pg);
      record_harness_failure(t, tot, desc, po->message);
      fflush(stdout);
      break;
    case PAIR_NOT_CLAIMED:
      t->not_claimed++, tot->not_claimed++;
      break;
    case PAIR_NONE:  // an isolated kernel's pair that never ran: a harness bug, say so
      record_harness_failure(t, tot, desc, "no outcome from the kernel's worker process");
      break;
  }
}

// ── the case loop ───────────────────────────────────────────────────────────────────

void check_case(const attn_check_case *cc, size_t case_index, kernel_tally *sel, long n_sel,
                const check_options *o, uint64_t budget, check_totals *tot, const progress *pg) {
  char desc[ATTN_CHECK_DESC_MAX], err[256] = "";
  attn_check_case_describe(cc, desc, sizeof desc);
  // Who needs the case prepared here: available, in-process kernels that run it.
  long n_here = 0;
  for (long i = 0; i < n_sel; i++)
    n_here += !sel[i].unavailable && !sel[i].isolated &&
              (!o->native_only || attn_check_case_native(sel[i].k, cc));
  attn_check_prepared *pc = n_here ? prepare_case(cc, budget, err, sizeof err) : NULL;
  if (pc) {
    pair_outcome st;
    storage_of(pc, &st);
    if (st.has_storage) note_storage(cc->problem.kv_dtype, st.storage_abs, st.storage_rel);
    attn_check_result cr = {.compute = attn_check_problem(pc)->compute};
    cr.has_compute = attn_check_compute_error(pc, &cr.compute_abs_err, &cr.compute_rel_err);
    note_compute(&cr);
  } else if (!n_here) {  // the storage error as the first isolated kernel's worker saw it
    for (long i = 0; i < n_sel; i++) {
      if (!sel[i].isolated || sel[i].unavailable) continue;
      const pair_outcome *po = &sel[i].iso[case_index];
      if (po->has_storage) note_storage(cc->problem.kv_dtype, po->storage_abs, po->storage_rel);
      if (po->kind == PAIR_RESULT) note_compute(&po->r);
      if (po->kind == PAIR_RESULT) break;
    }
  }
  for (long i = 0; i < n_sel; i++) {
    if (sel[i].unavailable) {
      record_skip(&sel[i], tot, desc);
      continue;
    }
    pair_outcome here = {.kind = PAIR_NOT_CLAIMED};
    const pair_outcome *po = &here;
    if (sel[i].isolated)
      po = &sel[i].iso[case_index];
    else if (!o->native_only || attn_check_case_native(sel[i].k, cc))
      eval_guarded(cc, desc, pc, err, sel[i].k, o, budget, &here);
    record_outcome(&sel[i], tot, desc, po, o->verbose, pg);
  }
  attn_check_prepared_free(pc);
}

// ── isolated kernels: worker processes ──────────────────────────────────────────────

typedef struct worker_job {
  const attn_check_case *cases;
  size_t n_cases, start;
  const kernel_tally *t;
  const check_options *o;
  uint64_t budget;
} worker_job;

// The worker: binds its threads (--bind), then from case `start` on prepares each case
// the kernel runs and sends one outcome per case (not-claimed ones included).
static void worker_main(void *arg, int fd) {
  const worker_job *j = arg;
  char binding[512];
  attn_placement_use_mode(j->o->bind);
  attn_placement_bind(j->o->threads, binding, sizeof binding);
  for (size_t c = j->start; c < j->n_cases; c++) {
    const attn_check_case *cc = &j->cases[c];
    pair_outcome out = {.kind = PAIR_NOT_CLAIMED, .case_index = (uint32_t)c};
    if (!j->o->native_only || attn_check_case_native(j->t->k, cc)) {
      char err[256] = "";
      attn_check_prepared *pc = prepare_case(cc, j->budget, err, sizeof err);
      if (pc) storage_of(pc, &out);
      eval_pair(cc, pc, err, j->t->k, j->o, j->budget, &out);
      attn_check_prepared_free(pc);
    }
    attn_worker_send(fd, &out, sizeof out);
  }
}

// One isolated kernel over every case: a worker from the first case; when a worker ends
// without completing, the case it was on gets the named failure and a new worker goes on
// from the next case.
static bool run_kernel_isolated(const attn_check_case *cases, size_t n_cases, kernel_tally *t,
                                const check_options *o, uint64_t budget, const progress *pg) {
  size_t next = 0;
  while (next < n_cases) {
    worker_job job = {cases, n_cases, next, t, o, budget};
    attn_worker w;
    char err[256], why[200];
    if (!attn_worker_start(&w, worker_main, &job, err, sizeof err)) {
      fprintf(stderr, "attnbench check: %s\n", err);
      return false;
    }
    pair_outcome rec;
    while (attn_worker_read(&w, &rec, sizeof rec, o->case_timeout) == 1 && rec.case_index >= next &&
           rec.case_index < n_cases) {
      t->iso[rec.case_index] = rec;
      next = rec.case_index + 1;
      if (pg->show) {
        char desc[ATTN_CHECK_DESC_MAX];
        attn_check_case_describe(&cases[rec.case_index], desc, sizeof desc);
        check_progress_show(pg, rec.case_index, n_cases, desc);
      }
    }
    if (attn_worker_end(&w, o->case_timeout, why, sizeof why)) break;
    if (next >= n_cases) break;  // ended after its last case: nothing left to blame
    pair_outcome *po = &t->iso[next];
    *po = (pair_outcome){.kind = PAIR_HARNESS_FAIL, .case_index = (uint32_t)next};
    snprintf(po->message, sizeof po->message, "kernel %s, in a worker process: %s", t->k->name,
             why);
    next++;
  }
  return true;
}

bool check_run_isolated(const attn_check_case *cases, size_t n_cases, kernel_tally *sel, long n_sel,
                        const check_options *o, uint64_t budget, const progress *pg) {
  for (long i = 0; i < n_sel; i++) {
    if (!sel[i].isolated || sel[i].unavailable) continue;
    if (!(sel[i].iso = calloc(n_cases ? n_cases : 1, sizeof *sel[i].iso))) {
      fprintf(stderr, "attnbench check: out of memory\n");
      return false;
    }
    if (!run_kernel_isolated(cases, n_cases, &sel[i], o, budget, pg)) return false;
  }
  check_progress_clear(pg);
  return true;
}

// ── summary ─────────────────────────────────────────────────────────────────────────

// The storage error per K/V type (check.h): what f16, bf16 and q8_0 storage cost against
// float32 K/V on the cases of that type, whatever the kernel: the largest change of the
// reference output, absolute and relative to max |output|.
static void print_storage(void) {
  bool any = false;
  for (int t = 1; t < ATTN_DTYPE_COUNT; t++) any |= g_storage.cases[t] > 0;
  if (!any) return;
  printf("\n%-7s  %5s  %24s  %24s\n", "kv type", "cases", "type storage max abs err",
         "type storage rel err");
  for (int t = 1; t < ATTN_DTYPE_COUNT; t++)
    if (g_storage.cases[t])
      printf("%-7s  %5zu  %24.3g  %24.3g\n", attn_dtype_name((attn_dtype)t), g_storage.cases[t],
             g_storage.max_abs[t], g_storage.max_rel[t]);
}

// The compute-mode error (check.h): what bf16, f16 and int8 input rounding cost against
// FP32 on the same data, over the cases of that mode, whatever the kernel.
static void print_compute(void) {
  bool any = false;
  for (int c = 1; c < ATTN_COMPUTE_COUNT; c++) any |= g_compute.cases[c] > 0;
  if (!any) return;
  printf("\n%-7s  %5s  %24s  %24s\n", "compute", "cases", "mode vs f32 max abs err",
         "mode vs f32 rel err");
  for (int c = 1; c < ATTN_COMPUTE_COUNT; c++)
    if (g_compute.cases[c])
      printf("%-7s  %5zu  %24.3g  %24.3g\n", attn_compute_name((attn_compute)c), g_compute.cases[c],
             g_compute.max_abs[c], g_compute.max_rel[c]);
}

void check_print_summary(const kernel_tally *sel, long n_sel, size_t n_cases, size_t n_total,
                         const check_options *o, double seconds) {
  if (n_sel <= 0) return;
  int w = 6;
  for (long i = 0; i < n_sel; i++) {
    const int len = (int)strlen(sel[i].k->name);
    if (len > w) w = len;
  }
  printf("\n%-*s  %6s  %6s  %12s  %7s  %8s  %13s  %11s  %8s  %s\n", w, "kernel", "passed", "failed",
         "inconclusive", "skipped", "fallback", "worst err/tol", "max rel err", "time s", "run");
  for (long i = 0; i < n_sel; i++)
    printf("%-*s  %6zu  %6zu  %12zu  %7zu  %8zu  %13.3g  %11.3g  %8.2f  %s\n", w, sel[i].k->name,
           sel[i].passed, sel[i].failed, sel[i].inconclusive, sel[i].skipped, sel[i].fallback,
           sel[i].worst_ratio, sel[i].max_rel_err, sel[i].seconds,
           sel[i].isolated ? "isolated" : "in-process");
  print_storage();
  print_compute();
  size_t left_out = 0;
  for (long i = 0; i < n_sel; i++) left_out += sel[i].not_claimed;
  if (left_out)
    fprintf(stderr,
            "note: --native-only left out %zu (kernel, case) pairs that would run the shared "
            "fallback\n",
            left_out);
  char threads[48] = "as resolved per pair";
  if (o->x.threads > 0) snprintf(threads, sizeof threads, "%d", o->x.threads);
  fprintf(stderr, "%zu of %zu cases x %ld kernels in %.1f s (threads=%s)\n", n_cases, n_total,
          n_sel, seconds, threads);
}
