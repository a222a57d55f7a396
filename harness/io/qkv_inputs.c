// SPDX-License-Identifier: MIT
// qkv_inputs.c — see qkv_inputs.h.
#include "io/qkv_inputs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/convert.h"
#include "io/fileio.h"

static bool load(const char *cmd, named_array *t, bool allow_f16) {
  char err[ATTN_OUT_PATH_MAX + 512], sb[400];
  if (!(allow_f16 ? npy_read_f32_or_f16 : npy_read_f32)(t->path, &t->a, err, sizeof err)) {
    fprintf(stderr, "attnbench %s: %s: %s\n", cmd, t->what, err);
    return false;
  }
  if (t->a.ndim != 4) {
    fprintf(stderr, "attnbench %s: %s (%s) must be 4-D %s, got %d-D shape %s\n", cmd, t->what,
            t->path, t->layout, t->a.ndim, npy_shape_string(t->a.ndim, t->a.shape, sb, sizeof sb));
    return false;
  }
  for (int d = 0; d < 4; d++) {
    if (t->a.shape[d] < 1) {
      fprintf(stderr, "attnbench %s: %s (%s) has an empty dimension: shape %s %s\n", cmd, t->what,
              t->path, npy_shape_string(4, t->a.shape, sb, sizeof sb), t->layout);
      return false;
    }
  }
  // NaN/Inf inputs would silently give NaN outputs; refuse them instead.
  for (size_t i = 0; i < t->a.count; i++) {
    const float x = !t->a.half  ? t->a.data[i]
                    : t->a.bf16 ? attn_bf16_to_f32(t->a.half[i])
                                : attn_f16_to_f32(t->a.half[i]);
    if (!isfinite(x)) {
      fprintf(stderr, "attnbench %s: %s (%s) contains a non-finite value (%g) at flat index %zu\n",
              cmd, t->what, t->path, (double)x, i);
      return false;
    }
  }
  return true;
}

bool qkv_load(const char *cmd, named_array *t) {
  if (!load(cmd, t, true)) return false;
  if (!t->a.half) return true;
  // float16 or bfloat16 Q: its values, exactly, as float32 (the interface's Q)
  float *x = malloc((t->a.count ? t->a.count : 1) * sizeof *x);
  if (!x) {
    fprintf(stderr, "attnbench %s: %s: out of memory widening to float32\n", cmd, t->what);
    return false;
  }
  for (size_t i = 0; i < t->a.count; i++)
    x[i] = t->a.bf16 ? attn_bf16_to_f32(t->a.half[i]) : attn_f16_to_f32(t->a.half[i]);
  free(t->a.half);
  t->a.half = NULL;
  t->a.data = x;
  t->file_dtype = t->a.bf16 ? ATTN_DTYPE_BF16 : ATTN_DTYPE_F16;
  return true;
}

attn_dtype qkv_file_dtype(const named_array *t) {
  if (t->a.half) return t->a.bf16 ? ATTN_DTYPE_BF16 : ATTN_DTYPE_F16;
  return t->file_dtype;
}

bool qkv_load_kv(const char *cmd, named_array *t) {
  return load(cmd, t, true);
}

// Derives the problem from the three shapes; false (message printed) if they disagree.
bool qkv_derive_problem(const char *cmd, const named_array *q, const named_array *k,
                        const named_array *v, bool causal, attn_problem *p) {
  const int64_t *Q = q->a.shape, *K = k->a.shape, *V = v->a.shape;
  char sq[128], sk[128], sv[128];
  npy_shape_string(4, Q, sq, sizeof sq);
  npy_shape_string(4, K, sk, sizeof sk);
  npy_shape_string(4, V, sv, sizeof sv);
#define MISMATCH(...)                                              \
  do {                                                             \
    fprintf(stderr, "attnbench %s: shape mismatch: ", cmd);        \
    fprintf(stderr, __VA_ARGS__);                                  \
    fprintf(stderr,                                                \
            "\n  Q %s [batch][heads][seq_q][head_dim_qk]\n  K %s " \
            "[batch][kv_heads][seq_kv][head_dim_qk]\n"             \
            "  V %s [batch][kv_heads][seq_kv][head_dim_v]\n",      \
            sq, sk, sv);                                           \
    return false;                                                  \
  } while (0)
  if (K[0] != Q[0])
    MISMATCH("K batch (dim 0) is %lld but Q batch is %lld", (long long)K[0], (long long)Q[0]);
  if (V[0] != Q[0])
    MISMATCH("V batch (dim 0) is %lld but Q batch is %lld", (long long)V[0], (long long)Q[0]);
  if (V[1] != K[1])
    MISMATCH("V kv_heads (dim 1) is %lld but K kv_heads is %lld", (long long)V[1], (long long)K[1]);
  if (V[2] != K[2])
    MISMATCH("V seq_kv (dim 2) is %lld but K seq_kv is %lld", (long long)V[2], (long long)K[2]);
  if (K[3] != Q[3])
    MISMATCH("K head_dim_qk (dim 3) is %lld but Q head_dim_qk is %lld", (long long)K[3],
             (long long)Q[3]);
  *p = attn_problem_make(Q[0], Q[1], K[1], Q[2], K[2], Q[3], V[3], causal);
  if (!attn_problem_check_field(p, ATTN_FIELD_HEADS, NULL, 0))
    MISMATCH("Q heads (dim 1) = %lld is not a multiple of K/V kv_heads (dim 1) = %lld",
             (long long)Q[1], (long long)K[1]);
#undef MISMATCH
  const attn_dtype kt = qkv_file_dtype(k), vt = qkv_file_dtype(v);
  if (kt != vt) {
    fprintf(stderr,
            "attnbench %s: K (%s) is %s but V (%s) is %s: K and V must have the same dtype "
            "(both '<f4', both '<f2' or both bfloat16 '<V2')\n",
            cmd, k->path, attn_dtype_name(kt), v->path, attn_dtype_name(vt));
    return false;
  }
  p->kv_dtype = kt;
  char err[256];
  if (!attn_problem_check_field(p, ATTN_FIELD_SIZES, err, sizeof err)) {
    fprintf(stderr, "attnbench %s: invalid problem: %s\n", cmd, err);
    return false;
  }
  return true;
}
