// SPDX-License-Identifier: MIT
// attn_vtanh__avx2, attn_vsoftcap__avx2: the avx2 vectorised tanh and soft-capping over an
// array (see simd/vtanh.h).
#include "simd/vec_avx2.h"
#include "simd/vtanh.h"
#include "simd/vtanh_body.h"

void attn_vtanh__avx2(const float *x, float *y, size_t n) {
  vtanh_array(x, y, n);
}

void attn_vsoftcap__avx2(const float *x, float *y, size_t n, float c) {
  vsoftcap_array(x, y, n, c);
}
