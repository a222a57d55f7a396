// SPDX-License-Identifier: MIT
// inputs.c — see inputs.h.
#define _POSIX_C_SOURCE 200809L
#include "bench/inputs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check/check.h"
#include "check/inputs.h"  // attn_rand_sinks, attn_rand_mask
#include "common/util.h"   // attn_tensor_bytes
#include "io/fileio.h"
#include "io/npy.h"
#include "machine/topology.h"  // the LLC size

void attn_bench_fill_inputs(const attn_problem *p, float *q, float *k, float *v) {
  attn_problem shape = *p;
  shape.opts = NULL;  // the values depend on the shape and the seed only
  const attn_check_case cc = {.problem = shape, .dist = ATTN_DIST_NORMAL, .seed = ATTN_BENCH_SEED};
  attn_check_fill(&cc, q, k, v);
}

static uint32_t digest_add(uint32_t d, const float *x, size_t n, uint32_t *t) {
  for (size_t i = 0; i < n; i++, (*t)++) {
    uint32_t w;
    memcpy(&w, &x[i], sizeof w);
    d += w * ((2u * *t + 1u) * 0x9E3779B1u);  // unsigned: wraps mod 2^32
  }
  return d;
}

// The same sum over 32-bit words that are not float32 elements (the scalar block).
static uint32_t digest_words(uint32_t d, const uint32_t *w, size_t n, uint32_t *t) {
  for (size_t i = 0; i < n; i++, (*t)++) d += w[i] * ((2u * *t + 1u) * 0x9E3779B1u);
  return d;
}

// An int64 as its (low, high) 32-bit words (two's complement), in w.
static const uint32_t *pair(int64_t x, uint32_t w[2]) {
  w[0] = (uint32_t)((uint64_t)x & 0xFFFFFFFFu);
  w[1] = (uint32_t)((uint64_t)x >> 32);
  return w;
}

// The layout block of a serving problem (inputs.h): kind, page size, pages, row length,
// the offsets, then the page-table entries each sequence uses.
static uint32_t digest_layout(uint32_t d, const attn_problem *p, uint32_t *t) {
  const attn_layout *l = p->layout;
  const bool paged = l->kind == ATTN_LAYOUT_PAGED;
  uint32_t w[2];
  const uint32_t kind = (uint32_t)l->kind;
  d = digest_words(d, &kind, 1, t);
  const int64_t sizes[3] = {paged ? l->page_size : 0, paged ? l->num_pages : 0,
                            paged ? l->pages_per_seq : 0};
  for (int i = 0; i < 3; i++) d = digest_words(d, pair(sizes[i], w), 2, t);
  for (int64_t b = 0; b <= p->batch; b++) d = digest_words(d, pair(l->cu_seqlens_q[b], w), 2, t);
  for (int64_t b = 0; b <= p->batch; b++) d = digest_words(d, pair(l->cu_seqlens_kv[b], w), 2, t);
  for (int64_t b = 0; paged && b < p->batch; b++) {
    const int64_t used = (attn_layout_kv_len(p, b) + l->page_size - 1) / l->page_size;
    for (int64_t i = 0; i < used; i++) {
      const uint32_t e = (uint32_t)l->page_table[b * l->pages_per_seq + i];
      d = digest_words(d, &e, 1, t);
    }
  }
  return d;
}

static uint32_t float_bits(float x) {
  uint32_t w;
  memcpy(&w, &x, sizeof w);
  return w;
}

uint32_t attn_bench_inputs_digest(const attn_problem *p, const float *q, const float *k,
                                  const float *v) {
  uint32_t t = 0, d = 0;
  d = digest_add(d, q, attn_q_elems(p), &t);
  d = digest_add(d, k, attn_k_elems(p), &t);
  d = digest_add(d, v, attn_v_elems(p), &t);
  const attn_options none = {0}, *o = p->opts ? p->opts : &none;
  const size_t heads = (size_t)p->heads;
  const size_t mask_n =
      (o->mask_per_head ? (size_t)p->batch * heads : 1) * (size_t)p->seq_q * (size_t)p->seq_kv;
  if (o->alibi_slopes) d = digest_add(d, o->alibi_slopes, heads, &t);
  if (o->sinks) d = digest_add(d, o->sinks, heads, &t);
  if (o->mask) d = digest_add(d, o->mask, mask_n, &t);
  // the scalar block (inputs.h): sizes and window sides as (low, high) word pairs
  const uint64_t wl = o->window ? (uint64_t)o->window_left : 0,
                 wr = o->window ? (uint64_t)o->window_right : 0;
  const int64_t dims[7] = {p->batch,  p->heads,       p->kv_heads,  p->seq_q,
                           p->seq_kv, p->head_dim_qk, p->head_dim_v};
  uint32_t w[ATTN_BENCH_DIGEST_SCALARS];
  size_t n = 0;
  for (int i = 0; i < 7; i++) {
    w[n++] = (uint32_t)((uint64_t)dims[i] & 0xFFFFFFFFu);
    w[n++] = (uint32_t)((uint64_t)dims[i] >> 32);
  }
  w[n++] = p->causal ? 1u : 0u;
  w[n++] = float_bits(p->scale);
  w[n++] = o->align == ATTN_ALIGN_TOP_LEFT ? 1u : 0u;
  w[n++] = o->window ? 1u : 0u;
  w[n++] = (uint32_t)(wl & 0xFFFFFFFFu), w[n++] = (uint32_t)(wl >> 32);
  w[n++] = (uint32_t)(wr & 0xFFFFFFFFu), w[n++] = (uint32_t)(wr >> 32);
  w[n++] = float_bits(o->softcap);
  w[n++] = float_bits(o->alibi_max_bias);
  w[n++] = o->alibi_slopes ? 1u : 0u;
  w[n++] = o->sinks ? 1u : 0u;
  w[n++] = o->mask ? 1u : 0u;
  w[n++] = o->mask && o->mask_per_head ? 1u : 0u;
  w[n++] = o->lse ? 1u : 0u;
  d = digest_words(d, w, n, &t);
  return p->layout ? digest_layout(d, p, &t) : d;
}

// ── a growable text buffer for the index ──────────────────────────────────────────────
typedef struct sbuf {
  char *s;
  size_t len, cap;
  bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = true;
      return;
    }
    if (b->s && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    const size_t cap = (b->cap + (size_t)n + 1) * 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = true;
      return;
    }
    b->s = s, b->cap = cap;
  }
}

// A JSON string (point names are ASCII without quotes; escape anyway).
static void sb_string(sbuf *b, const char *s) {
  sb_printf(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      sb_printf(b, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      sb_printf(b, "\\u%04x", (unsigned)(unsigned char)*s);
    else
      sb_printf(b, "%c", *s);
  }
  sb_printf(b, "\"");
}

// The point name without "<kernel>/" and the "/T<n>" segment (and what follows it).
static void point_key(const attn_bench_point *pt, char *buf, size_t len) {
  const char *s = pt->name + strlen(pt->kernel->name);
  if (*s == '/') s++;
  snprintf(buf, len, "%s", s);
  for (char *t = strstr(buf, "/T"); t; t = strstr(t + 1, "/T")) {
    const char *d = t + 2;
    if (*d < '0' || *d > '9') continue;
    while (*d >= '0' && *d <= '9') d++;
    if (*d == '\0' || *d == '/') {
      memmove(t, d, strlen(d) + 1);
      break;
    }
  }
}

static bool same_options(const attn_options *a, const attn_options *b) {
  if (!a || !b) return a == b;
  return a->align == b->align && a->window == b->window && a->window_left == b->window_left &&
         a->window_right == b->window_right && a->softcap == b->softcap &&
         a->alibi_max_bias == b->alibi_max_bias && a->alibi_slopes == b->alibi_slopes &&
         a->sinks == b->sinks && a->mask == b->mask && a->mask_per_head == b->mask_per_head &&
         (a->lse != NULL) == (b->lse != NULL);
}

// The sweep's option keys (attn_bench_opts: the arrays are generated from fixed seeds).
static bool same_bench_opts(const attn_bench_opts *a, const attn_bench_opts *b) {
  return a->align == b->align && a->window == b->window && a->window_left == b->window_left &&
         a->window_right == b->window_right && a->softcap == b->softcap &&
         a->alibi_max_bias == b->alibi_max_bias && a->sinks == b->sinks && a->mask == b->mask &&
         a->lse == b->lse;
}

// The same serving batch (or both dense): lengths, kind, pages and page table.
static bool same_layout(const attn_problem *x, const attn_problem *y) {
  const attn_layout *a = x->layout, *b = y->layout;
  if (!a || !b) return a == b;
  if (a->kind != b->kind || x->batch != y->batch) return false;
  const size_t n = (size_t)x->batch + 1;
  if (memcmp(a->cu_seqlens_q, b->cu_seqlens_q, n * sizeof(int64_t)) ||
      memcmp(a->cu_seqlens_kv, b->cu_seqlens_kv, n * sizeof(int64_t)))
    return false;
  if (a->kind != ATTN_LAYOUT_PAGED) return true;
  return a->page_size == b->page_size && a->num_pages == b->num_pages &&
         a->pages_per_seq == b->pages_per_seq &&
         !memcmp(a->page_table, b->page_table,
                 (size_t)(x->batch * a->pages_per_seq) * sizeof(int32_t));
}

static bool same_input(const attn_bench_point *a, const attn_bench_point *b) {
  const attn_problem *x = &a->problem, *y = &b->problem;
  return same_layout(x, y) && x->batch == y->batch && x->heads == y->heads &&
         x->kv_heads == y->kv_heads && x->seq_q == y->seq_q && x->seq_kv == y->seq_kv &&
         x->head_dim_qk == y->head_dim_qk && x->head_dim_v == y->head_dim_v &&
         x->causal == y->causal && x->scale == y->scale && same_options(x->opts, y->opts) &&
         same_bench_opts(&a->opts, &b->opts);
}

static bool write_npy(const char *dir, const char *file, const float *data, int ndim,
                      const int64_t *shape, char *err, size_t err_len) {
  char path[ATTN_OUT_PATH_MAX];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path)
    return attn_path_error(err, err_len, dir, "path too long");
  return npy_write_f32(path, data, ndim, shape, err, err_len);
}

// The files' shapes of a serving point (inputs.h): Q [total_q][heads][Dqk] (sq, 3-D);
// K, V packed [total_kv][kv_heads][D] (ragged) or the pools [num_pages][kv_heads]
// [page_size][D] (paged). Returns the K/V files' dimensions (4 for a dense point, whose
// shapes stay as given).
static int layout_shapes(const attn_problem *p, int64_t sq[4], int64_t sk[4], int64_t sv[4]) {
  const attn_layout *l = p->layout;
  if (!l) return 4;
  sq[0] = (int64_t)attn_layout_total_q(p), sq[1] = p->heads, sq[2] = p->head_dim_qk;
  if (l->kind == ATTN_LAYOUT_PAGED) {
    const int64_t k[4] = {l->num_pages, p->kv_heads, l->page_size, p->head_dim_qk};
    memcpy(sk, k, sizeof k), memcpy(sv, k, sizeof k);
    sv[3] = p->head_dim_v;
    return 4;
  }
  const int64_t k[3] = {l->cu_seqlens_kv[p->batch], p->kv_heads, p->head_dim_qk};
  memcpy(sk, k, sizeof k), memcpy(sv, k, sizeof k);
  sv[2] = p->head_dim_v;
  return 3;
}

// The index's "layout" of a serving point: kind, offsets, and the page table (the rows'
// used entries only: sequence b's ceil(kv_len_b / page_size) pages).
static void layout_manifest(sbuf *ix, const attn_problem *p) {
  const attn_layout *l = p->layout;
  const bool paged = l->kind == ATTN_LAYOUT_PAGED;
  sb_printf(ix, ",\n   \"layout\": {\"kind\": \"%s\"", paged ? "paged" : "ragged");
  if (paged)
    sb_printf(ix, ", \"page_size\": %lld, \"num_pages\": %lld, \"pages_per_seq\": %lld",
              (long long)l->page_size, (long long)l->num_pages, (long long)l->pages_per_seq);
  const int64_t *cu[2] = {l->cu_seqlens_q, l->cu_seqlens_kv};
  for (int a = 0; a < 2; a++) {
    sb_printf(ix, ", \"cu_seqlens_%s\": [", a ? "kv" : "q");
    for (int64_t b = 0; b <= p->batch; b++)
      sb_printf(ix, "%s%lld", b ? ", " : "", (long long)cu[a][b]);
    sb_printf(ix, "]");
  }
  if (paged) {
    sb_printf(ix, ",\n    \"page_table\": [");
    for (int64_t b = 0; b < p->batch; b++) {
      const int64_t used = (attn_layout_kv_len(p, b) + l->page_size - 1) / l->page_size;
      sb_printf(ix, "%s[", b ? ", " : "");
      for (int64_t i = 0; i < used; i++)
        sb_printf(ix, "%s%d", i ? ", " : "", (int)l->page_table[b * l->pages_per_seq + i]);
      sb_printf(ix, "]");
    }
    sb_printf(ix, "]");
  }
  sb_printf(ix, "}");
}

// One input set: the tensors and option arrays as files, its entry in the index.
static bool export_set(const attn_bench_point *pt, size_t n, const char *dir, sbuf *ix, char *err,
                       size_t err_len) {
  const attn_problem *p = &pt->problem;
  const size_t nq = attn_q_elems(p), nk = attn_k_elems(p), nv = attn_v_elems(p);
  float *q = malloc((nq ? nq : 1) * sizeof *q), *k = malloc((nk ? nk : 1) * sizeof *k),
        *v = malloc((nv ? nv : 1) * sizeof *v);
  bool ok = q && k && v;
  if (!ok) snprintf(err, err_len, "out of memory for the inputs of %s", pt->name);
  char f[3][64];
  int64_t sq[4] = {p->batch, p->heads, p->seq_q, p->head_dim_qk},
          sk[4] = {p->batch, p->kv_heads, p->seq_kv, p->head_dim_qk},
          sv[4] = {p->batch, p->kv_heads, p->seq_kv, p->head_dim_v};
  const int nd = layout_shapes(p, sq, sk, sv);
  snprintf(f[0], sizeof f[0], "in%zu.q.npy", n);
  snprintf(f[1], sizeof f[1], "in%zu.k.npy", n);
  snprintf(f[2], sizeof f[2], "in%zu.v.npy", n);
  if (ok) {
    attn_bench_fill_inputs(p, q, k, v);
    ok = write_npy(dir, f[0], q, p->layout ? 3 : 4, sq, err, err_len) &&
         write_npy(dir, f[1], k, nd, sk, err, err_len) &&
         write_npy(dir, f[2], v, nd, sv, err, err_len);
  }
  // A sweep's option keys (pt->opts) become the attn_options the point runner attaches
  // (bench/point.c: the same generators and seeds), or the plan's own (p->opts).
  attn_options swept = {0};
  float *sinks = NULL, *mask = NULL;
  const attn_options *o = p->opts;
  if (attn_bench_opts_any(&pt->opts)) {
    attn_bench_opts_apply(&pt->opts, &swept);
    if (pt->opts.sinks && ok) {
      sinks = malloc((size_t)p->heads * sizeof *sinks);
      ok = sinks != NULL;
      if (ok) attn_bench_sinks(p->heads, ATTN_BENCH_SINK_SEED, sinks);
    }
    if (pt->opts.mask && ok) {
      mask = malloc((size_t)p->seq_q * (size_t)p->seq_kv * sizeof *mask);
      ok = mask != NULL;
      if (ok) attn_bench_mask(p->seq_q, p->seq_kv, ATTN_BENCH_MASK_SEED, mask);
    }
    if (!ok) snprintf(err, err_len, "out of memory for the option arrays of %s", pt->name);
    swept.sinks = sinks;
    swept.mask = mask;
    swept.lse = pt->opts.lse ? (float *)&swept : NULL;  // only "wanted" is exported
    o = &swept;
  }
  // The digest of the problem as the point runs it: Q, K, V, the option arrays and values.
  attn_problem pd = *p;
  pd.opts = o;
  const unsigned long digest = ok ? (unsigned long)attn_bench_inputs_digest(&pd, q, k, v) : 0ul;
  free(q);
  free(k);
  free(v);
  char key[sizeof pt->name];
  point_key(pt, key, sizeof key);
  sb_printf(ix, "%s\n  \"in%zu\": {\"key\": ", n ? "," : "", n);
  sb_string(ix, key);
  sb_printf(ix, ", \"q\": \"%s\", \"k\": \"%s\", \"v\": \"%s\", \"digest\": %lu,\n", f[0], f[1],
            f[2], digest);
  sb_printf(ix,
            "   \"problem\": {\"batch\": %lld, \"heads\": %lld, \"kv_heads\": %lld, \"seq_q\": "
            "%lld, \"seq_kv\": %lld, \"head_dim_qk\": %lld, \"head_dim_v\": %lld, \"causal\": "
            "%s, \"scale\": %.9g}",
            (long long)p->batch, (long long)p->heads, (long long)p->kv_heads, (long long)p->seq_q,
            (long long)p->seq_kv, (long long)p->head_dim_qk, (long long)p->head_dim_v,
            p->causal ? "true" : "false", (double)p->scale);
  if (p->layout) layout_manifest(ix, p);
  if (o && ok) {  // the options as attn_options holds them; arrays as files
    sb_printf(ix,
              ",\n   \"options\": {\"align\": \"%s\", \"window\": %s, \"window_left\": %lld, "
              "\"window_right\": %lld, \"softcap\": %.9g, \"alibi_max_bias\": %.9g, \"lse\": %s",
              o->align == ATTN_ALIGN_TOP_LEFT ? "top-left" : "bottom-right",
              o->window ? "true" : "false", (long long)o->window_left, (long long)o->window_right,
              (double)o->softcap, (double)o->alibi_max_bias, o->lse ? "true" : "false");
    const int64_t heads[1] = {p->heads}, m2[2] = {p->seq_q, p->seq_kv},
                  m4[4] = {p->batch, p->heads, p->seq_q, p->seq_kv};
    const struct {
      const char *name;
      const float *data;
      int ndim;
      const int64_t *shape;
    } arrays[] = {{"alibi_slopes", o->alibi_slopes, 1, heads},
                  {"sinks", o->sinks, 1, heads},
                  {"mask", o->mask, o->mask_per_head ? 4 : 2, o->mask_per_head ? m4 : m2}};
    for (size_t i = 0; ok && i < sizeof arrays / sizeof arrays[0]; i++) {
      if (!arrays[i].data) continue;
      char file[64];
      snprintf(file, sizeof file, "in%zu.%s.npy", n, arrays[i].name);
      ok = write_npy(dir, file, arrays[i].data, arrays[i].ndim, arrays[i].shape, err, err_len);
      sb_printf(ix, ", \"%s\": \"%s\"", arrays[i].name, file);
    }
    sb_printf(ix, "}");
  }
  free(sinks);
  free(mask);
  sb_printf(ix, "}");
  return ok;
}

bool attn_bench_export_inputs(const attn_bench_plan *plan, const char *dir, char *err,
                              size_t err_len) {
  struct stat st;
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return attn_path_error(err, err_len, dir, "cannot create the directory: %s", strerror(errno));
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return attn_path_error(err, err_len, dir, "not a directory");
  size_t *set_of = calloc(plan->count ? plan->count : 1, sizeof *set_of);
  size_t *first = calloc(plan->count ? plan->count : 1, sizeof *first);  // set -> a point
  sbuf ix = {0};
  bool ok = set_of && first;
  if (!ok) snprintf(err, err_len, "out of memory for %zu points", plan->count);
  sb_printf(&ix,
            "{\"format\": \"attnbench-inputs-2\",\n \"generator\": \"attn_check_fill, normal "
            "distribution (kernels/check)\",\n \"seed\": %d,\n \"digest\": \"sum of "
            "w[t] * ((2t+1) * 0x9E3779B1) mod 2^32, w = bits of Q|K|V|slopes|sinks|mask, then "
            "the sizes and option scalars (harness/bench/inputs.h)\",\n "
            "\"inputs\": {",
            ATTN_BENCH_SEED);
  size_t sets = 0;
  for (size_t i = 0; ok && i < plan->count; i++) {
    size_t s = 0;
    while (s < sets && !same_input(&plan->points[first[s]], &plan->points[i])) s++;
    set_of[i] = s;
    if (s < sets) continue;
    first[sets++] = i;
    ok = export_set(&plan->points[i], s, dir, &ix, err, err_len);
  }
  sb_printf(&ix, "},\n \"points\": {");
  for (size_t i = 0; ok && i < plan->count; i++) {
    sb_printf(&ix, "%s\n  ", i ? "," : "");
    sb_string(&ix, plan->points[i].name);
    sb_printf(&ix, ": {\"inputs\": \"in%zu\", \"input_copies\": %d}", set_of[i],
              attn_bench_input_copies(&plan->points[i]));
  }
  sb_printf(&ix, "}}\n");
  if (ok && ix.oom) {
    snprintf(err, err_len, "out of memory writing the index");
    ok = false;
  }
  if (ok) {
    char path[ATTN_OUT_PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/index.json", dir) >= sizeof path) {
      ok = attn_path_error(err, err_len, dir, "path too long");
    } else {
      const attn_buf part = {ix.s, ix.len};
      ok = attn_write_file_atomic(path, &part, 1, err, err_len);
    }
  }
  free(ix.s);
  free(set_of);
  free(first);
  return ok;
}

// ── what the timed copies and the option arrays hold (declared in inputs.h) ──────────

// Both from the one seeded generator of the checker (check/inputs.h), in the forms these
// arrays were first recorded with, so their values are unchanged.
void attn_bench_sinks(int64_t heads, uint64_t seed, float *out) {
  attn_rand_sinks(out, (size_t)heads, 0.0, seed, ATTN_NORMAL_U1_NONZERO);
}

void attn_bench_mask(int64_t seq_q, int64_t seq_kv, uint64_t seed, float *out) {
  attn_rand_mask(out, (size_t)seq_q * (size_t)seq_kv, (size_t)seq_q, (size_t)seq_kv,
                 ATTN_MASK_STYLE_BENCH, seed);
}

// The copies of Q, K, V, O a cold point cycles through: enough to exceed the LLC by
// ATTN_BENCH_COLD_LLC_FACTOR (at least ATTN_BENCH_COLD_MIN_BYTES), at most
// ATTN_BENCH_COLD_MAX_COPIES; a warm point has one.
int attn_bench_input_copies(const attn_bench_point *pt) {
  if (!pt->cold_inputs) return 1;
  const uint64_t llc = attn_topology_llc_bytes(attn_topology_get());
  uint64_t want = ATTN_BENCH_COLD_LLC_FACTOR * llc;
  if (want < ATTN_BENCH_COLD_MIN_BYTES) want = ATTN_BENCH_COLD_MIN_BYTES;
  const uint64_t one = attn_tensor_bytes(&pt->problem);
  const uint64_t n = one ? (want + one - 1) / one : 1;
  return n < 1 ? 1 : n > ATTN_BENCH_COLD_MAX_COPIES ? ATTN_BENCH_COLD_MAX_COPIES : (int)n;
}
