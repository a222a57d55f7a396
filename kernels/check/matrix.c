// SPDX-License-Identifier: MIT
// The checker's case matrix (attn_check_matrix) and the case names.
#include <math.h>
#include <stdio.h>

#include "check/check.h"
#include "check/check_internal.h"

const char *attn_dist_name(attn_dist d) {
  switch (d) {
    case ATTN_DIST_UNIFORM:
      return "uniform";
    case ATTN_DIST_NORMAL:
      return "normal";
    case ATTN_DIST_LARGE:
      return "large";
  }
  return "?";
}

// ── The matrix ──────────────────────────────────────────────────────────────────────

// Sequence pairs: lengths 1…1024 (tiny, odd, tails of 16 and 256) with themselves, and
// cross pairs both ways.
static const int64_t kSeqPairs[][2] = {
    {1, 1},     {2, 2},     {3, 3},       {7, 7},     {16, 16},   {31, 31},    {64, 64},
    {100, 100}, {257, 257}, {1024, 1024}, {1, 1024},  {1, 257},   {1, 7},      {7, 1},
    {2, 31},    {31, 2},    {3, 100},     {100, 3},   {16, 64},   {64, 16},    {257, 31},
    {31, 257},  {7, 100},   {100, 7},     {1024, 64}, {64, 1024}, {257, 1024},
};
// Head dims (qk, v): equal pairs 1…256, plus pairs with head_dim_v != head_dim_qk.
static const int64_t kHeadDims[][2] = {
    {1, 1},     {2, 2},     {3, 3}, {16, 16}, {33, 33},  {64, 64}, {80, 80},  {96, 96},
    {128, 128}, {256, 256}, {2, 4}, {16, 33}, {64, 128}, {33, 1},  {128, 64},
};
// (heads, kv_heads): MHA, GQA, MQA.
static const int64_t kHeads[][2] = {{1, 1}, {4, 4}, {8, 2}, {4, 1}, {6, 3}};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// Appends a case if there is room; always counts it.
static void add(attn_check_case *out, size_t cap, size_t *n, attn_problem p, attn_dist dist) {
  if (out && *n < cap) out[*n] = (attn_check_case){.problem = p, .dist = dist, .seed = 1000 + *n};
  (*n)++;
}

// Work of a case in (query, key) pairs × heads × width, to keep the matrix fast.
static double case_work(const attn_problem *p) {
  return (double)p->batch * (double)p->heads * (double)p->seq_q * (double)p->seq_kv *
         (double)(p->head_dim_qk + p->head_dim_v);
}

// Appends a case with options (attn.h, "Attention variants").
static void add_opt(attn_check_case *out, size_t cap, size_t *n, attn_problem p, attn_dist dist,
                    attn_options o, uint32_t gen) {
  if (out && *n < cap)
    out[*n] =
        (attn_check_case){.problem = p, .dist = dist, .seed = 1000 + *n, .opts = o, .gen = gen};
  (*n)++;
}

// 4. The options, alone and combined. Window sizes W (left = W − 1) around the key tiles
//    of the kernels (16, 32, 64, 128: 1, tile − 1, tile, tile + 1, more than seq_kv);
//    both alignments with seq_q above, equal to and below seq_kv; softcap with huge
//    scores; sinks on rows that see nothing.
static void options_cases(bool quick, attn_check_case *out, size_t cap, size_t *n) {
  static const int64_t kWindows[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 300};
  for (size_t w = 0; w < COUNT(kWindows); w++) {
    if (quick && w % 3 != 0 && w != COUNT(kWindows) - 1) continue;
    const int64_t sq = (w % 3 == 1) ? 150 : 200, skv = (w % 3 == 2) ? 150 : 200;
    attn_problem p = attn_problem_make(1, 2, 1, sq, skv, 32, 32, w % 2 == 0);
    const attn_options o = {
        .window = true,
        .window_left = kWindows[w] - 1,
        .window_right = w % 2 == 0 ? 0 : (w % 4 == 1 ? 3 : ATTN_WINDOW_UNBOUNDED),
        .align = w % 5 == 2 ? ATTN_ALIGN_TOP_LEFT : ATTN_ALIGN_BOTTOM_RIGHT};
    add_opt(out, cap, n, p, (attn_dist)(w % 2), o, w % 4 == 0 ? ATTN_CHECK_GEN_LSE : 0);
  }
  // alignments × (seq_q > seq_kv, ==, <), causal and a two-sided window
  static const int64_t kAlignSeqs[][2] = {{40, 17}, {17, 17}, {17, 40}, {1, 33}, {33, 1}};
  for (size_t a = 0; a < COUNT(kAlignSeqs); a++) {
    for (int align = 0; align <= 1; align++) {
      for (int win = 0; win <= 1; win++) {
        if (quick && win && a % 2) continue;
        attn_problem p =
            attn_problem_make(1, 4, 2, kAlignSeqs[a][0], kAlignSeqs[a][1], 16, 24, !win);
        const attn_options o = {
            .align = (attn_align)align, .window = win, .window_left = 5, .window_right = 2};
        add_opt(out, cap, n, p, ATTN_DIST_NORMAL, o, ATTN_CHECK_GEN_LSE);
      }
    }
  }
  // explicit diagonal offsets: chunks [qo, qo + sq) × [ko, ko + skv) of a longer causal,
  // windowed or ALiBi problem (off = qo − ko): below, on and above the diagonal, unequal
  // chunk lengths, offsets past the chunk so that every key or none is seen
  static const int64_t kOffsets[][3] = {{37, 29, 0},   {37, 29, 37},  {29, 37, -29}, {40, 40, 80},
                                        {40, 40, -45}, {33, 64, 100}, {64, 33, -7}};
  for (size_t c = 0; c < COUNT(kOffsets); c++) {
    if (quick && c % 2) continue;
    attn_problem p = attn_problem_make(1, 4, 2, kOffsets[c][0], kOffsets[c][1], 32, 32, c % 3 != 2);
    const attn_options o = {.align = ATTN_ALIGN_OFFSET,
                            .diag_offset = kOffsets[c][2],
                            .window = c % 3 != 0,
                            .window_left = 20,
                            .window_right = c % 3 == 2 ? 4 : 0,
                            .alibi_max_bias = c % 2 ? 8.0f : 0.0f};
    add_opt(out, cap, n, p, ATTN_DIST_NORMAL, o, ATTN_CHECK_GEN_LSE);
  }
  // softcap: moderate scores, and huge ones (LARGE: |s| ~ 1e4, capped at 50 or 5)
  add_opt(out, cap, n, attn_problem_make(1, 2, 2, 33, 47, 64, 64, false), ATTN_DIST_NORMAL,
          (attn_options){.softcap = 1.5f}, 0);
  add_opt(out, cap, n, attn_problem_make(2, 4, 2, 31, 31, 64, 64, true), ATTN_DIST_LARGE,
          (attn_options){.softcap = 50.0f}, ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 2, 1, 17, 64, 128, 64, false), ATTN_DIST_LARGE,
          (attn_options){.softcap = 5.0f}, 0);
  // ALiBi: the max_bias rule for a power-of-two and another head count, explicit slopes
  add_opt(out, cap, n, attn_problem_make(1, 8, 2, 45, 45, 32, 32, true), ATTN_DIST_NORMAL,
          (attn_options){.alibi_max_bias = 8.0f}, 0);
  add_opt(out, cap, n, attn_problem_make(1, 6, 3, 20, 57, 16, 16, false), ATTN_DIST_UNIFORM,
          (attn_options){.alibi_max_bias = 8.0f}, ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(2, 4, 4, 57, 20, 33, 16, true), ATTN_DIST_NORMAL,
          (attn_options){.align = ATTN_ALIGN_TOP_LEFT}, ATTN_CHECK_GEN_SLOPES);
  // sinks: plain, dominating, on rows that see nothing (causal seq_q > seq_kv, a window
  // that leaves the top rows empty, a mask with all −inf rows)
  add_opt(out, cap, n, attn_problem_make(1, 4, 2, 31, 31, 32, 32, false), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 4, 1, 16, 40, 32, 32, true), ATTN_DIST_UNIFORM,
          (attn_options){0}, ATTN_CHECK_GEN_SINKS_HIGH);
  add_opt(out, cap, n, attn_problem_make(1, 2, 2, 40, 16, 16, 16, true), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 2, 2, 40, 16, 16, 16, false), ATTN_DIST_NORMAL,
          (attn_options){.window = true, .window_left = 2, .window_right = 0},
          ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 2, 1, 24, 24, 16, 16, false), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  // additive masks: broadcast and per (batch, head), with −inf entries and rows
  add_opt(out, cap, n, attn_problem_make(1, 4, 2, 29, 37, 32, 16, false), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_MASK);
  add_opt(out, cap, n, attn_problem_make(2, 2, 1, 37, 29, 16, 32, true), ATTN_DIST_UNIFORM,
          (attn_options){.mask_per_head = true}, ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  // LSE alone
  add_opt(out, cap, n, attn_problem_make(2, 4, 2, 33, 65, 64, 64, true), ATTN_DIST_NORMAL,
          (attn_options){0}, ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 2, 2, 1, 300, 64, 64, false), ATTN_DIST_LARGE,
          (attn_options){0}, ATTN_CHECK_GEN_LSE);
  // everything at once
  add_opt(out, cap, n, attn_problem_make(2, 4, 2, 70, 90, 32, 48, true), ATTN_DIST_NORMAL,
          (attn_options){.window = true,
                         .window_left = 32,
                         .window_right = 0,
                         .softcap = 20.0f,
                         .alibi_max_bias = 8.0f,
                         .align = ATTN_ALIGN_TOP_LEFT},
          ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  add_opt(out, cap, n, attn_problem_make(1, 6, 2, 90, 70, 64, 64, false), ATTN_DIST_UNIFORM,
          (attn_options){.window = true,
                         .window_left = 16,
                         .window_right = 16,
                         .softcap = 2.0f,
                         .mask_per_head = true},
          ATTN_CHECK_GEN_SLOPES | ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
}

// 5. The low-precision K/V types (attn.h, "K/V element types"): MHA, GQA decode, MQA
//    with dv != dqk, cross both ways, large scores, and the options, for each type (q8_0
//    needs head dims that are multiples of 32; f16 and bf16 also get odd ones).
static void kv_type_cases(bool quick, attn_check_case *out, size_t cap, size_t *n) {
  static const attn_dtype kTypes[] = {ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_Q8_0};
  for (size_t t = 0; t < COUNT(kTypes); t++) {
    const bool q8 = kTypes[t] == ATTN_DTYPE_Q8_0;
    attn_problem ps[] = {
        attn_problem_make(1, 4, 4, 33, 100, 64, 64, false),
        attn_problem_make(2, 8, 2, 1, 257, 128, 128, false),
        attn_problem_make(1, 4, 1, 64, 64, 32, 64, true),
        attn_problem_make(1, 2, 2, 100, 7, q8 ? 96 : 33, q8 ? 32 : 16, true),
        attn_problem_make(1, 2, 1, 7, 100, q8 ? 32 : 3, q8 ? 128 : 5, false),
        attn_problem_make(1, 2, 1, 33, 64, 64, 64, true),
    };
    for (size_t i = 0; i < COUNT(ps); i++) {
      if (quick && i % 2) continue;
      ps[i].kv_dtype = kTypes[t];
      add(out, cap, n, ps[i], i == 5 ? ATTN_DIST_LARGE : (attn_dist)((i + t) % 2));
    }
    attn_problem p = attn_problem_make(2, 4, 2, 70, 90, 32, 64, true);
    p.kv_dtype = kTypes[t];
    add_opt(out, cap, n, p, ATTN_DIST_NORMAL,
            (attn_options){.window = true, .window_left = 32, .window_right = 0, .softcap = 20.0f},
            ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  }
}

// Appends a serving-layout case (attn.h, "Serving layouts"): p gives the heads, dims,
// causal flag and K/V type; the layout the lengths and the pages.
static void add_layout(attn_check_case *out, size_t cap, size_t *n, attn_problem p, attn_dist dist,
                       attn_check_layout l, attn_options o, uint32_t gen) {
  if (out && *n < cap)
    out[*n] = (attn_check_case){
        .problem = p, .dist = dist, .seed = 1000 + *n, .opts = o, .gen = gen, .layout = l};
  (*n)++;
}

// 6. Serving layouts: a ragged batch mixing a prefill chunk, decode steps, an empty query
//    and a sequence without keys; paged K/V with pages shuffled through a pool with spare
//    pages, prefix pages shared between sequences (prefix caching), pages of 1 and of more
//    keys than a sequence has; every K/V type; the options per sequence.
static void layout_cases(bool quick, attn_check_case *out, size_t cap, size_t *n) {
  const attn_options none = {0};
  const attn_check_layout ragged = {.kind = ATTN_LAYOUT_RAGGED,
                                    .seqs = 5,
                                    .q_lens = {5, 1, 0, 7, 2},
                                    .kv_lens = {9, 40, 3, 7, 0}};
  add_layout(out, cap, n, attn_problem_make(1, 4, 2, 1, 1, 32, 32, true), ATTN_DIST_NORMAL, ragged,
             none, 0);
  const attn_check_layout paged = {.kind = ATTN_LAYOUT_PAGED,
                                   .seqs = 4,
                                   .q_lens = {1, 1, 3, 1},
                                   .kv_lens = {13, 1, 30, 17},
                                   .page_size = 4,
                                   .shuffle = true,
                                   .spare_pages = 3};
  add_layout(out, cap, n, attn_problem_make(1, 4, 1, 1, 1, 33, 16, true), ATTN_DIST_UNIFORM, paged,
             none, 0);
  const attn_check_layout shared = {.kind = ATTN_LAYOUT_PAGED,
                                    .seqs = 3,
                                    .q_lens = {1, 2, 4},
                                    .kv_lens = {20, 24, 9},
                                    .page_size = 4,
                                    .shuffle = true,
                                    .shared_pages = 4,
                                    .spare_pages = 2};
  add_layout(out, cap, n, attn_problem_make(1, 8, 2, 1, 1, 16, 16, true), ATTN_DIST_NORMAL, shared,
             none, 0);
  // every K/V type on shuffled pages of 16 (a decode batch with one prefill chunk)
  static const attn_dtype kTypes[] = {ATTN_DTYPE_F16, ATTN_DTYPE_BF16, ATTN_DTYPE_Q8_0};
  const attn_check_layout decode = {.kind = ATTN_LAYOUT_PAGED,
                                    .seqs = 4,
                                    .q_lens = {1, 1, 24, 1},
                                    .kv_lens = {70, 16, 50, 33},
                                    .page_size = 16,
                                    .shuffle = true,
                                    .shared_pages = 1,
                                    .spare_pages = 1};
  for (size_t t = 0; t < COUNT(kTypes); t++) {
    if (quick && kTypes[t] != ATTN_DTYPE_Q8_0) continue;
    attn_problem p = attn_problem_make(1, 4, 2, 1, 1, 64, 32, true);
    p.kv_dtype = kTypes[t];
    add_layout(out, cap, n, p, (attn_dist)(t % 2), decode, none, 0);
  }
  // the options per sequence: window + softcap + sinks + mask + LSE; ALiBi with top-left
  // alignment; a per-head mask on a ragged batch
  add_layout(out, cap, n, attn_problem_make(1, 4, 2, 1, 1, 32, 32, true), ATTN_DIST_NORMAL, paged,
             (attn_options){.window = true, .window_left = 6, .window_right = 0, .softcap = 20.0f},
             ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  // a long-tailed batch whose long context is cut into chunks merged by LSE (flash-decoding
  // over the batch's work list), a prefill chunk of several tiles over pages, and an MQA
  // decode over ragged rows (one K/V head: its rows are contiguous, so its 8 query rows
  // take the rows-in-lanes decode path)
  const attn_check_layout tail = {.kind = ATTN_LAYOUT_PAGED,
                                  .seqs = 5,
                                  .q_lens = {1, 1, 1, 100, 1},
                                  .kv_lens = {1500, 3, 90, 300, 0},
                                  .page_size = 16,
                                  .shuffle = true,
                                  .shared_pages = 2,
                                  .spare_pages = 2};
  attn_problem pt = attn_problem_make(1, 8, 2, 1, 1, 64, 64, true);
  pt.kv_dtype = ATTN_DTYPE_Q8_0;
  add_layout(out, cap, n, pt, ATTN_DIST_NORMAL, tail, none, ATTN_CHECK_GEN_LSE);
  if (quick) return;
  attn_check_layout tail_ragged = tail;
  tail_ragged.kind = ATTN_LAYOUT_RAGGED;
  add_layout(out, cap, n, attn_problem_make(1, 8, 1, 1, 1, 40, 24, true), ATTN_DIST_NORMAL,
             tail_ragged, (attn_options){.window = true, .window_left = 700, .window_right = 0},
             ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_LSE);
  add_layout(out, cap, n, attn_problem_make(1, 4, 2, 1, 1, 32, 32, true), ATTN_DIST_NORMAL, shared,
             (attn_options){.align = ATTN_ALIGN_TOP_LEFT},
             ATTN_CHECK_GEN_SLOPES | ATTN_CHECK_GEN_LSE);
  attn_options per_head = {.mask_per_head = true};
  add_layout(out, cap, n, attn_problem_make(1, 2, 1, 1, 1, 16, 16, false), ATTN_DIST_UNIFORM,
             ragged, per_head,
             ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE | ATTN_CHECK_GEN_SINKS_HIGH);
  // page size 1, and pages larger than every sequence
  attn_check_layout tiny = paged, big = shared;
  tiny.page_size = 1;
  big.page_size = 64;
  add_layout(out, cap, n, attn_problem_make(1, 2, 2, 1, 1, 8, 8, false), ATTN_DIST_NORMAL, tiny,
             none, 0);
  add_layout(out, cap, n, attn_problem_make(1, 6, 3, 1, 1, 32, 32, true), ATTN_DIST_LARGE, big,
             none, ATTN_CHECK_GEN_LSE);
}

// 7. The compute modes (attn.h, "Compute modes"): bf16 and f16 on float32 K/V and on
//    bf16 and f16 K/V (both ways round: f16 K/V in bf16 loses bits, bf16 K/V in f16 loses
//    range and bits), int8 on q8_0 K/V; MHA, GQA decode, causal MQA with dv != dqk, cross,
//    large scores, and the options together.
static void compute_cases(bool quick, attn_check_case *out, size_t cap, size_t *n) {
  static const struct {
    attn_compute c;
    attn_dtype kv;
  } kModes[] = {{ATTN_COMPUTE_BF16, ATTN_DTYPE_F32}, {ATTN_COMPUTE_BF16, ATTN_DTYPE_BF16},
                {ATTN_COMPUTE_BF16, ATTN_DTYPE_F16}, {ATTN_COMPUTE_F16, ATTN_DTYPE_F32},
                {ATTN_COMPUTE_F16, ATTN_DTYPE_F16},  {ATTN_COMPUTE_F16, ATTN_DTYPE_BF16},
                {ATTN_COMPUTE_INT8, ATTN_DTYPE_Q8_0}};
  for (size_t t = 0; t < COUNT(kModes); t++) {
    const bool q8 = kModes[t].kv == ATTN_DTYPE_Q8_0;
    attn_problem ps[] = {
        attn_problem_make(1, 4, 4, 33, 100, 64, 64, false),
        attn_problem_make(2, 8, 2, 1, 257, 128, 128, false),
        attn_problem_make(1, 4, 1, 64, 64, 32, q8 ? 64 : 48, true),
        attn_problem_make(1, 2, 2, 100, 7, q8 ? 96 : 33, q8 ? 32 : 17, true),
        attn_problem_make(1, 2, 1, 33, 64, 64, 64, true),
    };
    for (size_t i = 0; i < COUNT(ps); i++) {
      if (quick && (i + t) % 2) continue;
      ps[i].kv_dtype = kModes[t].kv;
      ps[i].compute = kModes[t].c;
      add(out, cap, n, ps[i], i == 4 ? ATTN_DIST_LARGE : (attn_dist)((i + t) % 2));
    }
    if (quick && t % 3) continue;
    attn_problem p = attn_problem_make(2, 4, 2, 70, 90, 32, 64, true);
    p.kv_dtype = kModes[t].kv;
    p.compute = kModes[t].c;
    add_opt(out, cap, n, p, ATTN_DIST_NORMAL,
            (attn_options){.window = true, .window_left = 32, .window_right = 0, .softcap = 20.0f},
            ATTN_CHECK_GEN_SINKS | ATTN_CHECK_GEN_MASK | ATTN_CHECK_GEN_LSE);
  }
  // The modes over serving layouts: int8 on a paged GQA batch whose long context is cut
  // into chunks (pages of 16 shuffled and shared), on pages of 5 (a 16-key group spans
  // pages), on a ragged batch with a prefill chunk and a sequence without keys, and with
  // LSE; bf16 on pages (f32 K/V), on bf16 pages with decode rows only (the BF16 kernels'
  // decode route reads them in place) and on a bf16 ragged batch with its prefill chunk.
  const attn_check_layout tail = {.kind = ATTN_LAYOUT_PAGED,
                                  .seqs = 5,
                                  .q_lens = {1, 1, 1, 40, 1},
                                  .kv_lens = {1500, 3, 90, 300, 0},
                                  .page_size = 16,
                                  .shuffle = true,
                                  .shared_pages = 2,
                                  .spare_pages = 2};
  attn_check_layout odd = tail, ragged = tail;
  odd.page_size = 5;
  ragged.kind = ATTN_LAYOUT_RAGGED;
  const attn_options none = {0};
  attn_problem pq = attn_problem_make(1, 8, 2, 1, 1, 64, 64, true);
  pq.kv_dtype = ATTN_DTYPE_Q8_0;
  pq.compute = ATTN_COMPUTE_INT8;
  add_layout(out, cap, n, pq, ATTN_DIST_NORMAL, tail, none, 0);
  if (quick) return;
  attn_problem pr = attn_problem_make(1, 4, 1, 1, 1, 96, 32, true);
  pr.kv_dtype = ATTN_DTYPE_Q8_0;
  pr.compute = ATTN_COMPUTE_INT8;
  add_layout(out, cap, n, pr, ATTN_DIST_UNIFORM, odd, none, 0);
  add_layout(out, cap, n, pq, ATTN_DIST_UNIFORM, ragged, none, 0);
  add_layout(out, cap, n, pq, ATTN_DIST_NORMAL, odd, none, ATTN_CHECK_GEN_LSE);
  attn_problem pb = attn_problem_make(1, 4, 2, 1, 1, 64, 64, true);
  pb.compute = ATTN_COMPUTE_BF16;
  add_layout(out, cap, n, pb, ATTN_DIST_NORMAL, tail, none, 0);
  attn_check_layout decode = tail;
  decode.q_lens[3] = 1;
  pb.kv_dtype = ATTN_DTYPE_BF16;
  add_layout(out, cap, n, pb, ATTN_DIST_NORMAL, decode, none, 0);
  add_layout(out, cap, n, pb, ATTN_DIST_UNIFORM, ragged, none, 0);
}

size_t attn_check_matrix(bool quick, attn_check_case *out, size_t cap) {
  size_t n = 0;
  const int64_t quick_max_seq = 100;
  // 1. Every sequence pair, causal off and on, rotating head dims, head layouts,
  //    distributions and batch sizes so that each appears with many lengths.
  for (size_t i = 0; i < COUNT(kSeqPairs); i++) {
    const int64_t sq = kSeqPairs[i][0], skv = kSeqPairs[i][1];
    if (quick && (sq > quick_max_seq || skv > quick_max_seq)) continue;
    for (int causal = 0; causal <= 1; causal++) {
      const size_t r = i * 2 + (size_t)causal;
      const int64_t *hd = kHeadDims[(r * 7) % COUNT(kHeadDims)];
      const int64_t *hk = kHeads[r % COUNT(kHeads)];
      const int64_t batch = (r % 3 == 2) ? 2 : 1;
      attn_problem p = attn_problem_make(batch, hk[0], hk[1], sq, skv, hd[0], hd[1], causal);
      // keep the largest cases affordable for the double reference and naive kernels
      while (case_work(&p) > 3e8 && p.heads > 1) {
        p.heads /= 2;
        if (p.heads % p.kv_heads) p.kv_heads = 1;
      }
      add(out, cap, &n, p, (attn_dist)(r % 3));
    }
  }
  // 2. Every head dim and head layout at moderate lengths, self and cross, both masks.
  for (size_t d = 0; d < COUNT(kHeadDims); d++) {
    for (size_t h = 0; h < COUNT(kHeads); h++) {
      if (quick && h % 2) continue;
      const size_t r = d * COUNT(kHeads) + h;
      const int64_t sq = (r % 2) ? 31 : 17, skv = (r % 4 < 2) ? 31 : 45;
      attn_problem p = attn_problem_make(1 + (int64_t)(r % 2), kHeads[h][0], kHeads[h][1], sq, skv,
                                         kHeadDims[d][0], kHeadDims[d][1], (r / 2) % 2);
      add(out, cap, &n, p, (attn_dist)(r % 3));
    }
  }
  // 3. Large-magnitude scores (a kernel without max-subtraction overflows) at several
  //    widths, and a custom scale.
  for (size_t d = 0; d < COUNT(kHeadDims); d += 3) {
    attn_problem p = attn_problem_make(1, 2, 1, 33, 64, kHeadDims[d][0], kHeadDims[d][1], d % 2);
    add(out, cap, &n, p, ATTN_DIST_LARGE);
  }
  {
    attn_problem p = attn_problem_make(2, 4, 2, 19, 23, 24, 40, true);
    p.scale = 0.3f;
    add(out, cap, &n, p, ATTN_DIST_NORMAL);
  }
  options_cases(quick, out, cap, &n);
  kv_type_cases(quick, out, cap, &n);
  layout_cases(quick, out, cap, &n);
  compute_cases(quick, out, cap, &n);
  return n;
}

void attn_check_case_describe(const attn_check_case *c, char *buf, size_t len) {
  attn_problem lp = c->problem;  // a layout case: B sequences, Sq and Skv the largest lengths
  if (c->layout.kind != ATTN_LAYOUT_DENSE) {
    lp.batch = c->layout.seqs, lp.seq_q = 0, lp.seq_kv = 0;
    for (int b = 0; b < c->layout.seqs && b < ATTN_CHECK_MAX_SEQS; b++) {
      if (c->layout.q_lens[b] > lp.seq_q) lp.seq_q = c->layout.q_lens[b];
      if (c->layout.kv_lens[b] > lp.seq_kv) lp.seq_kv = c->layout.kv_lens[b];
    }
  }
  const attn_problem *p = &lp;
  const double default_scale = 1.0 / sqrt((double)p->head_dim_qk);
  char scale[32] = "";
  if (fabs((double)p->scale - default_scale) > 1e-7 * default_scale)
    snprintf(scale, sizeof scale, " scale=%g", p->scale);
  char kv[40] = "";
  int kw = 0;
  if (p->kv_dtype != ATTN_DTYPE_F32)
    kw = snprintf(kv, sizeof kv, " kv=%s", attn_dtype_name(p->kv_dtype));
  if (p->compute != ATTN_COMPUTE_F32 && kw >= 0 && (size_t)kw < sizeof kv)
    snprintf(kv + kw, sizeof kv - (size_t)kw, " compute=%s", attn_compute_name(p->compute));
  int w = snprintf(buf, len, "B%lld H%lld KV%lld Sq%lld Skv%lld Dqk%lld Dv%lld %s %s%s%s",
                   (long long)p->batch, (long long)p->heads, (long long)p->kv_heads,
                   (long long)p->seq_q, (long long)p->seq_kv, (long long)p->head_dim_qk,
                   (long long)p->head_dim_v, p->causal ? "causal" : "full", attn_dist_name(c->dist),
                   scale, kv);
  const attn_options *o = p->opts ? p->opts : &c->opts;
  const uint32_t gen = p->opts ? 0 : c->gen;
  char opt[200] = "", *at = opt;
  const char *end = opt + sizeof opt;
#define OPT_APPEND(...) \
  (at += snprintf(at, (size_t)(end - at), __VA_ARGS__), at = at < end ? at : (char *)end - 1)
  if (o->window) {
    OPT_APPEND(" window=");
    if (o->window_left == ATTN_WINDOW_UNBOUNDED)
      OPT_APPEND("inf");
    else
      OPT_APPEND("%lld", (long long)o->window_left);
    if (o->window_right == ATTN_WINDOW_UNBOUNDED)
      OPT_APPEND(",inf");
    else
      OPT_APPEND(",%lld", (long long)o->window_right);
  }
  if (o->align == ATTN_ALIGN_TOP_LEFT) OPT_APPEND(" align=top-left");
  if (o->align == ATTN_ALIGN_OFFSET) OPT_APPEND(" offset=%lld", (long long)o->diag_offset);
  if (o->softcap > 0.0f) OPT_APPEND(" softcap=%g", (double)o->softcap);
  if (o->alibi_max_bias > 0.0f) OPT_APPEND(" alibi=%g", (double)o->alibi_max_bias);
  if (o->alibi_slopes || gen & ATTN_CHECK_GEN_SLOPES) OPT_APPEND(" alibi-slopes");
  if (o->sinks || gen & ATTN_CHECK_GEN_SINKS) OPT_APPEND(" sinks");
  if (gen & ATTN_CHECK_GEN_SINKS_HIGH) OPT_APPEND(" sinks-high");
  if (o->mask || gen & ATTN_CHECK_GEN_MASK) OPT_APPEND(o->mask_per_head ? " mask/head" : " mask");
  if (o->lse || gen & ATTN_CHECK_GEN_LSE) OPT_APPEND(" lse");
#undef OPT_APPEND
  char lay[ATTN_CHECK_DESC_MAX];
  attn_check_layout_describe(&c->layout, lay, sizeof lay);
  if (w >= 0 && (size_t)w < len) snprintf(buf + w, len - (size_t)w, "%s%s", opt, lay);
}
