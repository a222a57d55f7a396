// SPDX-License-Identifier: MIT
// attn_vexp__avx512: the avx512 vectorised exp over an array (see simd/vexp.h).
#include "simd/vec_avx512.h"
#include "simd/vexp.h"
#include "simd/vexp_body.h"

void attn_vexp__avx512(const float *x, float *y, size_t n) {
  vexp_array(x, y, n);
}
