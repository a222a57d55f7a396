// SPDX-License-Identifier: MIT
// flash_vnni_ymm.h — the ymm primitives of the INT8 body (flash_vnni_body.h) on
// AVX2-class registers, and the body on them. Two forms of the integer dot, one per
// includer:
//   offset form  the includer defines
//                    VN_DPBUSD(acc, a, b)  vpdpbusd on __m256i (acc + Σ_{t<4} u8(a)·s8(b)
//                                          per int32 lane)
//                as the VEX form of AVX-VNNI (flash_avxvnni.c, the kernel) or the EVEX form
//                of AVX512_VNNI + AVX512VL (the test's twin, tests/simd/flash_avxvnni_twin.c,
//                which runs this very code on CPUs that have AVX-512 but not AVX-VNNI); both
//                compute the same sums. K is offset to k + 128 (the body's correction c_b).
//   sign form    the includer defines nothing: plain AVX2 (flash_int8_avx2.c,
//                flash__avx2int8), vpmaddubsw + vpmaddwd. vpmaddubsw adds byte pairs
//                u8·s8 into int16 with saturation, so K + 128 (up to 2·255·127) would
//                saturate; instead u = |k| (vpabsb: −128 → 128 unsigned) and s = sign(q, k)
//                (vpsignb: q negated where k < 0, 0 where k = 0), so u·s = k·q for every
//                byte k and |q| ≤ 127, and a pair sums to at most 2·128·127 = 32512 <
//                2^15: exact. vpmaddwd against ones adds the int16 pairs into the int32
//                lane the vpdpbusd would (4 bytes per lane), so the reduction below is the
//                same; no correction (c_b is not used).
// It also defines VN_BLOCK_DOTS (the exported block dots' name). The vf_* mapping is AVX2's
// (8 lanes, through flash/flash_avx2.h, which also declares flash__avx2's F32 entry point).
//
// Key group of 8 keys: a ymm holds two keys' 16-byte halves of block b, key 4L + j in
// 128-bit lane L of vector j (j < 4); Q's half broadcast to both lanes. The block's two
// halves' dots leave each key's 32 products in the 4 dwords of its lane; two
// unpack-and-add levels (vn_rowdot) give one vector of 8 keys, lane c = key c (the zmm
// kernel, flash_avx512vnni.c, transposes its K vectors instead). 8 keys rather than
// 16 in two ymm halves: a key group's scores are then one float vector, as the body wants
// (VN_KG == VF_W), and the group's K vectors (loaded once for all its rows) leave room for
// one row's Q vectors and dot sums in the 16 ymm registers; 16 keys would double the K
// vectors and the score accumulators of every row. (The sign form's 8 raw K vectors, the
// sign sources, are read from L1 when the registers run out.)
#pragma once

#include <string.h>

#include "flash/flash_avx2.h"

// P·V passes hold up to 8 accumulator vectors: half of the 16 ymm registers.
#define VN_PV_ACC 8
#define VN_F32_RUN flash_avx2_run
#define VN_F32_WORKSPACE flash_avx2_workspace

typedef __m256i vn_vi_t;

// Vector j of a key group: keys j, 4 + j (lanes 0, 1), 16 bytes at `off` into each key's
// row (ko: byte offsets of the 8 keys from k), as stored.
static inline __attribute__((always_inline)) __m256i vn_kvec(const char *k, const size_t *ko, int j,
                                                             size_t off) {
  const __m128i lo = _mm_loadu_si128((const __m128i *)(k + ko[j] + off));
  const __m128i hi = _mm_loadu_si128((const __m128i *)(k + ko[j + 4] + off));
  return _mm256_set_m128i(hi, lo);
}

// The two unpack-and-add levels (per 128-bit lane).
static inline __m256i vn_pairsum(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
}
static inline __m256i vn_quadsum(__m256i x, __m256i y) {
  return _mm256_add_epi32(_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y));
}

#if defined(VN_DPBUSD)
#define VN_KV_VECS 8  // vectors vn_kload fills
// kv[j] = the first halves (vn_kvec at off), kv[4 + j] the second ones (off + 16), as
// unsigned k + 128.
static inline __attribute__((always_inline)) void vn_kload(const char *k, const size_t *ko,
                                                           size_t off, __m256i *kv) {
  const __m256i bias = _mm256_set1_epi8((char)0x80);
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    kv[j] = _mm256_xor_si256(vn_kvec(k, ko, j, off), bias),
    kv[4 + j] = _mm256_xor_si256(vn_kvec(k, ko, j, off + 16), bias);
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
#else
#define VN_KV_VECS 16  // vectors vn_kload fills
// kv[j], kv[4 + j] = |k| of the first and second halves (as vn_kvec at off, off + 16),
// kv[8 + j], kv[12 + j] = the stored bytes (the sign sources).
static inline __attribute__((always_inline)) void vn_kload(const char *k, const size_t *ko,
                                                           size_t off, __m256i *kv) {
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    kv[8 + j] = vn_kvec(k, ko, j, off), kv[12 + j] = vn_kvec(k, ko, j, off + 16);
    kv[j] = _mm256_abs_epi8(kv[8 + j]), kv[4 + j] = _mm256_abs_epi8(kv[12 + j]);
  }
}

// Σ_{t<4} |k_t|·sign(q_t, k_t) = Σ_{t<4} k_t·q_t per int32 lane (exact: see the header).
static inline __attribute__((always_inline)) __m256i vn_dot4(__m256i ka, __m256i k, __m256i q) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ka, _mm256_sign_epi8(q, k)), _mm256_set1_epi16(1));
}

// One row: Q's halves broadcast to both lanes; per vector j the two halves' dots leave
// key 4L + j's 32 products in the 4 dwords of lane L of a_j, the two levels add them into
// dword c = key c. corr is the offset form's and not used.
static inline __attribute__((always_inline)) __m256i vn_rowdot(const __m256i *kv, const int8_t *qs,
                                                               int32_t corr) {
  (void)corr;
  const __m256i q0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
  const __m256i q1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(qs + 16)));
  __m256i a[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++)
    a[j] = _mm256_add_epi32(vn_dot4(kv[j], kv[8 + j], q0), vn_dot4(kv[4 + j], kv[12 + j], q1));
  return vn_quadsum(vn_pairsum(a[0], a[1]), vn_pairsum(a[2], a[3]));
}
#endif

// The scales of a key group, scalar copies (the zmm kernel's gathers are unmeasured on
// the AVX-VNNI cores, where the Gather Data Sampling mitigation slows gathers). A whole
// group block by block: the 8 keys' offsets stay in registers, one load and one store per
// scale (the general loop below costs about three times that, which one-row decode feels).
static inline void vn_scales_group(const char *rows, const size_t *ko, int64_t nb, int n,
                                   uint16_t *d, int64_t ldd) {
  if (n == 8) {
    for (int64_t b = 0; b < nb; b++) {
      const char *blk = rows + (size_t)b * sizeof(attn_block_q8_0) + offsetof(attn_block_q8_0, d);
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++) memcpy(d + b * ldd + i, blk + ko[i], sizeof(uint16_t));
    }
    return;
  }
  for (int i = 0; i < 8; i++)
    for (int64_t b = 0; b < nb; b++)
      d[b * ldd + i] = i < n ? ((const attn_block_q8_0 *)(rows + ko[i]))[b].d : 0;
}

#include "flash/flash_vnni_body.h"
