// SPDX-License-Identifier: MIT
// test_fin_fused for avx2 (fin_fused_body.h).
#include "simd/vec_avx2.h"
#define FIN_FUSED_FN fin_fused_avx2
#include "fin_fused_body.h"
