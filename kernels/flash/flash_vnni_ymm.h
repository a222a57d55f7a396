// SPDX-License-Identifier: MIT
// flash_vnni_ymm.h — the ymm primitives of the VNNI INT8 body (flash_vnni_body.h) on
// AVX2-class registers, and the body on them. The one instruction they leave open is the
// dot product: the includer defines
//     VN_DPBUSD(acc, a, b)   vpdpbusd on __m256i (acc + Σ_{t<4} u8(a)·s8(b) per int32 lane)
// as the VEX form of AVX-VNNI (flash_avxvnni.c, the kernel) or the EVEX form of
// AVX512_VNNI + AVX512VL (the test's twin, tests/simd/flash_avxvnni_twin.c, which runs this
// very code on CPUs that have AVX-512 but not AVX-VNNI); both compute the same sums. It
// also defines VN_BLOCK_DOTS (the exported block dots' name). The vf_* mapping is AVX2's
// (8 lanes, through flash/flash_avx2.h, which also declares flash__avx2's F32 entry point).
//
// Key group of 8 keys: a ymm holds two keys' 16-byte halves of block b, key 4L + j in
// 128-bit lane L of vector j (j < 4); Q's half broadcast to both lanes. Two VN_DPBUSD (the
// block's two halves) leave each key's 32 products in the 4 dwords of its lane; two
// unpack-and-add levels (vn_rowdot) give one vector of 8 keys, lane c = key c (the zmm
// kernel, flash_avx512vnni.c, transposes its K vectors instead). 8 keys rather than
// 16 in two ymm halves: a key group's scores are then one float vector, as the body wants
// (VN_KG == VF_W), and the group's 8 K vectors (loaded and offset once for all its rows)
// leave room for one row's Q vectors and dot sums in the 16 ymm registers; 16 keys would
// double the K vectors and the score accumulators of every row.
#pragma once

#include "flash/flash_avx2.h"

// P·V passes hold up to 8 accumulator vectors: half of the 16 ymm registers.
#define VN_PV_ACC 8
#define VN_F32_RUN flash_avx2_run
#define VN_F32_WORKSPACE flash_avx2_workspace

typedef __m256i vn_vi_t;

// Vector j of a key group: keys j, 4 + j (lanes 0, 1), 16 bytes at `off` into each key's
// row (ko: byte offsets of the 8 keys from k), as unsigned k + 128.
static inline __attribute__((always_inline)) __m256i vn_kvec(const char *k, const size_t *ko, int j,
                                                             size_t off) {
  const __m128i lo = _mm_loadu_si128((const __m128i *)(k + ko[j] + off));
  const __m128i hi = _mm_loadu_si128((const __m128i *)(k + ko[j + 4] + off));
  return _mm256_xor_si256(_mm256_set_m128i(hi, lo), _mm256_set1_epi8((char)0x80));
}

// kv[j] = the first halves (vn_kvec at off), kv[4 + j] the second ones (off + 16).
static inline __attribute__((always_inline)) void vn_kload(const char *k, const size_t *ko,
                                                           size_t off, __m256i *kv) {
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    kv[j] = vn_kvec(k, ko, j, off), kv[4 + j] = vn_kvec(k, ko, j, off + 16);
}

// The two unpack-and-add levels (per 128-bit lane).
static inline __m256i vn_pairsum(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
}
static inline __m256i vn_quadsum(__m256i x, __m256i y) {
  return _mm256_add_epi32(_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y));
}

// One row: Q's halves broadcast to both lanes, two VN_DPBUSD per vector j leave key
// 4L + j's 32 products in the 4 dwords of lane L of a_j, the two levels add them into
// dword c = key c, less corr (the offset's correction).
static inline __attribute__((always_inline)) __m256i vn_rowdot(const __m256i *kv, const int8_t *qs,
                                                               int32_t corr) {
  const __m256i q0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
  const __m256i q1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(qs + 16)));
  __m256i a[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    a[j] = VN_DPBUSD(VN_DPBUSD(_mm256_setzero_si256(), kv[j], q0), kv[4 + j], q1);
  return _mm256_sub_epi32(vn_quadsum(vn_pairsum(a[0], a[1]), vn_pairsum(a[2], a[3])),
                          _mm256_set1_epi32(corr));
}

// The scales of a key group, scalar copies (the zmm kernel's gathers are unmeasured on
// the AVX-VNNI cores, where the Gather Data Sampling mitigation slows gathers).
static inline void vn_scales_group(const char *rows, const size_t *ko, int64_t nb, int n,
                                   uint16_t *d, int64_t ldd) {
  for (int i = 0; i < 8; i++)
    for (int64_t b = 0; b < nb; b++)
      d[b * ldd + i] = i < n ? ((const attn_block_q8_0 *)(rows + ko[i]))[b].d : 0;
}

#include "flash/flash_vnni_body.h"
