// SPDX-License-Identifier: MIT
// microkernel_speed's loops for AVX2 + FMA (8 lanes), built with flash__avx2's mapping and
// k-loop unroll (flash_avx2.h).
#include "flash/flash_avx2.h"
#define MK_OPS mk_speed_avx2
#include "mk_speed_body.h"
