// SPDX-License-Identifier: MIT
// vtanh.h — the bounds and polynomial of each ISA's vectorised tanh (simd/vec_tanh.h) and
// its array entry points attn_vtanh__<isa> and attn_vsoftcap__<isa> (declared in
// simd/varray.h): y[i] = tanh(x[i]), and c·tanh(x[i]/c) (vf_softcap) for c > 0.
#pragma once

#include "simd/varray.h"  // the entry points

// The error bound of vf_tanh, in ulp of the exactly rounded tanh, over every float x
// whose tanh is a normal float (|tanh x| ≥ FLT_MIN), on AVX2, AVX-512 and NEON (same
// operations, same result); asserted by tests/simd/test_vtanh.c (docs/simd.md). It must
// stay within the checker's budget ATTN_CHECK_TANH_ULP (check/check.h).
#define VTANH_MAX_ULP 2.0
// The error bound of vf_softcap (c·tanh(x/c) with the rounded 1/c, vec_tanh.h), in ulp
// of the exact c·tanh(x/c), over every normal float x and the c of the test (0.01 .. 1e4):
// asserted by tests/simd/test_vtanh.c. The checker's softcap term, 2u·|x| +
// (2·ATTN_CHECK_TANH_ULP + 1)·u·|c·tanh(x/c)| (u = 2^-24), is larger (the test asserts it
// too).
#define VSOFTCAP_MAX_ULP 4.0
// … and within this many for |x/c| below VTANH_SPLIT (the polynomial, x + x·z·P(z)).
#define VSOFTCAP_POLY_MAX_ULP 1.25
// Below this |x| the polynomial, from it on the exp form (vec_tanh.h).
#define VTANH_SPLIT 0.5625f
// P(z) = C0 + C1·z + … + C6·z⁶ with tanh a ≈ a + a³·P(a²) on [0, VTANH_SPLIT].
#define VTANH_C0 (-0.33333334f)
#define VTANH_C1 0.13333331f
#define VTANH_C2 (-0.05396754f)
#define VTANH_C3 0.021860154f
#define VTANH_C4 (-0.008797429f)
#define VTANH_C5 0.0033316067f
#define VTANH_C6 (-0.0008931613f)
