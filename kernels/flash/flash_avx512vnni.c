// SPDX-License-Identifier: MIT
// flash__avx512vnni — the flash kernel with the INT8 compute mode (attn.h, "Compute
// modes") on AVX512_VNNI's `vpdpbusd zmm`, reading the q8_0 K/V cache in place; every
// other mode runs flash__avx512's F32 path. The INT8 algorithm (plan, tasks, the offset
// form of the integer dot, softmax, P·V) is flash/flash_vnni_body.h, shared with
// flash__avxvnni; this file holds the zmm key-group layout it runs on and the record.
//
// Key group of 16 keys: a zmm holds four keys' 16-byte halves of block b, key 4L + j in
// 128-bit lane L of vector j (j < 4); Q's half broadcast to the four lanes. Two vpdpbusd
// (the block's two halves) leave each key's 32 products in 4 dwords of its lane; two
// unpack-and-add levels give one vector of 16 keys, lane c = key c.
// Maths, bound and measurements: docs/low-precision-kernels.md.
#include "flash/flash_avx512.h"
#include "flash/flash_vnni.h"

// P·V passes hold up to 16 accumulator vectors: half of the 32 zmm registers.
#define VN_PV_ACC 16
#define VN_BLOCK_DOTS flash_avx512vnni_block_dots
#define VN_F32_RUN flash_avx512_run
#define VN_F32_WORKSPACE flash_avx512_workspace

// ── The key group on zmm ─────────────────────────────────────────────────────────────
typedef __m512i vn_vi_t;
#define VN_DPBUSD(acc, a, b) _mm512_dpbusd_epi32(acc, a, b)

// Vector j of a key group: keys j, 4 + j, 8 + j, 12 + j (lanes 0..3), 16 bytes at `off`
// into each key's row (ko: byte offsets of the 16 keys from k), as unsigned k + 128.
static inline __attribute__((always_inline)) __m512i vn_kvec(const char *k, const size_t *ko, int j,
                                                             size_t off) {
  __m512i x = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(k + ko[j] + off)));
  x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(k + ko[j + 4] + off)), 1);
  x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(k + ko[j + 8] + off)), 2);
  x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(k + ko[j + 12] + off)), 3);
  return _mm512_xor_si512(x, _mm512_set1_epi8((char)0x80));
}

static inline __m512i vn_qbcast(const int8_t *qs) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)qs));
}

// The two unpack-and-add levels (per 128-bit lane), as flash_vnni_body.h's vn_sum4 uses them.
static inline __m512i vn_pairsum(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}
static inline __m512i vn_quadsum(__m512i x, __m512i y) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y));
}

// The scales of a key group: per block, two 8-lane gathers (64-bit offsets) of the dword
// that starts at each key's d (its low half; the high half, two bytes of qs inside the same
// row, is dropped by the narrowing vpmovdw); keys n and later are masked off, so they read
// nothing and give 0. One gather instead of sixteen scalar copies per key group and block.
static inline void vn_scales_group(const char *rows, const size_t *ko, int64_t nb, int n,
                                   uint16_t *d, int64_t ldd) {
  const __m512i lo = _mm512_loadu_si512(ko), hi = _mm512_loadu_si512(ko + 8);
  const __mmask8 mlo = (__mmask8)(n >= 8 ? 0xff : (1u << n) - 1);
  const __mmask8 mhi = (__mmask8)(n >= 16 ? 0xff : n <= 8 ? 0 : (1u << (n - 8)) - 1);
  for (int64_t b = 0; b < nb; b++) {
    const char *base = rows + (size_t)b * sizeof(attn_block_q8_0) + offsetof(attn_block_q8_0, d);
    const __m256i g0 = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), mlo, lo, base, 1);
    const __m256i g1 = _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), mhi, hi, base, 1);
    const __m512i g = _mm512_inserti64x4(_mm512_castsi256_si512(g0), g1, 1);
    _mm256_storeu_si256((__m256i *)(d + b * ldd), _mm512_cvtepi32_epi16(g));
  }
}

#include "flash/flash_vnni_body.h"

// INT8 here, every other mode on flash__avx512's entry point.
const attn_kernel attn_kernel_flash__avx512vnni = VN_RECORD(
    "flash__avx512vnni",
    "flash__avx512 with the INT8 compute mode on vpdpbusd: Q quantized per 32-block, integer "
    "Q.K^T straight from the q8_0 cache, fp32 softmax, P.V with V dequantized in registers, GQA "
    "rows share each K/V load; F32 mode is flash__avx512's",
    ATTN_ISA_AVX512F | ATTN_ISA_AVX512VNNI);
