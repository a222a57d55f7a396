// SPDX-License-Identifier: MIT
// flash_bf16_round.h — every step that rounds float32 to bfloat16 in the BF16 compute mode
// (attn.h, "Compute modes"), shared by flash__avx512bf16 (vdpbf16ps register tiles,
// flash_bf16_tiles.h) and flash__amxbf16 (AMX tiles, flash_amx_body.h): the packers of K̂
// and V̂ into bf16 pairs and the base-2 online-softmax pass that writes P̃ = bf16(p).
// Include in a file compiled with AVX-512 (simd/vec_avx512.h), BW and AVX512_BF16. The
// layouts and the error bound: docs/low-precision-kernels.md.
//
// A pair is a u32 holding two bf16, the lower-indexed element in its low half
// (little-endian bf16 arrays); odd head_dim and odd key counts pad a pair with zero.
#pragma once

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "simd/vec_avx512.h"
// (after the vf_* mapping, which kv_widen_rows is written over)
#include "simd/kv_widen.h"

#define BK_INLINE static inline __attribute__((always_inline))

// ── Rounding float32 to bf16 pairs ────────────────────────────────────────────────────
// 16 u32 pairs from 32 consecutive floats x[0 .. n) (n ≤ 32; missing ones read as 0),
// nearest even: pair t = (bf16(x[2t]), bf16(x[2t+1])).
BK_INLINE __m512i bk_round_pairs(const float *x, int n) {
  const __mmask16 mlo = (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u);
  const __mmask16 mhi = (__mmask16)(n >= 32 ? 0xffffu : n <= 16 ? 0u : (1u << (n - 16)) - 1u);
  const __m512 lo = _mm512_maskz_loadu_ps(mlo, x), hi = _mm512_maskz_loadu_ps(mhi, x + 16);
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // elements 0..15 from lo, 16..31 from hi
}

// Element-wise pairs of two rows: lane e = (bf16(a[e]), bf16(b[e])), e < n ≤ 16 (the
// rest 0). cvtne2ps puts a in elements 0..15 and b in 16..31; vpermw interleaves them.
BK_INLINE __m512i bk_interleave_rows(const float *a, const float *b, int n) {
  const __mmask16 m = (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u);
  const __m512 va = _mm512_maskz_loadu_ps(m, a);
  const __m512 vb = b ? _mm512_maskz_loadu_ps(m, b) : _mm512_setzero_ps();
  // Element 2i takes element i (a[i]), element 2i + 1 element 16 + i (b[i]).
  static const uint16_t kIdx[32]
      __attribute__((aligned(64))) = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), (__m512i)_mm512_cvtne2ps_pbh(vb, va));
}

// K̂ for one K/V tile: kt[k·ldkt + c] = pair k of key c (rounded) for c < nk, 0 for
// nk ≤ c < ncp (ncp a multiple of 16; their scores are masked before use); k < dqk2p =
// dqk2 rounded up to 16 (pairs ≥ dqk2 are 0). K rows of dqk floats at k + c·ldk.
// Rounds 16 keys into row-form pairs (rows: 16 × dqk2p u32), then transposes each 16×16
// block of u32 in registers (the float transpose moves bits unchanged).
static inline void bk_pack_k(const float *k, int64_t ldk, int64_t nk, int64_t ncp, int64_t dqk,
                             uint32_t *rows, uint32_t *kt, int64_t ldkt) {
  const int64_t dqk2p = ((dqk + 1) / 2 + 15) / 16 * 16;
  for (int64_t c0 = 0; c0 < ncp; c0 += 16) {
    for (int c = 0; c < 16; c++) {
      uint32_t *dst = rows + c * dqk2p;
      if (c0 + c >= nk) {
        memset(dst, 0, (size_t)dqk2p * sizeof *dst);
        continue;
      }
      const float *src = k + (c0 + c) * ldk;
      for (int64_t d = 0; d < 2 * dqk2p; d += 32) {
        const int64_t left = dqk - d;
        _mm512_storeu_si512(dst + d / 2, bk_round_pairs(src + d, left <= 0    ? 0
                                                                 : left >= 32 ? 32
                                                                              : (int)left));
      }
    }
    for (int64_t t = 0; t < dqk2p; t += 16)
      vf_transpose_block((const float *)(rows + t), dqk2p, (float *)(kt + t * ldkt + c0), ldkt);
  }
}

// V̂ for one K/V tile: vt[j·dvp + e] = (V[2j][e], V[2j+1][e]) rounded, for j < ceil(nk/2),
// e < dvp (columns ≥ dv and the key past an odd nk are 0). V rows of dv floats at
// v + c·ldv.
static inline void bk_pack_v(const float *v, int64_t ldv, int64_t nk, int64_t dv, int64_t dvp,
                             uint32_t *vt) {
  for (int64_t j = 0; 2 * j < nk; j++) {
    const float *a = v + 2 * j * ldv, *b = 2 * j + 1 < nk ? a + ldv : NULL;
    for (int64_t e = 0; e < dvp; e += 16) {
      const int64_t left = dv - e;
      _mm512_storeu_si512(vt + j * dvp + e, bk_interleave_rows(a + e, b ? b + e : NULL,
                                                               left <= 0    ? 0
                                                               : left >= 16 ? 16
                                                                            : (int)left));
    }
  }
}

// K̂ and V̂ of nk keys whose rows are stored as ty (K rows krb bytes apart from kj, V rows
// vrb apart from vj): bk_pack_k (ncp, ldkt as there; rows: its scratch) and bk_pack_v.
// F32 rows are read in place; F16, BF16 and Q8_0 rows are first widened exactly to
// float32 in kc (nk rows of max(dqk, dv) floats; simd/kv_widen.h), then rounded as F32
// rows are (BF16: no change) — every stored type gives the float32 copies' answer.
static inline void bk_pack_kv(attn_dtype ty, const char *kj, size_t krb, const char *vj, size_t vrb,
                              int64_t nk, int64_t ncp, int64_t dqk, int64_t dv, int64_t dvp,
                              uint32_t *rows, float *kc, uint32_t *kt, int64_t ldkt, uint32_t *vt) {
  if (ty == ATTN_DTYPE_F32) {
    bk_pack_k((const float *)kj, dqk, nk, ncp, dqk, rows, kt, ldkt);
    bk_pack_v((const float *)vj, dv, nk, dv, dvp, vt);
    return;
  }
  kv_widen_rows(ty, kj, krb, nk, dqk, kc, dqk, dqk);
  bk_pack_k(kc, dqk, nk, ncp, dqk, rows, kt, ldkt);
  kv_widen_rows(ty, vj, vrb, nk, dv, kc, dv, dv);
  bk_pack_v(kc, dv, nk, dv, dvp, vt);
}

// ── The online softmax of one row of one tile (simd/softmax.h's update) ────────────
// The scores come unscaled, S = ±Q̂·K̂ᵀ with the sign of the scale already in Q̂, so the
// scaled score is c·s with c = |scale| ≥ 0; c·max s = max c·s (a product by c ≥ 0 and its
// rounding are monotone). Only s[0 .. lim) is read: columns past the row's limit are
// stale and never enter (masked loads), so nothing is written there to mask them.

// Pass 1: max of s[0 .. lim) (−∞ for lim = 0). Four independent maxima (max is exact).
static inline float bk_row_max(const float *s, int64_t lim) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  __m512 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
  int64_t j = 0;
  for (; j + 64 <= lim; j += 64) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(s + j));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(s + j + 16));
    m2 = _mm512_max_ps(m2, _mm512_loadu_ps(s + j + 32));
    m3 = _mm512_max_ps(m3, _mm512_loadu_ps(s + j + 48));
  }
  for (; j + 16 <= lim; j += 16) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(s + j));
  if (j < lim)
    m1 = _mm512_max_ps(m1, _mm512_mask_loadu_ps(ninf, (__mmask16)((1u << (lim - j)) - 1u), s + j));
  return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}

// Pass 2 fused with the rounding of p, in base 2: t = bk_row_max, m' = max(m, c·t),
// pb[j] = bf16(2^(s_j·c₂ − m₂)) for j < lim and 0 for lim ≤ j < n_pad, with c₂ = fl(c·log₂e)
// and m₂ = fl(m'·log₂e): one fma per score, then bk_exp2 (no range reduction in base e).
// l' = α·l + Σ p over the unrounded p; returns α = 2^(m₂,old − m₂). m₂ is the same float
// whenever m' is, so every p, l and α of a row shares one shift 2^m₂ ≈ e^m' and that
// shift's rounding cancels in O = acc / l (a split-KV partial carries m', as in F32 mode).
// Per key, the exponent's error in natural units is |c·(s_j − t)|·u (c₂'s rounding acts on
// the score's distance to the shift) + |c·s_j − m'|·u (the fma): within the checker's
// 2u·(|s| + |m|) score term; bk_exp2's BK_EXP2_REL is in the mode's budget for p (docs/low-
// precision-kernels.md, "The error bound"). n_pad a multiple of 16, lim ≤ n_pad. lim = 0: pb = 0,
// α = 1, (m, l) kept.

// 2^x for x ≤ 0 (any float; NaN in, NaN out), in the kernels' FP environment (FTZ, attn.h):
// f = x − ⌊x⌋ ∈ [0, 1) by one vreduceps (exact), 2^f by a degree-4 polynomial (our fit of
// 2^f on [0, 1) with q(0) = 1, coefficients rounded to float; its float32 Horner with fmas
// is within 2.97e-6 relative of 2^x at every float of [−126, 0], checked exhaustively, ≤
// BK_EXP2_REL), then vscalefps, which multiplies by 2^⌊x⌋ itself (exact).
// Lanes with x < −126 give 0: 2^⌊x⌋·[1, 2) is subnormal there and FTZ flushes it, so no
// denormal is ever produced. The error, below 2^-18, is 1/512 of p's bf16 rounding (2^-9), so
// the BF16 mode's budget for p, u_p = 2^-8, holds it (docs/low-precision-kernels.md, "The
// error bound"); no float32 mode uses this exp.
#define BK_EXP2_REL 3.0e-6
BK_INLINE __m512 bk_exp2(__m512 x) {
  const __m512 f = _mm512_reduce_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 q = _mm512_set1_ps(0.013426689431071281f);
  q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0.0522424653172493f));
  q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0.2412802129983902f));
  q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0.6930448412895203f));
  q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(q, x);
}

static inline float bk_exp_round(const float *s, int64_t lim, int64_t n_pad, float c, float t,
                                 float *m, float *l, uint16_t *pb) {
  if (lim == 0) {
    memset(pb, 0, (size_t)n_pad * sizeof *pb);
    return 1.0f;
  }
  const float log2e = 1.44269504088896341f;
  const float ct = c * t, m_new = ct > *m ? ct : *m, m2 = m_new * log2e;
  // e^(−∞) = 0 on the first tile; otherwise the ratio of the old and new shifts
  const float alpha = m_new == *m ? 1.0f : exp2f(*m * log2e - m2);
  const __m512 vc = _mm512_set1_ps(c * log2e), vm = _mm512_set1_ps(-m2);
  __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= lim; j += 32) {
    const __m512 p0 = bk_exp2(_mm512_fmadd_ps(_mm512_loadu_ps(s + j), vc, vm));
    const __m512 p1 = bk_exp2(_mm512_fmadd_ps(_mm512_loadu_ps(s + j + 16), vc, vm));
    sum0 = _mm512_add_ps(sum0, p0), sum1 = _mm512_add_ps(sum1, p1);
    _mm512_storeu_si512(pb + j, (__m512i)_mm512_cvtne2ps_pbh(p1, p0));
  }
  for (; j < lim; j += 16) {  // one or two vectors, the last one masked at lim
    const __mmask16 k = (__mmask16)(lim - j >= 16 ? 0xffffu : (1u << (lim - j)) - 1u);
    const __m512 x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, s + j), vc, vm);
    const __m512 p0 = _mm512_maskz_mov_ps(k, bk_exp2(x));
    sum0 = _mm512_add_ps(sum0, p0);
    _mm256_storeu_si256((__m256i *)(pb + j), (__m256i)_mm512_cvtneps_pbh(p0));
  }
  for (; j < n_pad; j += 16) _mm256_storeu_si256((__m256i *)(pb + j), _mm256_setzero_si256());
  *l = alpha * *l + _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1));
  *m = m_new;
  return alpha;
}
