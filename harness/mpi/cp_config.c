// SPDX-License-Identifier: MIT
// cp_config.c — runs from an INI file, validation (cp_config.h).
#include "mpi/cp_config.h"

#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cli_args.h"
#include "mpi/cp_run.h"
#include "mpi/cp_ulysses.h"

bool cp_parse_window(const char *s, bool *window, int64_t *left, int64_t *right) {
  if (strcmp(s, "none") == 0) {
    *window = false, *left = *right = 0;
    return true;
  }
  const char *colon = strchr(s, ':');
  if (!colon || colon - s >= 32) return false;
  char a[32];
  memcpy(a, s, (size_t)(colon - s));
  a[colon - s] = '\0';
  const char *b = colon + 1;
  int64_t side[2];
  const char *part[2] = {a, b};
  for (int i = 0; i < 2; i++) {
    if (strcmp(part[i], "inf") == 0)
      side[i] = ATTN_WINDOW_UNBOUNDED;
    else if (!cli_parse_i64(part[i], 0, INT64_MAX / 4, &side[i]))
      return false;
  }
  *window = true, *left = side[0], *right = side[1];
  return true;
}

// ── The INI file ───────────────────────────────────────────────────────────────────────

enum { kListMax = 8 };
typedef struct section {
  char name[32];
  int line;
  cp_run_spec base;
  cp_strategy strategy[kListMax];
  int64_t seq[kListMax];
  attn_dtype kv[kListMax];
  bool causal[kListMax];
  int n_strategy, n_seq, n_kv, n_causal;
  char seen[24][16];  // the keys given so far (a key may not be given twice)
  int n_seen;
} section;

typedef struct parser {
  const char *path;
  cp_runs *runs;
  section cur;
  bool open;
  char *err;
  size_t err_len;
  bool failed;
} parser;

static int fail_at(parser *ps, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char msg[200];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(ps->err, ps->err_len, "%s:%d: %s", ps->path, line, msg);
  ps->failed = true;
  return 0;
}

static bool parse_bool(const char *s, bool *out) {
  if (strcmp(s, "true") == 0) return *out = true, true;
  if (strcmp(s, "false") == 0) return *out = false, true;
  return false;
}

static void section_defaults(section *s, const char *name, int line) {
  *s = (section){.line = line};
  snprintf(s->name, sizeof s->name, "%s", name);
  s->base = (cp_run_spec){.batch = 1,
                          .heads = 8,
                          .kv_heads = 0,
                          .head_dim = 64,
                          .head_dim_v = 0,
                          .lse = true,
                          .check = true,
                          .threads = 1,
                          .seed = 1};
  cp_default_kernel(s->base.kernel, sizeof s->base.kernel);
}

// Expands the open section into runs.
static int close_section(parser *ps) {
  if (!ps->open) return 1;
  ps->open = false;
  section *s = &ps->cur;
  if (!s->n_strategy) s->strategy[s->n_strategy++] = CP_RING;
  if (!s->n_seq) return fail_at(ps, s->line, "[%s]: seq_len is required", s->name);
  if (!s->n_kv) s->kv[s->n_kv++] = ATTN_DTYPE_F32;
  if (!s->n_causal) s->causal[s->n_causal++] = true;
  for (int a = 0; a < s->n_strategy; a++)
    for (int b = 0; b < s->n_seq; b++)
      for (int c = 0; c < s->n_kv; c++)
        for (int d = 0; d < s->n_causal; d++) {
          if (ps->runs->count >= CP_MAX_RUNS)
            return fail_at(ps, s->line, "more than %d runs", CP_MAX_RUNS);
          cp_run_spec *r = &ps->runs->run[ps->runs->count++];
          *r = s->base;
          r->strategy = s->strategy[a], r->seq = s->seq[b], r->kv_dtype = s->kv[c];
          r->causal = s->causal[d];
          if (!r->kv_heads) r->kv_heads = r->heads;
          if (!r->head_dim_v) r->head_dim_v = r->head_dim;
          snprintf(r->name, sizeof r->name, "%s/%s/S%lld/%s%s", s->name,
                   cp_strategy_name(r->strategy), (long long)r->seq, attn_dtype_name(r->kv_dtype),
                   r->causal ? "/causal" : "");
        }
  return 1;
}

// One item of a list key.
static int list_item(parser *ps, int line, const char *key, const char *v) {
  section *s = &ps->cur;
  int *n = strcmp(key, "strategy") == 0   ? &s->n_strategy
           : strcmp(key, "seq_len") == 0  ? &s->n_seq
           : strcmp(key, "kv_dtype") == 0 ? &s->n_kv
                                          : &s->n_causal;
  if (*n >= kListMax) return fail_at(ps, line, "%s: more than %d values", key, kListMax);
  bool ok;
  if (n == &s->n_strategy)
    ok = cp_strategy_parse(v, &s->strategy[*n]);
  else if (n == &s->n_seq)
    ok = cli_parse_i64(v, 1, INT64_C(1) << 40, &s->seq[*n]);
  else if (n == &s->n_kv)
    ok = attn_dtype_parse(v, &s->kv[*n]);
  else
    ok = parse_bool(v, &s->causal[*n]);
  if (!ok) return fail_at(ps, line, "%s: bad value '%s'", key, v);
  (*n)++;
  return 1;
}

static int scalar(parser *ps, int line, const char *key, const char *v) {
  cp_run_spec *r = &ps->cur.base;
  int64_t x;
  double f;
  struct {
    const char *key;
    int64_t *dest;
    int64_t min, max;
  } ints[] = {{"batch", &r->batch, 1, 1 << 20},
              {"heads", &r->heads, 1, 1 << 20},
              {"kv_heads", &r->kv_heads, 1, 1 << 20},
              {"head_dim", &r->head_dim, 1, 1 << 20},
              {"head_dim_v", &r->head_dim_v, 1, 1 << 20}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (strcmp(key, ints[i].key) == 0) {
      if (!cli_parse_i64(v, ints[i].min, ints[i].max, ints[i].dest))
        return fail_at(ps, line, "%s: '%s' is not an integer in [%lld, %lld]", key, v,
                       (long long)ints[i].min, (long long)ints[i].max);
      return 1;
    }
  if (strcmp(key, "threads") == 0) {
    if (!cli_parse_i64(v, 0, ATTN_MAX_THREADS, &x)) return fail_at(ps, line, "threads: '%s'", v);
    r->threads = (int)x;
  } else if (strcmp(key, "seed") == 0) {
    if (!cli_parse_i64(v, 0, INT64_MAX, &x)) return fail_at(ps, line, "seed: '%s'", v);
    r->seed = (uint64_t)x;
  } else if (strcmp(key, "alibi") == 0 || strcmp(key, "softcap") == 0) {
    if (!cli_parse_double(v, &f) || f < 0) return fail_at(ps, line, "%s: '%s'", key, v);
    if (f > 0 && (float)f == 0.0f)
      return fail_at(ps, line, "%s: '%s' rounds to 0 in float32 (use 0 to turn it off)", key, v);
    *(key[0] == 'a' ? &r->alibi : &r->softcap) = (float)f;
  } else if (strcmp(key, "window") == 0) {
    if (!cp_parse_window(v, &r->window, &r->window_left, &r->window_right))
      return fail_at(ps, line, "window: '%s' is not none or LEFT:RIGHT", v);
  } else if (strcmp(key, "lse") == 0 || strcmp(key, "check") == 0) {
    if (!parse_bool(v, key[0] == 'l' ? &r->lse : &r->check))
      return fail_at(ps, line, "%s: '%s' is not true or false", key, v);
  } else if (strcmp(key, "kernel") == 0) {
    char e[512];
    if (!cp_pick_kernel(v, r->kernel, sizeof r->kernel, e, sizeof e))
      return fail_at(ps, line, "kernel: %s", e);
  } else {
    return fail_at(ps, line, "unknown key '%s'", key);
  }
  return 1;
}

static bool g_continued;  // the line being parsed is indented (reader below)

static int handler(void *user, const char *sec, const char *key, const char *value, int line) {
  parser *ps = user;
  if (ps->failed) return 0;
  if (!ps->open || strcmp(sec, ps->cur.name) != 0) {
    if (!close_section(ps)) return 0;
    if (strlen(sec) >= sizeof ps->cur.name) return fail_at(ps, line, "section name too long");
    section_defaults(&ps->cur, sec, line);
    ps->open = true;
  }
  const bool list = strcmp(key, "strategy") == 0 || strcmp(key, "seq_len") == 0 ||
                    strcmp(key, "kv_dtype") == 0 || strcmp(key, "causal") == 0;
  // A key once per section; an indented line continues the key before it (inih), which
  // adds to a list and is refused for a one-value key.
  section *sc = &ps->cur;
  bool seen = false;
  for (int i = 0; i < sc->n_seen && !seen; i++) seen = strcmp(sc->seen[i], key) == 0;
  if (seen && !(g_continued && list))
    return fail_at(ps, line, g_continued ? "%s takes one value" : "%s given twice in [%s]", key,
                   sc->name);
  if (!seen && sc->n_seen < (int)(sizeof sc->seen / sizeof sc->seen[0]))
    snprintf(sc->seen[sc->n_seen++], sizeof sc->seen[0], "%s", key);
  if (!*value) return fail_at(ps, line, "%s: empty value", key);
  if (!list) return scalar(ps, line, key, value);
  // Items split by hand (strtok_r would skip empty ones): "64,,96" is an error, not 2 items.
  for (const char *t = value;; t++) {
    const char *end = strchr(t, ',');
    char item[64];
    while (t != end && (*t == ' ' || *t == '\t')) t++;
    size_t m = end ? (size_t)(end - t) : strlen(t);
    while (m && (t[m - 1] == ' ' || t[m - 1] == '\t')) m--;
    if (!m) return fail_at(ps, line, "%s: empty item in '%s'", key, value);
    if (m >= sizeof item) return fail_at(ps, line, "%s: item too long in '%s'", key, value);
    memcpy(item, t, m), item[m] = '\0';
    if (!list_item(ps, line, key, item)) return 0;
    if (!end) break;
    t = end;
  }
  return 1;
}

// inih reports no line to the handler; count lines with a wrapper reader.
typedef struct line_reader {
  FILE *f;
  int line;
  parser *ps;
} line_reader;

static char *reader(char *str, int num, void *stream) {
  line_reader *lr = stream;
  char *r = fgets(str, num, lr->f);
  if (r) lr->line++;
  g_continued = r && (r[0] == ' ' || r[0] == '\t');  // inih: a continuation of the key before
  return r;
}

static line_reader *g_lr;
static int handler_lines(void *user, const char *sec, const char *key, const char *value) {
  return handler(user, sec, key, value, g_lr->line);
}

bool cp_config_load(const char *path, cp_runs *runs, char *err, size_t err_len) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, err_len, "%s: cannot open", path);
    return false;
  }
  parser ps = {.path = path, .runs = runs, .err = err, .err_len = err_len};
  line_reader lr = {.f = f, .ps = &ps};
  g_lr = &lr;
  const int rc = ini_parse_stream(reader, &lr, handler_lines, &ps);
  fclose(f);
  if (!ps.failed && rc > 0) fail_at(&ps, rc, "not an INI line");
  if (!ps.failed) close_section(&ps);
  if (!ps.failed && runs->count == 0) fail_at(&ps, 1, "no runs (no [section] with seq_len)");
  return !ps.failed;
}

// ── Validation ─────────────────────────────────────────────────────────────────────────

attn_problem cp_run_problem(const cp_run_spec *r, attn_options *o) {
  attn_problem p = attn_problem_make(r->batch, r->heads, r->kv_heads, r->seq, r->seq, r->head_dim,
                                     r->head_dim_v, r->causal);
  p.kv_dtype = r->kv_dtype;
  *o = (attn_options){.window = r->window,
                      .window_left = r->window_left,
                      .window_right = r->window_right,
                      .alibi_max_bias = r->alibi,
                      .softcap = r->softcap};
  const bool any = r->window || r->alibi != 0.0f || r->softcap != 0.0f;
  p.opts = any ? o : NULL;
  return p;
}

// FNV-1a over n bytes, continuing from h.
static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

uint64_t cp_runs_digest(const cp_runs *runs) {
  uint64_t h = fnv1a(0xcbf29ce484222325ull, &runs->count, sizeof runs->count);
  for (size_t i = 0; i < runs->count; i++) {
    const cp_run_spec *r = &runs->run[i];
    const int64_t v[] = {r->strategy,     r->batch,
                         r->heads,        r->kv_heads,
                         r->seq,          r->head_dim,
                         r->head_dim_v,   r->causal,
                         r->lse,          r->check,
                         r->window,       r->window_left,
                         r->window_right, (int64_t)r->kv_dtype,
                         (int64_t)r->seed};
    const float f[] = {r->alibi, r->softcap};
    h = fnv1a(h, r->name, strlen(r->name));
    h = fnv1a(h, v, sizeof v);
    h = fnv1a(h, f, sizeof f);
  }
  return h;
}

bool cp_run_validate(const cp_run_spec *r, int ranks, char *err, size_t err_len) {
  attn_options o;
  const attn_problem p = cp_run_problem(r, &o);
  char e[256];
  if (!attn_problem_validate(&p, e, sizeof e)) {
    snprintf(err, err_len, "%s: invalid problem: %s", r->name, e);
    return false;
  }
  if (!r->kernel[0]) {
    snprintf(err, err_len, "%s: no kernel given, and none of %s is available here", r->name,
             CP_DEFAULT_KERNELS);
    return false;
  }
  const attn_kernel *k = attn_kernel_find(r->kernel);
  if (!k) {
    snprintf(err, err_len, "%s: unknown kernel '%s' (attnbench list)", r->name, r->kernel);
    return false;
  }
  if (!attn_kernel_available(k, e, sizeof e)) {
    snprintf(err, err_len, "%s: kernel %s is not available here: %s", r->name, r->kernel, e);
    return false;
  }
  if (ranks > CP_MAX_STEPS) {
    snprintf(err, err_len, "%s: at most %d ranks (got %d)", r->name, CP_MAX_STEPS, ranks);
    return false;
  }
  const int64_t need = cp_uses_zigzag(r->strategy, r->causal) ? 2 * (int64_t)ranks : ranks;
  if (r->seq < need) {
    snprintf(err, err_len, "%s: %s over %d ranks needs seq_len >= %lld (got %lld)", r->name,
             cp_strategy_name(r->strategy), ranks, (long long)need, (long long)r->seq);
    return false;
  }
  if (r->strategy == CP_ULYSSES && r->heads < ranks) {
    snprintf(err, err_len, "%s: ulysses needs heads >= ranks (heads %lld, ranks %d)", r->name,
             (long long)r->heads, ranks);
    return false;
  }
  // MPI counts are ints: every message and collective buffer must stay within INT_MAX of
  // its unit. Each strategy is checked against the limits it actually meets.
  const double kIntMax = 2147483647.0;
  const bool zz = cp_uses_zigzag(r->strategy, r->causal);
  const double kv_row =
      (double)(r->batch * r->kv_heads) * (double)(attn_kv_row_bytes(r->kv_dtype, r->head_dim) +
                                                  attn_kv_row_bytes(r->kv_dtype, r->head_dim_v));
  int64_t max_rows = 0;
  for (int i = 0; i < ranks; i++) {
    const int64_t rows = cp_shard_of(r->seq, ranks, i, zz).rows;
    max_rows = rows > max_rows ? rows : max_rows;
  }
  if ((r->strategy == CP_RING || r->strategy == CP_ZIGZAG) && (double)max_rows * kv_row > kIntMax) {
    snprintf(err, err_len,
             "%s: a shard's K/V message (%.0f bytes) exceeds MPI's count limit of %d bytes: use "
             "more ranks",
             r->name, (double)max_rows * kv_row, INT_MAX);
    return false;
  }
  if (r->strategy == CP_ALLGATHER && (double)r->seq * kv_row > kIntMax) {
    snprintf(err, err_len,
             "%s: allgather's gathered K/V (%.0f bytes on every rank) exceeds MPI_Allgatherv's "
             "limit of %d bytes (more ranks do not help; use ring or zigzag)",
             r->name, (double)r->seq * kv_row, INT_MAX);
    return false;
  }
  if (r->strategy == CP_ULYSSES) {
    const double buf = cp_ulysses_max_buffer(&p, ranks);
    if (buf > kIntMax) {
      snprintf(err, err_len,
               "%s: a ulysses all-to-all buffer (%.0f bytes) exceeds MPI_Alltoallv's limit of %d "
               "bytes: use more ranks",
               r->name, buf, INT_MAX);
      return false;
    }
  }
  // rank 0 gathers every rank's output and LSE: [B][H][S][Dv + 1] floats in one MPI_Gatherv
  const double out = (double)(r->batch * r->heads) * (double)r->seq * (double)(r->head_dim_v + 1);
  if (out > kIntMax) {
    snprintf(err, err_len,
             "%s: the gathered output and LSE (%.0f floats on rank 0) exceed MPI_Gatherv's limit "
             "of %d elements (more ranks do not help)",
             r->name, out, INT_MAX);
    return false;
  }
  return true;
}
