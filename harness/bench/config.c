// SPDX-License-Identifier: MIT
// Sweep configs, first half: INI (inih) → validated lists (config_sweep.h; config_read).
// The points (the cartesian product) and attn_bench_plan_load: config_expand.c.
// inih does the parsing; a small pre-scan of the file records the line of every key so
// that errors found after parsing (d_model vs heads, ...) still name FILE:LINE.
#define _POSIX_C_SOURCE 200809L  // strtok_r
#include "bench/config.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "bench/config_sweep.h"
#include "bench/serving.h"
#include "core/settings.h"  // register-tile variant names and kv_split values

// inih reads lines into a 200-byte buffer; longer lines are refused before it sees them.
// A config is read whole (at most kMaxFileBytes) and parsed from memory, so the file is
// opened once (a FIFO or /dev/stdin works, and nothing changes between the two passes).
enum { kMaxLine = 190, kMaxFileBytes = 1 << 20 };
static const int64_t kMaxSize = INT64_C(1) << 30;

static const char *const kOptKeyNames[kOptKeys] = {"align", "window", "softcap", "alibi",
                                                   "sinks", "mask",   "lse"};

static void trim(char *s) {
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  size_t i = 0;
  while (s[i] && isspace((unsigned char)s[i])) i++;
  memmove(s, s + i, n - i + 1);
}

// Bounded copy that always terminates dst (truncating long names is fine here).
void config_copy_str(char *dst, size_t n, const char *src) {
  const size_t len = strnlen(src, n - 1);
  memcpy(dst, src, len);
  dst[len] = '\0';
}

int config_line_of(const parse_ctx *c, const char *section, const char *key) {
  for (int i = 0; i < c->nkeys; i++)
    if (strcmp(c->keys[i].section, section) == 0 && (!key || strcmp(c->keys[i].key, key) == 0))
      return c->keys[i].line;
  return 0;
}

// Records the first semantic error; returns 0 (inih's "handler failed").
int config_fail(parse_ctx *c, int line, const char *fmt, ...) {
  if (c->err_line && c->err_line <= line) return 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  c->err_line = line > 0 ? line : 1;
  return 0;
}

// Pre-scan of the file's text: the line of each "key =" (first occurrence per section);
// duplicate keys, NUL bytes, over-long lines (inih would truncate lines past its
// buffer), over-long section names and text after a section header are errors. The
// line classification follows inih's: a line starting with blanks right after a key
// line of the same section is a continuation of that key's value.
static bool prescan(parse_ctx *c, const char *text, size_t text_len) {
  char buf[kMaxLine + 2], section[48] = "";
  int line = 0;
  bool after_key = false;
  for (size_t pos = 0; pos < text_len;) {
    const char *start = text + pos;
    const char *nl = memchr(start, '\n', text_len - pos);
    const size_t len = nl ? (size_t)(nl - start) : text_len - pos;  // without the '\n'
    pos += len + (nl != NULL);
    line++;
    if (memchr(start, '\0', len))
      return config_fail(c, line, "NUL byte in line (is this a text file?)");
    if (len > kMaxLine)
      return config_fail(c, line, "line too long (at most %d characters)", (int)kMaxLine);
    memcpy(buf, start, len);
    buf[len] = '\0';
    char *s = buf;
    if (line == 1 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
      s += 3;  // UTF-8 BOM (inih skips it)
    if (isspace((unsigned char)s[0]) && after_key) {
      trim(s);
      if (*s && *s != ';' && *s != '#') {      // continuation line (inih: a comment is none)
        key_line *k = &c->keys[c->nkeys - 1];  // the key line before it
        if (c->nconts < kMaxContinuations && k->cont0 + k->ncont == c->nconts)
          k->ncont++, c->cont_line[c->nconts++] = line;
        continue;
      }
    }
    trim(s);
    if (!*s || *s == ';' || *s == '#') continue;
    after_key = false;
    if (*s == '[') {
      char *end = strchr(s, ']');
      if (!end) continue;  // inih reports the syntax error
      const char *rest = end + 1;
      while (isspace((unsigned char)*rest)) rest++;
      if (*rest && *rest != ';' && *rest != '#')
        return config_fail(c, line,
                           "text after the section header (expected [name] alone on its line)");
      *end = '\0';
      if (!s[1]) return config_fail(c, line, "empty section name '[]'");
      if (strlen(s + 1) >= sizeof section)
        return config_fail(c, line, "section name too long (at most %zu characters)",
                           sizeof section - 1);
      config_copy_str(section, sizeof section,
                      s + 1);  // inih keeps the name as written, blanks too
      // the header's own line, found by config_line_of(c, section, NULL)
      if (c->nkeys < kMaxKeys && !config_line_of(c, section, NULL)) {
        key_line *k = &c->keys[c->nkeys++];
        config_copy_str(k->section, sizeof k->section, section);
        config_copy_str(k->key, sizeof k->key, "[");
        k->line = line;
      }
      continue;
    }
    char *eq = strpbrk(s, "=:");
    if (!eq) continue;  // inih reports the syntax error
    after_key = true;
    *eq = '\0';
    trim(s);
    for (char *p = s; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (config_line_of(c, section, s))
      return config_fail(c, line, "key '%s' repeated in [%s] (first on line %d)", s, section,
                         config_line_of(c, section, s));
    if (c->nkeys == kMaxKeys) return config_fail(c, line, "too many keys");
    key_line *k = &c->keys[c->nkeys++];
    config_copy_str(k->section, sizeof k->section, section);
    config_copy_str(k->key, sizeof k->key, s);
    k->line = line;
    k->cont0 = c->nconts;
  }
  return true;
}

// The line of this handler call for key: inih calls the handler once for the key's line,
// then once per continuation line, in file order (prescan recorded them); 0 if absent.
static int call_line(parse_ctx *c, const char *section, const char *key) {
  for (int i = 0; i < c->nkeys; i++) {
    key_line *k = &c->keys[i];
    if (strcmp(k->section, section) != 0 || strcmp(k->key, key) != 0) continue;
    const int n = k->calls++;
    return n == 0 || n > k->ncont ? k->line : c->cont_line[k->cont0 + n - 1];
  }
  return 0;
}

static sweep *sweep_for(parse_ctx *c, const char *section) {
  for (int i = 0; i < c->nsweeps; i++)
    if (strcmp(c->sweeps[i].name, section) == 0) return &c->sweeps[i];
  if (c->nsweeps == kMaxSweeps) return NULL;
  sweep *s = &c->sweeps[c->nsweeps++];
  memset(s, 0, sizeof *s);
  config_copy_str(s->name, sizeof s->name, section);
  return s;
}

static bool parse_bool(const char *t, int64_t *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"};
  static const char *const no[] = {"false", "no", "off", "0"};
  for (int i = 0; i < 4; i++) {
    if (strcasecmp(t, yes[i]) == 0) return *out = 1, true;
    if (strcasecmp(t, no[i]) == 0) return *out = 0, true;
  }
  return false;
}

// Splits a comma-separated list into trimmed items; calls item() for each. An empty
// value gives zero items; an empty item between commas is an error.
typedef int (*item_fn)(parse_ctx *c, int line, const char *key, const char *item, void *dst);

static int parse_list(parse_ctx *c, int line, const char *key, const char *value, item_fn item,
                      void *dst) {
  char buf[256];
  config_copy_str(buf, sizeof buf, value);
  trim(buf);
  if (!*buf) return 1;
  char *save = NULL;
  int items = 0;
  for (char *p = buf;; p = NULL) {
    char *t = strtok_r(p, ",", &save);
    if (!t) break;
    trim(t);
    if (!*t) return config_fail(c, line, "%s: empty item in list", key);
    if (!item(c, line, key, t, dst)) return 0;
    items++;
  }
  // "a,,b" or a trailing comma: strtok_r skips empty fields, so count separators too.
  int commas = 0;
  for (const char *p = value; *p; p++) commas += *p == ',';
  if (commas != items - 1) return config_fail(c, line, "%s: empty item in list", key);
  return 1;
}

static int int_item(parse_ctx *c, int line, const char *key, const char *t, void *dst) {
  ilist *l = dst;
  int64_t v;
  if (strcmp(key, "causal") == 0) {
    if (!parse_bool(t, &v)) return config_fail(c, line, "causal: '%s' is not true/false", t);
  } else {
    char *end;
    errno = 0;
    const long long x = strtoll(t, &end, 10);
    const bool threads = strcmp(key, "threads") == 0;
    const int64_t lo = threads ? 0 : 1, hi = threads ? ATTN_MAX_THREADS : kMaxSize;
    if (*end || errno || end == t)
      return config_fail(c, line, "%s: '%s' is not an integer", key, t);
    if (x < lo || x > hi)
      return config_fail(c, line, "%s: %s is out of range [%lld, %lld]", key, t, (long long)lo,
                         (long long)hi);
    v = x;
  }
  if (l->n == kMaxValues) return config_fail(c, line, "%s: more than %d values", key, kMaxValues);
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == v) return 1;  // duplicates add nothing to the product
  l->v[l->n++] = v;
  return 1;
}

// A kernel name, "all" (every available kernel but the reference) or "-name" (drop one
// named earlier in the list, e.g. "all, -naive").
static int kernel_item(parse_ctx *c, int line, const char *key, const char *t, void *dst) {
  (void)key;
  sweep *s = dst;
  if (strcasecmp(t, "all") == 0) {
    for (size_t i = 0; i < attn_kernel_count(); i++) {
      const attn_kernel *k = attn_kernel_at(i);
      if (strcmp(k->name, "reference") == 0 || !attn_kernel_available(k, NULL, 0)) continue;
      bool dup = false;
      for (int j = 0; j < s->nk; j++) dup |= s->kernels[j] == k;
      if (!dup && s->nk < kMaxKernels) s->kernels[s->nk++] = k;
    }
    return 1;
  }
  const bool exclude = t[0] == '-';  // "all, -naive": everything but naive
  if (exclude) t++;
  const attn_kernel *k = attn_kernel_find(t);
  if (!k) {
    char names[512] = "";
    for (size_t i = 0; i < attn_kernel_count(); i++) {
      strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
      strncat(names, attn_kernel_at(i)->name, sizeof names - strlen(names) - 1);
    }
    return config_fail(c, line, "kernels: unknown kernel '%s' (known: %s)", t, names);
  }
  if (exclude) {
    int kept = 0;
    for (int j = 0; j < s->nk; j++)
      if (s->kernels[j] != k) s->kernels[kept++] = s->kernels[j];
    s->nk = kept;
    return 1;
  }
  for (int j = 0; j < s->nk; j++)
    if (s->kernels[j] == k) return 1;
  if (s->nk == kMaxKernels) return config_fail(c, line, "kernels: too many");
  s->kernels[s->nk++] = k;
  return 1;
}

// ── option keys (attention variants) ────────────────────────────────────────────────

// One side of "LEFT:RIGHT": an integer >= 0 or inf/unbounded.
static int window_side_item(parse_ctx *c, int line, const char *side, const char *t, int64_t *out) {
  if (strcasecmp(t, "inf") == 0 || strcasecmp(t, "unbounded") == 0) {
    *out = ATTN_WINDOW_UNBOUNDED;
    return 1;
  }
  char *end;
  errno = 0;
  const long long x = strtoll(t, &end, 10);
  if (!*t || *end || errno || end == t)
    return config_fail(c, line, "window: %s side '%s' is not an integer or inf", side, t);
  if (x < 0)
    return config_fail(c, line, "window: %s side %lld must be >= 0 or inf (unbounded)", side, x);
  if (x > kMaxSize)
    return config_fail(c, line, "window: %s side %lld is out of range [0, %lld] (or inf)", side, x,
                       (long long)kMaxSize);
  *out = x;
  return 1;
}

// softcap / alibi: 0 (off) or a finite number > 0 that is a normal float.
static int positive_float_item(parse_ctx *c, int line, const char *key, const char *t, float *out) {
  char *end;
  errno = 0;
  const double x = strtod(t, &end);
  if (*end || end == t) return config_fail(c, line, "%s: '%s' is not a number", key, t);
  const bool range = errno == ERANGE;  // beyond double: 1e400, 1e-400 (not zero)
  if (x == 0 && !range) {
    *out = 0.0f;
    return 1;
  }
  if (range || !isfinite(x) || !(x > 0) || x < FLT_MIN || x > FLT_MAX)
    return config_fail(c, line, "%s: %s must be 0 (off) or a finite number > 0%s", key, t,
                       range || (isfinite(x) && x > 0) ? " within float range" : "");
  *out = (float)x;
  return 1;
}

static int opt_item(parse_ctx *c, int line, const char *key, const char *t, void *dst) {
  olist *l = dst;
  attn_bench_opts v;
  memset(&v, 0, sizeof v);  // whole struct, padding too: values compare with memcmp
  int64_t b;
  if (strcmp(key, "align") == 0) {
    if (strcasecmp(t, "bottom-right") == 0)
      v.align = ATTN_ALIGN_BOTTOM_RIGHT;
    else if (strcasecmp(t, "top-left") == 0)
      v.align = ATTN_ALIGN_TOP_LEFT;
    else
      return config_fail(c, line, "align: '%s' is not bottom-right or top-left", t);
  } else if (strcmp(key, "window") == 0) {
    if (strcasecmp(t, "none") != 0) {
      const char *colon = strchr(t, ':');
      if (!colon)
        return config_fail(
            c, line,
            "window: '%s' is not none or LEFT:RIGHT (e.g. 4095:0; inf for an unbounded "
            "side)",
            t);
      char left[64], right[64];
      if (colon - t >= (ptrdiff_t)sizeof left)
        return config_fail(c, line, "window: left side of '%s' is not an integer or inf", t);
      config_copy_str(left, sizeof left, t);
      left[colon - t] = '\0';
      config_copy_str(right, sizeof right, colon + 1);
      trim(left);
      trim(right);
      if (!window_side_item(c, line, "left", left, &v.window_left) ||
          !window_side_item(c, line, "right", right, &v.window_right))
        return 0;
      // inf:inf sees every key: the same problem as no window.
      v.window = v.window_left != ATTN_WINDOW_UNBOUNDED || v.window_right != ATTN_WINDOW_UNBOUNDED;
      if (!v.window) v.window_left = v.window_right = 0;
    }
  } else if (strcmp(key, "softcap") == 0) {
    if (!positive_float_item(c, line, key, t, &v.softcap)) return 0;
  } else if (strcmp(key, "alibi") == 0) {
    if (!positive_float_item(c, line, "alibi (max_bias)", t, &v.alibi_max_bias)) return 0;
  } else if (strcmp(key, "sinks") == 0) {
    if (!parse_bool(t, &b)) return config_fail(c, line, "sinks: '%s' is not on or off", t);
    v.sinks = b != 0;
  } else if (strcmp(key, "mask") == 0) {
    if (strcasecmp(t, "random") == 0)
      v.mask = true;
    else if (strcasecmp(t, "none") != 0)
      return config_fail(c, line, "mask: '%s' is not none or random", t);
  } else {  // lse
    if (!parse_bool(t, &b)) return config_fail(c, line, "lse: '%s' is not true or false", t);
    v.lse = b != 0;
  }
  if (l->n == kMaxValues) return config_fail(c, line, "%s: more than %d values", key, kMaxValues);
  for (int i = 0; i < l->n; i++)
    if (memcmp(&l->v[i], &v, sizeof v) == 0) return 1;  // duplicates add nothing
  l->v[l->n++] = v;
  return 1;
}

// The option keys; -1 if key is not one of them, else inih's result.
static int option_key(parse_ctx *c, sweep *s, int line, const char *key, const char *value) {
  for (int i = 0; i < kOptKeys; i++)
    if (strcmp(key, kOptKeyNames[i]) == 0)
      return parse_list(c, line, key, value, opt_item, &s->opts[i]);
  return -1;
}

// One item of kv_dtype (f32, f16, bf16, q8_0), duplicates merged.
static int kv_dtype_item(parse_ctx *c, int line, const char *key, const char *t, void *dst) {
  sweep *s = dst;
  attn_dtype d;
  if (!attn_dtype_parse(t, &d))
    return config_fail(c, line, "%s: '%s' is not a K/V type (f32, f16, bf16, q8_0)", key, t);
  for (int i = 0; i < s->n_kv_dtypes; i++)
    if (s->kv_dtypes[i] == d) return 1;
  s->kv_dtypes[s->n_kv_dtypes++] = d;  // at most ATTN_DTYPE_COUNT distinct values
  return 1;
}

// kv_dtype = f32, f16, bf16, q8_0: the K/V element types to sweep (a list; default f32).
static int kv_dtype_key(parse_ctx *c, int line, const char *value, sweep *s) {
  if (!parse_list(c, line, "kv_dtype", value, kv_dtype_item, s)) return 0;
  return s->n_kv_dtypes > 0 || config_fail(c, line, "kv_dtype: empty list");
}

// One item of compute (f32, bf16, f16, int8), duplicates merged.
static int compute_item(parse_ctx *c, int line, const char *key, const char *t, void *dst) {
  sweep *s = dst;
  attn_compute m;
  if (!attn_compute_parse(t, &m))
    return config_fail(c, line, "%s: '%s' is not a compute mode (f32, bf16, f16, int8)", key, t);
  for (int i = 0; i < s->n_computes; i++)
    if (s->computes[i] == m) return 1;
  s->computes[s->n_computes++] = m;  // at most ATTN_COMPUTE_COUNT distinct values
  return 1;
}

// compute = f32, bf16, f16, int8: the compute modes to sweep (a list; default f32).
static int compute_key(parse_ctx *c, int line, const char *value, sweep *s) {
  if (!parse_list(c, line, "compute", value, compute_item, s)) return 0;
  return s->n_computes > 0 || config_fail(c, line, "compute: empty list");
}

// The keys that take one value: inih calls the handler once per line, so a continuation
// line (an indented line after the key) is a second call for the same key. For a list key
// it adds to the list; for these it is an error, never a replaced value. Returns 0 after
// the error, else -1 (go on).
static int second_value(parse_ctx *c, sweep *s, int line, const char *key, const char *value) {
  static const char *const single[] = {"repetitions", "min_time", "cold_inputs", "regtile",
                                       "kv_split"};
  for (unsigned i = 0; i < sizeof single / sizeof single[0]; i++) {
    if (strcmp(key, single[i]) != 0) continue;
    if (s->single_given & 1u << i)
      return config_fail(c, line,
                         "%s: takes one value, but a continuation line gives it another ('%s')",
                         key, value);
    s->single_given |= 1u << i;
  }
  return -1;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
  parse_ctx *c = user;
  char key[32];
  config_copy_str(key, sizeof key, name);
  for (char *p = key; *p; p++) *p = (char)tolower((unsigned char)*p);
  const int line = call_line(c, section, key);
  if (!*section) return config_fail(c, line, "'%s' is outside any [section]", key);
  sweep *s = sweep_for(c, section);
  if (!s) return config_fail(c, line, "too many sections (at most %d)", kMaxSweeps);
  if (!second_value(c, s, line, key, value)) return 0;
  if (strcmp(key, "kernels") == 0) {
    return parse_list(c, line, key, value, kernel_item, s) &&
           (s->nk > 0 || config_fail(c, line, "kernels: empty list (or every kernel excluded)"));
  }
  if (strcmp(key, "repetitions") == 0 || strcmp(key, "min_time") == 0) {
    char *end;
    errno = 0;
    const double x = strtod(value, &end);
    while (isspace((unsigned char)*end)) end++;
    if (*end || errno || end == value || !(x > 0) || x > 1e6)
      return config_fail(c, line, "%s: '%s' is not a positive number", key, value);
    if (key[0] == 'r') {
      if (x != (int)x || x > 1000)
        return config_fail(c, line, "repetitions: '%s' is not an integer in [1, 1000]", value);
      s->repetitions = (int)x;
    } else {
      s->min_time = x;
    }
    return 1;
  }
  if (strcmp(key, "kv_dtype") == 0) return kv_dtype_key(c, line, value, s);
  if (strcmp(key, "compute") == 0) return compute_key(c, line, value, s);
  if (strcmp(key, "regtile") == 0) {  // one name or index, checked per kernel in expand
    if (!attn_settings_regtile_syntax(value))
      return config_fail(c, line, "regtile: '%s' is not a register-tile variant name or index",
                         value);
    config_copy_str(s->regtile, sizeof s->regtile, value);
    return 1;
  }
  if (strcmp(key, "kv_split") == 0) {  // one whole number, not a list
    char why[160];
    int v;
    if (!*value || attn_settings_parse_kv_split("kv_split", value, &v, why, sizeof why) != 0)
      return config_fail(c, line, "kv_split: '%s' is not a whole number in 0..%d", value,
                         ATTN_MAX_KV_SPLIT);
    s->kv_split = v, s->kv_split_given = true;
    return 1;
  }
  if (strcmp(key, "cold_inputs") == 0) {  // one boolean (same spellings as causal), not a list
    int64_t on;
    if (!parse_bool(value, &on))
      return config_fail(c, line, "cold_inputs: '%s' is not true or false", value);
    s->cold_inputs = on != 0;
    return 1;
  }
  static const char *const kListKeys[] = {"batch",    "heads",      "kv_heads", "d_model",
                                          "head_dim", "head_dim_v", "seq_len",  "seq_kv",
                                          "causal",   "threads"};
  ilist *lists[] = {&s->batch,      &s->heads,   &s->kv_heads, &s->d_model, &s->head_dim,
                    &s->head_dim_v, &s->seq_len, &s->seq_kv,   &s->causal,  &s->threads};
  for (size_t i = 0; i < sizeof kListKeys / sizeof kListKeys[0]; i++) {
    if (strcmp(key, kListKeys[i]) != 0) continue;
    lists[i]->seen = true;
    return parse_list(c, line, key, value, int_item, lists[i]);
  }
  const int opt = option_key(c, s, line, key, value);
  if (opt >= 0) return opt;
  const int serving = config_serving_key(c, s, line, key, value);
  if (serving >= 0) return serving;
  return config_fail(
      c, line,
      "unknown key '%s' (keys: kernels batch heads kv_heads d_model head_dim head_dim_v "
      "seq_len seq_kv causal threads repetitions min_time cold_inputs kv_dtype compute align "
      "window softcap alibi sinks mask lse regtile kv_split kv_lens q_lens page_size "
      "page_order)",
      key);
}

// Cross-key rules, checked once a section is complete.
static bool validate(parse_ctx *c, sweep *s, bool kernels_overridden) {
  const int sec = config_line_of(c, s->name, NULL);
  const char *n = s->name;
#define LINE(key) (config_line_of(c, n, key) ? config_line_of(c, n, key) : sec)
  if (!kernels_overridden && s->nk == 0) {
    if (config_line_of(c, n, "kernels"))
      return config_fail(c, LINE("kernels"), "kernels: empty list"), false;
    return config_fail(c, sec, "[%s]: missing key 'kernels'", n), false;
  }
  if (!config_serving_validate(c, s)) return false;  // a serving sweep needs no seq_len
  const char *required[] = {"heads", "seq_len"};
  const ilist *req[] = {&s->heads, &s->seq_len};
  for (int i = 0; i < 2; i++) {
    if (!req[i]->seen) return config_fail(c, sec, "[%s]: missing key '%s'", n, required[i]), false;
    if (req[i]->n == 0)
      return config_fail(c, LINE(required[i]), "%s: empty list", required[i]), false;
  }
  // Optional keys may be left empty ("seq_kv =" means the default); a few may not.
  const char *nonempty[] = {"batch", "kv_heads", "causal", "threads"};
  const ilist *ne[] = {&s->batch, &s->kv_heads, &s->causal, &s->threads};
  for (int i = 0; i < 4; i++)
    if (ne[i]->seen && ne[i]->n == 0)
      return config_fail(c, LINE(nonempty[i]), "%s: empty list", nonempty[i]), false;
  const bool has_dm = s->d_model.n > 0, has_hd = s->head_dim.n > 0;
  if (has_dm == has_hd) {
    const int a = LINE("d_model"), b = LINE("head_dim");
    return config_fail(c, has_dm ? (a > b ? a : b) : sec,
                       "[%s]: give exactly one of d_model and head_dim", n),
           false;
  }
  for (int i = 0; i < s->heads.n; i++) {
    const int64_t h = s->heads.v[i];
    for (int j = 0; j < s->kv_heads.n; j++)
      if (s->kv_heads.v[j] > h || h % s->kv_heads.v[j])
        return config_fail(c, LINE("kv_heads"), "kv_heads %lld does not divide heads %lld",
                           (long long)s->kv_heads.v[j], (long long)h),
               false;
    for (int j = 0; j < s->d_model.n; j++)
      if (s->d_model.v[j] % h)
        return config_fail(c, LINE("d_model"), "d_model %lld is not divisible by heads %lld",
                           (long long)s->d_model.v[j], (long long)h),
               false;
  }
  if (s->batch.n == 0) s->batch.v[s->batch.n++] = 1;
  if (s->causal.n == 0) s->causal.v[s->causal.n++] = 0;
  if (s->threads.n == 0) s->threads.v[s->threads.n++] = 1;
  if (s->n_kv_dtypes == 0) s->kv_dtypes[s->n_kv_dtypes++] = ATTN_DTYPE_F32;
  if (s->n_computes == 0) s->computes[s->n_computes++] = ATTN_COMPUTE_F32;
  // int8 runs on q8_0 K/V only: the sweep's other K/V types skip it (config_expand), but
  // int8 without q8_0 at all is a mistake
  bool int8 = false, q8 = false;
  for (int i = 0; i < s->n_computes; i++) int8 |= s->computes[i] == ATTN_COMPUTE_INT8;
  for (int i = 0; i < s->n_kv_dtypes; i++) q8 |= s->kv_dtypes[i] == ATTN_DTYPE_Q8_0;
  if (int8 && !q8)
    return config_fail(c, LINE("compute"), "compute int8 needs kv_dtype q8_0 in the sweep"), false;
#undef LINE
  return true;
}

// The whole file, NUL-terminated (its length in *len); NULL with "FILE: reason" in err.
static char *read_config(const char *path, size_t *len, char *err, size_t err_len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    snprintf(err, err_len, "%s: is a directory, not a config file", path);
    return NULL;
  }
  size_t n = 0, cap = 4096;
  char *text = malloc(cap + 1);
  for (size_t got; text && (got = fread(text + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n > kMaxFileBytes) break;
    if (n == cap) {
      char *bigger = realloc(text, 2 * cap + 1);
      if (!bigger) {
        free(text);
        text = NULL;
        break;
      }
      text = bigger;
      cap *= 2;
    }
  }
  const bool read_error = ferror(f);
  const int saved = errno;
  fclose(f);
  if (!text) {
    snprintf(err, err_len, "%s: out of memory", path);
  } else if (read_error) {
    snprintf(err, err_len, "%s: cannot read: %s", path, strerror(saved));
  } else if (n > kMaxFileBytes) {
    snprintf(err, err_len, "%s: larger than %d bytes (not a sweep config?)", path, kMaxFileBytes);
  } else {
    text[n] = '\0';
    *len = n;
    return text;
  }
  free(text);
  return NULL;
}

void config_format_error(const parse_ctx *c, int line, const char *msg, char *err, size_t len) {
  if (line > 0)
    snprintf(err, len, "%s:%d: %s", c->path, line, msg);
  else
    snprintf(err, len, "%s: %s", c->path, msg);
}

bool config_read(const char *path, const attn_bench_overrides *ov, parse_ctx *c, char **text_out,
                 char *err, size_t err_len) {
  c->path = path;
  *text_out = NULL;
  size_t text_len = 0;
  char *text = read_config(path, &text_len, err, err_len);
  if (!text) return false;
  bool ok = false;
  if (!prescan(c, text, text_len)) {
    config_format_error(c, c->err_line, c->err, err, err_len);
    goto done;
  }
  const int rc = ini_parse_string(text, handler, c);  // the text holds no NUL (prescan)
  if (rc > 0 && (!c->err_line || rc < c->err_line)) {
    config_format_error(c, rc, "syntax error (expected [section], key = value or a comment)", err,
                        err_len);
    goto done;
  }
  if (c->err_line) {
    config_format_error(c, c->err_line, c->err, err, err_len);
    goto done;
  }
  if (c->nsweeps == 0) {
    config_format_error(c, 0, "no sweeps (no [section] with keys)", err, err_len);
    goto done;
  }
  for (int i = 0; i < c->nsweeps; i++) {
    if (!validate(c, &c->sweeps[i], ov && ov->kernel_count)) {
      config_format_error(c, c->err_line, c->err, err, err_len);
      goto done;
    }
  }
  ok = true;
  *text_out = text;  // the caller's (the plan records it: one read of the config)
  text = NULL;
done:
  free(text);
  return ok;
}
