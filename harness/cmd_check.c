// SPDX-License-Identifier: MIT
// `attnbench check` — every selected, available kernel against the float64 reference
// over the check matrix (kernels/check/check.h: shapes, inputs, tolerance derivation).
// Each case is prepared once (inputs, reference output, per-element tolerance) and every
// kernel runs on it. Output (stdout):
//     FAIL <kernel> <case>: max abs err …, err/tol …: <message>     one line per failure
//     per-kernel summary table
//     N passed, M failed                                           always the last line
// N and M count (kernel, case) pairs. Exit 0 iff M == 0.
#define _POSIX_C_SOURCE 200809L
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

typedef struct kernel_tally {
  const attn_kernel *k;
  size_t passed, failed;
  double worst_ratio;  // max over cases of max |o − ref| / tol
  double max_rel_err;  // max over cases of max |o − ref| / max |ref|
  double seconds;      // wall time inside attn_check_kernel (run + compare)
} kernel_tally;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Selects kernels: all of the registry when names is empty, else the named ones (in
// registry order, duplicates merged). Unavailable ones get a note and are skipped.
// Returns the number selected, or -1 after an "unknown kernel" error.
static long select_kernels(const cli_list *names, kernel_tally *sel) {
  for (size_t j = 0; j < names->count; j++) {
    if (!attn_kernel_find(names->items[j])) {
      fprintf(stderr, "attnbench check: unknown kernel '%s'; kernels:", names->items[j]);
      for (size_t i = 0; i < attn_kernel_count(); i++) fprintf(stderr, " %s", attn_kernel_at(i)->name);
      fprintf(stderr, "\n");
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

int cmd_check(int argc, char **argv) {
  cli_list names = {0};
  bool quick = false, verbose = false, progress = false, no_progress = false, list_cases = false;
  const char *filter = NULL;
  attn_exec exec = {0};
  const cli_option opts[] = {
      {.name = "kernel", .kind = CLI_STRING_LIST, .dest = &names, .metavar = "NAME",
       .help = "check only this kernel (default: every available kernel)"},
      {.name = "quick", .kind = CLI_FLAG, .dest = &quick, .help = "a fast subset of the matrix (sequences <= 100)"},
      {.name = "threads", .kind = CLI_INT, .dest = &exec.threads, .metavar = "N", .min = 0, .max = 4096,
       .help = "threads for parallel kernels (0 = OpenMP default)"},
      {.name = "tile-q", .kind = CLI_INT, .dest = &exec.tile_q, .metavar = "N", .min = 0, .max = 1 << 20,
       .help = "query rows per tile for tiled kernels (0 = kernel default)"},
      {.name = "tile-kv", .kind = CLI_INT, .dest = &exec.tile_kv, .metavar = "N", .min = 0, .max = 1 << 20,
       .help = "key rows per tile for tiled kernels (0 = kernel default)"},
      {.name = "filter", .kind = CLI_STRING, .dest = &filter, .metavar = "TEXT",
       .help = "only cases whose description contains TEXT (e.g. 'causal', 'Sq1 ', 'Dqk33')"},
      {.name = "list-cases", .kind = CLI_FLAG, .dest = &list_cases,
       .help = "print the selected cases (one description per line) and exit"},
      {.name = "verbose", .kind = CLI_FLAG, .dest = &verbose, .help = "also print a line for every passing pair"},
      {.name = "progress", .kind = CLI_FLAG, .dest = &progress,
       .help = "show [k/N] progress on stderr even when it is not a terminal"},
      {.name = "no-progress", .kind = CLI_FLAG, .dest = &no_progress, .help = "never show progress"},
  };
  const cli_spec spec = {
      .command = "check",
      .summary = "Check kernels against the float64 reference over a matrix of shapes (sequence\n"
                 "lengths 1..1024 incl. cross both ways, head dims 1..256 incl. Dv != Dqk, MHA/GQA/\n"
                 "MQA, batch > 1, causal on/off, uniform/normal/large-magnitude inputs). The\n"
                 "tolerance is per output element, derived from a float32 error bound (README).\n"
                 "Prints one line per failing (kernel, case) pair, a per-kernel summary, then\n"
                 "'N passed, M failed'.",
      .epilog = "examples:\n"
                "  attnbench check\n"
                "  attnbench check --quick --kernel blocked --kernel naive --verbose\n"
                "  attnbench check --kernel blocked --filter causal --list-cases\n"
                "\nexit codes: 0 nothing failed, 1 a pair failed, 2 bad command line or unknown kernel",
      .options = opts,
      .n_options = sizeof opts / sizeof opts[0],
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);
  if (attn_placement_env_bad("check", &exec)) return ATTNBENCH_EXIT_USAGE;  // ATTNBENCH_TILE_*
  if (progress && no_progress) {
    fprintf(stderr, "attnbench check: --progress and --no-progress exclude each other\n");
    return ATTNBENCH_EXIT_USAGE;
  }

  kernel_tally *sel = calloc(attn_kernel_count() + 1, sizeof *sel);
  size_t n_cases = attn_check_matrix(quick, NULL, 0);
  attn_check_case *cases = calloc(n_cases ? n_cases : 1, sizeof *cases);
  if (!sel || !cases) {
    fprintf(stderr, "attnbench check: out of memory\n");
    free(sel);
    free(cases);
    return ATTNBENCH_EXIT_FAILURE;
  }
  attn_check_matrix(quick, cases, n_cases);
  // --filter keeps the cases whose description contains the text (order preserved).
  size_t n_kept = 0;
  for (size_t c = 0; c < n_cases; c++) {
    char desc[192];
    attn_check_case_describe(&cases[c], desc, sizeof desc);
    if (filter && !strstr(desc, filter)) continue;
    if (list_cases) printf("%s\n", desc);
    cases[n_kept++] = cases[c];
  }
  if (list_cases) {
    free(sel);
    free(cases);
    return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
  }
  if (filter && n_kept == 0) {
    fprintf(stderr, "attnbench check: --filter '%s' matches no case (see --list-cases)\n", filter);
    free(sel);
    free(cases);
    return ATTNBENCH_EXIT_USAGE;
  }
  const size_t n_total = n_cases;
  n_cases = n_kept;

  const long n_sel = select_kernels(&names, sel);
  if (n_sel < 0) {
    free(sel);
    free(cases);
    return ATTNBENCH_EXIT_USAGE;
  }

  const bool tty = isatty(STDERR_FILENO);
  const bool show_progress = !no_progress && (progress || tty) && n_sel > 0;
  const char *clear = tty ? "\r\033[K" : "";
  size_t passed = 0, failed = 0;
  const double t_start = now_seconds();
  for (size_t c = 0; c < n_cases && n_sel > 0; c++) {
    char desc[192], err[256];
    attn_check_case_describe(&cases[c], desc, sizeof desc);
    if (show_progress) {
      fprintf(stderr, "%s[%zu/%zu] %s", clear, c + 1, n_cases, desc);
      if (!tty) fputc('\n', stderr);
      fflush(stderr);
    }
    attn_check_prepared *pc = attn_check_prepare(&cases[c], err, sizeof err);
    if (!pc) {  // the harness could not build the case: every kernel counts as failed
      if (show_progress && tty) fputs(clear, stderr);
      for (long i = 0; i < n_sel; i++) {
        printf("FAIL %s %s: cannot prepare the case: %s\n", sel[i].k->name, desc, err);
        sel[i].failed++;
        failed++;
      }
      fflush(stdout);
      continue;
    }
    for (long i = 0; i < n_sel; i++) {
      attn_check_result r;
      const double t0 = now_seconds();
      const bool ok = attn_check_kernel(sel[i].k, pc, &exec, &r);
      sel[i].seconds += now_seconds() - t0;
      if (r.worst_ratio > sel[i].worst_ratio) sel[i].worst_ratio = r.worst_ratio;
      if (r.max_rel_err > sel[i].max_rel_err) sel[i].max_rel_err = r.max_rel_err;
      if (ok) {
        sel[i].passed++;
        passed++;
        if (verbose) {
          if (show_progress && tty) fputs(clear, stderr);
          printf("ok   %s %s: max abs err %.3g, err/tol %.3g\n", sel[i].k->name, desc, r.max_abs_err,
                 r.worst_ratio);
        }
      } else {
        sel[i].failed++;
        failed++;
        if (show_progress && tty) fputs(clear, stderr);
        printf("FAIL %s %s: max abs err %.3g, err/tol %.3g (worst at flat index %zu): %s\n", sel[i].k->name,
               desc, r.max_abs_err, r.worst_ratio, r.worst_index, r.message[0] ? r.message : "failed");
      }
      fflush(stdout);
    }
    attn_check_prepared_free(pc);
  }
  if (show_progress && tty) fputs(clear, stderr);

  if (n_sel > 0) {
    int w = 6;
    for (long i = 0; i < n_sel; i++) {
      const int len = (int)strlen(sel[i].k->name);
      if (len > w) w = len;
    }
    printf("\n%-*s  %6s  %6s  %13s  %11s  %8s\n", w, "kernel", "passed", "failed", "worst err/tol",
           "max rel err", "time s");
    for (long i = 0; i < n_sel; i++)
      printf("%-*s  %6zu  %6zu  %13.3g  %11.3g  %8.2f\n", w, sel[i].k->name, sel[i].passed, sel[i].failed,
             sel[i].worst_ratio, sel[i].max_rel_err, sel[i].seconds);
    fprintf(stderr, "%zu of %zu cases x %ld kernels in %.1f s (threads=%d)\n", n_cases, n_total, n_sel,
            now_seconds() - t_start, exec.threads);
  } else {
    fprintf(stderr, "attnbench check: no available kernel selected; nothing checked\n");
  }
  printf("%zu passed, %zu failed\n", passed, failed);
  free(sel);
  free(cases);
  return failed == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
}
