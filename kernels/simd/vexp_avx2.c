// SPDX-License-Identifier: MIT
// attn_vexp__avx2: the avx2 vectorised exp over an array (see simd/vexp.h).
#include "simd/vec_avx2.h"
#include "simd/vexp.h"
#include "simd/vexp_body.h"

void attn_vexp__avx2(const float *x, float *y, size_t n) {
  vexp_array(x, y, n);
}
