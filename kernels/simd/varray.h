// SPDX-License-Identifier: MIT
// varray.h — the array entry points to each ISA's vectorised exp and tanh, declared once:
//   attn_vexp__<isa>(x, y, n)         y[i] = e^(x[i])        (simd/vec_exp.h; vexp.h)
//   attn_vtanh__<isa>(x, y, n)        y[i] = tanh(x[i])      (simd/vec_tanh.h; vtanh.h)
//   attn_vsoftcap__<isa>(x, y, n, c)  y[i] = c·tanh(x[i]/c)  (vf_softcap, c > 0)
// for the accuracy tests and anyone who wants to measure them, i < n for any n (the tail
// uses masked loads/stores), under the caller's floating-point environment (kernels run
// them under FTZ/DAZ). Call only when attn_cpu_features() has the ISA; each is compiled
// only on its architecture. Their bounds and constants: vexp.h and vtanh.h.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__x86_64__) || defined(__i386__)
void attn_vexp__avx2(const float *x, float *y, size_t n);
void attn_vexp__avx512(const float *x, float *y, size_t n);
void attn_vtanh__avx2(const float *x, float *y, size_t n);
void attn_vtanh__avx512(const float *x, float *y, size_t n);
void attn_vsoftcap__avx2(const float *x, float *y, size_t n, float c);
void attn_vsoftcap__avx512(const float *x, float *y, size_t n, float c);
#endif
#if defined(__aarch64__)
void attn_vexp__neon(const float *x, float *y, size_t n);
void attn_vtanh__neon(const float *x, float *y, size_t n);
void attn_vsoftcap__neon(const float *x, float *y, size_t n, float c);
#endif

#ifdef __cplusplus
}
#endif
