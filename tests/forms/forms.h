// SPDX-License-Identifier: MIT
//
// forms.h — the seed article's four attention forms end to end, on top of any kernel.
//
//   self-attention    one input X[seq][d_in]:     Q = X·W_q, K = X·W_k, V = X·W_v
//   multi-head        one projection triple per head; head outputs concatenated
//   cross-attention   Q from x_q[seq_q][d_in_q], K and V from x_kv[seq_kv][d_in_kv]
//                     (another length and another width)
//   causal            the attention core with the bottom-right aligned mask (attn.h)
//
// The projections are plain float32 loops (they are not what attnbench measures); the
// attention core runs through the chosen kernel with attn_kernel_call.
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_forms_weights {
  int64_t heads;     // >= 1
  int64_t d_in_q;    // width of the query input
  int64_t d_in_kv;   // width of the key/value input (== d_in_q for self-attention)
  int64_t d_qk;      // per-head query/key width
  int64_t d_v;       // per-head value width
  const float *w_q;  // [heads][d_in_q][d_qk]
  const float *w_k;  // [heads][d_in_kv][d_qk]
  const float *w_v;  // [heads][d_in_kv][d_v]
} attn_forms_weights;

// out[seq_q][heads·d_v] = concat_h softmax(x_q W_q[h] (x_kv W_k[h])ᵀ / sqrt(d_qk) + mask)
//                          · x_kv W_v[h]
// For self-attention pass x_kv = x_q and seq_kv = seq_q. Returns ATTN_OK or an error code
// with a message in err.
int attn_forms_attention(const attn_kernel *kernel, const attn_exec *exec,
                         const attn_forms_weights *w, const float *x_q, int64_t seq_q,
                         const float *x_kv, int64_t seq_kv, bool causal, float *out, char *err,
                         size_t err_len);

// Multi-head split of a model width: head_dim = d_model / heads. False (with a message)
// when heads does not divide d_model or either is < 1.
bool attn_forms_head_dim(int64_t d_model, int64_t heads, int64_t *head_dim, char *err,
                         size_t err_len);

#ifdef __cplusplus
}
#endif
