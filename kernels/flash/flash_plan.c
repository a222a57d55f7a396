// SPDX-License-Identifier: MIT
// Task decomposition, workspace layout and the split-KV merge of the flash kernels
// (see flash_plan.h). Portable C.
#include "flash/flash_plan.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/tiles.h"

static int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
static size_t align16(size_t n) {  // floats → multiple of 16 floats = 64 bytes (saturating)
  return n > SIZE_MAX - 15 ? SIZE_MAX : (n + 15) & ~(size_t)15;
}

int flash_threads(const attn_exec *exec) {
  return attn_exec_threads(exec);
}

void flash_plan_make(const attn_problem *p, const attn_exec *exec, int lanes, int nr,
                     flash_plan *plan) {
  // The tiles were decided by the settings resolver (core/settings.h) for every caller that
  // goes through it; a direct API call with 0 gets the same kernel default. The plan only
  // fits them to the problem and the register tile (tkv a multiple of nr, at most the
  // rounded key count), which is part of the kernel's arithmetic, not a second decision.
  int tile_q, tile_kv;
  attn_tiles_resolve(p, exec, &tile_q, &tile_kv);
  const int64_t hpg = p->heads / p->kv_heads;
  // Rows per task ≈ tile_q, shared between the heads of a group: tile_q/hpg positions of
  // each of hpg heads; when hpg > tile_q, tile_q heads at one position.
  plan->heads_per_task = hpg < tile_q ? hpg : tile_q;
  plan->subgroups = ceil_div(hpg, plan->heads_per_task);
  int64_t tq = tile_q / plan->heads_per_task;
  if (tq < 1) tq = 1;
  if (tq > p->seq_q) tq = p->seq_q;
  plan->tq = tq;
  plan->qblocks = ceil_div(p->seq_q, tq);
  plan->rows = plan->heads_per_task * tq;
  int64_t tkv = ceil_div(tile_kv, nr) * nr;
  const int64_t kv_round = ceil_div(p->seq_kv, nr) * nr;
  if (tkv > kv_round) tkv = kv_round;  // no tile wider than the (rounded) key count
  plan->tkv = tkv;
  plan->base_tasks = p->batch * p->kv_heads * plan->subgroups * plan->qblocks;

  // Split-KV: only the shape and exec's kv_split decide (see the determinism note in
  // flash_plan.h).
  const int64_t kv_split = exec && exec->kv_split > 0 ? exec->kv_split : 0;
  plan->nsplit = 1;
  plan->chunk = ceil_div(p->seq_kv, tkv) * tkv;
  if (kv_split > 0 || plan->base_tasks < kFlashSplitTarget) {
    const int64_t span = flash_plan_span(p, plan);
    // kv_split N: N chunks of whole tiles (at least one tile each, so nsplit <= N).
    int64_t want = kv_split > 0 ? kv_split : ceil_div(kFlashSplitTarget, plan->base_tasks);
    int64_t minc = kv_split > 0 ? tkv : ceil_div(kFlashMinChunk, tkv) * tkv;
    int64_t chunk = ceil_div(ceil_div(span, want), tkv) * tkv;
    if (chunk < minc) chunk = minc;
    plan->chunk = chunk;
    plan->nsplit = ceil_div(span, chunk);
  }
  plan->tasks = plan->base_tasks * plan->nsplit;
  plan->dvp = ceil_div(p->head_dim_v, lanes) * lanes;

  const size_t rows = (size_t)plan->rows, dqk = (size_t)p->head_dim_qk;
  const size_t tk = (size_t)tkv, dvp = (size_t)plan->dvp;
  // Sizes saturate at SIZE_MAX (absurd head dims): the workspace then cannot be allocated
  // and attn_kernel_call says so; the offsets are only used once it was.
  size_t off = 0;
#define FL_REGION(field, floats) plan->field = off, off = attn_size_add_sat(off, align16(floats))
  FL_REGION(off_q, attn_size_mul_sat(rows, dqk));
  FL_REGION(off_kt, attn_size_mul_sat(dqk, tk));
  FL_REGION(off_v, attn_size_mul_sat(tk, dvp));
  FL_REGION(off_s, attn_size_mul_sat(rows, tk));
  FL_REGION(off_acc, attn_size_mul_sat(rows, dvp));
  FL_REGION(off_m, rows);
  FL_REGION(off_l, rows);
  FL_REGION(off_alpha, rows);
  FL_REGION(off_lim, rows);  // int32 per row
  FL_REGION(off_lo, rows);   // int32 per row
  FL_REGION(off_slope, (size_t)plan->heads_per_task);
#undef FL_REGION
  plan->scratch_floats = off;
  plan->off_kc = off;  // no widened-rows region unless the ISA body adds one (K/V types)
  plan->kc_keys = 0;
  plan->off_stage = off;
  plan->kv_group = 1;  // heads together only where the ISA body's fl_plan_seq says so
  plan->off_grp = off;
  plan->grp_stride = 0;
  plan->off_fin = off;
  plan->partial_stride = plan->nsplit > 1 ? align16(attn_size_mul_sat(rows, dvp + 2)) : 0;
}

int64_t flash_plan_span(const attn_problem *p, const flash_plan *plan) {
  // The widest task key range (the union of a query block's row ranges; seq_kv without a
  // window): chunks cut that, so a window's few visible keys are split too.
  int64_t span = 0;
  for (int64_t qb = 0; qb < plan->qblocks; qb++) {
    int64_t lo, hi, unused;
    attn_row_keys(p, qb * plan->tq, &lo, &unused);
    const int64_t last = (qb + 1) * plan->tq < p->seq_q ? (qb + 1) * plan->tq - 1 : p->seq_q - 1;
    attn_row_keys(p, last, &unused, &hi);
    if (hi - lo > span) span = hi - lo;
  }
  return span < 1 ? 1 : span;
}

void flash_plan_split(const attn_problem *p, flash_plan *plan, int64_t chunk) {
  const int64_t span = flash_plan_span(p, plan);
  plan->nsplit = 1;
  plan->chunk = ceil_div(p->seq_kv, plan->tkv) * plan->tkv;
  if (chunk > 0 && chunk < span) {
    plan->chunk = chunk;
    plan->nsplit = ceil_div(span, chunk);
  }
  plan->tasks = plan->base_tasks * plan->nsplit;
  plan->partial_stride =
      plan->nsplit > 1 ? align16(attn_size_mul_sat((size_t)plan->rows, (size_t)plan->dvp + 2)) : 0;
}

flash_io flash_io_dense(const attn_problem *p, int64_t b, const float *q, const void *k,
                        const void *v, float *o) {
  const size_t krb = attn_kv_row_bytes(p->kv_dtype, p->head_dim_qk);
  const size_t vrb = attn_kv_row_bytes(p->kv_dtype, p->head_dim_v);
  const size_t kvh = (size_t)b * (size_t)p->kv_heads * (size_t)p->seq_kv;  // rows before b
  const size_t qh = (size_t)b * (size_t)p->heads * (size_t)p->seq_q;       // rows before b
  flash_io io = {
      .q = q ? q + qh * (size_t)p->head_dim_qk : NULL,
      .q_hs = p->seq_q * p->head_dim_qk,
      .q_is = p->head_dim_qk,
      .o = o + qh * (size_t)p->head_dim_v,
      .o_hs = p->seq_q * p->head_dim_v,
      .o_is = p->head_dim_v,
      .lse = p->opts && p->opts->lse ? p->opts->lse + qh : NULL,
      .lse_hs = p->seq_q,
      .k = k ? (const char *)k + kvh * krb : NULL,
      .v = v ? (const char *)v + kvh * vrb : NULL,
      .k_gs = (size_t)p->seq_kv * krb,
      .k_rs = krb,
      .v_gs = (size_t)p->seq_kv * vrb,
      .v_rs = vrb,
  };
  return io;
}

flash_io flash_io_layout(const attn_problem *p, int64_t b, const float *q, const void *k,
                         const void *v, float *o) {
  const attn_layout *l = p->layout;
  const size_t krb = attn_kv_row_bytes(p->kv_dtype, p->head_dim_qk);
  const size_t vrb = attn_kv_row_bytes(p->kv_dtype, p->head_dim_v);
  const size_t tq = (size_t)l->cu_seqlens_q[b], kvh = (size_t)p->kv_heads;
  flash_io io = {
      .q = q + tq * (size_t)p->heads * (size_t)p->head_dim_qk,
      .q_hs = p->head_dim_qk,
      .q_is = p->heads * p->head_dim_qk,
      .o = o + tq * (size_t)p->heads * (size_t)p->head_dim_v,
      .o_hs = p->head_dim_v,
      .o_is = p->heads * p->head_dim_v,
      .lse = p->opts && p->opts->lse ? p->opts->lse + tq : NULL,
      .lse_hs = (int64_t)attn_layout_total_q(p),
  };
  if (l->kind == ATTN_LAYOUT_PAGED) {  // [num_pages][kv_heads][page_size] rows
    const size_t ps = (size_t)l->page_size;
    io.k = k, io.v = v;
    io.k_gs = ps * krb, io.k_rs = krb, io.k_page = kvh * ps * krb;
    io.v_gs = ps * vrb, io.v_rs = vrb, io.v_page = kvh * ps * vrb;
    io.pt = l->page_table + (size_t)b * (size_t)l->pages_per_seq;
    io.ps = l->page_size;
  } else {  // [total_kv][kv_heads] rows
    const size_t t0 = (size_t)l->cu_seqlens_kv[b] * kvh;
    io.k = (const char *)k + t0 * krb, io.v = (const char *)v + t0 * vrb;
    io.k_gs = krb, io.k_rs = kvh * krb;
    io.v_gs = vrb, io.v_rs = kvh * vrb;
  }
  return io;
}

bool flash_io_contiguous(const flash_io *io, size_t krb, size_t vrb) {
  return !io->pt && io->k_rs == krb && io->v_rs == vrb;
}

size_t flash_workspace_bytes(const flash_plan *plan, int threads) {
  size_t floats = attn_size_mul_sat((size_t)threads, plan->scratch_floats);
  if (plan->nsplit > 1)  // partials, then one int counter per base task
    floats = attn_size_add_sat(
        floats, attn_size_add_sat(attn_size_mul_sat((size_t)plan->tasks, plan->partial_stride),
                                  align16((size_t)plan->base_tasks)));
  return attn_size_mul_sat(floats, sizeof(float));
}

flash_task flash_task_at(const attn_problem *p, const flash_plan *plan, int64_t t) {
  flash_task k;
  // Innermost: chunk, then the query block (last — heaviest under a causal mask — first),
  // then the head subgroup, K/V head and batch. Consecutive tasks thus share one K/V
  // head, which stays in the last-level cache while the threads walk its query blocks.
  k.chunk = t % plan->nsplit;
  t /= plan->nsplit;
  k.qb = plan->qblocks - 1 - t % plan->qblocks;
  t /= plan->qblocks;
  k.sub = t % plan->subgroups;
  t /= plan->subgroups;
  k.g = t % p->kv_heads;
  t /= p->kv_heads;
  k.b = t;
  return k;
}

void flash_task_keys(const attn_problem *p, const flash_plan *plan, const flash_task *tk,
                     int64_t *kb, int64_t *ke) {
  const int64_t i0 = tk->qb * plan->tq;
  const int64_t nq = p->seq_q - i0 < plan->tq ? p->seq_q - i0 : plan->tq;
  int64_t lo, hi, unused;
  attn_row_keys(p, i0, &lo, &unused);  // lo and hi grow with the row: the union's ends
  attn_row_keys(p, i0 + nq - 1, &unused, &hi);
  const int64_t b = lo + tk->chunk * plan->chunk;
  const int64_t e = b + plan->chunk < hi ? b + plan->chunk : hi;
  *kb = b < e ? b : e;
  *ke = e;
}

void flash_merge(const attn_problem *p, const flash_plan *plan, const float *partials, int64_t base,
                 float *o) {
  const flash_task k = flash_task_at(p, plan, base * plan->nsplit);
  const flash_io io = flash_io_dense(p, k.b, NULL, NULL, NULL, o);
  flash_merge_io(p, plan, partials, base, &io);
}

void flash_merge_io(const attn_problem *p, const flash_plan *plan, const float *partials,
                    int64_t base, const flash_io *io) {
  const flash_task k = flash_task_at(p, plan, base * plan->nsplit);
  const int64_t hpg = p->heads / p->kv_heads;
  const int64_t h0 = k.g * hpg + k.sub * plan->heads_per_task;
  int64_t hs = hpg - k.sub * plan->heads_per_task;
  if (hs > plan->heads_per_task) hs = plan->heads_per_task;
  const int64_t i0 = k.qb * plan->tq;
  const int64_t nq = p->seq_q - i0 < plan->tq ? p->seq_q - i0 : plan->tq;
  const int64_t dv = p->head_dim_v, dvp = plan->dvp, rows = plan->rows;
  const float *blk0 = partials + (size_t)base * (size_t)plan->nsplit * plan->partial_stride;
  // Partial block layout: acc[rows][dvp], m[rows], l[rows].
  for (int64_t hh = 0; hh < hs; hh++) {
    const attn_head_opts ho = attn_head_opts_of(p, k.b, h0 + hh);  // the sink
    float *lse = io->lse ? io->lse + (h0 + hh) * io->lse_hs : NULL;
    for (int64_t r = 0; r < nq; r++) {
      const int64_t row = hh * nq + r;
      float mmax = -INFINITY;
      for (int64_t c = 0; c < plan->nsplit; c++) {
        const float *blk = blk0 + (size_t)c * plan->partial_stride;
        const float m = blk[rows * dvp + row], l = blk[rows * dvp + rows + row];
        if (l > 0.0f && m > mmax) mmax = m;
      }
      float *orow = io->o + (h0 + hh) * io->o_hs + (i0 + r) * io->o_is;
      for (int64_t e = 0; e < dv; e++) orow[e] = 0.0f;
      if (mmax == -INFINITY) {  // the row sees no key at all: zeros, LSE −inf
        if (lse) lse[i0 + r] = -INFINITY;
        continue;
      }
      float lsum = 0.0f;
      for (int64_t c = 0; c < plan->nsplit; c++) {
        const float *blk = blk0 + (size_t)c * plan->partial_stride;
        const float m = blk[rows * dvp + row], l = blk[rows * dvp + rows + row];
        if (!(l > 0.0f)) continue;
        const float w = expf(m - mmax);  // ≤ 1; exactly 1 for the chunk holding the max
        lsum += w * l;
        const float *acc = blk + row * dvp;
        for (int64_t e = 0; e < dv; e++) orow[e] += w * acc[e];
      }
      if (lse) lse[i0 + r] = attn_row_lse(lsum, mmax);
      const float inv = 1.0f / attn_denominator(&ho, lsum, mmax);  // lsum without sinks
      for (int64_t e = 0; e < dv; e++) orow[e] *= inv;
    }
  }
}

void flash_partial_store(const flash_plan *plan, int64_t t, int64_t nrows, const float *acc,
                         const float *m, const float *l, float *partials) {
  float *blk = partials + (size_t)t * plan->partial_stride;
  const size_t mo = (size_t)(plan->rows * plan->dvp);
  memcpy(blk, acc, (size_t)(nrows * plan->dvp) * sizeof(float));
  memcpy(blk + mo, m, (size_t)nrows * sizeof(float));
  memcpy(blk + mo + (size_t)plan->rows, l, (size_t)nrows * sizeof(float));
}

void flash_chunk_done(const attn_problem *p, const flash_plan *plan, int *done,
                      const float *partials, int64_t t, float *o) {
  int n;
#pragma omp atomic capture seq_cst
  n = ++done[t / plan->nsplit];
  if (n == plan->nsplit) flash_merge(p, plan, partials, t / plan->nsplit, o);
}

int flash_run_tasks(const attn_problem *p, const flash_plan *plan, int threads, flash_task_fn task,
                    const void *kplan, const float *q, const void *k, const void *v, float *o,
                    void *workspace) {
  float *ws = workspace;
  float *partials = ws + (size_t)threads * plan->scratch_floats;
  int *done = (int *)(partials + (size_t)plan->tasks * plan->partial_stride);
  if (plan->nsplit > 1) memset(done, 0, (size_t)plan->base_tasks * sizeof *done);
#pragma omp parallel num_threads(threads)
  {
    const attn_fp_env env = attn_fp_env_enter();
    float *scratch = ws + (size_t)omp_get_thread_num() * plan->scratch_floats;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < plan->tasks; t++) {
      task(p, kplan, t, q, k, v, o, scratch, partials);
      if (plan->nsplit > 1) flash_chunk_done(p, plan, done, partials, t, o);
    }
    attn_fp_env_leave(env);
  }
  return ATTN_OK;
}
