// SPDX-License-Identifier: MIT
// The shared option parser (see cli_args.h for the contract).
#include "common/cli_args.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out) {
  if (!s || !*s) return false;
  // strtoll skips leading blanks and accepts a '+'; require the token to start like a
  // number so " 4" and "+ 4" are rejected.
  if (!(s[0] == '-' || s[0] == '+' || (s[0] >= '0' && s[0] <= '9'))) return false;
  errno = 0;
  char *end = NULL;
  const long long v = strtoll(s, &end, 10);
  if (errno == ERANGE || end == s || *end != '\0') return false;
  if (v < min || v > max) return false;
  *out = (int64_t)v;
  return true;
}

bool cli_parse_double(const char *s, double *out) {
  if (!s || !*s) return false;
  if (!(s[0] == '-' || s[0] == '+' || s[0] == '.' || (s[0] >= '0' && s[0] <= '9')))
    return false;  // also rejects leading blanks, "inf", "nan"
  errno = 0;
  char *end = NULL;
  const double v = strtod(s, &end);
  if (end == s || *end != '\0' || !isfinite(v)) return false;
  if (errno == ERANGE && fabs(v) > 1.0) return false;  // overflow (underflow to tiny is fine)
  *out = v;
  return true;
}

int cli_exit_code(cli_status st) {
  return st == CLI_HELP    ? ATTNBENCH_EXIT_OK
         : st == CLI_ERROR ? ATTNBENCH_EXIT_USAGE
                           : ATTNBENCH_EXIT_OK;
}

static bool takes_value(const cli_option *o) {
  return o->kind != CLI_FLAG;
}

static void int_range(const cli_option *o, int64_t *lo, int64_t *hi) {
  if (o->min == 0 && o->max == 0) {
    *lo = o->kind == CLI_INT ? INT_MIN : INT64_MIN;
    *hi = o->kind == CLI_INT ? INT_MAX : INT64_MAX;
  } else {
    *lo = o->min;
    *hi = o->max;
  }
}

void cli_print_help(const cli_spec *spec, FILE *f) {
  fprintf(f, "usage: %s%s%s%s%s\n", spec->program ? spec->program : "attnbench ",
          spec->program ? "" : spec->command, spec->n_options ? " [options]" : "",
          spec->positional_usage ? " " : "", spec->positional_usage ? spec->positional_usage : "");
  if (spec->summary) fprintf(f, "\n%s\n", spec->summary);
  fprintf(f, "\noptions:\n");
  char left[96];
  for (size_t i = 0; i < spec->n_options; i++) {
    const cli_option *o = &spec->options[i];
    snprintf(left, sizeof left, "--%s%s%s", o->name, takes_value(o) ? " " : "",
             takes_value(o) ? (o->metavar ? o->metavar : "VALUE") : "");
    fprintf(f, "  %-22s %s", left, o->help ? o->help : "");
    if (o->required) fprintf(f, " (required)");
    if (o->kind == CLI_STRING_LIST) fprintf(f, " (repeatable)");
    if (o->kind == CLI_INT_LIST) fprintf(f, " (repeatable, or comma-separated)");
    if ((o->kind == CLI_INT || o->kind == CLI_INT64 || o->kind == CLI_INT_LIST) &&
        (o->min || o->max))
      fprintf(f, " [%lld..%lld]", (long long)o->min, (long long)o->max);
    fputc('\n', f);
  }
  if (spec->passthrough_prefix) {
    snprintf(left, sizeof left, "--%s*=VALUE", spec->passthrough_prefix);
    fprintf(f, "  %-22s %s\n", left, "passed through unchanged (value in the same token)");
  }
  // Global (main.c, plugins.h): taken out of argv before the command parses it.
  fprintf(f, "  %-22s %s\n", "--plugin PATH",
          "load kernels from a plug-in .so (any command; repeatable; also ATTNBENCH_PLUGINS)");
  fprintf(f, "  %-22s %s\n", "-h, --help", "show this help and exit");
  if (spec->epilog) fprintf(f, "\n%s\n", spec->epilog);
}

#define CLI_FAIL(...)                                                 \
  do {                                                                \
    const char *prog_ = spec->program ? spec->program : "attnbench "; \
    const char *cmd_ = spec->program ? "" : spec->command;            \
    fprintf(stderr, "%s%s: ", prog_, cmd_);                           \
    fprintf(stderr, __VA_ARGS__);                                     \
    fprintf(stderr, " (see '%s%s --help')\n", prog_, cmd_);           \
    return CLI_ERROR;                                                 \
  } while (0)

// Stores one value; returns CLI_OK or CLI_ERROR (message printed).
static cli_status store(const cli_spec *spec, const cli_option *o, const char *val) {
  switch (o->kind) {
    case CLI_FLAG:
      *(bool *)o->dest = true;
      return CLI_OK;
    case CLI_INT:
    case CLI_INT64: {
      int64_t lo, hi, v;
      int_range(o, &lo, &hi);
      if (!cli_parse_i64(val, INT64_MIN, INT64_MAX, &v))
        CLI_FAIL("--%s expects an integer, got '%s'", o->name, val);
      if (v < lo || v > hi)
        CLI_FAIL("--%s %s is out of range [%lld, %lld]", o->name, val, (long long)lo,
                 (long long)hi);
      if (o->kind == CLI_INT)
        *(int *)o->dest = (int)v;
      else
        *(int64_t *)o->dest = v;
      return CLI_OK;
    }
    case CLI_DOUBLE: {
      double v;
      if (!cli_parse_double(val, &v))
        CLI_FAIL("--%s expects a finite number, got '%s'", o->name, val);
      if ((o->fmin != 0 || o->fmax != 0) && (v < o->fmin || v > o->fmax))
        CLI_FAIL("--%s %s is out of range [%g, %g]", o->name, val, o->fmin, o->fmax);
      *(double *)o->dest = v;
      return CLI_OK;
    }
    case CLI_STRING:
      if (!*val) CLI_FAIL("--%s expects a non-empty value", o->name);
      *(const char **)o->dest = val;
      return CLI_OK;
    case CLI_INT_LIST: {
      cli_int_list *l = o->dest;
      int64_t lo, hi;
      int_range(o, &lo, &hi);
      if (!*val) CLI_FAIL("--%s expects a comma-separated list of integers", o->name);
      char item[64];
      for (const char *p = val;;) {
        const char *comma = strchr(p, ',');
        const size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n >= sizeof item) CLI_FAIL("--%s: item '%.*s...' is too long", o->name, 20, p);
        memcpy(item, p, n);
        item[n] = '\0';
        int64_t v;
        if (!cli_parse_i64(item, INT64_MIN, INT64_MAX, &v))
          CLI_FAIL("--%s expects integers, got '%s' in '%s'", o->name, item, val);
        if (v < lo || v > hi)
          CLI_FAIL("--%s %s is out of range [%lld, %lld]", o->name, item, (long long)lo,
                   (long long)hi);
        if (l->count >= CLI_LIST_MAX)
          CLI_FAIL("--%s has more than %d values", o->name, CLI_LIST_MAX);
        l->items[l->count++] = v;
        if (!comma) break;
        p = comma + 1;
      }
      return CLI_OK;
    }
    case CLI_STRING_LIST: {
      cli_list *l = o->dest;
      if (!*val) CLI_FAIL("--%s expects a non-empty value", o->name);
      if (l->count >= CLI_LIST_MAX)
        CLI_FAIL("--%s given more than %d times", o->name, CLI_LIST_MAX);
      l->items[l->count++] = val;
      return CLI_OK;
    }
  }
  CLI_FAIL("internal error: option --%s has an unknown kind", o->name);
}

cli_status cli_parse(const cli_spec *spec, int argc, char **argv) {
  enum { kMaxOptions = 64 };
  int seen[kMaxOptions] = {0};
  if (spec->n_options > kMaxOptions) CLI_FAIL("internal error: too many options");
  if (spec->n_positional) *spec->n_positional = 0;
  bool only_positional = false;

  // Help wins over every other error, wherever it appears (before a "--").
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      cli_print_help(spec, stdout);
      return CLI_HELP;
    }
  }

  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (only_positional || arg[0] != '-' || strcmp(arg, "-") == 0) {
      if (!spec->positional) CLI_FAIL("unexpected argument '%s'", arg);
      if (*spec->n_positional >= spec->max_positional) CLI_FAIL("too many arguments at '%s'", arg);
      spec->positional[(*spec->n_positional)++] = arg;
      continue;
    }
    if (strcmp(arg, "--") == 0) {
      only_positional = true;
      continue;
    }
    if (arg[1] != '-') CLI_FAIL("unknown option '%s' (options are long, e.g. --help)", arg);
    if (spec->passthrough && spec->passthrough_prefix &&
        strncmp(arg + 2, spec->passthrough_prefix, strlen(spec->passthrough_prefix)) == 0) {
      if (spec->passthrough->count >= CLI_LIST_MAX)
        CLI_FAIL("too many --%s* options", spec->passthrough_prefix);
      spec->passthrough->items[spec->passthrough->count++] = arg;
      continue;
    }
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    const size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    const cli_option *o = NULL;
    size_t idx = 0;
    for (size_t j = 0; j < spec->n_options; j++) {
      if (strlen(spec->options[j].name) == name_len &&
          strncmp(spec->options[j].name, name, name_len) == 0) {
        o = &spec->options[j];
        idx = j;
        break;
      }
    }
    if (!o) CLI_FAIL("unknown option '--%.*s'", (int)name_len, name);
    if (seen[idx] && o->kind != CLI_STRING_LIST && o->kind != CLI_INT_LIST)
      CLI_FAIL("option --%s given more than once", o->name);
    seen[idx]++;
    const char *val = NULL;
    if (!takes_value(o)) {
      if (eq) CLI_FAIL("option --%s takes no value", o->name);
    } else if (eq) {
      val = eq + 1;
    } else {
      // "--out --q x.npy" is almost surely a forgotten value; "--out=--q" still works.
      if (i + 1 >= argc || (argv[i + 1][0] == '-' && argv[i + 1][1] == '-'))
        CLI_FAIL("option --%s needs a value (%s)", o->name, o->metavar ? o->metavar : "VALUE");
      val = argv[++i];
    }
    const cli_status st = store(spec, o, val);
    if (st != CLI_OK) return st;
    if (o->given) *o->given = true;
  }
  for (size_t j = 0; j < spec->n_options; j++)
    if (spec->options[j].required && !seen[j])
      CLI_FAIL("missing required option --%s", spec->options[j].name);
  return CLI_OK;
}
