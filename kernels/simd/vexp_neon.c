// SPDX-License-Identifier: MIT
// attn_vexp__neon: the NEON vectorised exp over an array (see simd/vexp.h).
#include "simd/vec_neon.h"
#include "simd/vexp.h"
#include "simd/vexp_body.h"

void attn_vexp__neon(const float *x, float *y, size_t n) {
  vexp_array(x, y, n);
}
