// SPDX-License-Identifier: MIT
// microkernel_speed's loops for AVX-512F (16 lanes), with flash__avx512's k-loop unroll.
#include "simd/vec_avx512.h"
#define VK_K_UNROLL 2
#define MK_OPS mk_speed_avx512
#include "mk_speed_body.h"
