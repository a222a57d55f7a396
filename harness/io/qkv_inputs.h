// SPDX-License-Identifier: MIT
// qkv_inputs.h — reading Q, K, V (.npy, float32, 4-D) and deriving the attention problem
// from their shapes, with messages that name the array, its file and the layout. Shared
// by `attnbench run` (a kernel on the user's tensors) and `attnbench check --o` (an
// output computed elsewhere, checked against the reference).
#pragma once

#include <stdbool.h>

#include "attn.h"
#include "io/npy.h"

typedef struct named_array {
  const char *what;    // "Q"
  const char *layout;  // "[batch][heads][seq_q][head_dim_qk]"
  const char *path;
  npy_array a;
  attn_dtype file_dtype;  // qkv_load: the element type of Q's file (F32, F16, BF16)
} named_array;

// Reads t->path into t->a: 4-D, no empty dimension, every element finite. False (message
// "attnbench <cmd>: …" on stderr) otherwise; t->a is then empty or must be npy_free'd.
// Q may be float32, float16 '<f2' or bfloat16 '<V2' (npy.h); it is widened to float32
// (exactly) in t->a.data, and t->file_dtype says what the file held.
bool qkv_load(const char *cmd, named_array *t);
// The same for K or V, which may also be '<f2' or bfloat16 (t->a.half, t->a.bf16: npy.h),
// kept as read.
bool qkv_load_kv(const char *cmd, named_array *t);
// The element type of a loaded array's file: F32, F16 or BF16.
attn_dtype qkv_file_dtype(const named_array *t);

// The problem the three shapes describe (default scale); false (message printed) if they
// disagree or the problem refuses the sizes they give (ATTN_FIELD_HEADS, ATTN_FIELD_SIZES:
// the fields set here are checked here, once). kv_dtype is F16 when K and V are both '<f2'
// (float16), BF16 when both are bfloat16, F32 when both are float32; a mix is refused.
bool qkv_derive_problem(const char *cmd, const named_array *q, const named_array *k,
                        const named_array *v, bool causal, attn_problem *p);
