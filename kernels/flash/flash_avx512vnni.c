// SPDX-License-Identifier: MIT
// flash__avx512vnni — the flash kernel with the INT8 compute mode (attn.h, "Compute
// modes") on AVX512_VNNI's `vpdpbusd zmm`, reading the q8_0 K/V cache in place; every
// other mode runs flash__avx512's F32 path. The INT8 algorithm (plan, tasks, the offset
// form of the integer dot, softmax, P·V) is flash/flash_vnni_body.h, shared with
// flash__avxvnni; this file holds the zmm key-group layout it runs on and the record.
//
// Key group of 16 keys, transposed: for each 32-block, vector t < 8 holds dword t (bytes
// 4t .. 4t + 3) of the 16 keys, lane c = key c; a row's 8 vpdpbusd against its Q dwords
// broadcast leave the 16 keys' sums in place, with no reduction. The transpose (16 ymm
// loads, 8 inserts, 24 shuffles) is shared by the rows of a group.
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
#define VN_KV_VECS 8  // vectors vn_kload fills

// The key group's 32 bytes of a block, transposed to dwords: kv[t] lane c = bytes
// 4t .. 4t + 3 of key c (t < 8), as unsigned k + 128. Each key's 32 bytes are one ymm load;
// keys i and 4 + i (and 8 + i, 12 + i) share a zmm, and a 4 × 4 dword transpose per
// 128-bit lane (two unpack levels) and one 128-bit lane shuffle per vector finish it.
static inline __attribute__((always_inline)) void vn_kload(const char *k, const size_t *ko,
                                                           size_t off, __m512i *kv) {
  __m512i z[8], a[8], b[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {  // z[i]: key g + i % 4 | key g + 4 + i % 4, g = 8·(i / 4)
    const int c = 8 * (i / 4) + i % 4;
    const __m256i lo = _mm256_loadu_si256((const __m256i *)(k + ko[c] + off));
    const __m256i hi = _mm256_loadu_si256((const __m256i *)(k + ko[c + 4] + off));
    z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 8; h += 4) {  // per 128-bit lane: dword u of the lane's 4 keys in b[h + u]
    a[h] = _mm512_unpacklo_epi32(z[h], z[h + 1]), a[h + 1] = _mm512_unpackhi_epi32(z[h], z[h + 1]);
    a[h + 2] = _mm512_unpacklo_epi32(z[h + 2], z[h + 3]);
    a[h + 3] = _mm512_unpackhi_epi32(z[h + 2], z[h + 3]);
    b[h] = _mm512_unpacklo_epi64(a[h], a[h + 2]), b[h + 1] = _mm512_unpackhi_epi64(a[h], a[h + 2]);
    b[h + 2] = _mm512_unpacklo_epi64(a[h + 1], a[h + 3]);
    b[h + 3] = _mm512_unpackhi_epi64(a[h + 1], a[h + 3]);
  }
  // b[u] lanes: dword u of keys 0-3, dword 4 + u of keys 0-3, the same of keys 4-7; b[4 + u]
  // of keys 8-15. Lanes 0 and 2 of both give dword u of keys 0-15, lanes 1 and 3 dword 4 + u.
  const __m512i bias = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 4
  for (int u = 0; u < 4; u++) {
    kv[u] = _mm512_xor_si512(_mm512_shuffle_i32x4(b[u], b[4 + u], 0x88), bias);
    kv[4 + u] = _mm512_xor_si512(_mm512_shuffle_i32x4(b[u], b[4 + u], 0xDD), bias);
  }
}

// One row: dword t of Q's block broadcast against kv[t] (8 vpdpbusd, no reduction),
// starting from −corr in every lane (the offset's correction, exact in int32). The
// broadcast is the instruction's embedded one ({1to16} on the memory operand): for the
// intrinsic on _mm512_set1_epi32, GCC emits a separate vpbroadcastd per dword, and the
// folded form measured 1.02–1.03× on GQA decode (docs/low-precision-kernels.md).
static inline __attribute__((always_inline)) __m512i vn_rowdot(const __m512i *kv, const int8_t *qs,
                                                               int32_t corr) {
  __m512i acc = _mm512_set1_epi32(-corr);
#pragma GCC unroll 8
  for (int t = 0; t < 8; t++) {
    const int32_t *dword = (const int32_t *)(const void *)(qs + 4 * t);
    __asm__("vpdpbusd %[q]%{1to16%}, %[k], %[acc]"
            : [acc] "+v"(acc)
            : [k] "v"(kv[t]), [q] "m"(*dword));
  }
  return acc;
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
