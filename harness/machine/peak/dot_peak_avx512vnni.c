// SPDX-License-Identifier: MIT
// The AVX512-VNNI INT8 dot-product throughput loop (peak.h): the VNNI body
// (dot_peak_vnni_body.h) on the EVEX vpdpbusd zmm. Compiled with only AVX512-VNNI's flags.
#include <immintrin.h>

#define VNNI_T __m512i
#define VNNI_INSN "vpdpbusd"
#define VNNI_LOOP attn_peak_loop__avx512vnni
#include "dot_peak_vnni_body.h"
