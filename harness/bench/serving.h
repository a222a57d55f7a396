// SPDX-License-Identifier: MIT
//
// serving.h — a serving batch (attn.h, "Serving layouts") from a short description, for
// the bench's sweep keys (docs/serving.md): the sequences' lengths, then the layout.
//
//   kv_lens   "4096 4096 300"          explicit lengths; LEN*COUNT repeats ("4096*32": 32 of 4096)
//             "longtail:32:4096:1"     DIST:SEQS:MEAN[:SEED] generated lengths whose total is
//             "uniform:32:4096"        exactly SEQS·MEAN: fixed (all MEAN), uniform (weights
//             "fixed:32:4096"          uniform in [0.25, 1.75)), longtail (weights e^(1.25·z),
//                                      z standard normal: a few long contexts, many short)
//   q_lens    "decode"                 1 query token per sequence (the default)
//             "prefill:1:512"          prefill:N:C — the first N sequences are a C-token
//                                      chunk of a prefill, the others decode one token
//             "512 1*31"               explicit, one per sequence
//   page_size 0 = ragged (K/V packed by tokens), else tokens per page (paged, vLLM layout)
//   order     sequential (each sequence's pages consecutive) or shuffled (a seeded
//             permutation of the pool: pages scattered as in a long-running server)
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ATTN_SERVING_MAX_SEQS = 4096 };

typedef enum attn_page_order {
  ATTN_PAGE_SEQUENTIAL = 0,
  ATTN_PAGE_SHUFFLED = 1,
} attn_page_order;

// A built batch: the layout and the arrays it points to (owned).
typedef struct attn_serving_batch {
  attn_layout layout;
  int64_t seqs;
  int64_t *cu_q, *cu_kv;
  int32_t *page_table;  // PAGED only
} attn_serving_batch;

// Parses a kv_lens description into lens[0..*n) (at most cap). False with a one-line
// message in err (naming the text) for anything else: lengths < 0 or above 2^30, counts
// above cap, an unknown distribution, SEQS or MEAN < 1.
bool attn_serving_kv_lens(const char *text, int64_t *lens, int64_t cap, int64_t *n, char *err,
                          size_t err_len);
// Parses a q_lens description for n sequences into lens[0..n). An explicit list must have
// exactly n lengths; prefill:N:C needs N <= n.
bool attn_serving_q_lens(const char *text, int64_t n, int64_t *lens, char *err, size_t err_len);

// Builds the batch of n sequences: RAGGED when page_size is 0, else PAGED with a pool of
// exactly the pages the sequences use (no spare, none shared), in the given order (seed
// for shuffled). False (err) on a bad size or out of memory.
bool attn_serving_build(const int64_t *q_lens, const int64_t *kv_lens, int64_t n, int64_t page_size,
                        attn_page_order order, uint64_t seed, attn_serving_batch *out, char *err,
                        size_t err_len);
void attn_serving_free(attn_serving_batch *b);

// "sequential", "shuffled"; parse returns false for anything else.
const char *attn_page_order_name(attn_page_order o);
bool attn_page_order_parse(const char *s, attn_page_order *out);

// Bytes of K and V one call reads (every key some row of its sequence can see, once, as
// stored: a window or a causal chunk reads less than the context) and the query tokens it
// computes, for a layout problem (dense: the whole K, V and batch·seq_q).
uint64_t attn_serving_kv_bytes(const attn_problem *p);
uint64_t attn_serving_tokens(const attn_problem *p);

#ifdef __cplusplus
}
#endif
