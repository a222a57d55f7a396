// SPDX-License-Identifier: MIT
// vexp.h — array entry points to each ISA's vectorised exp (simd/vec_exp.h), for the
// exp accuracy tests and anyone who wants to measure it. y[i] = e^(x[i]) for i < n
// (any n; the tail uses masked loads/stores). Call only when attn_cpu_features() has the
// ISA; each is compiled only on its architecture.
#pragma once

#include <stddef.h>

// The error bound of vf_exp over every float in [−88, 0], in ulp of the exact
// e^x: measured exhaustively at 1.0086 ulp on AVX2, AVX-512 and NEON (same operations,
// same result; x = −27.3791351; 1.0 ulp from glibc expf),
// asserted by tests/simd/test_vexp.c (docs/simd.md).
#define VEXP_MAX_ULP 1.01
// Below this input vf_exp returns exactly +0 (e^x would be subnormal: ln FLT_MIN ≈ −87.3365).
#define VEXP_CUTOFF (-87.33654f)

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__x86_64__) || defined(__i386__)
void attn_vexp__avx2(const float *x, float *y, size_t n);
void attn_vexp__avx512(const float *x, float *y, size_t n);
#endif
#if defined(__aarch64__)
void attn_vexp__neon(const float *x, float *y, size_t n);
#endif

#ifdef __cplusplus
}
#endif
