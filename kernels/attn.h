// SPDX-License-Identifier: MIT
//
// attn.h — the one interface of attnbench. Read this file first.
//
// Every attention kernel in attnbench computes, for each batch b and query head h,
//
//     O[b,h] = softmax( scale · Q[b,h] · K[b,g]ᵀ + mask ) · V[b,g],    g = h / (heads / kv_heads)
//
// and is described by one `attn_kernel` record (name, summary, CPU features it needs,
// capabilities, workspace size, entry point). All kernels are listed once, in
// `attn_registry.def`; dispatch, `attnbench check`, the tests and the benchmarks all
// read that list.
//
// ── Memory layout (row-major, contiguous, no padding) ───────────────────────────────
//     Q[batch][heads   ][seq_q ][head_dim_qk]      float32
//     K[batch][kv_heads][seq_kv][head_dim_qk]      element type attn_problem.kv_dtype
//     V[batch][kv_heads][seq_kv][head_dim_v ]      element type attn_problem.kv_dtype
//     O[batch][heads   ][seq_q ][head_dim_v ]      float32
//
// ── K/V element types (attn_problem.kv_dtype; 0 = ATTN_DTYPE_F32) ───────────────────
//     F32   float32, as Q and O.
//     F16   IEEE binary16 as uint16_t elements, value exact in float32.
//     BF16  the top 16 bits of a binary32 as uint16_t elements: value = bits << 16.
//     Q8_0  each K row (head_dim_qk) and each V row (head_dim_v) is head_dim/32
//           consecutive attn_block_q8_0 blocks {uint16_t d (binary16); int8_t qs[32]}
//           of 34 bytes, element 32·b + t of the row = f16(d_b) · qs_b[t]. Needs
//           head_dim_qk % 32 == 0 and head_dim_v % 32 == 0 (attn_problem_validate).
//     Rows stay in the same [batch][kv_heads][seq_kv] order; attn_kv_row_bytes gives a
//     row's size. The problem is defined on the *stored* values: kernels compute with
//     exactly those (converted to float32 without error) and accumulate in float32 (the
//     scores, the softmax sums and the weighted sum of V). A kernel without native
//     support for a type (ATTN_CAP_KV_*) runs, through attn_kernel_run, on a float32
//     copy of K and V. Converting float32 to a type (kernels/core/convert.h): F16 and
//     BF16 round to nearest, ties to even (overflow → ±inf, NaN stays NaN); Q8_0 per
//     block d = f16(max|x|/127), q = x/d rounded to nearest even, clamped to ±127
//     (an all-zero block has d = 0 and q = 0).
//
// ── Compute modes (attn_problem.compute; 0 = ATTN_COMPUTE_F32) ─────────────────────
//     Which products run at which precision. Every sum (the scores, the softmax sums,
//     the weighted sum of V) is float32 in every mode.
//     F32   the contract above: products of the stored values in float32.
//     BF16  Q, K and V are rounded to bfloat16 (nearest, ties to even) — that rounding is
//           part of the inputs, so the reference sees the rounded values. Scores are sums
//           of products of bfloat16 pairs (exact in float32); each probability
//           p = e^(s−m) may be rounded to bfloat16 before it multiplies V (the kernel's
//           own rounding, relative error ≤ 2^-8, bounded by the checker); the
//           normaliser sums the probabilities before or after that rounding.
//     F16   the same with IEEE binary16 (products exact in float32; p rounded to
//           binary16, relative error ≤ 2^-11 for p ≥ 2^-14 and absolute ≤ 2^-25
//           below). |Q|, |K|, |V| above 65504, the largest binary16, are refused
//           (attn_inputs_check; from 65520 up they would round to ±inf).
//     INT8  needs kv_dtype Q8_0. Each Q row is quantized per 32-element block with the
//           Q8_0 rule (kernels/core/convert.h) — part of the inputs, as K's is — and
//           each score is Σ_blocks f16(d_q)·f16(d_k)·Σ_t q_t·k_t with exact integer
//           block dot products, scaled and summed in float32. P·V as in F32 (V as
//           stored). Needs head_dim_qk % 32 == 0 (as Q8_0 does).
//     A kernel without the mode's ATTN_CAP_COMPUTE_* bit runs (attn_kernel_run) on float32
//     copies of the rounded inputs in F32 mode: the same problem, without the kernel's own
//     rounding of p, which the bound allows.
//
// ── Grouped K/V heads (GQA / MQA) ───────────────────────────────────────────────────
//     heads % kv_heads == 0; query head h reads K/V head h / (heads / kv_heads).
//     kv_heads == heads is ordinary multi-head attention, kv_heads == 1 is MQA.
//
// ── Cross-attention ─────────────────────────────────────────────────────────────────
//     seq_q and seq_kv may differ; head_dim_v may differ from head_dim_qk.
//
// ── Causal mask: bottom-right aligned ───────────────────────────────────────────────
//     Query row i may see key j  iff  j <= i + (seq_kv - seq_q).
//     seq_q == seq_kv gives the usual lower triangle; seq_q == 1 (decode) sees every key.
//     A row that sees no key at all (possible when seq_q > seq_kv) outputs zeros.
//
// ── Attention variants (attn_problem.opts; NULL = none of them) ─────────────────────
//     With opts set, the score of query row i (0-based, head h of batch b) and key j is
//         s_ij = scale · q_i · k_j                                  (as above)
//         s_ij ← c · tanh(s_ij / c)                   if softcap c > 0 (after scaling)
//         s_ij ← s_ij + slope_h · (j − i − off)       if ALiBi (≤ 0 for keys at or left of
//                                                     the aligned diagonal when slope ≥ 0)
//         s_ij ← s_ij + M[i][j]                       if an additive mask (−inf allowed)
//     in that order, and
//         O_i = Σ_j e^(s_ij − m) v_j / ( Σ_j e^(s_ij − m) + e^(sink_h − m) )
//     over the keys j that row i *sees*, where the sink term is present only with sinks
//     and m is any shift (kernels use the maximum of the row's scores and the sink).
//   Alignment: off = seq_kv − seq_q (ATTN_ALIGN_BOTTOM_RIGHT, the default, as above),
//     off = 0 (ATTN_ALIGN_TOP_LEFT, PyTorch's is_causal) or off = diag_offset
//     (ATTN_ALIGN_OFFSET). It places the diagonal of the causal mask, the window and the
//     ALiBi distances. The explicit offset describes a chunk of a larger problem: query rows
//     at global positions [qo, qo + seq_q) against keys at [ko, ko + seq_kv) of a problem
//     whose own offset is OFF see exactly the keys (and ALiBi distances) the whole problem
//     would with diag_offset = qo − ko + OFF (context parallelism, harness/mpi). With
//     equal chunks (qo == ko, seq_q == seq_kv) the default alignment already says that.
//     |diag_offset| ≤ ATTN_DIAG_OFFSET_MAX.
//   Window (left, right), ATTN_WINDOW_UNBOUNDED (−1) for an unbounded side: row i sees key j
//     iff  −left ≤ j − (i + off) ≤ right.  The causal flag is the window (∞, 0): with both,
//     right becomes min(right, 0). Mistral is causal with left = 4095.
//     Keys seen by row i form one range [lo, hi) — attn_row_keys() — and kernels read no
//     key outside it. An additive −inf removes a key too: a row whose every key in range
//     is −inf, or whose range is empty, *sees nothing*.
//   ALiBi slopes: an explicit array alibi_slopes[heads], or alibi_max_bias > 0 with the
//     standard rule (BLOOM; ggml's generalisation to any head count): n = 2^⌊log2 heads⌋,
//     slope_h = 2^(−max_bias·(h+1)/n) for h < n, else 2^(−max_bias·(2(h−n)+1)/(2n)).
//   Sinks: sinks[heads], one finite logit per query head, in every row's denominator;
//     it carries no value (the weights of the keys sum to less than 1).
//   Additive mask: mask[seq_q][seq_kv] broadcast over batch and heads, or
//     mask[batch][heads][seq_q][seq_kv] with mask_per_head; values finite or −inf.
//   LSE output: lse[batch][heads][seq_q] (written when lse != NULL) =
//     log Σ_j e^(s_ij) over the keys the row sees (natural log, the sink excluded, so that
//     partial results over disjoint key ranges merge by log-sum-exp); −inf for a row that
//     sees nothing.
//   A row that sees nothing outputs zeros (and LSE −inf), never NaN, with or without sinks.
//   Kernels declare the options they handle natively with ATTN_CAP_OPT_* bits; the
//   callers' dispatch (attn_kernel_run) sends any other problem with options to the
//   shared portable path, so every kernel supports every option.
//
// ── Numerics contract: the input domain ────────────────────────────────────────────
//     Softmax subtracts the row maximum before exponentiating. Every kernel gives a
//     finite, accurate output (within the tolerance of kernels/check/check.h) for inputs
//     in this domain, which attn_inputs_check() enforces (attn_kernel_call calls it and
//     refuses anything else with ATTN_ERR_RANGE):
//       1. every element of Q, K and V is finite;
//       2. max(1, |scale|) · max_i ‖q_i‖₂ · max_j ‖k_j‖₂ ≤ ATTN_SCORE_LIMIT, per batch and
//          K/V group (i over the group's query rows, j over its key rows). By
//          Cauchy–Schwarz every partial sum of q_i·k_j, scaled or not, and so every score
//          is at most that in magnitude; s − m is at most twice it, and a kernel working
//          in base 2 multiplies by log2(e) < 1.5 — all far below FLT_MAX ≈ 2^128 (the
//          2^8 margin also covers rounding growth (1+u)^Dqk ≤ e^(Dqk·2^-24) for
//          head_dim_qk ≤ 2^26);
//       2b. for |scale| > 1 also |scale| · max_i ‖q_i‖₂ ≤ ATTN_SCORE_LIMIT and |scale| ·
//          max_j ‖k_j‖₂ ≤ ATTN_SCORE_LIMIT, per batch and K/V group: kernels may pre-scale
//          an operand (Q̂ = scale·Q), which must stay finite even when the other is tiny or
//          zero (2 alone allows ‖k‖ = 0 with scale·q = inf, and inf·0 = NaN);
//       3. seq_kv · max|v| ≤ ATTN_VALUE_LIMIT: the unnormalised accumulator Σ_j e^(s_j−m)·v_j
//          has weights ≤ 1, so it stays below FLT_MAX with the same margin.
//     Within it, a score more than ~87 below its row maximum gets a probability below
//     FLT_MIN, which flushes to zero (next section); the check tolerance allows for that.
//
// ── Numerics contract: flush-to-zero ────────────────────────────────────────────────
//     Kernels must not take denormal slow paths: they call attn_fp_env_enter/leave, which
//     sets FTZ/DAZ (or clamp). So subnormal inputs (|x| < FLT_MIN = 2^-126) act as zero and
//     subnormal intermediate results flush to zero. The check tolerance includes the
//     resulting absolute error terms (a few·n·FLT_MIN on each output, see check.h), so
//     e.g. inputs of 1e-40 everywhere give outputs of 0 and pass.
//
// ── Serving layouts: ragged batches and paged K/V (attn_problem.layout; NULL = dense) ─
//     A layout makes the problem a batch of `batch` sequences of their own lengths, as an
//     inference server runs it. Sequence b has q_len_b = cu_seqlens_q[b+1] − cu_seqlens_q[b]
//     query tokens and kv_len_b = cu_seqlens_kv[b+1] − cu_seqlens_kv[b] keys, and *is* the
//     dense problem of batch 1, seq_q = q_len_b, seq_kv = kv_len_b (attn_layout_seq_problem):
//     causal mask, window, alignment and ALiBi distances apply per sequence (bottom-right:
//     the q_len_b new tokens are the last q_len_b positions of a kv_len_b context, so a
//     chunk of a prefill or a 1-token decode step), as do the K/V type and compute mode.
//     The problem's seq_q and seq_kv are the largest q_len_b and kv_len_b (attn_problem_
//     set_layout fills batch, seq_q and seq_kv from the layout).
//       Q[total_q][heads][head_dim_qk], O[total_q][heads][head_dim_v]   float32, token-major:
//         token i of sequence b is row cu_seqlens_q[b] + i (FlashAttention's varlen packing).
//       RAGGED  K[total_kv][kv_heads] rows of head_dim_qk, V[total_kv][kv_heads] rows of
//         head_dim_v (kv_dtype rows, attn_kv_row_bytes): key t of b is row cu_seqlens_kv[b] + t.
//       PAGED   K and V are pools of num_pages pages, [num_pages][kv_heads][page_size] rows
//         (vLLM's cache layout, any kv_dtype: a Q8_0 row is head_dim/32 blocks as above). Key t
//         of sequence b is slot t % page_size of page page_table[b·pages_per_seq + t/page_size].
//         Pages may come in any order and be shared by several sequences (prefix caching);
//         only the ceil(kv_len_b/page_size) entries a sequence uses are read (the rest of
//         its page-table row may hold anything), and only its first kv_len_b slots.
//     Options per sequence: slopes and sinks are per head as before; the additive mask is
//     the sequences' blocks one after the other, [q_len_b][kv_len_b] each ([heads][q_len_b]
//     [kv_len_b] with mask_per_head), sequence b's block at attn_layout_mask_offset(p, b);
//     the LSE output is [heads][total_q] (FlashAttention's varlen LSE).
//     Zero lengths: q_len_b = 0 is a sequence with nothing to compute; kv_len_b = 0 with
//     q_len_b > 0 gives rows that see nothing (zeros, LSE −inf). At least one sequence
//     has a query and one has a key (seq_q, seq_kv >= 1).
//     A kernel with ATTN_CAP_LAYOUT_RAGGED / _PAGED reads that layout itself (unless the
//     problem uses an option it lacks: the options fallback is dense); any other kernel
//     gets, through attn_kernel_run, each sequence gathered into a dense batch-1 problem
//     in its workspace and is called once per sequence — so every kernel runs every
//     layout.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ── The problem ─────────────────────────────────────────────────────────────────────

// Mask alignment (see "Attention variants").
typedef enum attn_align {
  ATTN_ALIGN_BOTTOM_RIGHT = 0,  // off = seq_kv − seq_q (the default)
  ATTN_ALIGN_TOP_LEFT = 1,      // off = 0 (PyTorch's is_causal)
  ATTN_ALIGN_OFFSET = 2,        // off = attn_options.diag_offset (a chunk of a larger problem)
} attn_align;

// The largest |attn_options.diag_offset| (2^60: every diagonal i + off stays far from
// int64 overflow for any valid size).
#define ATTN_DIAG_OFFSET_MAX (INT64_C(1) << 60)

#define ATTN_WINDOW_UNBOUNDED (-1)  // a window side without limit

// The options of a problem (see "Attention variants"). Zero-initialised = none: no
// window, bottom-right alignment, no softcap, no ALiBi, no sinks, no mask, no LSE.
// The arrays are owned by the caller and must outlive the kernel call.
// The ranges of the option scalars that kernels (under FTZ/DAZ, see "Numerics contract:
// flush-to-zero") and the double reference read alike; attn_problem_validate refuses the
// rest. A subnormal value would read as 0 in a kernel and not in the reference; a softcap
// above 2^126 has a subnormal 1/c; above 2^64 a score small enough that s·(1/c) flushes
// loses more than 2^-62 of itself; max_bias above 126 gives subnormal slopes (the smallest
// is 2^-max_bias). The scale is 0 or |scale| in [FLT_MIN, FLT_MAX] (FLT_MIN = 2^-126).
#define ATTN_SOFTCAP_MIN 0x1p-126f  // FLT_MIN
#define ATTN_SOFTCAP_MAX 0x1p64
#define ATTN_ALIBI_MAX_BIAS_MIN 0x1p-126f  // FLT_MIN
#define ATTN_ALIBI_MAX_BIAS_MAX 126.0f

typedef struct attn_options {
  attn_align align;
  bool window;           // true: the window (window_left, window_right) applies
  int64_t window_left;   // keys left of the aligned diagonal, >= 0 or ATTN_WINDOW_UNBOUNDED
  int64_t window_right;  // keys right of it, >= 0 or ATTN_WINDOW_UNBOUNDED
  float softcap;         // c in [ATTN_SOFTCAP_MIN, ATTN_SOFTCAP_MAX]: s ← c·tanh(s/c); 0 = off
  float alibi_max_bias;  // in [ATTN_ALIBI_MAX_BIAS_MIN, _MAX]: standard slopes; 0 = off
  const float *alibi_slopes;  // [heads] 0 or normal, finite; NULL = none. Not with max_bias
  const float *sinks;         // [heads] finite logits; NULL = none
  const float *mask;          // [seq_q][seq_kv] or [batch][heads][seq_q][seq_kv]; NULL = none
  bool mask_per_head;         // mask has the 4-D (batch, head) layout
  float *lse;                 // output [batch][heads][seq_q]; NULL = not wanted
  int64_t diag_offset;        // off with ATTN_ALIGN_OFFSET, |off| <= ATTN_DIAG_OFFSET_MAX;
                              // ignored by the other alignments
} attn_options;

// The element type of K and V (see "K/V element types"). Q and O are always float32.
typedef enum attn_dtype {
  ATTN_DTYPE_F32 = 0,   // float32 (the default: a zero-initialised problem)
  ATTN_DTYPE_F16 = 1,   // IEEE binary16, uint16_t elements
  ATTN_DTYPE_BF16 = 2,  // bfloat16 (top half of a binary32), uint16_t elements
  ATTN_DTYPE_Q8_0 = 3,  // blocks of 32 int8 with one binary16 scale (attn_block_q8_0)
} attn_dtype;
#define ATTN_DTYPE_COUNT 4

// One Q8_0 block: 32 consecutive elements of a row, element t = f16_to_f32(d) · qs[t].
#define ATTN_Q8_0_BLOCK 32
typedef struct attn_block_q8_0 {
  uint16_t d;                  // the scale, IEEE binary16
  int8_t qs[ATTN_Q8_0_BLOCK];  // the quantized values, -127..127
} attn_block_q8_0;
#ifdef __cplusplus
static_assert(sizeof(attn_block_q8_0) == 34, "attn_block_q8_0 must be 34 bytes, unpadded");
#else
_Static_assert(sizeof(attn_block_q8_0) == 34, "attn_block_q8_0 must be 34 bytes, unpadded");
#endif

// "f32", "f16", "bf16", "q8_0"; "?" for a value outside the enum.
const char *attn_dtype_name(attn_dtype t);
// Parses one of the names above (exactly, lower case). Returns false for anything else.
bool attn_dtype_parse(const char *s, attn_dtype *out);
// Bytes of one K or V row of dim elements stored as t: 4·dim (F32), 2·dim (F16, BF16),
// 34·ceil(dim/32) (Q8_0). Saturates at SIZE_MAX; 0 for dim < 1 or an unknown type.
size_t attn_kv_row_bytes(attn_dtype t, int64_t dim);

// The compute mode (see "Compute modes").
typedef enum attn_compute {
  ATTN_COMPUTE_F32 = 0,   // float32 products (the default: a zero-initialised problem)
  ATTN_COMPUTE_BF16 = 1,  // bfloat16 Q, K, V and P; float32 sums
  ATTN_COMPUTE_F16 = 2,   // binary16 Q, K, V and P; float32 sums
  ATTN_COMPUTE_INT8 = 3,  // Q8_0 Q against Q8_0 K in integer dot products; needs kv_dtype Q8_0
} attn_compute;
#define ATTN_COMPUTE_COUNT 4

// "f32", "bf16", "f16", "int8"; "?" for a value outside the enum.
const char *attn_compute_name(attn_compute c);
// Parses one of the names above (exactly, lower case). Returns false for anything else.
bool attn_compute_parse(const char *s, attn_compute *out);

// The batch layout (see "Serving layouts"). The arrays are owned by the caller and must
// outlive the kernel call.
typedef enum attn_layout_kind {
  ATTN_LAYOUT_DENSE = 0,   // names the dense layout (a case's, a check's); a problem says
                           // it with layout == NULL, and a layout of this kind is refused
  ATTN_LAYOUT_RAGGED = 1,  // per-sequence lengths; Q, O, K and V packed by tokens
  ATTN_LAYOUT_PAGED = 2,   // per-sequence lengths; Q, O packed by tokens, K and V in pages
} attn_layout_kind;

// Largest page_size accepted (tests use small pages; servers use 16..256).
#define ATTN_MAX_PAGE_SIZE 65536

typedef struct attn_layout {
  attn_layout_kind kind;
  const int64_t *cu_seqlens_q;   // [batch + 1]: 0, then running sums of q_len_b
  const int64_t *cu_seqlens_kv;  // [batch + 1]: 0, then running sums of kv_len_b
  // PAGED only:
  int64_t page_size;          // tokens per page, 1..ATTN_MAX_PAGE_SIZE
  int64_t num_pages;          // pages in each of the K and V pools, >= 1
  int64_t pages_per_seq;      // the page table's row length, >= every sequence's page count
  const int32_t *page_table;  // [batch][pages_per_seq] page indices in [0, num_pages)
} attn_layout;

typedef struct attn_problem {
  int64_t batch;        // >= 1
  int64_t heads;        // query heads, >= 1
  int64_t kv_heads;     // K/V heads, >= 1, divides heads
  int64_t seq_q;        // query rows per head, >= 1
  int64_t seq_kv;       // key/value rows per head, >= 1
  int64_t head_dim_qk;  // width of Q and K rows, >= 1
  int64_t head_dim_v;   // width of V and O rows, >= 1
  bool causal;          // bottom-right aligned causal mask (see above)
  float scale;          // multiplies Q·Kᵀ; finite. attn_problem_make sets 1/sqrt(head_dim_qk)
  const attn_options *opts;   // attention variants; NULL = none (attn_problem_make's default)
  attn_dtype kv_dtype;        // element type of K and V; 0 = ATTN_DTYPE_F32 (the default)
  attn_compute compute;       // compute mode; 0 = ATTN_COMPUTE_F32 (the default)
  const attn_layout *layout;  // ragged / paged batch (see "Serving layouts"); NULL = dense
} attn_problem;

// Bits of the options a problem uses (ATTN_CAP_OPT_* values, 0 = a plain problem).
// Alignment counts only when it changes something (top-left with causal or a window,
// or ALiBi, and seq_q != seq_kv: ATTN_CAP_OPT_ALIGN; an explicit offset other than
// seq_kv − seq_q with causal, a window or ALiBi: ATTN_CAP_OPT_OFFSET).
uint32_t attn_problem_options_used(const attn_problem *p);

// ALiBi slope of query head h (0 without ALiBi): the explicit array or the max_bias rule.
float attn_alibi_slope(const attn_problem *p, int64_t h);

// The offset off of the aligned diagonal: seq_kv − seq_q (bottom-right), 0 (top-left) or
// opts->diag_offset (ATTN_ALIGN_OFFSET).
int64_t attn_diag_offset(const attn_problem *p);

// A problem with the default scale 1/sqrt(head_dim_qk).
attn_problem attn_problem_make(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                               int64_t seq_kv, int64_t head_dim_qk, int64_t head_dim_v,
                               bool causal);

// Checks every field (attn_problem_check_field, in attn_field order). Returns true if the
// problem is valid; otherwise false and a one-line, human-readable reason in err (if
// err != NULL). Rejects: sizes < 1, heads % kv_heads != 0, a scale that is non-finite or
// subnormal, any tensor whose element or byte count overflows size_t, a kv_dtype outside
// attn_dtype, Q8_0 with head_dim_qk or head_dim_v not a multiple of 32, a compute outside
// attn_compute, INT8 without kv_dtype Q8_0 (or with head_dim_qk not a multiple of 32); and
// among the options: an alignment other than the three, |diag_offset| > ATTN_DIAG_OFFSET_MAX
// with ATTN_ALIGN_OFFSET, a window side < 0 other than ATTN_WINDOW_UNBOUNDED, a softcap other
// than 0 or in [ATTN_SOFTCAP_MIN, ATTN_SOFTCAP_MAX], an alibi_max_bias other than 0 or in
// [ATTN_ALIBI_MAX_BIAS_MIN, ATTN_ALIBI_MAX_BIAS_MAX], both alibi_max_bias and alibi_slopes, a
// mask tensor whose size overflows. (Array contents are inputs: attn_inputs_check checks
// them.) With a layout (see "Serving layouts"): a kind other than RAGGED or PAGED
// (dense is layout NULL), a NULL array, cu_seqlens not starting at 0 or decreasing, seq_q /
// seq_kv other than the largest lengths, no query or no key in the batch, a page_size
// outside 1..ATTN_MAX_PAGE_SIZE, num_pages < 1, a page-table row too short for its
// sequence or a used entry outside [0, num_pages), packed tensors or a pool too large.
bool attn_problem_validate(const attn_problem *p, char *err, size_t err_len);

// The fields of a problem as attn_problem_validate checks them, one rule each, in the
// order it checks them. A caller that fills a problem in steps (a command line, a config
// file) checks each field where it sets it and names the option that set it; the option
// fields pass when p->opts is NULL. Every check but ATTN_FIELD_SIZES's reads sizes that
// ATTN_FIELD_SIZES admits (none divides by or indexes with them).
typedef enum attn_field {
  ATTN_FIELD_SIZES,     // the seven sizes >= 1; Q, K, V and O fit in size_t bytes
  ATTN_FIELD_HEADS,     // heads % kv_heads == 0
  ATTN_FIELD_SCALE,     // finite, not subnormal
  ATTN_FIELD_KV_DTYPE,  // an attn_dtype; Q8_0 with head dims that are multiples of 32
  ATTN_FIELD_ALIGN,     // opts->align: one of the three; diag_offset in range with OFFSET
  ATTN_FIELD_WINDOW,    // opts window sides: >= 0 or ATTN_WINDOW_UNBOUNDED
  ATTN_FIELD_SOFTCAP,   // opts->softcap: 0 or in [ATTN_SOFTCAP_MIN, ATTN_SOFTCAP_MAX]
  ATTN_FIELD_ALIBI,     // opts->alibi_max_bias: 0 or in range; not with alibi_slopes too
  ATTN_FIELD_MASK,      // opts->mask: its size fits in size_t bytes
  ATTN_FIELD_COMPUTE,   // an attn_compute; INT8 with kv_dtype Q8_0 and head_dim_qk % 32 == 0
  ATTN_FIELD_LAYOUT,    // the batch layout, when not NULL (see "Serving layouts")
} attn_field;
#define ATTN_FIELD_COUNT 11

// Checks one field: true, or false with attn_problem_validate's one-line reason in err.
bool attn_problem_check_field(const attn_problem *p, attn_field field, char *err, size_t err_len);

// The field's name as the problem and its options spell it ("kv_dtype", "softcap", ...).
const char *attn_field_name(attn_field field);

// The input domain (see "Numerics contract" above). 2^120 ≈ 1.33e36.
#define ATTN_SCORE_LIMIT 0x1p120  // bound on max(1,|scale|)·max‖q_i‖₂·max‖k_j‖₂
#define ATTN_VALUE_LIMIT 0x1p120  // bound on seq_kv·max|v|

// Checks that the inputs of a valid problem lie in the input domain: every element finite,
// scores and the V accumulation safely inside float32 (conditions 1–3 above); with options
// also: ALiBi slopes and sinks finite, slopes 0 or normal (|slope| ≥ FLT_MIN: a subnormal
// slope reads as 0 in a kernel, not in the reference), |sink| ≤ ATTN_SCORE_LIMIT,
// |slope|·(2·max(seq_q, seq_kv) + |off|) ≤ ATTN_SCORE_LIMIT, mask values finite or −inf with
// |finite| ≤ ATTN_SCORE_LIMIT (so every final score stays below 3·2^120, inside float32 with a 2^6
// margin). O(size of the inputs), no allocation. Returns ATTN_OK, ATTN_ERR_INVALID (invalid problem
// or NULL tensor) or ATTN_ERR_RANGE with a one-line message in err naming the quantity, e.g.
// "K[0][1][4][2] = inf is not finite" or "scores may overflow float32: ...".
// K and V are p->kv_dtype tensors; the conditions apply to their stored values. The
// compute mode's rounding keeps every input finite, naming the element otherwise: F16
// |Q|, |K|, |V| ≤ 65504 (the largest binary16), BF16 ≤ 0x1.fep127 ≈ 3.39e38 (the largest
// bfloat16), INT8 |Q| ≤ 127·65504 (Q's block scale max|q|/127 is a binary16). These and
// conditions 1–3 apply to every sequence of a ragged or paged problem.
int attn_inputs_check(const attn_problem *p, const float *q, const void *k, const void *v,
                      char *err, size_t err_len);

// Element counts of the four tensors (valid problems only).
size_t attn_q_elems(const attn_problem *p);
size_t attn_k_elems(const attn_problem *p);
size_t attn_v_elems(const attn_problem *p);
size_t attn_o_elems(const attn_problem *p);
// Bytes of the K and V tensors as stored (kv_dtype; rows of attn_kv_row_bytes), saturating
// at SIZE_MAX. For F32 this is 4·attn_k_elems / 4·attn_v_elems.
size_t attn_k_bytes(const attn_problem *p);
size_t attn_v_bytes(const attn_problem *p);

// The keys row i may see by causal mask, window and alignment: [*lo, *hi) with
// 0 <= *lo <= *hi <= seq_kv (empty: *lo == *hi). Additive-mask −inf entries inside the
// range are removed by the mask, not here. Every kernel and the checker use this.
void attn_row_keys(const attn_problem *p, int64_t i, int64_t *lo, int64_t *hi);

// Number of keys row i may see: hi − lo of attn_row_keys. Without options this is
// seq_kv without a mask, else clamp(i + 1 + seq_kv - seq_q, 0, seq_kv).
int64_t attn_visible_keys(const attn_problem *p, int64_t i);

// Useful floating-point work: 2·(head_dim_qk + head_dim_v) flops per visible (query, key)
// pair — one multiply-add per element for Q·Kᵀ and one for P·V — summed over batch·heads.
// Without a mask and with head_dim_qk == head_dim_v == D this is 4·B·H·Sq·Skv·D; under the
// causal mask or a window only visible pairs (attn_row_keys) count. Exponentials, the
// softmax and the options' elementwise work are not counted.
double attn_flops(const attn_problem *p);

// ── Serving layouts: functions (valid problems; see "Serving layouts") ──────────────

// Sets p->layout = l and, from l, p->batch (the sequences: the caller passes their count),
// p->seq_q and p->seq_kv (the largest lengths). Does not validate (attn_problem_validate).
void attn_problem_set_layout(attn_problem *p, const attn_layout *l, int64_t batch);
// q_len_b and kv_len_b of sequence b (for a dense problem: seq_q and seq_kv).
int64_t attn_layout_q_len(const attn_problem *p, int64_t b);
int64_t attn_layout_kv_len(const attn_problem *p, int64_t b);
// Query tokens over all sequences (dense: batch·seq_q).
size_t attn_layout_total_q(const attn_problem *p);
// The keys of sequence b that some row of it can see, counted once: the union over its
// rows of each row's range under causal masking and a window ("Causal masking and
// windows"), all kv_len_b keys without them, 0 without queries (dense: sequence b of the
// batch alike). What one call must read of its K/V, per K/V head.
int64_t attn_layout_visible_keys(const attn_problem *p, int64_t b);
// Sequence b as a dense problem of batch 1 (seq_q = q_len_b, seq_kv = kv_len_b, layout NULL;
// not valid when a length is 0). With options, *opts gets a copy of p's whose mask points
// at sequence b's block and whose lse is NULL (the packed LSE is not a batch-1 tensor).
attn_problem attn_layout_seq_problem(const attn_problem *p, int64_t b, attn_options *opts);
// Offset (in floats) of sequence b's block in the additive mask.
size_t attn_layout_mask_offset(const attn_problem *p, int64_t b);
// Elements of the additive mask and of the LSE output (dense or layout); 0 without them.
size_t attn_mask_elems(const attn_problem *p);
size_t attn_lse_elems(const attn_problem *p);

// ── Execution parameters (shared by every kernel; 0 means "kernel default") ─────────

// The most threads any source may ask for (--threads, a config's `threads`,
// OMP_NUM_THREADS through the OpenMP default). Checked before any parallel region:
// attn_kernel_call calls attn_exec_check, and so must any caller that runs a kernel's
// entry point directly (the bench's timed loop).
#define ATTN_MAX_THREADS 1024
// The largest tile_q / tile_kv (the CLI's and ATTNBENCH_TILE_*'s limit too). Kernels also
// clamp tiles to the problem (seq_q rows, seq_kv keys).
#define ATTN_MAX_TILE (1 << 20)

// The most register-tile variants a kernel record may declare (attn_kernel.regtiles).
#define ATTN_MAX_REGTILES 8
// The largest kv_split (key chunks per task).
#define ATTN_MAX_KV_SPLIT 4096

typedef struct attn_exec {
  int threads;   // threads a parallel kernel may use; 0 = OpenMP default. Ignored by
                 // single-thread kernels. The answer must not depend on it.
  int tile_q;    // query rows per tile for tiled kernels; 0 = kernel default
  int tile_kv;   // key rows per tile for tiled kernels; 0 = kernel default
  int regtile;   // register-tile variant: an index into the kernel's variants
                 // (attn_kernel_regtile); 0 = the kernel's default. Kernels without
                 // variants have only 0.
  int kv_split;  // split-KV (kernels with ATTN_CAP_KV_SPLIT): cut each task's key range
                 // into this many chunks, whatever the task count (1 = no split);
                 // 0 = the kernel's default rule. Ignored by other kernels. The answer
                 // does not depend on the thread count for any value.
} attn_exec;

// Checks exec (NULL means all defaults): 0 <= threads <= ATTN_MAX_THREADS,
// 0 <= tile_q, tile_kv <= ATTN_MAX_TILE, 0 <= regtile < ATTN_MAX_REGTILES,
// 0 <= kv_split <= ATTN_MAX_KV_SPLIT, and
// for threads == 0 that the OpenMP default (omp_get_max_threads(), i.e. OMP_NUM_THREADS)
// is within the cap too. Returns ATTN_OK or ATTN_ERR_INVALID with a one-line message.
// (Whether regtile names one of a given kernel's variants: attn_kernel_exec_check.)
int attn_exec_check(const attn_exec *exec, char *err, size_t err_len);

// ── The kernel descriptor ───────────────────────────────────────────────────────────

// CPU features a kernel may require (bit set). attn_cpu_features() reports the running CPU's.
enum {
  ATTN_ISA_AVX2 = 1u << 0,           // AVX2 + FMA3 (and the OS saves YMM state)
  ATTN_ISA_AVX512F = 1u << 1,        // AVX-512 F (and the OS saves ZMM state)
  ATTN_ISA_NEON = 1u << 2,           // aarch64 Advanced SIMD
  ATTN_ISA_F16C = 1u << 3,           // F16C half-precision conversions (with AVX state saved)
  ATTN_ISA_AVX512BF16 = 1u << 4,     // AVX512_BF16 (with AVX-512 F, DQ, BW, VL, ZMM state)
  ATTN_ISA_AVX512FP16 = 1u << 5,     // AVX512_FP16 (with AVX-512 F, DQ, BW, VL, ZMM state)
  ATTN_ISA_AVX512VNNI = 1u << 6,     // AVX512_VNNI (with AVX-512 F, DQ, BW, VL, ZMM state)
  ATTN_ISA_AVXVNNI = 1u << 7,        // AVX-VNNI (VEX vpdpbusd on ymm, with AVX2)
  ATTN_ISA_AMXBF16 = 1u << 8,        // AMX-BF16 tiles, the OS having granted XTILEDATA
  ATTN_ISA_NEON_BF16 = 1u << 9,      // aarch64 BF16 (BFDOT, BFMMLA)
  ATTN_ISA_NEON_DOTPROD = 1u << 10,  // aarch64 DotProd (SDOT/UDOT)
  ATTN_ISA_NEON_FHM = 1u << 11,      // aarch64 FHM (FMLAL: binary16 products, float32 sums)
};

// Capability flags. Every registered kernel must support the whole problem space (a
// kernel may fall back internally, never refuse); the flags say which cases the kernel
// handles natively, for `attnbench list` and reports.
enum {
  ATTN_CAP_CAUSAL = 1u << 0,     // causal mask (natively skips masked work)
  ATTN_CAP_CROSS = 1u << 1,      // seq_q != seq_kv
  ATTN_CAP_GQA = 1u << 2,        // kv_heads < heads shares K/V loads across the group
  ATTN_CAP_DV_NE_DQK = 1u << 3,  // head_dim_v != head_dim_qk
  ATTN_CAP_THREADS = 1u << 4,    // uses attn_exec.threads (OpenMP)
  ATTN_CAP_KV_SPLIT = 1u << 5,   // uses attn_exec.kv_split (split-KV key chunks)
  ATTN_CAP_ALL_SHAPES = ATTN_CAP_CAUSAL | ATTN_CAP_CROSS | ATTN_CAP_GQA | ATTN_CAP_DV_NE_DQK,
  // Options (attn_options) the kernel's entry point computes itself. A problem using an
  // option the kernel lacks runs on the shared portable path instead (attn_kernel_run).
  ATTN_CAP_OPT_ALIGN = 1u << 8,     // top-left alignment
  ATTN_CAP_OPT_WINDOW = 1u << 9,    // sliding window
  ATTN_CAP_OPT_SOFTCAP = 1u << 10,  // logit soft-capping
  ATTN_CAP_OPT_ALIBI = 1u << 11,    // ALiBi slopes (either form)
  ATTN_CAP_OPT_SINKS = 1u << 12,    // attention sinks
  ATTN_CAP_OPT_MASK = 1u << 13,     // additive mask (either layout)
  ATTN_CAP_OPT_LSE = 1u << 14,      // LSE output
  ATTN_CAP_OPT_OFFSET = 1u << 15,   // explicit diagonal offset (ATTN_ALIGN_OFFSET)
  ATTN_CAP_OPT_ALL = ATTN_CAP_OPT_ALIGN | ATTN_CAP_OPT_WINDOW | ATTN_CAP_OPT_SOFTCAP |
                     ATTN_CAP_OPT_ALIBI | ATTN_CAP_OPT_SINKS | ATTN_CAP_OPT_MASK |
                     ATTN_CAP_OPT_LSE | ATTN_CAP_OPT_OFFSET,
  // K/V element types the kernel's entry point reads natively (float32 always). Any other
  // type reaches it as a float32 copy of K and V (attn_kernel_run).
  ATTN_CAP_KV_F16 = 1u << 16,
  ATTN_CAP_KV_BF16 = 1u << 17,
  ATTN_CAP_KV_Q8_0 = 1u << 18,
  ATTN_CAP_KV_ALL = ATTN_CAP_KV_F16 | ATTN_CAP_KV_BF16 | ATTN_CAP_KV_Q8_0,
  // Compute modes (attn_problem.compute) the kernel's entry point runs itself (F32
  // always). Any other mode reaches it as F32 on rounded float32 copies (attn_kernel_run).
  ATTN_CAP_COMPUTE_BF16 = 1u << 20,
  ATTN_CAP_COMPUTE_F16 = 1u << 21,
  ATTN_CAP_COMPUTE_INT8 = 1u << 22,
  ATTN_CAP_COMPUTE_ALL = ATTN_CAP_COMPUTE_BF16 | ATTN_CAP_COMPUTE_F16 | ATTN_CAP_COMPUTE_INT8,
  // Serving layouts (attn_problem.layout) the kernel's entry point reads itself. Any other
  // layout reaches it one gathered dense sequence at a time (attn_kernel_run).
  ATTN_CAP_LAYOUT_RAGGED = 1u << 24,
  ATTN_CAP_LAYOUT_PAGED = 1u << 25,
  ATTN_CAP_LAYOUT_ALL = ATTN_CAP_LAYOUT_RAGGED | ATTN_CAP_LAYOUT_PAGED,
};

// The ATTN_CAP_KV_* bit of a type (0 for F32, which every kernel reads).
uint32_t attn_dtype_cap(attn_dtype t);
// The ATTN_CAP_COMPUTE_* bit of a mode (0 for F32, which every kernel runs).
uint32_t attn_compute_cap(attn_compute c);

// Space-separated names of the ATTN_CAP_OPT_* bits in caps ("window softcap"), "none" for 0.
const char *attn_option_names(uint32_t caps, char *buf, size_t buf_len);

// Status codes returned by kernels.
enum {
  ATTN_OK = 0,
  ATTN_ERR_INVALID = 1,  // the problem failed attn_problem_validate
  ATTN_ERR_NOMEM = 2,    // the kernel could not allocate what it needed
  ATTN_ERR_RANGE = 3,    // inputs outside the input domain (attn_inputs_check)
};

// The kernel entry point. Preconditions (guaranteed by callers, asserted by kernels):
// attn_problem_validate(p) holds; q, k, v, o point to tensors of the sizes above and do
// not overlap o; k and v hold p->kv_dtype elements, which is F32 or a type of the kernel's
// ATTN_CAP_KV_* bits (attn_kernel_run converts any other); workspace points to at least
// workspace_size(p, exec) bytes aligned to 64 (may be NULL when that size is 0). The
// kernel writes every element of o. A float32-only kernel starts with
//     const float *k = (const float *)kv, *v = (const float *)vv;
typedef int (*attn_kernel_fn)(const attn_problem *p, const attn_exec *exec, const float *q,
                              const void *kv, const void *vv, float *o, void *workspace);

typedef size_t (*attn_workspace_fn)(const attn_problem *p, const attn_exec *exec);

// One register-tile variant of a kernel: the micro-kernel shapes of one compiled-in
// instance of its entry point, chosen at run time by attn_exec.regtile.
typedef struct attn_regtile {
  const char *name;      // "<qk_rows>x<qk_cols>/<pv_rows>x<pv_cols>", e.g. "8x48/6x64"
  int qk_rows, qk_cols;  // Q·Kᵀ register tile (query rows × keys)
  int pv_rows, pv_cols;  // P·V register tile (query rows × head_dim_v columns)
} attn_regtile;

typedef struct attn_kernel {
  const char *name;             // "<what>__<isa>", e.g. "flash__avx512"; unique
  const char *summary;          // one line for `attnbench list`
  uint32_t required_isa;        // ATTN_ISA_* bits the CPU must have (0 = any CPU)
  uint32_t caps;                // ATTN_CAP_* bits
  attn_workspace_fn workspace;  // bytes of scratch the caller provides; NULL means 0
  attn_kernel_fn run;
  // Register tiles, for `attnbench list` and the edge-case tests (tests/simd derive
  // sizes below, at and above each tile from them). Rows are query rows; Q·Kᵀ columns
  // are keys, P·V columns are head_dim_v columns. 0 = no register tile (portable C).
  int vec_width;         // float lanes per vector: 1 = scalar C, 0 = not declared
  int qk_rows, qk_cols;  // Q·Kᵀ register tile (query rows × keys)
  int pv_rows, pv_cols;  // P·V register tile (query rows × head_dim_v columns)
  // Register-tile variants (attn_exec.regtile indexes them; run and workspace dispatch
  // on it). 0 = one implicit variant, the tiles above, named "default". Otherwise
  // regtiles[0 .. regtile_count) with regtile_count <= ATTN_MAX_REGTILES, distinct
  // names, and regtiles[0] (the default) equal to the tiles above.
  int regtile_count;
  const attn_regtile *regtiles;
} attn_kernel;

// Number of register-tile variants of k (1 when the record declares none).
int attn_kernel_regtile_count(const attn_kernel *k);
// Variant i (0 <= i < attn_kernel_regtile_count) of k; the implicit one is named "default".
attn_regtile attn_kernel_regtile(const attn_kernel *k, int i);
// The index of k's variant called name (exactly), or −1.
int attn_kernel_regtile_find(const attn_kernel *k, const char *name);
// attn_exec_check, then that exec->regtile names one of k's variants ("kernel flash__avx2
// has 3 register-tile variants (0..2: 6x16/6x16, ...); regtile 5 is none of them").
// Returns ATTN_OK or ATTN_ERR_INVALID. attn_kernel_call calls it; so must any caller that
// runs attn_kernel_run directly.
int attn_kernel_exec_check(const attn_kernel *k, const attn_exec *exec, char *err, size_t err_len);

// ── The registry ────────────────────────────────────────────────────────────────────

// All kernels compiled into this build, in attn_registry.def order, then the plug-in
// kernels in the order they were added (attn_registry_add below).
size_t attn_kernel_count(void);
const attn_kernel *attn_kernel_at(size_t i);
// NULL if no kernel (built-in or plug-in) has that name.
const attn_kernel *attn_kernel_find(const char *name);
// True if the running CPU has every feature the kernel requires. Otherwise false and,
// if why != NULL, a reason like "needs avx512f".
bool attn_kernel_available(const attn_kernel *k, char *why, size_t why_len);

// Validates the problem (attn_problem_validate), exec (attn_kernel_exec_check) and the inputs
// (attn_inputs_check), checks CPU support, allocates the workspace (64-byte aligned), runs
// the kernel and frees the workspace. Returns ATTN_OK or an error code (ATTN_ERR_INVALID,
// ATTN_ERR_RANGE, ATTN_ERR_NOMEM, or the kernel's own); err gets a message.
// kk and v hold p->kv_dtype elements.
int attn_kernel_call(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                     const float *q, const void *kk, const void *v, float *o, char *err,
                     size_t err_len);

// True if k's entry point handles every option p uses natively (attn_problem_options_used
// ⊆ k->caps); false means attn_kernel_run takes the portable fallback. (The K/V type is
// separate: attn_kernel_kv_native.)
bool attn_kernel_native(const attn_kernel *k, const attn_problem *p);

// Runs a valid, checked problem on k: k->run(p, exec, q, kk, v, o, workspace) when the
// kernel is native for p, else the shared portable path (the `blocked` algorithm with
// every option, default tiles, exec.threads ignored). workspace must hold
// attn_kernel_workspace(k, p, exec) bytes, which is the fallback's size when it runs;
// exec NULL means all defaults. Callers that run entry points directly (the bench's
// timed loop) call this instead of k->run; attn_kernel_call uses it too. *fallback (if
// not NULL) is set to whether the fallback ran.
//
// K/V types: when p->kv_dtype is not F32 and k lacks its ATTN_CAP_KV_* bit
// (attn_kernel_kv_native), K and V are first converted to float32 into the front of the
// workspace (exactly: every stored value is a float32) and the kernel (or the options
// fallback) runs on the same problem with kv_dtype F32 — so every kernel handles every
// type; *fallback reports only the options fallback.
int attn_kernel_run(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                    const float *q, const void *kk, const void *v, float *o, void *workspace,
                    bool *fallback);

// True if k reads p->kv_dtype natively: F32, or the type's ATTN_CAP_KV_* bit is in k->caps.
bool attn_kernel_kv_native(const attn_kernel *k, const attn_problem *p);
// True if k runs p->compute itself: F32, or the mode's ATTN_CAP_COMPUTE_* bit is in k->caps.
// Otherwise attn_kernel_run hands it float32 copies of the rounded inputs in F32 mode: Q
// rounded (BF16, F16) or Q8_0-quantized and dequantized (INT8); K and V widened and, for
// BF16/F16, rounded, in the same pass as the K/V-type conversion (kernels/core/convert.h,
// attn_compute_round_q/_kv). INT8 keeps K and V as stored (Q8_0 values are exact).
bool attn_kernel_compute_native(const attn_kernel *k, const attn_problem *p);

// Workspace size for (k, p, exec): 0 when the kernel has no workspace function; the
// portable fallback's size when k is not native for p (attn_kernel_native); plus, when
// k does not read p->kv_dtype natively (or does not run p->compute and the mode rounds
// K/V), the float32 copies of K and V, and when it does not run p->compute, the float32
// copy of Q (each rounded up to 64 bytes). Saturates at SIZE_MAX.
size_t attn_kernel_workspace(const attn_kernel *k, const attn_problem *p, const attn_exec *exec);

// ── Plug-ins: kernels registered at run time (docs/plugins.md) ──────────────────────
//
// A plug-in is a shared object exporting, with C linkage, the one entry point
//
//     const attn_plugin *attn_plugin_v1(void);       // name: ATTN_PLUGIN_ENTRY
//
// returning a static description of its kernels. The host (attnbench --plugin PATH,
// ATTNBENCH_PLUGINS) loads it and passes the description to attn_registry_add. Its kernels
// then sit after the built-ins in the one registry: attn_kernel_count/at/find see them,
// and every command checks, runs and benchmarks them like the built-ins.
//
// ABI: abi_version must equal ATTN_PLUGIN_ABI_VERSION and record_size sizeof(attn_kernel)
// of the header the plug-in was compiled with; the version is bumped on any change to
// attn_kernel, attn_problem, attn_exec or the entry point's signature (2: kv_dtype and
// the const void * K/V of the entry point; 3: register-tile variants in attn_kernel,
// regtile and kv_split in attn_exec; 4: compute and the batch layout in attn_problem — a
// plug-in built against 3 would allocate the smaller attn_problem for attn_problem_make's
// result and for the problems it hands to attn_problem_validate, which read the new
// fields; its kernels, with no ATTN_CAP_COMPUTE_* or ATTN_CAP_LAYOUT_* bit, never see a
// mode other than F32 or a layout other than dense).
#define ATTN_PLUGIN_ABI_VERSION 4u
#define ATTN_PLUGIN_ENTRY "attn_plugin_v1"

typedef struct attn_plugin {
  uint32_t abi_version;               // ATTN_PLUGIN_ABI_VERSION
  uint32_t record_size;               // sizeof(attn_kernel)
  size_t count;                       // number of records in kernels (>= 1)
  const attn_kernel *const *kernels;  // count records; must outlive the process
} attn_plugin;

typedef const attn_plugin *(*attn_plugin_entry_fn)(void);

// The longest kernel name the registry accepts (built-ins and plug-ins).
#define ATTN_KERNEL_NAME_MAX 64

// Checks one record on its own: name of 1..ATTN_KERNEL_NAME_MAX characters from
// [A-Za-z0-9_.-], summary not NULL, run not NULL, required_isa and caps only known
// ATTN_ISA_* / ATTN_CAP_* bits, vec_width and tile sizes >= 0, register-tile variants as
// attn_kernel says (names of 1..31 characters from [A-Za-z0-9x/_.-]). Returns true if valid;
// otherwise false and a one-line reason naming the field in err.
bool attn_kernel_validate(const attn_kernel *k, char *err, size_t err_len);

// Adds a plug-in's kernels to the registry, all or none. origin names the plug-in (its
// file path) in messages and in attn_kernel_origin; it is copied. Refuses, with a
// one-line message in err and the registry unchanged: plugin == NULL, an ABI or record
// size mismatch, count == 0 or kernels == NULL, a NULL record, an invalid record
// (attn_kernel_validate), a name repeated within the plug-in, a name that shadows a
// built-in kernel or one added earlier. Returns ATTN_OK, ATTN_ERR_INVALID or
// ATTN_ERR_NOMEM. Not thread-safe: call at start-up, before kernels run.
int attn_registry_add(const attn_plugin *plugin, const char *origin, char *err, size_t err_len);

// Number of built-in (compiled-in) kernels; indices >= this in attn_kernel_at are plug-ins.
size_t attn_builtin_count(void);

// NULL for a built-in kernel; the origin given to attn_registry_add for a plug-in kernel.
const char *attn_kernel_origin(const attn_kernel *k);

// ── CPU features ────────────────────────────────────────────────────────────────────

// ATTN_ISA_* bits of the running CPU (detected once, at run time: cpuid/xgetbv on x86,
// getauxval on aarch64 Linux). Setting the environment variable ATTNBENCH_ISA_MASK to a
// number masks the result (e.g. 0 hides every SIMD ISA) for testing dispatch.
// The value must be a whole unsigned number (decimal, 0x hex or 0 octal) that fits in
// 32 bits; anything else is malformed and hides every ISA here — programs call
// attn_isa_mask_check() at start-up to refuse it with a message instead.
uint32_t attn_cpu_features(void);
// True if ATTNBENCH_ISA_MASK is unset, empty or well-formed (see above); otherwise false
// and a one-line message naming the variable and its value in err.
bool attn_isa_mask_check(char *err, size_t err_len);
// Why a unit the CPU has is not among attn_cpu_features() (e.g. "amx-bf16: the kernel
// refused tile data (arch_prctl(ARCH_REQ_XCOMP_PERM): ...)"); "" when nothing is held back.
// On Linux x86, detection asks the OS for AMX tile state (ARCH_REQ_XCOMP_PERM) once.
const char *attn_cpu_features_note(void);
// Space-separated names of the bits in isa ("avx2 avx512f"); "none" for 0.
const char *attn_isa_names(uint32_t isa, char *buf, size_t buf_len);

// ── Floating-point environment ──────────────────────────────────────────────────────

// The kernels' FP environment: enter sets round-to-nearest, flush-to-zero and
// denormals-are-zero and masks every exception (x86 MXCSR and x87 control word, aarch64
// FPCR) on the calling thread and returns the previous state; leave restores it
// exactly. attn_kernel_run brackets every kernel call (plug-ins too) with them, so a
// caller's rounding mode or trap settings never reach a kernel and a kernel's never
// reach the caller; OpenMP kernels call them inside the parallel region, per thread.
typedef struct attn_fp_env {
  uint64_t saved;
} attn_fp_env;
attn_fp_env attn_fp_env_enter(void);
void attn_fp_env_leave(attn_fp_env saved);

#ifdef __cplusplus
}
#endif
