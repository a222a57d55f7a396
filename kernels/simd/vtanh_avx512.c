// SPDX-License-Identifier: MIT
// attn_vtanh__avx512: the avx512 vectorised tanh over an array (see simd/vtanh.h).
#include <stddef.h>

#include "simd/vec_avx512.h"
#include "simd/vtanh.h"

void attn_vtanh__avx512(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + VF_W <= n; i += VF_W) vf_store(y + i, vf_tanh(vf_load(x + i)));
  if (i < n) vf_store_partial(y + i, vf_tanh(vf_load_partial(x + i, (int)(n - i))), (int)(n - i));
}
