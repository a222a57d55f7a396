// SPDX-License-Identifier: MIT
// test_fin_fused for neon (fin_fused_body.h).
#include "simd/vec_neon.h"
#define FIN_FUSED_FN fin_fused_neon
#include "fin_fused_body.h"
