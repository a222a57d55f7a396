// SPDX-License-Identifier: MIT
// Sweep configs, second half: a validated sweep (config_sweep.h) → the cartesian product
// of its lists as benchmark points, each validated and named; points another sweep
// already produced are dropped. Also the names and values of the option keys' values, and
// attn_bench_plan_load (config.c reads and validates; this file counts and expands).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/config_sweep.h"
#include "bench/serving.h"
#include "core/settings.h"  // register-tile variant names

bool attn_bench_opts_any(const attn_bench_opts *o) {
  return o->align != ATTN_ALIGN_BOTTOM_RIGHT || o->window || o->softcap != 0.0f ||
         o->alibi_max_bias != 0.0f || o->sinks || o->mask || o->lse;
}

static void window_side(int64_t v, char *buf, size_t len) {
  if (v == ATTN_WINDOW_UNBOUNDED)
    snprintf(buf, len, "inf");
  else
    snprintf(buf, len, "%lld", (long long)v);
}

size_t attn_bench_opts_name(const attn_bench_opts *o, char *buf, size_t len) {
  // need: the whole name's length so far. While need < len the text is whole; past it buf
  // keeps a terminated prefix and every later part writes nothing (the caller refuses it).
  size_t need = 0;
#define OPT_PUT(...)                                                         \
  do {                                                                       \
    const size_t at_ = need < len ? need : len;                              \
    const int w_ = snprintf(len ? buf + at_ : NULL, len - at_, __VA_ARGS__); \
    need += w_ > 0 ? (size_t)w_ : 0;                                         \
  } while (0)
  if (len) buf[0] = '\0';
  if (o->align == ATTN_ALIGN_TOP_LEFT) OPT_PUT("/top-left");
  if (o->window) {
    char l[24], r[24];
    window_side(o->window_left, l, sizeof l);
    window_side(o->window_right, r, sizeof r);
    OPT_PUT("/win%s:%s", l, r);
  }
  // %.9g round-trips a float: two different values never print alike.
  if (o->softcap != 0.0f) OPT_PUT("/softcap%.9g", (double)o->softcap);
  if (o->alibi_max_bias != 0.0f) OPT_PUT("/alibi%.9g", (double)o->alibi_max_bias);
  if (o->sinks) OPT_PUT("/sinks");
  if (o->mask) OPT_PUT("/mask");
  if (o->lse) OPT_PUT("/lse");
#undef OPT_PUT
  return need;
}

void attn_bench_opts_apply(const attn_bench_opts *o, attn_options *out) {
  memset(out, 0, sizeof *out);
  out->align = o->align;
  out->window = o->window;
  out->window_left = o->window_left;
  out->window_right = o->window_right;
  out->softcap = o->softcap;
  out->alibi_max_bias = o->alibi_max_bias;
}

// Combination number `index` of a sweep's option lists (mixed radix, align slowest).
size_t config_option_combinations(const sweep *s) {
  size_t n = 1;
  for (int i = 0; i < kOptKeys; i++) n *= s->opts[i].n ? (size_t)s->opts[i].n : 1;
  return n;
}

attn_bench_opts config_option_combination(const sweep *s, size_t index) {
  attn_bench_opts o;
  memset(&o, 0, sizeof o);
  for (int i = kOptKeys - 1; i >= 0; i--) {
    const size_t n = s->opts[i].n ? (size_t)s->opts[i].n : 1;
    const size_t k = index % n;
    index /= n;
    if (!s->opts[i].n) continue;
    const attn_bench_opts *v = &s->opts[i].v[k];
    switch (i) {
      case kOptAlign:
        o.align = v->align;
        break;
      case kOptWindow:
        o.window = v->window;
        o.window_left = v->window_left;
        o.window_right = v->window_right;
        break;
      case kOptSoftcap:
        o.softcap = v->softcap;
        break;
      case kOptAlibi:
        o.alibi_max_bias = v->alibi_max_bias;
        break;
      case kOptSinks:
        o.sinks = v->sinks;
        break;
      case kOptMask:
        o.mask = v->mask;
        break;
      default:
        o.lse = v->lse;
        break;
    }
  }
  return o;
}

size_t attn_bench_point_name(const attn_kernel *k, const attn_problem *p, int threads, char *buf,
                             size_t len) {
  char dv[24] = "", kv[16] = "", mode[24] = "";
  if (p->head_dim_v != p->head_dim_qk) snprintf(dv, sizeof dv, "/Dv%lld", (long long)p->head_dim_v);
  if (p->kv_dtype != ATTN_DTYPE_F32) snprintf(kv, sizeof kv, "/%s", attn_dtype_name(p->kv_dtype));
  if (p->compute != ATTN_COMPUTE_F32)
    snprintf(mode, sizeof mode, "/compute:%s", attn_compute_name(p->compute));
  const int w = snprintf(buf, len, "%s/B%lld/H%lld/KV%lld/Sq%lld/Skv%lld/D%lld%s/%s%s%s/T%d",
                         k->name, (long long)p->batch, (long long)p->heads, (long long)p->kv_heads,
                         (long long)p->seq_q, (long long)p->seq_kv, (long long)p->head_dim_qk, dv,
                         p->causal ? "causal" : "noncausal", kv, mode, threads);
  return w > 0 ? (size_t)w : 0;
}

static uint64_t name_hash(const char *s) {  // FNV-1a, 64-bit
  uint64_t h = UINT64_C(14695981039346656037);
  for (; *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
  return h;
}

// The slot holding name, or the empty slot where it belongs.
static size_t *slot_for(const plan_builder *b, const char *name) {
  const size_t mask = b->nslots - 1;
  for (size_t i = (size_t)name_hash(name) & mask;; i = (i + 1) & mask)
    if (b->slots[i] == SIZE_MAX || strcmp(b->pts[b->slots[i]].name, name) == 0) return &b->slots[i];
}

static bool grow(plan_builder *b) {
  const size_t cap = b->cap ? 2 * b->cap : 64;
  attn_bench_point *p = realloc(b->pts, cap * sizeof *p);
  if (!p) return false;
  b->pts = p;
  b->cap = cap;
  size_t *slots = malloc(2 * cap * sizeof *slots);
  if (!slots) return false;
  free(b->slots);
  b->slots = slots;
  b->nslots = 2 * cap;
  for (size_t i = 0; i < b->nslots; i++) b->slots[i] = SIZE_MAX;
  for (size_t i = 0; i < b->n; i++) *slot_for(b, b->pts[i].name) = i;
  return true;
}

// Adds pt unless a point of the same name is planned (the same measurement from another
// sweep, or from this one). Returns 0 (added or already there), -1 (out of memory), or 1
// when the planned point is timed with other repetitions or min_time than pt: one name is
// one measurement, so the config must say which (*prev: the planned point).
static int push(plan_builder *b, const attn_bench_point *pt, const attn_bench_point **prev) {
  if (b->n == b->cap && !grow(b)) return -1;
  size_t *slot = slot_for(b, pt->name);
  if (*slot != SIZE_MAX) {
    *prev = &b->pts[*slot];
    return (*prev)->repetitions != pt->repetitions || (*prev)->min_time != pt->min_time;
  }
  *slot = b->n;
  b->pts[b->n++] = *pt;
  return 0;
}

// Number of points a sweep expands to before duplicates are dropped: the product of its
// list lengths, saturated at limit + 1 (each factor is >= 1, so no overflow).
size_t config_sweep_points(const sweep *s, const attn_bench_overrides *ov, size_t limit) {
  const size_t f[] = {
      ov && ov->kernel_count ? ov->kernel_count : (size_t)s->nk,
      ov && ov->thread_count ? ov->thread_count : (size_t)s->threads.n,
      (size_t)s->batch.n,
      (size_t)s->heads.n,
      s->kv_heads.n ? (size_t)s->kv_heads.n : 1,
      s->d_model.n ? (size_t)s->d_model.n : (size_t)s->head_dim.n,
      s->head_dim_v.n ? (size_t)s->head_dim_v.n : 1,
      s->seq_kv.n ? (size_t)s->seq_kv.n : 1,
      (size_t)s->seq_len.n,
      (size_t)s->causal.n,
      config_option_combinations(s),  // each list <= kMaxValues: overflow-free for 6 keys
      (size_t)s->n_kv_dtypes,
      config_serving_combinations(s),
      ov && ov->compute_count ? ov->compute_count : (size_t)s->n_computes,
  };
  size_t n = 1;
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    if (f[i] == 0) return 0;
    if (n > (limit + 1) / f[i]) return limit + 1;
    n *= f[i];
  }
  return n > limit ? limit + 1 : n;
}

// The point's name (attn_bench_point.name): the shape's, the serving batch's part, the
// options', then "/cold", "/rt<index>", "/split<N>". False when it does not fit: a name is
// never cut (a cut name could equal another point's, and push would drop that point).
static bool name_point(attn_bench_point *pt, const char *serving, int rt) {
  char *const buf = pt->name;
  const size_t len = sizeof pt->name;
  size_t n = attn_bench_point_name(pt->kernel, &pt->problem, pt->threads, buf, len);
#define NAME_PUT(...)                                       \
  do {                                                      \
    if (n >= len) return false;                             \
    const int w_ = snprintf(buf + n, len - n, __VA_ARGS__); \
    n += w_ > 0 ? (size_t)w_ : 0;                           \
  } while (0)
  NAME_PUT("%s", serving);
  if (attn_bench_opts_any(&pt->opts)) {
    if (n >= len) return false;
    n += attn_bench_opts_name(&pt->opts, buf + n, len - n);
  }
  if (pt->cold_inputs) NAME_PUT("/cold");
  if (rt >= 0) NAME_PUT("/rt%d", rt);
  if (pt->kv_split >= 0) NAME_PUT("/split%d", pt->kv_split);
#undef NAME_PUT
  return n < len;
}

// The line of the key that set a refused field: the field's own key (kv_dtype, softcap,
// ...), or for the sizes of serving combination isv's batch the line of its q_lens item
// when no sequence has a query token (seq_q, the longest q_len, is 0) and of its kv_lens
// item when every context is empty; 0 if none (the caller then names the section's line).
static int field_line(const parse_ctx *c, const sweep *s, size_t isv, const attn_problem *p,
                      attn_field f) {
  if (f == ATTN_FIELD_SIZES && p->layout && (p->seq_q == 0 || p->seq_kv == 0)) {
    const int q = config_serving_line(s, isv, true), kv = config_serving_line(s, isv, false);
    return p->seq_q == 0 && q ? q : kv;
  }
  return config_line_of(c, s->name, attn_field_name(f));
}

// Each field of pt's problem (with its option values) by the problem's rule; false with
// the error at the line of the key that set the refused field, else the section's.
static bool check_point(parse_ctx *c, const sweep *s, size_t isv, const attn_bench_point *pt,
                        int sec) {
  char why[160];
  attn_options checked_opts;  // the values only: validated with the problem, not kept
  attn_bench_opts_apply(&pt->opts, &checked_opts);
  attn_problem checked = pt->problem;
  checked.opts = &checked_opts;
  for (int f = 0; f < ATTN_FIELD_COUNT; f++) {
    if (attn_problem_check_field(&checked, (attn_field)f, why, sizeof why)) continue;
    const int line = field_line(c, s, isv, &pt->problem, (attn_field)f);
    return config_fail(c, line ? line : sec, "[%s]: invalid point: %s", s->name, why), false;
  }
  return true;
}

// The sweep's serving batches, built on first use and shared by every point of the same
// serving combination (the outer lists — heads, head dims, ... — reuse them: a batch's
// page table and permutation are built once per sweep, not once per outer combination).
typedef struct serving_cache {
  size_t n;                    // config_serving_combinations
  attn_serving_batch **batch;  // [n]: NULL until built (owned by the plan once built)
  char (*suffix)[128];         // [n]: the name part ("/q=…/kv=…/page16s")
  bool *built;                 // [n]
} serving_cache;

static void serving_cache_free(serving_cache *sc) {
  free(sc->batch);
  free(sc->suffix);
  free(sc->built);
}

// Combination isv's batch (NULL for a dense sweep) and name part; false with the error.
static bool serving_for(parse_ctx *c, const sweep *s, size_t isv, serving_cache *sc,
                        plan_builder *b, int sec) {
  if (sc->built[isv]) return true;
  attn_serving_batch *batch;
  if (!config_serving_batch(c, s, isv, &batch, sc->suffix[isv], sizeof sc->suffix[isv]))
    return false;
  if (batch) {  // the plan owns it; the points' problems read it
    attn_serving_batch **nb = realloc(b->batches, (b->nbatches + 1) * sizeof *nb);
    if (!nb) {
      attn_serving_free(batch);
      free(batch);
      return config_fail(c, sec, "out of memory"), false;
    }
    b->batches = nb;
    b->batches[b->nbatches++] = batch;
  }
  sc->batch[isv] = batch;
  sc->built[isv] = true;
  return true;
}

// "3" or "default" (0: Google Benchmark's default or flag), for the conflict message.
static void setting_text(double v, char *buf, size_t len) {
  if (v > 0)
    snprintf(buf, len, "%g", v);
  else
    snprintf(buf, len, "default");
}

// Adds pt to the plan (push); false when out of memory. A point another sweep planned
// with other repetitions or min_time runs once, with the first sweep's settings: the
// sweep's first such point is kept for a note (conflict_note), the rest counted.
static bool add_point(parse_ctx *c, const attn_bench_point *pt, plan_builder *b, int sec) {
  const attn_bench_point *prev = NULL;
  const int rc = push(b, pt, &prev);
  if (rc < 0) return config_fail(c, sec, "out of memory"), false;
  if (rc > 0 && b->conflicts++ == 0) {
    char was[2][24], now[2][24];
    setting_text(prev->repetitions, was[0], sizeof was[0]);
    setting_text(prev->min_time, was[1], sizeof was[1]);
    setting_text(pt->repetitions, now[0], sizeof now[0]);
    setting_text(pt->min_time, now[1], sizeof now[1]);
    snprintf(b->conflict, sizeof b->conflict,
             "%s is also planned by [%s] with repetitions %s, min_time %s (here %s, %s)", pt->name,
             prev->sweep, was[0], was[1], now[0], now[1]);
  }
  return true;
}

// The note for a sweep whose points other sweeps planned first with other settings.
static void conflict_note(const sweep *s, plan_builder *b) {
  if (b->conflicts && b->notes)
    fprintf(b->notes,
            "note: [%s]: point %s%s; %s run%s once, with the first sweep's repetitions and "
            "min_time\n",
            s->name, b->conflict, b->conflicts > 1 ? " (and more)" : "",
            b->conflicts > 1 ? "they" : "it", b->conflicts > 1 ? "" : "s");
  b->conflicts = 0;
}

// The cartesian product, shapes outermost and kernels innermost, so that kernels are
// compared at nearly the same moment (similar machine noise).
bool config_expand(parse_ctx *c, const sweep *s, const attn_bench_overrides *ov, plan_builder *b) {
  const int sec = config_line_of(c, s->name, NULL);
  const ilist *dims = s->d_model.n ? &s->d_model : &s->head_dim;
  const ilist *skv = s->seq_kv.n ? &s->seq_kv : NULL;
  const int nk = ov && ov->kernel_count ? (int)ov->kernel_count : s->nk;
  const int nt = ov && ov->thread_count ? (int)ov->thread_count : s->threads.n;
  const size_t nopts = config_option_combinations(s);
  const size_t nserve = config_serving_combinations(s);
  serving_cache sc = {nserve, calloc(nserve, sizeof *sc.batch), calloc(nserve, sizeof *sc.suffix),
                      calloc(nserve, sizeof *sc.built)};
  if (!sc.batch || !sc.suffix || !sc.built) {
    serving_cache_free(&sc);
    return config_fail(c, sec, "out of memory"), false;
  }
  bool ok = true;
  // One flat loop nest over the lists (the option keys' combinations as one).
  // clang-format off
  for (int ib = 0; ok && ib < s->batch.n; ib++)
  for (int ih = 0; ok && ih < s->heads.n; ih++)
  for (int ikv = 0; ok && ikv < (s->kv_heads.n ? s->kv_heads.n : 1); ikv++)
  for (int id = 0; ok && id < dims->n; id++)
  for (int idv = 0; ok && idv < (s->head_dim_v.n ? s->head_dim_v.n : 1); idv++)
  for (int iskv = 0; ok && iskv < (skv ? skv->n : 1); iskv++)
  for (int isq = 0; ok && isq < s->seq_len.n; isq++)
  for (int ic = 0; ok && ic < s->causal.n; ic++)
  for (size_t isv = 0; ok && isv < nserve; isv++)
  for (size_t io = 0; ok && io < nopts; io++)
  for (int ikd = 0; ok && ikd < s->n_kv_dtypes; ikd++)
  for (int ico = 0; ok && ico < (ov && ov->compute_count ? (int)ov->compute_count : s->n_computes); ico++)
  for (int it = 0; ok && it < nt; it++)
  for (int ik = 0; ok && ik < nk; ik++) {
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
    pt.opts = config_option_combination(s, io);
    pt.problem.kv_dtype = s->kv_dtypes[ikd];
    pt.problem.compute = ov && ov->compute_count ? ov->computes[ico] : s->computes[ico];
    // int8 pairs with q8_0 K/V only (validate() made sure the sweep has q8_0)
    if (pt.problem.compute == ATTN_COMPUTE_INT8 && pt.problem.kv_dtype != ATTN_DTYPE_Q8_0) {
      b->compute_skipped++;
      continue;
    }
    if (!(ok = serving_for(c, s, isv, &sc, b, sec))) break;
    const attn_serving_batch *current = sc.batch[isv];
    if (current) attn_problem_set_layout(&pt.problem, &current->layout, current->seqs);
    if (!(ok = check_point(c, s, isv, &pt, sec))) break;
    int t = ov && ov->thread_count ? ov->threads[it] : (int)s->threads.v[it];
    pt.threads_default = t == 0;
    if (t == 0) t = ov && ov->physical_cores > 0 ? ov->physical_cores : 1;
    if (t < 1 || t > ATTN_MAX_THREADS) {  // overrides and physical_cores come from the caller
      ok = config_fail(c, sec, "[%s]: %d threads is out of range [1, %d]", s->name, t, ATTN_MAX_THREADS);
      break;
    }
    if (!(pt.kernel->caps & ATTN_CAP_THREADS)) t = 1;  // single-thread kernels run once
    pt.threads = t;
    pt.repetitions = s->repetitions;
    pt.min_time = s->min_time;
    pt.cold_inputs = s->cold_inputs;
    config_copy_str(pt.regtile, sizeof pt.regtile, ov && ov->regtile ? ov->regtile : s->regtile);
    pt.kv_split = ov && ov->kv_split_set ? ov->kv_split : s->kv_split_given ? s->kv_split : -1;
    pt.from_cli = (ov && ov->thread_count ? 1u << ATTN_SETTING_THREADS : 0) |
                  (ov && ov->regtile ? 1u << ATTN_SETTING_REGTILE : 0) |
                  (ov && ov->kv_split_set ? 1u << ATTN_SETTING_KV_SPLIT : 0);
    int rt = -1;
    if (pt.regtile[0]) {  // every kernel of the sweep must have the variant
      char why[256];
      rt = attn_settings_regtile_index(pt.kernel, pt.regtile, "regtile", why, sizeof why);
      if (rt < 0) {
        const int l = config_line_of(c, s->name, "regtile");
        ok = config_fail(c, l ? l : sec, "[%s]: %s", s->name, why);
        break;
      }
    }
    config_copy_str(pt.sweep, sizeof pt.sweep, s->name);
    if (!name_point(&pt, sc.suffix[isv], rt)) {
      ok = config_fail(c, sec,
                       "[%s]: a point's name would be longer than %d characters (%.60s...): "
                       "use a shorter kernel name, serving lists or option values",
                       s->name, ATTN_BENCH_NAME_MAX - 1, pt.name);
      break;
    }
    ok = add_point(c, &pt, b, sec);
  }
  // clang-format on
  serving_cache_free(&sc);
  if (ok) conflict_note(s, b);
  return ok;
}

bool attn_bench_plan_load(const char *path, const attn_bench_overrides *ov, FILE *notes,
                          attn_bench_plan *plan, char *err, size_t err_len) {
  *plan = (attn_bench_plan){0};
  char *text = NULL;
  parse_ctx *c = calloc(1, sizeof *c);
  sweep *sweeps = calloc(kMaxSweeps, sizeof *sweeps);
  bool ok = false;
  if (!c || !sweeps) {
    snprintf(err, err_len, "%s: out of memory", path);
    goto done;
  }
  c->sweeps = sweeps;
  if (!config_read(path, ov, c, &text, err, err_len)) goto done;
  // Every sweep is validated (config_read) and the points counted before any is expanded,
  // so a config that would expand to millions of points fails at once instead of after
  // minutes.
  size_t total = 0;
  for (int i = 0; i < c->nsweeps; i++) {
    const sweep *s = &c->sweeps[i];
    const size_t n = config_sweep_points(s, ov, ATTN_BENCH_MAX_POINTS);
    total = n > ATTN_BENCH_MAX_POINTS - total ? ATTN_BENCH_MAX_POINTS + 1 : total + n;
    if (total > ATTN_BENCH_MAX_POINTS) {
      char msg[160];
      if (n > ATTN_BENCH_MAX_POINTS)
        snprintf(msg, sizeof msg,
                 "[%s] expands to more than %d points (the product of its list lengths)", s->name,
                 ATTN_BENCH_MAX_POINTS);
      else
        snprintf(msg, sizeof msg, "the sweeps up to [%s] expand to more than %d points", s->name,
                 ATTN_BENCH_MAX_POINTS);
      config_format_error(c, config_line_of(c, s->name, NULL), msg, err, err_len);
      goto done;
    }
  }
  plan_builder b = {.notes = notes};
  for (int i = 0; i < c->nsweeps; i++) {
    if (!config_expand(c, &c->sweeps[i], ov, &b)) {
      config_format_error(c, c->err_line, c->err, err, err_len);
      free(b.pts);
      free(b.slots);
      attn_bench_plan tmp = {.batches = b.batches, .batch_count = b.nbatches};
      attn_bench_plan_free(&tmp);
      goto done;
    }
  }
  free(b.slots);
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
    if (notes)
      fprintf(notes, "note: skipping kernel %s on this CPU (%s)\n", b.pts[i].kernel->name, why);
  }
  plan->points = b.pts;
  plan->count = kept;
  plan->batches = b.batches;
  plan->batch_count = b.nbatches;
  plan->config_text = text;
  plan->unavailable = b.n - kept;
  plan->compute_skipped = b.compute_skipped;
  text = NULL;
  ok = true;
done:
  free(text);
  free(sweeps);
  free(c);
  return ok;
}

void attn_bench_plan_free(attn_bench_plan *plan) {
  for (size_t i = 0; i < plan->batch_count; i++) {
    attn_serving_free(plan->batches[i]);
    free(plan->batches[i]);
  }
  free(plan->batches);
  plan->batches = NULL;
  plan->batch_count = 0;
  free(plan->points);
  plan->points = NULL;
  plan->count = 0;
  free(plan->config_text);
  plan->config_text = NULL;
}
