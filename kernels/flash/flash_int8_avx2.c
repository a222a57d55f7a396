// SPDX-License-Identifier: MIT
// flash__avx2int8 — the flash kernel with the INT8 compute mode (attn.h, "Compute modes")
// on plain AVX2, for the CPUs without VNNI (Haswell to Comet Lake, Zen 1 to Zen 3): the
// integer dot products are vpmaddubsw + vpmaddwd, reading the q8_0 K/V cache in place;
// every other mode runs flash__avx2's F32 path. The algorithm is flash/flash_vnni_body.h
// (shared with the VNNI kernels) on the ymm key-group layout of flash/flash_vnni_ymm.h in
// its sign form (|k| unsigned, k's sign moved onto q: exact for every stored byte). The
// scores are the same integers as the VNNI kernels', so the outputs are theirs, bitwise.
// Maths, bound and measurements: docs/low-precision-kernels.md.
#include <immintrin.h>

#include "flash/flash_vnni.h"

// No VN_DPBUSD: the sign form on vpmaddubsw + vpmaddwd.
#define VN_BLOCK_DOTS flash_avx2int8_block_dots
#include "flash/flash_vnni_ymm.h"

// INT8 here, every other mode on flash__avx2's entry point. F16C widens the binary16 scales.
const attn_kernel attn_kernel_flash__avx2int8 = VN_RECORD(
    "flash__avx2int8",
    "flash__avx2 with the INT8 compute mode on AVX2 (vpmaddubsw + vpmaddwd, no VNNI needed): Q "
    "quantized per 32-block, integer Q.K^T straight from the q8_0 cache, fp32 softmax, P.V with "
    "V dequantized in registers, GQA rows share each K/V load; F32 mode is flash__avx2's",
    ATTN_ISA_AVX2 | ATTN_ISA_F16C);
