// SPDX-License-Identifier: MIT
// vexp.h — the bounds of each ISA's vectorised exp (simd/vec_exp.h) and its array entry
// points attn_vexp__<isa> (declared in simd/varray.h): y[i] = e^(x[i]) for i < n.
#pragma once

#include "simd/varray.h"  // the entry points

// The error bound of vf_exp over every float in [−88, 0], in ulp of the exact
// e^x: measured exhaustively at 1.0086 ulp on AVX2, AVX-512 and NEON (same operations,
// same result; x = −27.3791351; 1.0 ulp from glibc expf),
// asserted by tests/simd/test_vexp.c (docs/simd.md).
#define VEXP_MAX_ULP 1.01
// Below this input vf_exp returns exactly +0 (e^x would be subnormal: ln FLT_MIN ≈ −87.3365).
#define VEXP_CUTOFF (-87.33654f)
