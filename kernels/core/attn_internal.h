// SPDX-License-Identifier: MIT
// Helpers shared by kernel implementations: tensor addressing and preconditions.
// Not part of the public interface.
#pragma once

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"

// Start of the (b, h) query head's [seq_q][head_dim_qk] block of Q.
static inline const float *attn_q_head(const attn_problem *p, const float *q, int64_t b, int64_t h) {
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
static inline const float *attn_k_head(const attn_problem *p, const float *k, int64_t b, int64_t g) {
  return k + ((size_t)b * (size_t)p->kv_heads + (size_t)g) * (size_t)p->seq_kv * (size_t)p->head_dim_qk;
}
// Start of the (b, g) K/V head's [seq_kv][head_dim_v] block of V.
static inline const float *attn_v_head(const attn_problem *p, const float *v, int64_t b, int64_t g) {
  return v + ((size_t)b * (size_t)p->kv_heads + (size_t)g) * (size_t)p->seq_kv * (size_t)p->head_dim_v;
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

// Kernels start with this: what attn_kernel_call already guaranteed.
#define ATTN_ASSERT_PRECONDITIONS(p, q, k, v, o)                                          \
  do {                                                                                    \
    assert((p) != NULL && attn_problem_validate((p), NULL, 0));                            \
    assert((q) != NULL && (k) != NULL && (v) != NULL && (o) != NULL);                      \
  } while (0)
