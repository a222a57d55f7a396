// SPDX-License-Identifier: MIT
// attn_vtanh__neon, attn_vsoftcap__neon: the neon vectorised tanh and soft-capping over an
// array (see simd/vtanh.h).
#include "simd/vec_neon.h"
#include "simd/vtanh.h"
#include "simd/vtanh_body.h"

void attn_vtanh__neon(const float *x, float *y, size_t n) {
  vtanh_array(x, y, n);
}

void attn_vsoftcap__neon(const float *x, float *y, size_t n, float c) {
  vsoftcap_array(x, y, n, c);
}
