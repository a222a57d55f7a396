// SPDX-License-Identifier: MIT
// Helpers shared by kernel implementations: tensor addressing and preconditions.
// Not part of the public interface.
#pragma once

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"

// Start of the (b, h) query head's [seq_q][head_dim_qk] block of Q.
static inline const float *attn_q_head(const attn_problem *p, const float *q, int64_t b,
                                       int64_t h) {
  return q + ((size_t)b * (size_t)p->heads + (size_t)h) * (size_t)p->seq_q * (size_t)p->head_dim_qk;
}
// Start of the (b, h) query head's [seq_q][head_dim_v] block of O.
static inline float *attn_o_head(const attn_problem *p, float *o, int64_t b, int64_t h) {
  return o + ((size_t)b * (size_t)p->heads + (size_t)h) * (size_t)p->seq_q * (size_t)p->head_dim_v;
}
// K/V head that query head h reads (GQA/MQA): h / (heads / kv_heads).
static inline int64_t attn_kv_head_of(const attn_problem *p, int64_t h) {
  return h / (p->heads / p->kv_heads);
}
// Start of the (b, g) K/V head's [seq_kv][head_dim_qk] block of K.
static inline const float *attn_k_head(const attn_problem *p, const float *k, int64_t b,
                                       int64_t g) {
  return k +
         ((size_t)b * (size_t)p->kv_heads + (size_t)g) * (size_t)p->seq_kv * (size_t)p->head_dim_qk;
}
// Start of the (b, g) K/V head's [seq_kv][head_dim_v] block of V.
static inline const float *attn_v_head(const attn_problem *p, const float *v, int64_t b,
                                       int64_t g) {
  return v +
         ((size_t)b * (size_t)p->kv_heads + (size_t)g) * (size_t)p->seq_kv * (size_t)p->head_dim_v;
}

// Start of the (b, g) K/V head of a tensor of p->kv_dtype elements with rows of dim
// (head_dim_qk for K, head_dim_v for V): [seq_kv] rows of attn_kv_row_bytes each.
static inline const void *attn_kv_head(const attn_problem *p, const void *x, int64_t b, int64_t g,
                                       int64_t dim) {
  return (const char *)x + ((size_t)b * (size_t)p->kv_heads + (size_t)g) * (size_t)p->seq_kv *
                               attn_kv_row_bytes(p->kv_dtype, dim);
}

// a·b and a + b in size_t, saturating at SIZE_MAX (which no allocation can satisfy, so
// attn_kernel_call reports "cannot allocate" instead of handing out a wrapped, too small
// workspace). For workspace-size functions.
static inline size_t attn_size_mul_sat(size_t a, size_t b) {
  return (b != 0 && a > SIZE_MAX / b) ? SIZE_MAX : a * b;
}
static inline size_t attn_size_add_sat(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

// The threads a parallel kernel runs with: exec->threads, or the OpenMP default when 0
// (a direct API call; the harness and the Python module always pass the resolved count,
// core/settings.h). The one place this rule is written.
int attn_exec_threads(const attn_exec *exec);

// attn_inputs_check for a problem and tensor pointers already checked (attn_kernel_call
// validates them first): the input domain alone, same results and messages.
int attn_inputs_domain(const attn_problem *p, const float *q, const void *k, const void *v,
                       char *err, size_t err_len);

// Kernels start with this: what attn_kernel_call already guaranteed.
#define ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o)                      \
  do {                                                                \
    assert((p) != NULL && attn_problem_validate((p), NULL, 0));       \
    assert((q) != NULL && (k) != NULL && (v) != NULL && (o) != NULL); \
  } while (0)

// ── Options of one (batch, head), for kernels that handle them (attn.h, "Attention
// variants") ───────────────────────────────────────────────────────────────────────
typedef struct attn_head_opts {
  float softcap, inv_softcap;  // c and 1/c; c == 0: off
  float slope;                 // ALiBi slope of the head; 0: off
  bool has_sink;
  float sink;           // the head's sink logit (has_sink)
  const float *mask;    // this (b, h)'s [seq_q][seq_kv] mask; NULL: none
  int64_t seq_kv, off;  // mask row stride; the aligned diagonal's offset
  float *lse;           // this (b, h)'s [seq_q] LSE output; NULL: not wanted
  bool finish;          // softcap, ALiBi or a mask: scores need attn_score_finish
} attn_head_opts;

static inline attn_head_opts attn_head_opts_of(const attn_problem *p, int64_t b, int64_t h) {
  attn_head_opts ho = {.seq_kv = p->seq_kv, .off = attn_diag_offset(p)};
  const attn_options *o = p->opts;
  if (!o) return ho;
  if (o->softcap > 0.0f) ho.softcap = o->softcap, ho.inv_softcap = 1.0f / o->softcap;
  ho.slope = attn_alibi_slope(p, h);
  if (o->sinks) ho.has_sink = true, ho.sink = o->sinks[h];
  if (o->mask) {
    const size_t plane = (size_t)p->seq_q * (size_t)p->seq_kv;
    ho.mask = o->mask + (o->mask_per_head ? ((size_t)b * (size_t)p->heads + (size_t)h) * plane : 0);
  }
  if (o->lse) ho.lse = o->lse + ((size_t)b * (size_t)p->heads + (size_t)h) * (size_t)p->seq_q;
  ho.finish = ho.softcap > 0.0f || ho.slope != 0.0f || ho.mask;
  return ho;
}

// What query head h of batch b reads and writes: its Q and O blocks and the K/V head
// attn_kv_head_of(p, h) of p->kv_dtype rows (its options: attn_head_opts_of). The one
// place the kernels that walk (b, h) one head at a time find them.
typedef struct attn_head_view {
  const float *q;     // [seq_q][head_dim_qk]
  const void *k, *v;  // [seq_kv] rows of head_dim_qk, head_dim_v elements (p->kv_dtype)
  float *o;           // [seq_q][head_dim_v]
} attn_head_view;

static inline attn_head_view attn_head_at(const attn_problem *p, const float *q, const void *k,
                                          const void *v, float *o, int64_t b, int64_t h) {
  const int64_t g = attn_kv_head_of(p, h);
  return (attn_head_view){.q = attn_q_head(p, q, b, h),
                          .k = attn_kv_head(p, k, b, g, p->head_dim_qk),
                          .v = attn_kv_head(p, v, b, g, p->head_dim_v),
                          .o = attn_o_head(p, o, b, h)};
}

// The final float32 score of (row i, key j) from the scaled dot product s: softcap,
// then ALiBi, then the additive mask (attn.h's order).
static inline float attn_score_finish(const attn_head_opts *ho, float s, int64_t i, int64_t j) {
  if (ho->softcap > 0.0f) s = ho->softcap * tanhf(s * ho->inv_softcap);
  if (ho->slope != 0.0f) s += ho->slope * (float)(j - i - ho->off);
  if (ho->mask) s += ho->mask[(size_t)i * (size_t)ho->seq_kv + (size_t)j];
  return s;
}

// The softmax denominator of a row from l = Σ_j e^(s_j − m) over its keys (key maximum m,
// −inf if it sees nothing): l plus the sink's e^(sink − m). A row with l == 0 sees
// nothing and outputs zeros; so does a sink so far above m that its term is inf.
static inline float attn_denominator(const attn_head_opts *ho, float l, float m) {
  return (ho->has_sink && l > 0.0f) ? l + expf(ho->sink - m) : l;
}

// LSE of a row from (m, l) as above: m + log l, −inf when the row sees nothing.
static inline float attn_row_lse(float l, float m) {
  return l > 0.0f ? m + logf(l) : -INFINITY;
}

// The shared portable path (kernels/portable/blocked.c) that attn_kernel_run takes for a
// problem using options the kernel does not handle natively.
size_t attn_fallback_workspace(const attn_problem *p);
int attn_fallback_run(const attn_problem *p, const float *q, const void *k, const void *v, float *o,
                      void *workspace);

// The FP environment's control state on the calling thread (fp_env.c: x86 MXCSR control
// bits and the x87 control word; aarch64 FPCR), without exception flags; the state
// attn_fp_env_enter set for a kernel (from env, its return value); and a one-line
// description of a control state ("MXCSR 0x9fc0 (rounding nearest, …)").
uint64_t attn_fp_env_control(void);
uint64_t attn_fp_env_kernel_control(attn_fp_env env);
void attn_fp_env_describe(uint64_t control, char *buf, size_t len);

// What a kernel call did besides its output (attn_kernel_run_info, attn_kernel_call_info).
typedef struct attn_run_info {
  bool fallback;  // the shared portable path ran (an option the kernel does not claim),
                  // not the kernel's own code (the K/V conversion alone does not count)
  bool fp_leak;   // the kernel returned with another FP control state than it was given
  uint64_t fp_given, fp_returned;  // those states (attn_fp_env_control) when fp_leak
} attn_run_info;

// attn_kernel_run / attn_kernel_call that also fill *info (not NULL).
int attn_kernel_run_info(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                         const float *q, const void *kk, const void *v, float *o, void *workspace,
                         attn_run_info *info);
int attn_kernel_call_info(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                          const float *q, const void *kk, const void *v, float *o, char *err,
                          size_t err_len, attn_run_info *info);

// Whether the CPU's cpuid vendor string is "AuthenticAMD" (cached; false off x86). For
// built-in defaults measured to differ between vendors (docs/design.md); kernels read no
// environment, so this is the CPU's answer whatever ATTNBENCH_ISA_MASK says.
bool attn_cpu_vendor_amd(void);
// Whether the CPU is Intel family 6 with this (display) model number (cached cpuid; false
// off x86): the same use, for defaults measured to differ between Intel models.
bool attn_cpu_intel_model(unsigned model);

// ── Validation helpers (core/problem.c) ──────────────────────────────────────────────
// The one-line reason (printf format) into err when err != NULL and err_len > 0; false
// (attn_fail, for `return attn_fail(...)` in a check) or ATTN_ERR_RANGE (attn_range_fail).
bool attn_fail(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define attn_range_fail(...) (attn_fail(__VA_ARGS__), ATTN_ERR_RANGE)
// a·b·c·d elements (each >= 0) times sizeof(float) bytes fit in size_t and in int64_t, so
// that kernels may index with either.
bool attn_tensor_fits(int64_t a, int64_t b, int64_t c, int64_t d);

// ── Serving layouts (attn.h, "Serving layouts"): where a sequence's rows live ───────

// Row i of query head h of sequence b in Q (packed [total_q][heads][head_dim_qk]).
static inline const float *attn_layout_q_row(const attn_problem *p, const float *q, int64_t b,
                                             int64_t h, int64_t i) {
  const size_t tok = (size_t)p->layout->cu_seqlens_q[b] + (size_t)i;
  return q + (tok * (size_t)p->heads + (size_t)h) * (size_t)p->head_dim_qk;
}
// Row i of query head h of sequence b in O (packed [total_q][heads][head_dim_v]).
static inline float *attn_layout_o_row(const attn_problem *p, float *o, int64_t b, int64_t h,
                                       int64_t i) {
  const size_t tok = (size_t)p->layout->cu_seqlens_q[b] + (size_t)i;
  return o + (tok * (size_t)p->heads + (size_t)h) * (size_t)p->head_dim_v;
}
// Key t of K/V head g of sequence b in a K or V tensor with rows of dim elements of
// p->kv_dtype: RAGGED [total_kv][kv_heads] rows, PAGED [num_pages][kv_heads][page_size].
static inline const void *attn_layout_kv_row(const attn_problem *p, const void *x, int64_t b,
                                             int64_t g, int64_t t, int64_t dim) {
  const attn_layout *l = p->layout;
  const size_t row = attn_kv_row_bytes(p->kv_dtype, dim);
  size_t r;
  if (l->kind == ATTN_LAYOUT_PAGED) {
    const size_t page =
        (size_t)l->page_table[(size_t)b * (size_t)l->pages_per_seq + (size_t)(t / l->page_size)];
    r = (page * (size_t)p->kv_heads + (size_t)g) * (size_t)l->page_size +
        (size_t)(t % l->page_size);
  } else {
    r = ((size_t)l->cu_seqlens_kv[b] + (size_t)t) * (size_t)p->kv_heads + (size_t)g;
  }
  return (const char *)x + r * row;
}
// Whether p has a ragged or paged layout that k does not read itself, or options k leaves
// to the dense-only fallback (attn_kernel_run then gathers one sequence at a time:
// core/layout_gather.c).
bool attn_layout_gathered(const attn_kernel *k, const attn_problem *p);
// The gather path of attn_kernel_run / attn_kernel_workspace for such a problem.
size_t attn_layout_workspace(const attn_kernel *k, const attn_problem *p, const attn_exec *exec);
int attn_layout_run(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                    const float *q, const void *kk, const void *v, float *o, void *workspace,
                    attn_run_info *info);
// Validation of p->layout (attn_problem_validate) and the input domain of a layout problem
// (attn_inputs_check): core/layout.c.
bool attn_layout_validate(const attn_problem *p, char *err, size_t err_len);
int attn_layout_inputs_check(const attn_problem *p, const float *q, const void *k, const void *v,
                             char *err, size_t err_len);
// The compute mode's input range (attn.h, attn_inputs_check): the largest |x| Q (q) and
// K, V (kv) may hold so that the mode's rounding of every input stays finite, and the
// rule's wording for a refusal (`why`). F16: the largest binary16 for all three; BF16:
// the largest bfloat16; INT8: Q's block scale max|q|/127 is a binary16, so
// |q| ≤ 127·65504 (K and V are stored Q8_0 already); F32: no bound (+inf).
typedef struct attn_compute_range {
  double q, kv;
  const char *why;
} attn_compute_range;
attn_compute_range attn_compute_range_of(attn_compute c);
