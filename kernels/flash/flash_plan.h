// SPDX-License-Identifier: MIT
// flash_plan.h — how the flash kernels cut a problem into tasks. Portable; shared by
// every ISA's flash kernel so that they split identically.
//
// A task is (batch b, K/V head g, head subgroup, query block, key chunk):
//   • the query rows of `heads_per_task` query heads of group g (GQA: they share every
//     packed K/V tile) at `tq` consecutive query positions → at most `rows` rows;
//   • the keys of one chunk of the task's key range: the union [lo, hi) of its rows'
//     attn_row_keys ranges (rows move right with the position, so lo is the first row's,
//     hi the last row's; causal and window problems visit nothing outside). Chunks exist
//     only for split-KV (flash-decoding): when the unsplit task count is below
//     kFlashSplitTarget (or attn_exec.kv_split = N > 0 asks for N chunks, for any task
//     count), the key range is cut into `nsplit` chunks
//     whose partial (max, sum, output) triples are merged in chunk order by the thread
//     that finishes the last chunk of the group (no barrier between the phases).
//
// DETERMINISM. Every number in the plan is a function of the problem shape, the tile
// sizes, kv_split and the vector width only — never of the thread count — and each task's
// arithmetic depends only on the plan. So any thread count (and any scheduling) gives
// bitwise the same output.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct flash_plan {
  int64_t heads_per_task;  // query heads of one K/V group in a task (≤ heads / kv_heads)
  int64_t subgroups;       // ceil((heads / kv_heads) / heads_per_task)
  int64_t tq;              // query positions per task
  int64_t qblocks;         // ceil(seq_q / tq)
  int64_t rows;            // heads_per_task · tq: rows resident per task (upper bound)
  int64_t tkv;             // keys per K/V tile, a multiple of the register tile width
  int64_t nsplit;          // key chunks per (b, g, subgroup, qblock); 1 = no split
  int64_t chunk;           // keys per chunk (a multiple of tkv)
  int64_t base_tasks;      // batch · kv_heads · subgroups · qblocks
  int64_t tasks;           // base_tasks · nsplit
  int64_t dvp;             // head_dim_v rounded up to the vector width
  // Per-thread scratch (floats, each region 64-byte aligned).
  size_t off_q, off_kt, off_v, off_s, off_acc, off_m, off_l, off_alpha, off_lim, off_lo, off_slope,
      scratch_floats;
  // K/V types other than F32 (set by the ISA body, flash_body.h): float32 rows widened
  // from the stored type, kc_keys keys of head_dim_qk then kc_keys of head_dim_v floats
  // at off_kc (kc_keys = 0 and no region for F32).
  size_t off_kc;
  int64_t kc_keys;
  // Ragged and paged sequences (the ISA body's fl_plan_seq): the tiled pass's staged K/V
  // tile, tkv rows of K then tkv of V as stored, at off_stage (unused for a dense problem).
  size_t off_stage;
  // Ragged and paged decode (the ISA body's fl_plan_seq): K/V heads one work item runs
  // together, keys outer and heads inner (flash_batch.h; 1: one head per item), and their
  // per-head state (Q̂, acc, m, l, ALiBi slopes) at off_grp, grp_stride floats per head.
  int64_t kv_group;
  size_t off_grp, grp_stride;
  // The ISA body's per-task option state (flash_body.h's fl_fin) at off_fin, in the
  // scratch rather than in the task function's stack frame (no region unless the body adds
  // one).
  size_t off_fin;
  // Split-KV partials: tasks × rows × (dvp + 2) floats after the per-thread scratch,
  // then one int per base task (chunks finished; the last one merges).
  size_t partial_stride;  // floats per task's partial block
} flash_plan;

// Split-KV kicks in when the unsplit task count is below this (a constant, so the split
// does not depend on the thread count); chunks never get shorter than kFlashMinChunk keys.
// With exec->kv_split = N > 0 instead: chunk = ceil(span / N) rounded up to whole tiles
// (span: the widest task key range), so nsplit = ceil(span / chunk) <= N; N = 1: no split.
enum { kFlashSplitTarget = 32, kFlashMinChunk = 512 };

// lanes = floats per vector of the calling kernel; nr = its Q·Kᵀ register tile width
// (tkv is rounded to a multiple of it; every register-tile variant of a kernel passes its
// default's, so that they share one plan).
void flash_plan_make(const attn_problem *p, const attn_exec *exec, int lanes, int nr,
                     flash_plan *plan);

// Threads the kernel will run with: attn_exec_threads (core/attn_internal.h).
int flash_threads(const attn_exec *exec);

// Workspace bytes: threads × scratch + partials + counters.
size_t flash_workspace_bytes(const flash_plan *plan, int threads);

// Task index → coordinates. Within a K/V head, query blocks come heaviest first under a
// causal mask (later blocks see more keys), so dynamic scheduling ends each head on
// light blocks; consecutive tasks share the K/V head (cache reuse).
typedef struct flash_task {
  int64_t b, g, sub, qb, chunk;
} flash_task;
flash_task flash_task_at(const attn_problem *p, const flash_plan *plan, int64_t t);

// The keys [*kb, *ke) task tk visits: its chunk of the union of its rows' attn_row_keys
// ranges (*kb == *ke: none). The flash kernels visit exactly these keys, in tiles of
// plan->tkv from *kb on; the tests count visited tiles with it.
void flash_task_keys(const attn_problem *p, const flash_plan *plan, const flash_task *tk,
                     int64_t *kb, int64_t *ke);

// Where the rows of one sequence live: a dense batch entry, or one sequence of a ragged or
// paged layout (attn.h, "Serving layouts"). Q row (h, i) at q + h·q_hs + i·q_is floats,
// O row (h, i) at o + h·o_hs + i·o_is, LSE (h, i) at lse + h·lse_hs + i (lse NULL: not
// wanted). K/V key j of K/V head g: with pages (pt != NULL) at k + pt[j / ps]·k_page +
// g·k_gs + (j % ps)·k_rs bytes, else at k + g·k_gs + j·k_rs (V likewise with v_*). Dense
// rows have k_rs = the row size; a ragged layout's keys are kv_heads rows apart.
typedef struct flash_io {
  const float *q;
  int64_t q_hs, q_is;
  float *o;
  int64_t o_hs, o_is;
  float *lse;
  int64_t lse_hs;
  const char *k, *v;
  size_t k_gs, k_rs, k_page, v_gs, v_rs, v_page;
  const int32_t *pt;  // the sequence's page-table row; NULL: no pages
  int64_t ps;         // page size (pt != NULL)
} flash_io;

// Batch entry b of a dense problem (p->layout == NULL); q, k, v may be NULL for a caller
// that only writes O and LSE.
flash_io flash_io_dense(const attn_problem *p, int64_t b, const float *q, const void *k,
                        const void *v, float *o);
// Sequence b of a layout problem (p->layout != NULL).
flash_io flash_io_layout(const attn_problem *p, int64_t b, const float *q, const void *k,
                         const void *v, float *o);
// True when K and V rows of a head are consecutive rows (dense): k_rs is the row size and
// there are no pages.
bool flash_io_contiguous(const flash_io *io, size_t krb, size_t vrb);

// Re-cuts plan's key ranges into chunks of `chunk` keys (a multiple of tkv; 0 = no split):
// nsplit, tasks and partial_stride follow. The ragged/paged work list (flash_batch.h)
// sizes its chunks for the whole batch with it.
void flash_plan_split(const attn_problem *p, flash_plan *plan, int64_t chunk);
// The widest task key range of plan (the union of a query block's row ranges), >= 1.
int64_t flash_plan_span(const attn_problem *p, const flash_plan *plan);

// Merges the nsplit partial (m, l, acc) blocks of base task `base` into O, in chunk
// order: o = Σ_c e^{m_c − M}·acc_c / (L + e^{sink − M}) with M = max_c m_c,
// L = Σ_c e^{m_c − M}·l_c (the sink term only with sinks), and LSE = M + log L when the
// problem asks for it (−inf and zeros for a row that sees nothing).
void flash_merge(const attn_problem *p, const flash_plan *plan, const float *partials, int64_t base,
                 float *o);
// The same into the rows io says (flash_merge: io of the base task's batch entry).
void flash_merge_io(const attn_problem *p, const flash_plan *plan, const float *partials,
                    int64_t base, const flash_io *io);

// Writes task t's partial — acc[nrows][dvp], m[nrows], l[nrows] — into its block of
// partials, in the layout flash_merge reads.
void flash_partial_store(const flash_plan *plan, int64_t t, int64_t nrows, const float *acc,
                         const float *m, const float *l, float *partials);

// Task t's chunk is done (its partial stored): counts it in done[t / nsplit] (zeroed before
// the run) and, for the last chunk of its base task, merges that base task into O
// (flash_merge). seq_cst: every chunk's partial is visible to whichever thread merges. Call
// only with nsplit > 1.
void flash_chunk_done(const attn_problem *p, const flash_plan *plan, int *done,
                      const float *partials, int64_t t, float *o);

// One task of a kernel that runs the flash plan on a dense problem: task t's rows, written
// to O or, under split-KV, as its partial block in partials (flash_partial_store). scratch:
// the calling thread's scratch_floats floats (64-byte aligned when the workspace is).
// kplan: the kernel's own plan (its flash_plan and any regions of its own), passed through
// from flash_run_tasks.
typedef void (*flash_task_fn)(const attn_problem *p, const void *kplan, int64_t t, const float *q,
                              const void *k, const void *v, float *o, float *scratch,
                              float *partials);

// Runs every task of plan on `threads` OpenMP threads (dynamic schedule, one task at a
// time), each thread in the kernels' FP environment (attn_fp_env_enter) with its own
// scratch; under split-KV, whoever finishes a base task's last chunk merges it
// (flash_chunk_done), so no barrier separates the phases. workspace: the
// flash_workspace_bytes(plan, threads) layout — threads × scratch_floats floats of
// scratch, then the partials, then one counter per base task. Returns ATTN_OK.
int flash_run_tasks(const attn_problem *p, const flash_plan *plan, int threads, flash_task_fn task,
                    const void *kplan, const float *q, const void *k, const void *v, float *o,
                    void *workspace);

#ifdef __cplusplus
}
#endif
