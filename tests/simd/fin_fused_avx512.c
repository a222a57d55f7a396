// SPDX-License-Identifier: MIT
// test_fin_fused for avx512 (fin_fused_body.h).
#include "simd/vec_avx512.h"
#define FIN_FUSED_FN fin_fused_avx512
#include "fin_fused_body.h"
