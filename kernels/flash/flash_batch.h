// SPDX-License-Identifier: MIT
// flash_batch.h — the work list of a ragged or paged batch (attn.h, "Serving layouts") for
// the flash kernels. Portable; shared by every ISA's flash kernel.
//
// Each sequence b with queries and keys is its own dense problem (attn_layout_seq_problem:
// batch 1, q_len_b × kv_len_b, its options) with its own plan (flash_plan.h: tasks of
// query rows × a key range), and its rows are found through a flash_io. The tasks of every
// sequence form ONE list, run by the threads from the front (dynamic scheduling):
//   • chunking: a task whose key range is longer than C keys is cut into chunks of C keys
//     (rounded up to the sequence's tile), partial (max, sum, output) triples merged by LSE
//     in chunk order by whoever finishes the last chunk (flash-decoding); shorter ranges
//     stay whole. C = max(kFlashMinChunk, ⌈W / kFlashBatchTasks⌉), W = Σ over the
//     sequences of their tasks × their widest key range: a long context is split when it
//     would otherwise be a large share of the batch, a uniform batch of many sequences is
//     not. attn_exec.kv_split = N > 0 instead cuts every task's range into N chunks (as dense);
//   • heads together: where the plan says so (flash_plan.kv_group > 1: the decode tasks of
//     a ragged or paged sequence, whose K/V heads interleave in memory), one item holds
//     the tasks of kv_group consecutive K/V heads with the same rows and chunk, run keys
//     outer and heads inner (the ISA body's fl_task_group): a ragged token's heads, or a
//     page's, are then read in one pass. W counts items, so C still gives enough of them;
//   • order: heaviest first (rows × keys × heads of the item, ties by sequence then task),
//     so the long items start early and short ones fill the end.
// DETERMINISM: the list, the chunks and every task's arithmetic depend on the problem,
// the tiles and kv_split only — never on the thread count — so every thread count gives
// bitwise the same output.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "attn.h"
#include "flash/flash_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { kFlashBatchTasks = 64 };

// The ISA body's plan of one sequence's dense problem (tiles, scratch regions).
typedef void (*flash_plan_fn)(const attn_problem *p, const attn_exec *exec, flash_plan *pl);

typedef struct flash_seq {
  attn_problem p;     // the sequence's dense problem (p.opts → opts)
  attn_options opts;  // its options (mask at its block; LSE through io)
  flash_plan pl;      // its plan, chunked for the batch
  flash_io io;        // where its rows live
  size_t part0;       // its first partial float
  int64_t done0;      // its first chunk counter
} flash_seq;

typedef struct flash_item {
  int64_t seq, t;  // task t of sequence seq's plan ...
  int64_t heads;   // ... and of the next heads − 1 K/V heads (flash_batch_head_task)
  double work;     // rows × keys × heads, the ordering key
} flash_item;

// Task of the item's K/V head t's head + i (i < heads): K/V head is the second-outermost
// task coordinate (flash_task_at), subgroups × qblocks × nsplit tasks apart.
static inline int64_t flash_batch_head_task(const flash_plan *pl, int64_t t, int64_t i) {
  return t + i * pl->subgroups * pl->qblocks * pl->nsplit;
}

typedef struct flash_batch {
  int64_t nseq, nitems;
  flash_seq *seqs;    // [batch]; a sequence without queries or keys has no item
  flash_item *items;  // [nitems], the work list in run order
  int *done;          // chunk counters, one per split base task
  float *partials;    // split-KV partials of every sequence
  float *scratch;     // per-thread scratch, scratch_floats each
  size_t scratch_floats;
} flash_batch;

// Workspace bytes of the work list for `threads` threads.
size_t flash_batch_workspace(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk,
                             int threads);
// Builds the work list in ws (flash_batch_workspace bytes, 64-byte aligned), zeroes the
// chunk counters, and writes the rows of sequences without keys (zeros, LSE −inf).
void flash_batch_make(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk, int threads,
                      const float *q, const void *k, const void *v, float *o, void *ws,
                      flash_batch *bt);

// One item of the work list, run by the ISA body: task t0 of sequence sq's plan and, with
// ng > 1, the same task of its next ng − 1 K/V heads (flash_batch_head_task), each task's
// result stored by flash_store_rows (a split task's partial into partials). ctx: the
// body's own (may be NULL).
typedef void (*flash_item_fn)(const flash_seq *sq, int64_t t0, int64_t ng, float *scratch,
                              float *partials, const void *ctx);

// Builds the work list (flash_batch_make) and runs it on flash_threads(exec) threads, items
// from the front (dynamic), each thread in the kernels' FP environment with its own
// scratch; a split task's chunks are merged, in chunk order, by whichever thread finishes
// the last of them.
int flash_batch_run(const attn_problem *p, const attn_exec *exec, flash_plan_fn mk,
                    flash_item_fn fn, const void *ctx, const float *q, const void *k, const void *v,
                    float *o, void *ws);

#ifdef __cplusplus
}
#endif
