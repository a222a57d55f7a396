// SPDX-License-Identifier: MIT
// flash__avxvnni — the flash kernel with the INT8 compute mode (attn.h, "Compute modes")
// on AVX-VNNI, the VEX-encoded `vpdpbusd ymm` of AVX2-class CPUs without AVX-512 (Alder
// Lake, Arrow Lake, Sierra Forest), reading the q8_0 K/V cache in place; every other mode
// runs flash__avx2's F32 path. The algorithm is flash/flash_vnni_body.h (shared with
// flash__avx512vnni), on the ymm key-group layout of flash/flash_vnni_ymm.h; this file
// picks the VEX instruction and holds the record. Maths, bound, layout and how it is
// tested on CPUs without the unit: docs/low-precision-kernels.md.
#include <immintrin.h>

#include "flash/flash_vnni.h"

// The VEX form (AVX-VNNI): this file is compiled with AVX2 + AVX-VNNI and no AVX-512, so
// the compiler cannot emit the EVEX one.
#define VN_DPBUSD(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#define VN_BLOCK_DOTS flash_avxvnni_block_dots
#include "flash/flash_vnni_ymm.h"

// INT8 here, every other mode on flash__avx2's entry point. F16C widens the binary16 scales.
const attn_kernel attn_kernel_flash__avxvnni = VN_RECORD(
    "flash__avxvnni",
    "flash__avx2 with the INT8 compute mode on AVX-VNNI (vex vpdpbusd ymm): Q quantized per "
    "32-block, integer Q.K^T straight from the q8_0 cache, fp32 softmax, P.V with V dequantized "
    "in registers, GQA rows share each K/V load; F32 mode is flash__avx2's",
    ATTN_ISA_AVX2 | ATTN_ISA_F16C | ATTN_ISA_AVXVNNI);
