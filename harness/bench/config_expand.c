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

void attn_bench_opts_name(const attn_bench_opts *o, char *buf, size_t len) {
  if (!len) return;
  buf[0] = '\0';
  size_t n = 0;
#define OPT_PUT(...)                                                                         \
  do {                                                                                       \
    const int w_ = snprintf(buf + n, len - n, __VA_ARGS__);                                  \
    n = w_ < 0 ? n : (size_t)w_ >= len - n ? len - 1 : n + (size_t)w_; /* cut, never past */ \
  } while (0)
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

void attn_bench_point_name(const attn_kernel *k, const attn_problem *p, int threads, char *buf,
                           size_t len) {
  char dv[24] = "", kv[16] = "", mode[24] = "";
  if (p->head_dim_v != p->head_dim_qk) snprintf(dv, sizeof dv, "/Dv%lld", (long long)p->head_dim_v);
  if (p->kv_dtype != ATTN_DTYPE_F32) snprintf(kv, sizeof kv, "/%s", attn_dtype_name(p->kv_dtype));
  if (p->compute != ATTN_COMPUTE_F32)
    snprintf(mode, sizeof mode, "/compute:%s", attn_compute_name(p->compute));
  snprintf(buf, len, "%s/B%lld/H%lld/KV%lld/Sq%lld/Skv%lld/D%lld%s/%s%s%s/T%d", k->name,
           (long long)p->batch, (long long)p->heads, (long long)p->kv_heads, (long long)p->seq_q,
           (long long)p->seq_kv, (long long)p->head_dim_qk, dv, p->causal ? "causal" : "noncausal",
           kv, mode, threads);
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

static bool push(plan_builder *b, const attn_bench_point *pt) {
  if (b->n == b->cap && !grow(b)) return false;
  size_t *slot = slot_for(b, pt->name);
  if (*slot != SIZE_MAX) return true;  // same point from another sweep
  *slot = b->n;
  b->pts[b->n++] = *pt;
  return true;
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
  size_t built_isv = SIZE_MAX;         // the serving combination `current` was built for
  attn_serving_batch *current = NULL;  // (owned by b->batches)
  char serving_name[128] = "";
  // One flat loop nest over the lists (the option keys' combinations as one).
  // clang-format off
  for (int ib = 0; ib < s->batch.n; ib++)
  for (int ih = 0; ih < s->heads.n; ih++)
  for (int ikv = 0; ikv < (s->kv_heads.n ? s->kv_heads.n : 1); ikv++)
  for (int id = 0; id < dims->n; id++)
  for (int idv = 0; idv < (s->head_dim_v.n ? s->head_dim_v.n : 1); idv++)
  for (int iskv = 0; iskv < (skv ? skv->n : 1); iskv++)
  for (int isq = 0; isq < s->seq_len.n; isq++)
  for (int ic = 0; ic < s->causal.n; ic++)
  for (size_t isv = 0; isv < nserve; isv++)
  for (size_t io = 0; io < nopts; io++)
  for (int ikd = 0; ikd < s->n_kv_dtypes; ikd++)
  for (int ico = 0; ico < (ov && ov->compute_count ? (int)ov->compute_count : s->n_computes); ico++)
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
    pt.opts = config_option_combination(s, io);
    pt.problem.kv_dtype = s->kv_dtypes[ikd];
    pt.problem.compute = ov && ov->compute_count ? ov->computes[ico] : s->computes[ico];
    // int8 pairs with q8_0 K/V only (validate() made sure the sweep has q8_0)
    if (pt.problem.compute == ATTN_COMPUTE_INT8 && pt.problem.kv_dtype != ATTN_DTYPE_Q8_0) continue;
    if (isv != built_isv) {  // one batch per serving combination, shared by the inner lists
      built_isv = isv;
      attn_serving_batch *batch;
      if (!config_serving_batch(c, s, isv, &batch, serving_name, sizeof serving_name)) return false;
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
      current = batch;
    }
    if (current) attn_problem_set_layout(&pt.problem, &current->layout, current->seqs);
    char why[160];
    attn_options checked_opts;  // the values only: validated with the problem, not kept
    attn_bench_opts_apply(&pt.opts, &checked_opts);
    attn_problem checked = pt.problem;
    checked.opts = &checked_opts;
    // Each field by the problem's rule; the message names the line of the key that set it
    // (e.g. kv_dtype q8_0 with a head dim not a multiple of 32), else the section's.
    for (int f = 0; f < ATTN_FIELD_COUNT; f++) {
      if (attn_problem_check_field(&checked, (attn_field)f, why, sizeof why)) continue;
      const int line = config_line_of(c, s->name, attn_field_name((attn_field)f));
      return config_fail(c, line ? line : sec, "[%s]: invalid point: %s", s->name, why), false;
    }
    int t = ov && ov->thread_count ? ov->threads[it] : (int)s->threads.v[it];
    pt.threads_default = t == 0;
    if (t == 0) t = ov && ov->physical_cores > 0 ? ov->physical_cores : 1;
    if (t < 1 || t > ATTN_MAX_THREADS)  // overrides and physical_cores come from the caller
      return config_fail(c, sec, "[%s]: %d threads is out of range [1, %d]", s->name, t, ATTN_MAX_THREADS),
             false;
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
        return config_fail(c, l ? l : sec, "[%s]: %s", s->name, why), false;
      }
    }
    config_copy_str(pt.sweep, sizeof pt.sweep, s->name);
    attn_bench_point_name(pt.kernel, &pt.problem, t, pt.name, sizeof pt.name);
    if (serving_name[0]) {  // the lengths and pages (B, Sq and Skv are the largest)
      const size_t len = strlen(pt.name);
      snprintf(pt.name + len, sizeof pt.name - len, "%s", serving_name);
    }
    if (attn_bench_opts_any(&pt.opts)) {
      const size_t len = strlen(pt.name);
      attn_bench_opts_name(&pt.opts, pt.name + len, sizeof pt.name - len);
    }
    if (pt.cold_inputs) {  // a cold point is another measurement than the warm one
      const size_t len = strlen(pt.name);
      snprintf(pt.name + len, sizeof pt.name - len, "/cold");
    }
    if (rt >= 0) {  // another variant or split is another measurement
      const size_t len = strlen(pt.name);
      snprintf(pt.name + len, sizeof pt.name - len, "/rt%d", rt);
    }
    if (pt.kv_split >= 0) {
      const size_t len = strlen(pt.name);
      snprintf(pt.name + len, sizeof pt.name - len, "/split%d", pt.kv_split);
    }
    if (!push(b, &pt)) return config_fail(c, sec, "out of memory"), false;
  }
  // clang-format on
  return true;
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
  c->sweeps = sweeps;
  if (!config_read(path, ov, c, err, err_len)) goto done;
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
  plan_builder b = {0};
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
  ok = true;
done:
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
}
