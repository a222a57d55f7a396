// SPDX-License-Identifier: MIT
// attn_vtanh__avx512, attn_vsoftcap__avx512: the avx512 vectorised tanh and soft-capping over an
// array (see simd/vtanh.h).
#include <stddef.h>

#include "simd/vec_avx512.h"
#include "simd/vtanh.h"

void attn_vtanh__avx512(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + VF_W <= n; i += VF_W) vf_store(y + i, vf_tanh(vf_load(x + i)));
  if (i < n) vf_store_partial(y + i, vf_tanh(vf_load_partial(x + i, (int)(n - i))), (int)(n - i));
}

void attn_vsoftcap__avx512(const float *x, float *y, size_t n, float c) {
  const vf_t cap = vf_set1(c), icap = vf_set1(1.0f / c);
  size_t i = 0;
  for (; i + VF_W <= n; i += VF_W) vf_store(y + i, vf_softcap(vf_load(x + i), cap, icap));
  if (i < n)
    vf_store_partial(y + i, vf_softcap(vf_load_partial(x + i, (int)(n - i)), cap, icap),
                     (int)(n - i));
}
