// SPDX-License-Identifier: MIT
// The work list of a ragged or paged batch for the flash kernels (see flash_batch.h).
// Portable C.
#include "flash/flash_batch.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"

static int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
static size_t round64(size_t n) {  // bytes → a multiple of 64 (saturating)
  return n > SIZE_MAX - 63 ? SIZE_MAX : (n + 63) & ~(size_t)63;
}

// Whether sequence b has work (queries and keys); the others have none (attn.h: no query,
// or rows that see nothing, written by flash_batch_make).
static bool has_work(const attn_problem *p, int64_t b) {
  return attn_layout_q_len(p, b) > 0 && attn_layout_kv_len(p, b) > 0;
}

// Sequence b's chunk: C rounded up to whole tiles, or (C == 0) its span cut into kv_split
// chunks.
static int64_t seq_chunk(const attn_problem *s, const flash_plan *pl, const attn_exec *exec,
                         int64_t c) {
  if (c == 0) {
    const int64_t n = ceil_div(flash_plan_span(s, pl), exec->kv_split);
    return ceil_div(n, pl->tkv) * pl->tkv;
  }
  return ceil_div(c, pl->tkv) * pl->tkv;
}

// Sequence b's dense problem (sq->p, its options in sq->opts) and plan, cut into chunks of C
// keys (seq_chunk; C < 0: unsplit); false when the sequence has no work.
static bool seq_plan(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk, int64_t b,
                     int64_t c, flash_seq *sq) {
  if (!has_work(p, b)) return false;
  attn_exec one = exec ? *exec : (attn_exec){0};
  one.kv_split = 1;  // the batch decides the chunks (flash_plan_split)
  sq->p = attn_layout_seq_problem(p, b, &sq->opts);
  mk(&sq->p, &one, &sq->pl);
  if (c >= 0) flash_plan_split(&sq->p, &sq->pl, seq_chunk(&sq->p, &sq->pl, exec, c));
  return true;
}

// Items per task block of one K/V head (sq's plan): its K/V heads in groups of kv_group.
static int64_t head_items(const flash_seq *sq) {
  return ceil_div(sq->p.kv_heads, sq->pl.kv_group);
}

// The chunk length C of flash_batch.h: 0 when kv_split asks for N chunks per task.
static int64_t batch_chunk(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk) {
  if (exec && exec->kv_split > 0) return 0;
  double work = 0.0;  // Σ base items × key span, in double: cannot wrap
  flash_seq sq;
  for (int64_t b = 0; b < p->batch; b++)
    if (seq_plan(p, exec, mk, b, -1, &sq))
      work += (double)(sq.pl.base_tasks / sq.p.kv_heads * head_items(&sq)) *
              (double)flash_plan_span(&sq.p, &sq.pl);
  const double c = ceil(work / kFlashBatchTasks);
  return c > (double)kFlashMinChunk ? (int64_t)c : kFlashMinChunk;
}

typedef struct batch_sizes {
  int64_t nitems, ncounters;
  size_t partial_floats, scratch_floats;
} batch_sizes;

static batch_sizes sizes_of(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk) {
  batch_sizes z = {0};
  const int64_t c = batch_chunk(p, exec, mk);
  flash_seq sq;
  for (int64_t b = 0; b < p->batch; b++) {
    if (!seq_plan(p, exec, mk, b, c, &sq)) continue;
    const flash_plan pl = sq.pl;
    z.nitems += pl.tasks / sq.p.kv_heads * head_items(&sq);
    if (pl.nsplit > 1) {
      z.ncounters += pl.base_tasks;
      z.partial_floats = attn_size_add_sat(z.partial_floats,
                                           attn_size_mul_sat((size_t)pl.tasks, pl.partial_stride));
    }
    if (pl.scratch_floats > z.scratch_floats) z.scratch_floats = pl.scratch_floats;
  }
  return z;
}

typedef struct batch_parts {
  size_t seqs, items, done, partials, scratch;  // bytes of each, rounded to 64
} batch_parts;

static batch_parts parts_of(const attn_problem *p, const batch_sizes *z, int threads) {
  batch_parts g = {
      .seqs = round64(attn_size_mul_sat((size_t)p->batch, sizeof(flash_seq))),
      .items = round64(attn_size_mul_sat((size_t)z->nitems, sizeof(flash_item))),
      .done = round64(attn_size_mul_sat((size_t)z->ncounters, sizeof(int))),
      .partials = round64(attn_size_mul_sat(z->partial_floats, sizeof(float))),
      .scratch = round64(
          attn_size_mul_sat(attn_size_mul_sat((size_t)threads, z->scratch_floats), sizeof(float))),
  };
  return g;
}

size_t flash_batch_workspace(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk,
                             int threads) {
  const batch_sizes z = sizes_of(p, exec, mk);
  const batch_parts g = parts_of(p, &z, threads);
  size_t n = attn_size_add_sat(g.seqs, g.items);
  n = attn_size_add_sat(n, g.done);
  n = attn_size_add_sat(n, g.partials);
  return attn_size_add_sat(n, g.scratch);
}

// Heaviest first; ties by sequence, then task (a total order: the list is deterministic).
static int item_cmp(const void *a, const void *b) {
  const flash_item *x = a, *y = b;
  if (x->work != y->work) return x->work > y->work ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->t < y->t ? -1 : x->t > y->t;
}

// Rows that see nothing (a sequence without keys): zeros and LSE −inf (attn.h).
static void write_empty(const attn_problem *p, const flash_io *io, int64_t nq) {
  for (int64_t h = 0; h < p->heads; h++)
    for (int64_t i = 0; i < nq; i++) {
      memset(io->o + h * io->o_hs + i * io->o_is, 0, (size_t)p->head_dim_v * sizeof(float));
      if (io->lse) io->lse[h * io->lse_hs + i] = -INFINITY;
    }
}

void flash_batch_make(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk, int threads,
                      const float *q, const void *k, const void *v, float *o, void *ws,
                      flash_batch *bt) {
  const batch_sizes z = sizes_of(p, exec, mk);
  const batch_parts g = parts_of(p, &z, threads);
  char *w = ws;
  bt->seqs = (flash_seq *)w;
  bt->items = (flash_item *)(w + g.seqs);
  bt->done = (int *)(w + g.seqs + g.items);
  bt->partials = (float *)(w + g.seqs + g.items + g.done);
  bt->scratch = (float *)(w + g.seqs + g.items + g.done + g.partials);
  bt->scratch_floats = z.scratch_floats;
  bt->nseq = p->batch;
  bt->nitems = z.nitems;
  memset(bt->done, 0, (size_t)z.ncounters * sizeof(int));
  const int64_t c = batch_chunk(p, exec, mk);
  int64_t n = 0, counters = 0;
  size_t part = 0;
  for (int64_t b = 0; b < p->batch; b++) {
    flash_seq *sq = &bt->seqs[b];
    sq->io = flash_io_layout(p, b, q, k, v, o);
    if (!seq_plan(p, exec, mk, b, c, sq)) {
      if (attn_layout_kv_len(p, b) == 0) write_empty(p, &sq->io, attn_layout_q_len(p, b));
      continue;
    }
    sq->part0 = part;
    sq->done0 = counters;
    if (sq->pl.nsplit > 1) {
      part += (size_t)sq->pl.tasks * sq->pl.partial_stride;
      counters += sq->pl.base_tasks;
    }
    const int64_t kvg = sq->pl.kv_group;
    for (int64_t t = 0; t < sq->pl.tasks; t++) {
      const flash_task tk = flash_task_at(&sq->p, &sq->pl, t);
      if (tk.g % kvg) continue;  // in the item of head tk.g − tk.g % kvg
      const int64_t heads = sq->p.kv_heads - tk.g < kvg ? sq->p.kv_heads - tk.g : kvg;
      int64_t kb, ke;
      flash_task_keys(&sq->p, &sq->pl, &tk, &kb, &ke);
      const int64_t i0 = tk.qb * sq->pl.tq;
      const int64_t nq = sq->p.seq_q - i0 < sq->pl.tq ? sq->p.seq_q - i0 : sq->pl.tq;
      const double rows = (double)nq * (double)sq->pl.heads_per_task;
      bt->items[n++] = (flash_item){
          .seq = b, .t = t, .heads = heads, .work = rows * (double)(ke - kb + 1) * (double)heads};
    }
  }
  qsort(bt->items, (size_t)n, sizeof *bt->items, item_cmp);
}

int flash_batch_run(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk,
                    flash_item_fn fn, const void *ctx, const float *q, const void *k, const void *v,
                    float *o, void *ws) {
  const int nt = flash_threads(exec);
  flash_batch bt;
  flash_batch_make(p, exec, mk, nt, q, k, v, o, ws, &bt);
#pragma omp parallel num_threads(nt)
  {
    const attn_fp_env env = attn_fp_env_enter();
    float *scratch = bt.scratch + (size_t)omp_get_thread_num() * bt.scratch_floats;
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < bt.nitems; i++) {
      const flash_seq *sq = &bt.seqs[bt.items[i].seq];
      const int64_t t0 = bt.items[i].t, ng = bt.items[i].heads;
      float *partials = bt.partials + sq->part0;
      fn(sq, t0, ng, scratch, partials, ctx);
      for (int64_t x = 0; x < ng && sq->pl.nsplit > 1; x++) {
        const int64_t t = flash_batch_head_task(&sq->pl, t0, x);
        int n;
        // seq_cst: the partial written above is visible to whichever thread merges.
#pragma omp atomic capture seq_cst
        n = ++bt.done[sq->done0 + t / sq->pl.nsplit];
        if (n == sq->pl.nsplit)
          flash_merge_io(&sq->p, &sq->pl, partials, t / sq->pl.nsplit, &sq->io);
      }
    }
    attn_fp_env_leave(env);
  }
  return ATTN_OK;
}
