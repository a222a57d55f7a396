// SPDX-License-Identifier: MIT
// JUnit XML and JSON reports of `attnbench check` (check_report.h).
#define _POSIX_C_SOURCE 200809L
#include "io/check_report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ATTNBENCH_VERSION
#define ATTNBENCH_VERSION "unknown"
#endif

static char *dup_or_null(const char *s, bool *oom) {
  if (!s || !*s) return NULL;
  char *d = strdup(s);
  if (!d) *oom = true;
  return d;
}

void check_report_add(check_report *r, const char *suite, const char *name, check_verdict v,
                      check_code code, const char *message, double max_abs_err, double max_rel_err,
                      double worst_ratio, double seconds) {
  if (r->oom) return;
  if (r->n == r->cap) {
    const size_t cap = r->cap ? 2 * r->cap : 256;
    check_record *p = realloc(r->recs, cap * sizeof *p);
    if (!p) {
      r->oom = true;
      return;
    }
    r->recs = p, r->cap = cap;
  }
  check_record *c = &r->recs[r->n];
  *c = (check_record){.suite = suite,
                      .verdict = v,
                      .code = code,
                      .max_abs_err = max_abs_err,
                      .max_rel_err = max_rel_err,
                      .worst_ratio = worst_ratio,
                      .seconds = seconds,
                      .compute = "f32",
                      .compute_err = NAN};
  c->name = dup_or_null(name ? name : "", &r->oom);
  if (!c->name && !r->oom) c->name = strdup("(unnamed)");
  if (!c->name) r->oom = true;
  c->message = dup_or_null(message, &r->oom);
  if (r->oom) {
    free(c->name);
    free(c->message);
    return;
  }
  r->n++;
}

void check_report_set_compute(check_report *r, const char *mode, double rel_err) {
  if (r->oom || r->n == 0) return;
  r->recs[r->n - 1].compute = mode;
  r->recs[r->n - 1].compute_err = rel_err;
}

void check_report_free(check_report *r) {
  for (size_t i = 0; i < r->n; i++) {
    free(r->recs[i].name);
    free(r->recs[i].message);
  }
  free(r->recs);
  *r = (check_report){0};
}

// ── a growable text buffer ──────────────────────────────────────────────────────────

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf;

static void sb_reserve(sbuf *b, size_t more) {
  if (b->oom || b->len + more + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = true;
    return;
  }
  b->p = p, b->cap = cap;
}

static void sb_put(sbuf *b, const char *s, size_t n) {
  sb_reserve(b, n);
  if (b->oom) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap, aq;
  va_start(ap, fmt);
  va_copy(aq, ap);
  const int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = true;
  } else {
    sb_reserve(b, (size_t)n);
    if (!b->oom) {
      vsnprintf(b->p + b->len, (size_t)n + 1, fmt, aq);
      b->len += (size_t)n;
    }
  }
  va_end(aq);
}

// XML attribute/text content: the five predefined entities; control characters other
// than tab/newline/carriage return are not allowed in XML 1.0 and become '?'.
static void sb_xml(sbuf *b, const char *s) {
  for (; s && *s; s++) {
    const unsigned char c = (unsigned char)*s;
    switch (c) {
      case '&':
        sb_put(b, "&amp;", 5);
        break;
      case '<':
        sb_put(b, "&lt;", 4);
        break;
      case '>':
        sb_put(b, "&gt;", 4);
        break;
      case '"':
        sb_put(b, "&quot;", 6);
        break;
      case '\'':
        sb_put(b, "&apos;", 6);
        break;
      case '\n':
        sb_put(b, "&#10;", 5);
        break;
      case '\r':
        sb_put(b, "&#13;", 5);
        break;
      case '\t':
        sb_put(b, "&#9;", 4);
        break;
      default:
        sb_put(b, c < 0x20 || c == 0x7f ? "?" : (const char *)s, 1);
    }
  }
}

// A JSON string literal (quotes included): ", \ and control characters escaped.
static void sb_json_str(sbuf *b, const char *s) {
  sb_put(b, "\"", 1);
  for (; s && *s; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      const char e[2] = {'\\', (char)c};
      sb_put(b, e, 2);
    } else if (c < 0x20) {
      sb_printf(b, "\\u%04x", c);
    } else {
      sb_put(b, (const char *)s, 1);
    }
  }
  sb_put(b, "\"", 1);
}

// A JSON number, or null for NaN/±inf (JSON has no non-finite numbers).
static void sb_json_num(sbuf *b, double x) {
  if (isfinite(x))
    sb_printf(b, "%.17g", x);
  else
    sb_put(b, "null", 4);
}

static bool write_buf(const sbuf *b, const attn_output *out, char *err, size_t err_len) {
  if (b->oom)
    return attn_path_error(err, err_len, out->given ? out->given : out->target, "out of memory");
  const attn_buf part = {b->p, b->len};
  return attn_output_write(out, &part, 1, err, err_len);
}

// ── grouping by suite (kernel), in order of first appearance ─────────────────────────

typedef struct suite_count {
  const char *name;
  size_t tests, failures, errors, skipped, fallback;  // skipped includes fallback
  double seconds;
} suite_count;

// Fills suites[] (capacity r->n) and returns their number.
static size_t count_suites(const check_report *r, suite_count *suites) {
  size_t n = 0;
  for (size_t i = 0; i < r->n; i++) {
    const check_record *c = &r->recs[i];
    size_t s = 0;
    while (s < n && strcmp(suites[s].name, c->suite) != 0) s++;
    if (s == n) suites[n++] = (suite_count){.name = c->suite};
    suites[s].tests++;
    suites[s].failures += c->verdict == CHECK_FAIL;
    suites[s].errors += c->verdict == CHECK_INCONCLUSIVE;
    suites[s].skipped += c->verdict == CHECK_SKIPPED || c->verdict == CHECK_FALLBACK;
    suites[s].fallback += c->verdict == CHECK_FALLBACK;
    suites[s].seconds += c->seconds;
  }
  return n;
}

bool check_report_write_junit(const check_report *r, const attn_output *out, double seconds,
                              char *err, size_t err_len) {
  suite_count *suites = calloc(r->n ? r->n : 1, sizeof *suites);
  if (!suites)
    return attn_path_error(err, err_len, out->given ? out->given : out->target, "out of memory");
  const size_t ns = count_suites(r, suites);
  suite_count all = {0};
  for (size_t s = 0; s < ns; s++) {
    all.tests += suites[s].tests, all.failures += suites[s].failures;
    all.errors += suites[s].errors, all.skipped += suites[s].skipped;
  }
  sbuf b = {0};
  sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  sb_printf(&b,
            "<testsuites name=\"attnbench check\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
            "skipped=\"%zu\" time=\"%.3f\">\n",
            all.tests, all.failures, all.errors, all.skipped, seconds);
  for (size_t s = 0; s < ns; s++) {
    sb_printf(&b, "  <testsuite name=\"");
    sb_xml(&b, suites[s].name);
    sb_printf(&b,
              "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.3f\">\n",
              suites[s].tests, suites[s].failures, suites[s].errors, suites[s].skipped,
              suites[s].seconds);
    for (size_t i = 0; i < r->n; i++) {
      const check_record *c = &r->recs[i];
      if (strcmp(c->suite, suites[s].name) != 0) continue;
      sb_printf(&b, "    <testcase classname=\"");
      sb_xml(&b, c->suite);
      sb_printf(&b, "\" name=\"");
      sb_xml(&b, c->name);
      sb_printf(&b, "\" time=\"%.6f\"", c->seconds);
      if (c->verdict == CHECK_PASS) {
        sb_printf(&b, "/>\n");
        continue;
      }
      static const char *const tag[] = {"", "failure", "error", "skipped", "skipped"};
      static const char *const type[] = {"", "fail", "inconclusive", "", ""};
      const bool skip = c->verdict == CHECK_SKIPPED || c->verdict == CHECK_FALLBACK;
      sb_printf(&b, ">\n      <%s", tag[c->verdict]);
      if (!skip) sb_printf(&b, " type=\"%s\"", type[c->verdict]);
      sb_printf(&b, " message=\"");
      sb_xml(&b, c->message ? c->message : "");
      if (skip) {
        sb_printf(&b, "\"/>\n    </testcase>\n");
      } else if (isnan(c->max_abs_err)) {  // decided without running (refused, not prepared)
        sb_printf(&b, "\"/>\n    </testcase>\n");
      } else {
        sb_printf(&b, "\">max abs err %.6g, max rel err %.6g, err/tol %.6g</%s>\n    </testcase>\n",
                  c->max_abs_err, c->max_rel_err, c->worst_ratio, tag[c->verdict]);
      }
    }
    sb_printf(&b, "  </testsuite>\n");
  }
  sb_printf(&b, "</testsuites>\n");
  free(suites);
  const bool ok = write_buf(&b, out, err, err_len);
  free(b.p);
  return ok;
}

bool check_report_write_json(const check_report *r, const attn_output *out, double seconds,
                             char *err, size_t err_len) {
  suite_count *suites = calloc(r->n ? r->n : 1, sizeof *suites);
  if (!suites)
    return attn_path_error(err, err_len, out->given ? out->given : out->target, "out of memory");
  const size_t ns = count_suites(r, suites);
  size_t tot[5] = {0};
  for (size_t i = 0; i < r->n; i++) tot[r->recs[i].verdict]++;
  static const char *const verdict[] = {"pass", "fail", "inconclusive", "skipped", "fallback"};
  static const char *const code[] = {"null", "\"kernel\"", "\"fallback\""};
  sbuf b = {0};
  sb_printf(&b, "{\n  \"format\": \"attnbench-check-1\",\n  \"attnbench_version\": ");
  sb_json_str(&b, ATTNBENCH_VERSION);
  sb_printf(&b,
            ",\n  \"passed\": %zu,\n  \"failed\": %zu,\n  \"inconclusive\": %zu,\n"
            "  \"skipped\": %zu,\n  \"fallback\": %zu,\n  \"seconds\": ",
            tot[CHECK_PASS], tot[CHECK_FAIL], tot[CHECK_INCONCLUSIVE], tot[CHECK_SKIPPED],
            tot[CHECK_FALLBACK]);
  sb_json_num(&b, seconds);
  sb_printf(&b, ",\n  \"kernels\": [");
  for (size_t s = 0; s < ns; s++) {
    sb_printf(&b, "%s\n    {\"name\": ", s ? "," : "");
    sb_json_str(&b, suites[s].name);
    sb_printf(&b,
              ", \"passed\": %zu, \"failed\": %zu, \"inconclusive\": %zu, \"skipped\": %zu, "
              "\"fallback\": %zu}",
              suites[s].tests - suites[s].failures - suites[s].errors - suites[s].skipped,
              suites[s].failures, suites[s].errors, suites[s].skipped - suites[s].fallback,
              suites[s].fallback);
  }
  sb_printf(&b, "%s],\n  \"results\": [", ns ? "\n  " : "");
  for (size_t i = 0; i < r->n; i++) {
    const check_record *c = &r->recs[i];
    sb_printf(&b, "%s\n    {\"kernel\": ", i ? "," : "");
    sb_json_str(&b, c->suite);
    sb_printf(&b, ", \"case\": ");
    sb_json_str(&b, c->name);
    sb_printf(&b, ", \"verdict\": \"%s\", \"code\": %s, \"message\": ", verdict[c->verdict],
              code[c->code]);
    if (c->message)
      sb_json_str(&b, c->message);
    else
      sb_put(&b, "null", 4);
    sb_printf(&b, ", \"max_abs_err\": ");
    sb_json_num(&b, c->max_abs_err);
    sb_printf(&b, ", \"max_rel_err\": ");
    sb_json_num(&b, c->max_rel_err);
    sb_printf(&b, ", \"err_over_tol\": ");
    sb_json_num(&b, c->worst_ratio);
    sb_printf(&b, ", \"seconds\": ");
    sb_json_num(&b, c->seconds);
    sb_printf(&b, ", \"compute\": ");
    sb_json_str(&b, c->compute ? c->compute : "f32");
    sb_printf(&b, ", \"compute_err_vs_f32\": ");
    sb_json_num(&b, c->compute_err);
    sb_put(&b, "}", 1);
  }
  sb_printf(&b, "%s]\n}\n", r->n ? "\n  " : "");
  free(suites);
  const bool ok = write_buf(&b, out, err, err_len);
  free(b.p);
  return ok;
}
