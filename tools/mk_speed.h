// SPDX-License-Identifier: MIT
// mk_speed.h — the per-ISA loops of microkernel_speed (mk_speed_body.h).
#pragma once

#include <stdint.h>

typedef struct mk_speed_ops {
  int vec_width;
  // reps calls of the mr × nv register tile (-1: not compiled in); load: P·V-style init.
  int (*tile)(int mr, int nv, const float *a, const float *b, int64_t ldb, int64_t nk, float *c,
              int64_t reps, int load);
  // reps passes of the softmax exponential loop over n_pad scores (copied from src).
  float (*exp_rows)(float *s, const float *src, int64_t n_pad, int64_t reps);
} mk_speed_ops;

#if defined(__x86_64__) || defined(__i386__)
extern const mk_speed_ops mk_speed_avx2, mk_speed_avx512;
#endif
