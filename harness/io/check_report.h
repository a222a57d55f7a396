// SPDX-License-Identifier: MIT
//
// check_report.h — the machine-readable reports of `attnbench check` (--junit FILE,
// --json FILE): one record per (kernel, case) pair, written atomically through
// fileio.h once every pair has run. Formats (docs/cli.md "check"):
//   JUnit XML: <testsuites> with one <testsuite name="<kernel>"> per kernel, one
//     <testcase classname="<kernel>" name="<case>"> per pair; a failing pair has a
//     <failure type="fail">, an inconclusive one an <error type="inconclusive">, a
//     skipped one (kernel unavailable on this CPU) a <skipped message=…/>, and so does a
//     pair that passed on the shared fallback (message "ran the shared fallback, not this
//     kernel's code": never a pass of the kernel); suite and root attributes
//     tests/failures/errors/skipped count exactly those children.
//   JSON: {"format": "attnbench-check-1", totals (passed, failed, inconclusive, skipped,
//     fallback), per-kernel counts, "results": [one object per pair with "verdict":
//     "pass"|"fail"|"inconclusive"|"skipped"|"fallback" and "code": "kernel" (the
//     kernel's own code ran), "fallback" (the shared portable path ran) or null (nothing
//     ran: skipped, refused, crashed before the call)]}.
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "io/fileio.h"

typedef enum check_verdict {
  CHECK_PASS,
  CHECK_FAIL,
  CHECK_INCONCLUSIVE,
  CHECK_SKIPPED,
  CHECK_FALLBACK,  // passed, but on the shared fallback: not credited to the kernel
} check_verdict;

// Whose code a record's kernel call ran.
typedef enum check_code {
  CHECK_CODE_NONE = 0,  // nothing ran (skipped, refused, the process ended before)
  CHECK_CODE_KERNEL,    // the kernel's own code
  CHECK_CODE_FALLBACK,  // the shared portable path (an option the kernel does not claim)
} check_code;

typedef struct check_record {
  const char *suite;  // kernel name (not copied: must outlive the report)
  char *name;         // case description (owned)
  char *message;      // why it failed / was inconclusive / was skipped (owned; NULL on pass)
  check_verdict verdict;
  check_code code;
  double max_abs_err, max_rel_err, worst_ratio;  // NaN when not measured (skips)
  double seconds;                                // wall time of the pair (0 for skips)
  const char *compute;  // the case's compute mode ("f32", "bf16", …; static)
  double compute_err;   // its input rounding's error against FP32, relative to max |ref|
                        // (check.h, attn_check_compute_error); NaN for f32 or not measured
} check_record;

typedef struct check_report {
  check_record *recs;
  size_t n, cap;
  bool oom;  // an append failed: the report is incomplete and must not be written
} check_report;

// Appends a record (copies name and message). On allocation failure sets r->oom.
void check_report_add(check_report *r, const char *suite, const char *name, check_verdict v,
                      check_code code, const char *message, double max_abs_err, double max_rel_err,
                      double worst_ratio, double seconds);
// Sets the compute mode (a static name) and its error against FP32 (NaN: none) of the last
// record added.
void check_report_set_compute(check_report *r, const char *mode, double rel_err);
void check_report_free(check_report *r);

// Writes the report atomically to out (prepared by the caller before any work).
// False with "<path>: <reason>" in err.
bool check_report_write_junit(const check_report *r, const attn_output *out, double seconds,
                              char *err, size_t err_len);
bool check_report_write_json(const check_report *r, const attn_output *out, double seconds,
                             char *err, size_t err_len);
