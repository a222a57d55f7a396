// SPDX-License-Identifier: MIT
// The test twin of flash__avxvnni (flash_avxvnni_twin.h): kernels/flash/flash_vnni_ymm.h
// with VN_DPBUSD the EVEX `vpdpbusd ymm` of AVX512_VNNI + AVX512VL. Compiled with AVX2,
// FMA and F16C (tests/simd/CMakeLists.txt), as the kernel; the AVX-512 features are
// enabled below, after the headers whose code depends on the compiler's ISA macros
// (simd/kv_widen.h picks its zmm forms under __AVX512F__), so that the body gets the
// 8-lane forms the kernel has and only its own functions may use the EVEX instructions.
#include "flash_avxvnni_twin.h"

#include <immintrin.h>

#include "flash/flash_avx2.h"
#include "simd/kv_widen.h"
#include "simd/softmax.h"

#pragma GCC target("avx512f,avx512vl,avx512vnni")

#define VN_DPBUSD(acc, a, b) _mm256_dpbusd_epi32(acc, a, b)
#define VN_BLOCK_DOTS flash_avxvnni_twin_block_dots
#include "flash/flash_vnni_ymm.h"

const attn_kernel flash_avxvnni_twin =
    VN_RECORD("flash__avxvnni_twin", "test twin of flash__avxvnni: its body on the EVEX vpdpbusd",
              ATTN_ISA_AVX2 | ATTN_ISA_F16C | ATTN_ISA_AVX512VNNI);
