// SPDX-License-Identifier: MIT
// stream_speed's loops for AVX-512F (16 lanes).
#include "simd/vec_avx512.h"
#define SS_OPS ss_speed_avx512
#include "ss_speed_body.h"
