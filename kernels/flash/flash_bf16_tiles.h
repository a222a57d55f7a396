// SPDX-License-Identifier: MIT
// flash_bf16_tiles.h — the bfloat16 register tiles of flash__avx512bf16 (flash_avx512bf16.c;
// the layouts and the maths: docs/low-precision-kernels.md); its packers and softmax pass
// are flash_bf16_round.h's. Include in a file compiled with AVX-512, BW and AVX512_BF16.
//
// `vdpbf16ps acc, a, b` adds, in every float32 lane i, the two products
// a.bf16[2i]·b.bf16[2i] + a.bf16[2i+1]·b.bf16[2i+1] (each exact in float32: 8-bit
// significands) to acc.fp32[i], rounding to nearest even, denormals as zero. So both
// GEMMs of attention run over *pairs* along their reduction dimension:
//   Q·Kᵀ  reduction over head_dim: B = K̂ packed [dqk2][keys][2] (one u32 = the pair
//         (K[c][2k], K[c][2k+1]) of key c), one zmm = 16 keys × one d-pair; A = a Q̂ pair
//         (Q[r][2k], Q[r][2k+1]) broadcast as 32 bits.
//   P·V   reduction over keys: B = V̂ packed [keys/2][dvp][2] (one u32 = (V[2j][e],
//         V[2j+1][e])), one zmm = 16 columns × one key pair; A = the pair (P[r][2j],
//         P[r][2j+1]) of bf16 probabilities, contiguous in P's rows, broadcast as 32 bits.
// A u32 holds the lower-indexed element in its low half (little-endian bf16 arrays).
// Odd head_dim and odd key counts pad the pair with a zero (zero products add nothing).
#pragma once

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "flash/flash_bf16_round.h"

// The pair at p (two bf16, any alignment) broadcast to all 16 lanes.
BK_INLINE __m512bh bk_bcast_pair(const void *p) {
  uint32_t x;
  memcpy(&x, p, sizeof x);
  return (__m512bh)_mm512_set1_epi32((int)x);
}

BK_INLINE __m512bh bk_load_pairs(const uint32_t *p) {
  return (__m512bh)_mm512_loadu_si512(p);
}

// The accumulator arrays fit either register tile.
#define BK_TILE_MR (BK_QK_MR > BK_PV_MR ? BK_QK_MR : BK_PV_MR)
#define BK_TILE_NV (BK_QK_NV > BK_PV_NV ? BK_QK_NV : BK_PV_NV)

// The k loop both GEMMs share: acc[r][v] += pair-dot(A(r, k), B[k][v·16 .. v·16 + 16)) for
// k < nk, r < mr, v < nv, k outermost (each element's sum in k order). A(r, k) = the u32
// pair a[k·ak + r·ar], broadcast; B row k (u32 pairs) at b + k·ldb. mr, nv compile-time.
BK_INLINE void bk_dot_steps(const int mr, const int nv, __m512 acc[][BK_TILE_NV], const uint32_t *a,
                            int64_t ak, int64_t ar, const uint32_t *b, int64_t ldb, int64_t nk) {
#pragma GCC unroll 2
  for (int64_t k = 0; k < nk; k++) {
    __m512bh bv[BK_TILE_NV];
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) bv[v] = bk_load_pairs(b + k * ldb + v * 16);
#pragma GCC unroll 16
    for (int r = 0; r < mr; r++) {
      const __m512bh ab = bk_bcast_pair(a + k * ak + r * ar);
#pragma GCC unroll 16
      for (int v = 0; v < nv; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ab, bv[v]);
    }
  }
}

// S[r][0 .. nv·16) = Σ_{k < nkp} pair-dot(A[r][k], B[k][·]), r < mr (unscaled: the
// softmax applies |scale|): A = a Q̂ panel (row r's k-th pair at a[k·mr + r]), B row k at
// b + k·ldb (u32 pairs of keys), S row r at s + r·lds. mr, nv compile-time constants.
BK_INLINE void bk_qk(const int mr, const int nv, const uint32_t *a, const uint32_t *b, int64_t ldb,
                     int64_t nkp, float *s, int64_t lds) {
  __m512 acc[BK_TILE_MR][BK_TILE_NV];
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) acc[r][v] = _mm512_setzero_ps();
  bk_dot_steps(mr, nv, acc, a, mr, 1, b, ldb, nkp);
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) _mm512_storeu_ps(s + r * lds + v * 16, acc[r][v]);
}

// acc[r][0 .. nv·16) = init_r + Σ_{j < nkp} pair-dot(P[r][2j..2j+1], V̂[j][·]), r < mr;
// init_r = alpha[r]·acc[r] when scaled, else acc[r]. P rows of bf16 at p + r·ldp, V̂ row
// j (u32 pairs of columns) at vb + j·ldv, acc row r at c + r·ldc.
BK_INLINE void bk_pv(const int mr, const int nv, const int scaled, const float *alpha,
                     const uint16_t *p, int64_t ldp, const uint32_t *vb, int64_t ldv, int64_t nkp,
                     float *c, int64_t ldc) {
  __m512 acc[BK_TILE_MR][BK_TILE_NV];
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++) {
    const __m512 al = _mm512_set1_ps(scaled ? alpha[r] : 1.0f);
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) {
      acc[r][v] = _mm512_loadu_ps(c + r * ldc + v * 16);
      if (scaled) acc[r][v] = _mm512_mul_ps(acc[r][v], al);
    }
  }
  // P row r's pair j is u32 number r·ldp/2 + j (ldp even: P rows start on a pair).
  bk_dot_steps(mr, nv, acc, (const uint32_t *)p, 1, ldp / 2, vb, ldv, nkp);
#pragma GCC unroll 16
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) _mm512_storeu_ps(c + r * ldc + v * 16, acc[r][v]);
}
