// SPDX-License-Identifier: MIT
// attn_vtanh__avx512, attn_vsoftcap__avx512: the avx512 vectorised tanh and soft-capping over an
// array (see simd/vtanh.h).
#include "simd/vec_avx512.h"
#include "simd/vtanh.h"
#include "simd/vtanh_body.h"

void attn_vtanh__avx512(const float *x, float *y, size_t n) {
  vtanh_array(x, y, n);
}

void attn_vsoftcap__avx512(const float *x, float *y, size_t n, float c) {
  vsoftcap_array(x, y, n, c);
}
