// SPDX-License-Identifier: MIT
// Sweep configs: INI (inih) → validated lists → cartesian product of benchmark points.
// inih does the parsing; a small pre-scan of the file records the line of every key so
// that errors found after parsing (d_model vs heads, ...) still name FILE:LINE.
#define _POSIX_C_SOURCE 200809L  // strtok_r
#include "bench/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { kMaxValues = 64, kMaxSweeps = 64, kMaxKeys = 1024, kMaxKernels = 64 };
static const int64_t kMaxSize = INT64_C(1) << 30;

typedef struct ilist {
  int64_t v[kMaxValues];
  int n;      // 0: not given (or given empty)
  bool seen;  // key present in the section
} ilist;

typedef struct sweep {
  char name[48];
  const attn_kernel *kernels[kMaxKernels];
  int nk;
  ilist batch, heads, kv_heads, d_model, head_dim, head_dim_v, seq_len, seq_kv, causal, threads;
  int repetitions;
  double min_time;
  bool cold_inputs;
} sweep;

typedef struct key_line {
  char section[48];
  char key[32];
  int line;
} key_line;

typedef struct parse_ctx {
  const char *path;
  sweep *sweeps;
  int nsweeps;
  key_line keys[kMaxKeys];
  int nkeys;
  int err_line;  // first semantic error (0: none)
  char err[256];
} parse_ctx;

static void trim(char *s) {
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  size_t i = 0;
  while (s[i] && isspace((unsigned char)s[i])) i++;
  memmove(s, s + i, n - i + 1);
}

// Bounded copy that always terminates dst (truncating long names is fine here).
static void copy_str(char *dst, size_t n, const char *src) {
  const size_t len = strnlen(src, n - 1);
  memcpy(dst, src, len);
  dst[len] = '\0';
}

static int line_of(const parse_ctx *c, const char *section, const char *key) {
  for (int i = 0; i < c->nkeys; i++)
    if (strcmp(c->keys[i].section, section) == 0 && (!key || strcmp(c->keys[i].key, key) == 0))
      return c->keys[i].line;
  return 0;
}

// Records the first semantic error; returns 0 (inih's "handler failed").
static int fail(parse_ctx *c, int line, const char *fmt, ...) {
  if (c->err_line && c->err_line <= line) return 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  c->err_line = line > 0 ? line : 1;
  return 0;
}

// Pre-scan: the line of each "key =" (first occurrence per section); duplicate keys
// and over-long lines are errors (inih would truncate lines past its buffer).
static bool prescan(parse_ctx *c, FILE *f) {
  char buf[1024], section[48] = "";
  int line = 0;
  while (fgets(buf, sizeof buf, f)) {
    line++;
    if (!strchr(buf, '\n') && !feof(f)) return fail(c, line, "line too long"), false;
    if (strlen(buf) > 190) return fail(c, line, "line too long (at most 190 characters)"), false;
    if (isspace((unsigned char)buf[0]) && c->nkeys) continue;  // continuation line
    char *s = buf;
    trim(s);
    if (!*s || *s == ';' || *s == '#') continue;
    if (*s == '[') {
      char *end = strchr(s, ']');
      if (end) {
        *end = '\0';
        copy_str(section, sizeof section, s + 1);
        trim(section);
        // the header's own line, found by line_of(c, section, NULL)
        if (c->nkeys < kMaxKeys && !line_of(c, section, NULL)) {
          key_line *k = &c->keys[c->nkeys++];
          copy_str(k->section, sizeof k->section, section);
          copy_str(k->key, sizeof k->key, "[");
          k->line = line;
        }
      }
      continue;
    }
    char *eq = strpbrk(s, "=:");
    if (!eq) continue;  // inih reports the syntax error
    *eq = '\0';
    trim(s);
    for (char *p = s; *p; p++) *p = (char)tolower((unsigned char)*p);
    if (line_of(c, section, s))
      return fail(c, line, "key '%s' repeated in [%s] (first on line %d)", s, section,
                  line_of(c, section, s)),
             false;
    if (c->nkeys == kMaxKeys) return fail(c, line, "too many keys"), false;
    key_line *k = &c->keys[c->nkeys++];
    copy_str(k->section, sizeof k->section, section);
    copy_str(k->key, sizeof k->key, s);
    k->line = line;
  }
  return true;
}

static sweep *sweep_for(parse_ctx *c, const char *section) {
  for (int i = 0; i < c->nsweeps; i++)
    if (strcmp(c->sweeps[i].name, section) == 0) return &c->sweeps[i];
  if (c->nsweeps == kMaxSweeps) return NULL;
  sweep *s = &c->sweeps[c->nsweeps++];
  memset(s, 0, sizeof *s);
  copy_str(s->name, sizeof s->name, section);
  return s;
}

static bool parse_bool(const char *t, int64_t *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
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
  copy_str(buf, sizeof buf, value);
  trim(buf);
  if (!*buf) return 1;
  char *save = NULL;
  int items = 0;
  for (char *p = buf;; p = NULL) {
    char *t = strtok_r(p, ",", &save);
    if (!t) break;
    trim(t);
    if (!*t) return fail(c, line, "%s: empty item in list", key);
    if (!item(c, line, key, t, dst)) return 0;
    items++;
  }
  // "a,,b" or a trailing comma: strtok_r skips empty fields, so count separators too.
  int commas = 0;
  for (const char *p = value; *p; p++) commas += *p == ',';
  if (commas != items - 1) return fail(c, line, "%s: empty item in list", key);
  return 1;
}

static int int_item(parse_ctx *c, int line, const char *key, const char *t, void *dst) {
  ilist *l = dst;
  int64_t v;
  if (strcmp(key, "causal") == 0) {
    if (!parse_bool(t, &v)) return fail(c, line, "causal: '%s' is not true/false", t);
  } else {
    char *end;
    errno = 0;
    const long long x = strtoll(t, &end, 10);
    const int64_t lo = strcmp(key, "threads") == 0 ? 0 : 1;
    if (*end || errno || end == t) return fail(c, line, "%s: '%s' is not an integer", key, t);
    if (x < lo || x > kMaxSize)
      return fail(c, line, "%s: %s is out of range [%lld, %lld]", key, t, (long long)lo,
                  (long long)kMaxSize);
    v = x;
  }
  if (l->n == kMaxValues) return fail(c, line, "%s: more than %d values", key, kMaxValues);
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
    return fail(c, line, "kernels: unknown kernel '%s' (known: %s)", t, names);
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
  if (s->nk == kMaxKernels) return fail(c, line, "kernels: too many");
  s->kernels[s->nk++] = k;
  return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
  parse_ctx *c = user;
  char key[32];
  copy_str(key, sizeof key, name);
  for (char *p = key; *p; p++) *p = (char)tolower((unsigned char)*p);
  const int line = line_of(c, section, key);
  if (!*section) return fail(c, line, "'%s' is outside any [section]", key);
  sweep *s = sweep_for(c, section);
  if (!s) return fail(c, line, "too many sections (at most %d)", kMaxSweeps);
  if (strcmp(key, "kernels") == 0) {
    return parse_list(c, line, key, value, kernel_item, s) &&
           (s->nk > 0 || fail(c, line, "kernels: empty list (or every kernel excluded)"));
  }
  if (strcmp(key, "repetitions") == 0 || strcmp(key, "min_time") == 0) {
    char *end;
    errno = 0;
    const double x = strtod(value, &end);
    while (isspace((unsigned char)*end)) end++;
    if (*end || errno || end == value || !(x > 0) || x > 1e6)
      return fail(c, line, "%s: '%s' is not a positive number", key, value);
    if (key[0] == 'r') {
      if (x != (int)x || x > 1000) return fail(c, line, "repetitions: '%s' is not an integer in [1, 1000]", value);
      s->repetitions = (int)x;
    } else {
      s->min_time = x;
    }
    return 1;
  }
  if (strcmp(key, "cold_inputs") == 0) {  // one boolean (same spellings as causal), not a list
    int64_t on;
    if (!parse_bool(value, &on)) return fail(c, line, "cold_inputs: '%s' is not true or false", value);
    s->cold_inputs = on != 0;
    return 1;
  }
  static const char *const kListKeys[] = {"batch", "heads", "kv_heads", "d_model", "head_dim",
                                          "head_dim_v", "seq_len", "seq_kv", "causal", "threads"};
  ilist *lists[] = {&s->batch, &s->heads, &s->kv_heads, &s->d_model, &s->head_dim,
                    &s->head_dim_v, &s->seq_len, &s->seq_kv, &s->causal, &s->threads};
  for (size_t i = 0; i < sizeof kListKeys / sizeof kListKeys[0]; i++) {
    if (strcmp(key, kListKeys[i]) != 0) continue;
    lists[i]->seen = true;
    return parse_list(c, line, key, value, int_item, lists[i]);
  }
  return fail(c, line,
              "unknown key '%s' (keys: kernels batch heads kv_heads d_model head_dim head_dim_v "
              "seq_len seq_kv causal threads repetitions min_time cold_inputs)",
              key);
}

// Cross-key rules, checked once a section is complete.
static bool validate(parse_ctx *c, sweep *s, bool kernels_overridden) {
  const int sec = line_of(c, s->name, NULL);
  const char *n = s->name;
#define LINE(key) (line_of(c, n, key) ? line_of(c, n, key) : sec)
  if (!kernels_overridden && s->nk == 0) {
    if (line_of(c, n, "kernels")) return fail(c, LINE("kernels"), "kernels: empty list"), false;
    return fail(c, sec, "[%s]: missing key 'kernels'", n), false;
  }
  const char *required[] = {"heads", "seq_len"};
  const ilist *req[] = {&s->heads, &s->seq_len};
  for (int i = 0; i < 2; i++) {
    if (!req[i]->seen) return fail(c, sec, "[%s]: missing key '%s'", n, required[i]), false;
    if (req[i]->n == 0) return fail(c, LINE(required[i]), "%s: empty list", required[i]), false;
  }
  // Optional keys may be left empty ("seq_kv =" means the default); a few may not.
  const char *nonempty[] = {"batch", "kv_heads", "causal", "threads"};
  const ilist *ne[] = {&s->batch, &s->kv_heads, &s->causal, &s->threads};
  for (int i = 0; i < 4; i++)
    if (ne[i]->seen && ne[i]->n == 0)
      return fail(c, LINE(nonempty[i]), "%s: empty list", nonempty[i]), false;
  const bool has_dm = s->d_model.n > 0, has_hd = s->head_dim.n > 0;
  if (has_dm == has_hd) {
    const int a = LINE("d_model"), b = LINE("head_dim");
    return fail(c, has_dm ? (a > b ? a : b) : sec, "[%s]: give exactly one of d_model and head_dim", n),
           false;
  }
  for (int i = 0; i < s->heads.n; i++) {
    const int64_t h = s->heads.v[i];
    for (int j = 0; j < s->kv_heads.n; j++)
      if (s->kv_heads.v[j] > h || h % s->kv_heads.v[j])
        return fail(c, LINE("kv_heads"), "kv_heads %lld does not divide heads %lld",
                    (long long)s->kv_heads.v[j], (long long)h),
               false;
    for (int j = 0; j < s->d_model.n; j++)
      if (s->d_model.v[j] % h)
        return fail(c, LINE("d_model"), "d_model %lld is not divisible by heads %lld",
                    (long long)s->d_model.v[j], (long long)h),
               false;
  }
  if (s->batch.n == 0) s->batch.v[s->batch.n++] = 1;
  if (s->causal.n == 0) s->causal.v[s->causal.n++] = 0;
  if (s->threads.n == 0) s->threads.v[s->threads.n++] = 1;
#undef LINE
  return true;
}

void attn_bench_point_name(const attn_kernel *k, const attn_problem *p, int threads, char *buf,
                           size_t len) {
  char dv[24] = "";
  if (p->head_dim_v != p->head_dim_qk) snprintf(dv, sizeof dv, "/Dv%lld", (long long)p->head_dim_v);
  snprintf(buf, len, "%s/B%lld/H%lld/KV%lld/Sq%lld/Skv%lld/D%lld%s/%s/T%d", k->name,
           (long long)p->batch, (long long)p->heads, (long long)p->kv_heads, (long long)p->seq_q,
           (long long)p->seq_kv, (long long)p->head_dim_qk, dv, p->causal ? "causal" : "noncausal",
           threads);
}

typedef struct plan_builder {
  attn_bench_point *pts;
  size_t n, cap;
} plan_builder;

static bool push(plan_builder *b, const attn_bench_point *pt) {
  for (size_t i = 0; i < b->n; i++)
    if (strcmp(b->pts[i].name, pt->name) == 0) return true;  // same point from another sweep
  if (b->n == b->cap) {
    const size_t cap = b->cap ? 2 * b->cap : 64;
    attn_bench_point *p = realloc(b->pts, cap * sizeof *p);
    if (!p) return false;
    b->pts = p;
    b->cap = cap;
  }
  b->pts[b->n++] = *pt;
  return true;
}

// The cartesian product, shapes outermost and kernels innermost, so that kernels are
// compared at nearly the same moment (similar machine noise).
static bool expand(parse_ctx *c, const sweep *s, const attn_bench_overrides *ov, plan_builder *b) {
  const int sec = line_of(c, s->name, NULL);
  const ilist *dims = s->d_model.n ? &s->d_model : &s->head_dim;
  const ilist *skv = s->seq_kv.n ? &s->seq_kv : NULL;
  const int nk = ov && ov->kernel_count ? (int)ov->kernel_count : s->nk;
  const int nt = ov && ov->thread_count ? (int)ov->thread_count : s->threads.n;
  for (int ib = 0; ib < s->batch.n; ib++)
  for (int ih = 0; ih < s->heads.n; ih++)
  for (int ikv = 0; ikv < (s->kv_heads.n ? s->kv_heads.n : 1); ikv++)
  for (int id = 0; id < dims->n; id++)
  for (int idv = 0; idv < (s->head_dim_v.n ? s->head_dim_v.n : 1); idv++)
  for (int iskv = 0; iskv < (skv ? skv->n : 1); iskv++)
  for (int isq = 0; isq < s->seq_len.n; isq++)
  for (int ic = 0; ic < s->causal.n; ic++)
  for (int it = 0; it < nt; it++)
  for (int ik = 0; ik < nk; ik++) {
    const int64_t heads = s->heads.v[ih];
    const int64_t kv = s->kv_heads.n ? s->kv_heads.v[ikv] : heads;
    const int64_t dqk = s->d_model.n ? dims->v[id] / heads : dims->v[id];
    const int64_t dv = s->head_dim_v.n ? s->head_dim_v.v[idv] : dqk;
    const int64_t sq = s->seq_len.v[isq];
    attn_bench_point pt;
    memset(&pt, 0, sizeof pt);
    pt.kernel = ov && ov->kernel_count ? ov->kernels[ik] : s->kernels[ik];
    pt.problem = attn_problem_make(s->batch.v[ib], heads, kv, sq, skv ? skv->v[iskv] : sq, dqk, dv,
                                   s->causal.v[ic] != 0);
    char why[160];
    if (!attn_problem_validate(&pt.problem, why, sizeof why))
      return fail(c, sec, "[%s]: invalid point: %s", s->name, why), false;
    int t = ov && ov->thread_count ? ov->threads[it] : (int)s->threads.v[it];
    if (t == 0) t = ov && ov->physical_cores > 0 ? ov->physical_cores : 1;
    if (!(pt.kernel->caps & ATTN_CAP_THREADS)) t = 1;  // single-thread kernels run once
    pt.threads = t;
    pt.repetitions = s->repetitions;
    pt.min_time = s->min_time;
    pt.cold_inputs = s->cold_inputs;
    copy_str(pt.sweep, sizeof pt.sweep, s->name);
    attn_bench_point_name(pt.kernel, &pt.problem, t, pt.name, sizeof pt.name);
    if (pt.cold_inputs) {  // a cold point is another measurement than the warm one
      const size_t len = strlen(pt.name);
      snprintf(pt.name + len, sizeof pt.name - len, "/cold");
    }
    if (!push(b, &pt)) return fail(c, sec, "out of memory"), false;
  }
  return true;
}

static void format_error(const parse_ctx *c, int line, const char *msg, char *err, size_t len) {
  if (line > 0)
    snprintf(err, len, "%s:%d: %s", c->path, line, msg);
  else
    snprintf(err, len, "%s: %s", c->path, msg);
}

bool attn_bench_plan_load(const char *path, const attn_bench_overrides *ov, FILE *notes,
                          attn_bench_plan *plan, char *err, size_t err_len) {
  plan->points = NULL;
  plan->count = 0;
  parse_ctx *c = calloc(1, sizeof *c);
  sweep *sweeps = calloc(kMaxSweeps, sizeof *sweeps);
  bool ok = false;
  if (!c || !sweeps) {
    snprintf(err, err_len, "%s: out of memory", path);
    goto done;
  }
  c->path = path;
  c->sweeps = sweeps;
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
    goto done;
  }
  const bool scanned = prescan(c, f);
  fclose(f);
  if (!scanned) {
    format_error(c, c->err_line, c->err, err, err_len);
    goto done;
  }
  const int rc = ini_parse(path, handler, c);
  if (rc < 0) {
    snprintf(err, err_len, "%s: cannot read", path);
    goto done;
  }
  if (rc > 0 && (!c->err_line || rc < c->err_line)) {
    format_error(c, rc, "syntax error (expected [section], key = value or a comment)", err, err_len);
    goto done;
  }
  if (c->err_line) {
    format_error(c, c->err_line, c->err, err, err_len);
    goto done;
  }
  if (c->nsweeps == 0) {
    format_error(c, 0, "no sweeps (no [section] with keys)", err, err_len);
    goto done;
  }
  plan_builder b = {0};
  for (int i = 0; i < c->nsweeps; i++) {
    if (!validate(c, &c->sweeps[i], ov && ov->kernel_count) || !expand(c, &c->sweeps[i], ov, &b)) {
      format_error(c, c->err_line, c->err, err, err_len);
      free(b.pts);
      goto done;
    }
  }
  // Kernels this CPU cannot run are left out with a note (never an error).
  size_t kept = 0;
  const attn_kernel *noted_kernels[kMaxKernels];
  int nnoted = 0;
  for (size_t i = 0; i < b.n; i++) {
    char why[96];
    if (attn_kernel_available(b.pts[i].kernel, why, sizeof why)) {
      b.pts[kept++] = b.pts[i];
      continue;
    }
    bool noted = false;
    for (int j = 0; j < nnoted; j++) noted |= noted_kernels[j] == b.pts[i].kernel;
    if (noted) continue;
    if (nnoted < kMaxKernels) noted_kernels[nnoted++] = b.pts[i].kernel;
    if (notes) fprintf(notes, "note: skipping kernel %s on this CPU (%s)\n", b.pts[i].kernel->name, why);
  }
  plan->points = b.pts;
  plan->count = kept;
  ok = true;
done:
  free(sweeps);
  free(c);
  return ok;
}

void attn_bench_plan_free(attn_bench_plan *plan) {
  free(plan->points);
  plan->points = NULL;
  plan->count = 0;
}
