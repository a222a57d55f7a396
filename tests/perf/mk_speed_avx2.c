// SPDX-License-Identifier: MIT
// microkernel_speed's loops for AVX2 + FMA (8 lanes), with flash__avx2's k-loop unroll.
#include "simd/vec_avx2.h"
#define VK_K_UNROLL 4
#define MK_OPS mk_speed_avx2
#include "mk_speed_body.h"
