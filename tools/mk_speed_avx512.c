// SPDX-License-Identifier: MIT
// microkernel_speed's loops for AVX-512F (16 lanes), built with flash__avx512's mapping and
// k-loop unroll (flash_avx512.h).
#include "flash/flash_avx512.h"
#define MK_OPS mk_speed_avx512
#include "mk_speed_body.h"
