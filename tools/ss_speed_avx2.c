// SPDX-License-Identifier: MIT
// stream_speed's loops for AVX2 + FMA (8 lanes; f16 through F16C).
#include "simd/vec_avx2.h"
#define SS_OPS ss_speed_avx2
#include "ss_speed_body.h"
