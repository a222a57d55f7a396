// SPDX-License-Identifier: MIT
// flash_decode_rows.h — the first of the flash kernels' two decode paths, for tasks with
// too few rows to fill the packed register tiles (flash_body.h picks the path from the
// task's row count, which depends on the shape only):
//   fl_row_fused  fewer than FL_QK_MR rows (MHA decode, GQA decode with few heads per
//                 K/V head): one fused sequential pass (fl_dec_t, every K/V type); here
//   fl_lanes      FL_RV_W..FL_LANES_MAX_ROWS rows (MQA/GQA decode): rows in vector lanes,
//                 flash_decode_lanes.h
// Both keep the online-softmax state (m, l, acc) of the FA2 loop and give the same
// result contract as the tiled pass (acc, m, l per row; l = 0: no key seen).
// Included by flash_body.h only.
#pragma once

#include "flash/flash_opts.h"
#include "flash/flash_tiles.h"
#include "simd/kv_widen.h"

// ── Decode rows (fewer than FL_QK_MR): one fused pass over the keys ─────────────────
// Decode tasks (MHA: one row; GQA: the heads of one K/V group) read each K and V element
// once with a few flop per byte: their speed is what memory delivers, as long as the
// arithmetic per key takes less time than the key's bytes. Per block of FL_ROW_KEYS keys
// (K and V advance as two sequential streams; the block ahead is prefetched during the
// scores, FL_DEC_PF_* below):
//   scores   row r's score of key c is one accumulator vector a[r][c] along K row c (one
//            FMA per vector of head_dim, in d order; a partial last vector zero-padded),
//            and the accumulators of VF_W keys are reduced together by a fixed add tree
//            (fl_sum_lanes) into one vector of VF_W scores — about 3 vector ops per key
//            instead of a horizontal sum per key;
//   options  fl_fin_row (flash_opts.h) finishes the row's block scores;
//   softmax  vs_online_softmax_row: m' = max(m, max_c s_c), α = e^{m−m'},
//            p_c = e^{s_c−m'}, l' = α·l + Σ p_c;
//   P·V      acc' = α·acc + Σ_c p_c·V_c  (key order per element; no α multiply when α = 1).
// Rows run in groups of FL_KV_RG (each group size its own constant): each K and V vector
// is read and widened (simd/kv_widen.h, exact) once for the group's rows, and the group
// holds the score accumulators of FL_DEC_KEYS(G) keys in registers. The first group reads
// the block from memory, later groups reread it from L1.
// Every K/V type runs this one code path: on the widened values its arithmetic is the
// float32 instance's operation for operation (fl_kv_vec only changes how a vector is
// loaded), so a typed run gives bitwise the float32 run on float32 copies of the stored
// values (test_flash_kv_types), and the result depends on the shape only.
#define FL_ROW_KEYS 32  // keys per block: whole score vectors and key groups (asserted below)
#define FL_ROW_NV 8     // acc vectors per pass over a block's V rows, one row
// Rows per group, 1 to 4 (the group switch below has cases up to 4): at 4, each widened
// K/V vector serves four rows (docs/design.md).
#define FL_KV_RG 4
#if FL_KV_RG < 1 || FL_KV_RG > 4
#error "FL_KV_RG: 1 to 4 rows per group"
#endif
// Accumulator registers a group fills (score accumulators; P·V accumulators for G ≥ 2):
// half of the vector registers (AVX2: 16 ymm; AVX-512 and NEON: 32), leaving the rest for
// the Q̂ rows, the widened K/V vector and the broadcast.
#if defined(__AVX2__) && !defined(__AVX512F__)
#define FL_DEC_ACC 8
#else
#define FL_DEC_ACC 16
#endif
// Keys whose scores one row (G = 1: MHA decode) accumulates at once. The loop runs d
// outer, keys inner, so FL_DEC_KEYS1 K rows are read interleaved, a vector of each in
// turn; 1 reads each K row front to back. Either way each score is the same FMA chain in d
// order (the grouping never changes a bit). The ISA file sets it (flash_avx2.h,
// flash_avx512.h, flash_neon.c): 1 where the hardware prefetchers follow one row better
// than several interleaved (docs/design.md).
#if FL_DEC_KEYS1 < 1 || FL_DEC_KEYS1 > FL_DEC_ACC
#error "FL_DEC_KEYS1: 1 to FL_DEC_ACC keys"
#endif
#define FL_DEC_KEYS(G) ((G) == 1 ? FL_DEC_KEYS1 : (G) == 2 ? FL_DEC_ACC / 2 : FL_DEC_ACC / 4)
#define FL_DEC_VECS(G) ((G) == 1 ? FL_ROW_NV : (G) == 2 ? FL_DEC_ACC / 2 : FL_DEC_ACC / 4)
// Software prefetch FL_DEC_PF_BLOCKS blocks ahead into L2 (FL_DEC_PF_LOCALITY, the
// __builtin_prefetch locality), spread over the block's scores: the K and the V rows of
// each key group of that block with the group's Q·Kᵀ, so the requests are spread evenly
// over the scores. FL_DEC_PF_V_PV(t, contiguous) = N (the ISA file's: a constant or an
// expression of the K/V type t and whether each head's K and V rows are consecutive,
// evaluated once per call): groups of at most N rows prefetch the V rows
// with their P·V passes instead, each pass the part of the rows it reads, so these
// requests too are spread evenly. Without the prefetch the hardware prefetchers do not
// follow the scores' loads (NK rows at once, in d order; docs/design.md).
#define FL_DEC_PF_BLOCKS 1    // one block ahead
#define FL_DEC_PF_LOCALITY 2  // into L2 (faster than into L1: docs/design.md)
// Every 64-byte line of [p, p + bytes).
FL_INLINE void fl_dec_pf(const char *p, size_t bytes) {
  if (!FL_DEC_PF_BLOCKS || bytes == 0) return;
  const uintptr_t a = (uintptr_t)p & ~(uintptr_t)63, e = (uintptr_t)p + bytes;
  for (uintptr_t x = a; x < e; x += 64) __builtin_prefetch((const void *)x, 0, FL_DEC_PF_LOCALITY);
}
// Every line of n rows of `bytes` bytes, `stride` bytes apart, from p: one range when the
// rows are consecutive (a dense head), row by row when other rows lie between them (a
// ragged batch's head, kv_heads rows apart) — never the lines between.
FL_INLINE void fl_dec_pf_rows(const char *p, int64_t n, size_t stride, size_t bytes) {
  if (stride == bytes) {
    fl_dec_pf(p, (size_t)n * bytes);
    return;
  }
  for (int64_t x = 0; x < n; x++) fl_dec_pf(p + (size_t)x * stride, bytes);
}
// attn_kv_row_bytes for a constant type (in registers, no call).
FL_INLINE size_t fl_row_bytes(const attn_dtype t, int64_t dim) {
  return t == ATTN_DTYPE_F32 ? (size_t)dim * 4
         : t == ATTN_DTYPE_F16 || t == ATTN_DTYPE_BF16
             ? (size_t)dim * 2
             : (size_t)(dim / ATTN_Q8_0_BLOCK) * sizeof(attn_block_q8_0);
}
_Static_assert(FL_ROW_KEYS % VF_W == 0 && FL_ROW_KEYS % FL_DEC_ACC == 0,
               "FL_ROW_KEYS: whole score vectors and key groups");

// s[j] = Σ_i a[j·VF_W + i], j < VF_W: the accumulators of VF_W keys (key j's vector at
// a + j·VF_W) reduced together into one vector, lane j = key j's sum. A fixed tree: halves
// of the register, then quarters, pairs and single lanes, added pairwise. One form per
// ISA on purpose: the AVX-512 and AVX2 trees have the same shape (one level fewer on
// AVX2) but each level is that ISA's own cross-lane shuffle, which the SIMD mapping layer
// (vec_*.h) does not name.
#if defined(__AVX512F__) || defined(__AVX2__)
#if defined(__AVX512F__)
#define FL_SHUF_PS _mm512_shuffle_ps
#else
#define FL_SHUF_PS _mm256_shuffle_ps
#endif
// The tree's last two levels, the same on both ISAs (shuffles within 128-bit lanes): lane
// pairs of x[i] and x[i + 2], then single lanes.
FL_INLINE vf_t fl_sum_pairs(const vf_t x[4]) {
  vf_t y[2];
#pragma GCC unroll 2
  for (int i = 0; i < 2; i++)  // lane pairs
    y[i] = vf_add(FL_SHUF_PS(x[i], x[i + 2], 0x44), FL_SHUF_PS(x[i], x[i + 2], 0xEE));
  return vf_add(FL_SHUF_PS(y[0], y[1], 0x88), FL_SHUF_PS(y[0], y[1], 0xDD));
}
#undef FL_SHUF_PS
#endif
#if defined(__AVX512F__)
FL_INLINE vf_t fl_sum_lanes(const float *a) {
  // The tree leaves input j's sum in lane π(j), π = 0 2 1 3 8 10 9 11 4 6 5 7 12 14 13 15
  // (an involution): input j is key π(j).
  static const int pi[16] = {0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15};
  __m512 w[8], x[4];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {  // 256-bit halves: [u lo+hi | v lo+hi]
    const __m512 u = _mm512_loadu_ps(a + pi[i] * 16), v = _mm512_loadu_ps(a + pi[i + 8] * 16);
    w[i] = _mm512_add_ps(_mm512_shuffle_f32x4(u, v, 0x44), _mm512_shuffle_f32x4(u, v, 0xEE));
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++)  // 128-bit quarters
    x[i] = _mm512_add_ps(_mm512_shuffle_f32x4(w[i], w[i + 4], 0x88),
                         _mm512_shuffle_f32x4(w[i], w[i + 4], 0xDD));
  return fl_sum_pairs(x);
}
#elif defined(__AVX2__)
FL_INLINE vf_t fl_sum_lanes(const float *a) {
  // Input j's sum lands in lane π(j), π = 0 2 1 3 4 6 5 7: input j is key π(j).
  static const int pi[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  __m256 w[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {  // 128-bit halves
    const __m256 u = _mm256_loadu_ps(a + pi[i] * 8), v = _mm256_loadu_ps(a + pi[i + 4] * 8);
    w[i] = _mm256_add_ps(_mm256_permute2f128_ps(u, v, 0x20), _mm256_permute2f128_ps(u, v, 0x31));
  }
  return fl_sum_pairs(w);
}
#elif defined(__aarch64__)
FL_INLINE vf_t fl_sum_lanes(const float *a) {  // pairwise adds keep the keys in order
  return vpaddq_f32(vpaddq_f32(vld1q_f32(a), vld1q_f32(a + 4)),
                    vpaddq_f32(vld1q_f32(a + 8), vld1q_f32(a + 12)));
}
#else
#error "flash_decode_rows.h: fl_sum_lanes for this ISA"
#endif

// One vector of K/V row `row` (type t) at element e, widened: e is a multiple of VF_W, so
// a q8_0 vector lies in one block.
FL_INLINE vf_t fl_kv_vec(const attn_dtype t, const char *row, int64_t e) {
  switch (t) {
    case ATTN_DTYPE_F16:
      return kv_w_f16((const uint16_t *)row + e);
    case ATTN_DTYPE_BF16:
      return kv_w_bf16((const uint16_t *)row + e);
    case ATTN_DTYPE_Q8_0: {
      const attn_block_q8_0 *b = (const attn_block_q8_0 *)row + e / ATTN_Q8_0_BLOCK;
      return vf_mul(kv_w_scale(b->d), kv_w_i8(b->qs + e % ATTN_Q8_0_BLOCK));
    }
    default:
      return vf_load((const float *)row + e);
  }
}
// n < VF_W elements at e, zeros above (f32, f16 and bf16 tails; q8_0 rows are whole blocks).
FL_INLINE vf_t fl_kv_vec_partial(const attn_dtype t, const char *row, int64_t e, int n) {
  if (t == ATTN_DTYPE_F32) return vf_load_partial((const float *)row + e, n);
  float buf[VF_W] __attribute__((aligned(64)));
  for (int i = 0; i < VF_W; i++) buf[i] = 0.0f;
  const uint16_t *h = (const uint16_t *)row + e;
  for (int i = 0; i < n; i++)
    buf[i] = t == ATTN_DTYPE_F16 ? attn_f16_to_f32(h[i]) : attn_bf16_to_f32(h[i]);
  return vf_load(buf);
}

// The score accumulators of G rows (row r of Q̂ at q + r·dqk) and NK keys (K row c at
// k + c·krb bytes): sa[(r·FL_ROW_KEYS + c)·VF_W ..] = Σ over head_dim vectors of
// Q̂_r ⊙ K_c, one FMA per vector in d order. q8_0: the block scale widened once per block
// and key, each vector d·q (exact) before its FMA.
FL_INLINE void fl_dec_qk(const attn_dtype t, const int H, const int G, const int NK, const float *q,
                         int64_t dqk, const char *k, size_t krb, float *sa) {
  vf_t a[FL_KV_RG][FL_DEC_ACC];
#pragma GCC unroll 4
  for (int r = 0; r < G; r++)
#pragma GCC unroll 16
    for (int c = 0; c < NK; c++) a[r][c] = vf_zero();
  if (t == ATTN_DTYPE_Q8_0) {
    enum { SV = ATTN_Q8_0_BLOCK / VF_W };  // vectors per block
    // Per block: each key's scale widened once, then per vector of the block one load per
    // Q̂ row (held in registers) for the NK keys' widened vectors — d order per accumulator.
    for (int64_t b = 0; b < dqk / ATTN_Q8_0_BLOCK; b++) {
      vf_t sc[FL_DEC_ACC];
#pragma GCC unroll 16
      for (int c = 0; c < NK; c++) {
        const attn_block_q8_0 *blk = (const attn_block_q8_0 *)(k + (size_t)c * krb) + b;
        sc[c] = H ? kv_w_scale_f16c(blk->d) : kv_w_scale(blk->d);
      }
#pragma GCC unroll 8
      for (int x = 0; x < SV; x++) {
        vf_t qv[FL_KV_RG];
#pragma GCC unroll 4
        for (int r = 0; r < G; r++)
          qv[r] = vf_pin(vf_load(q + r * dqk + b * ATTN_Q8_0_BLOCK + x * VF_W));
#pragma GCC unroll 16
        for (int c = 0; c < NK; c++) {
          const attn_block_q8_0 *blk = (const attn_block_q8_0 *)(k + (size_t)c * krb) + b;
          const vf_t kv = vf_mul(sc[c], kv_w_i8(blk->qs + x * VF_W));
#pragma GCC unroll 4
          for (int r = 0; r < G; r++) a[r][c] = vf_fma(qv[r], kv, a[r][c]);
        }
      }
    }
  } else {
    int64_t d = 0;
    for (; d + VF_W <= dqk; d += VF_W) {
      vf_t qv[FL_KV_RG];
#pragma GCC unroll 4
      for (int r = 0; r < G; r++) qv[r] = vf_pin(vf_load(q + r * dqk + d));  // one load per row
#pragma GCC unroll 16
      for (int c = 0; c < NK; c++) {
        const vf_t kv = fl_kv_vec(t, k + (size_t)c * krb, d);
#pragma GCC unroll 4
        for (int r = 0; r < G; r++) a[r][c] = vf_fma(qv[r], kv, a[r][c]);
      }
    }
    if (d < dqk) {
      const int w = (int)(dqk - d);
      vf_t qv[FL_KV_RG];
#pragma GCC unroll 4
      for (int r = 0; r < G; r++) qv[r] = vf_load_partial(q + r * dqk + d, w);
#pragma GCC unroll 16
      for (int c = 0; c < NK; c++) {
        const vf_t kv = fl_kv_vec_partial(t, k + (size_t)c * krb, d, w);
#pragma GCC unroll 4
        for (int r = 0; r < G; r++) a[r][c] = vf_fma(qv[r], kv, a[r][c]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < G; r++)
#pragma GCC unroll 16
    for (int c = 0; c < NK; c++) vf_store(sa + ((size_t)r * FL_ROW_KEYS + c) * VF_W, a[r][c]);
}

// The block scores of G rows: s[r][c] for keys c < nk of the block (k: its first K row),
// then s[r][nk .. ncol) = 0 (the softmax masks them). sa: FL_KV_RG·FL_ROW_KEYS vectors.
FL_INLINE void fl_dec_scores(const attn_dtype t, const int H, const int G, const float *q,
                             int64_t dqk, const char *k, size_t krb, int64_t nk, int64_t ncol,
                             float *sa, float (*s)[FL_ROW_KEYS + VF_W], const char *kpf,
                             const char *vpf, size_t vrb, size_t vbytes, int64_t npf, int pfv) {
  const int NK = FL_DEC_KEYS(G);
  const size_t kbytes = fl_row_bytes(t, dqk);
  int64_t c = 0;
  for (; c + NK <= nk; c += NK) {
    if (c < npf) {  // keys c .. c + NK of the block ahead (V rows: vrb bytes apart)
      const int64_t np = npf - c < NK ? npf - c : NK;
      fl_dec_pf_rows(kpf + (size_t)c * krb, np, krb, kbytes);
      if (G > pfv) fl_dec_pf_rows(vpf + (size_t)c * vrb, np, vrb, vbytes);
    }
    fl_dec_qk(t, H, G, NK, q, dqk, k + (size_t)c * krb, krb, sa + c * VF_W);
  }
  for (; c < nk; c++) fl_dec_qk(t, H, G, 1, q, dqk, k + (size_t)c * krb, krb, sa + c * VF_W);
#pragma GCC unroll 4
  for (int r = 0; r < G; r++) {
    float *sr = sa + (size_t)r * FL_ROW_KEYS * VF_W;
    for (int64_t x = nk; x < ncol; x++) vf_store(sr + x * VF_W, vf_zero());
    for (int64_t j = 0; j < ncol; j += VF_W) vf_store(s[r] + j, fl_sum_lanes(sr + j * VF_W));
  }
}

// acc_r ← α_r·acc_r + Σ_{c < n[r]} p_r,c·V_c for the G rows (acc row stride dvp; p in s,
// V row c at v + c·vrb bytes): NV vectors of head_dim_v per pass, each V vector widened
// once for the group.
FL_INLINE void fl_dec_pv(const attn_dtype t, const int H, const int G,
                         float (*s)[FL_ROW_KEYS + VF_W], const int64_t *n, const float *alpha,
                         const char *v, size_t vrb, int64_t dv, float *acc, int64_t dvp,
                         const char *vpf, int64_t npf, int pfv) {
  const int NV = FL_DEC_VECS(G);
  int64_t nmax = 0, nmin = FL_ROW_KEYS;  // 0 ≤ n[r] ≤ FL_ROW_KEYS
  vf_t va[FL_KV_RG];
  int rescale[FL_KV_RG];
#pragma GCC unroll 4
  for (int r = 0; r < G; r++) {
    nmax = n[r] > nmax ? n[r] : nmax;
    nmin = n[r] < nmin ? n[r] : nmin;
    va[r] = vf_set1(alpha[r]);
    rescale[r] = alpha[r] != 1.0f;  // a row with n = 0 has α = 1: its acc stays as it is
  }
  if (nmax == 0) return;
  int64_t e = 0;
  for (; e + NV * VF_W <= dv; e += NV * VF_W) {
    // This pass's share of each V row ahead: bytes [e, e + NV·VF_W)·vrb/dv of the row
    // (the elements' bytes for f32, f16 and bf16; q8_0 blocks split in proportion), the
    // last full pass to the end of the row.
    const size_t pb0 = (size_t)e * vrb / (size_t)dv;
    const size_t pb1 = e + 2 * NV * VF_W > dv ? vrb : (size_t)(e + NV * VF_W) * vrb / (size_t)dv;
    vf_t o[FL_KV_RG][FL_ROW_NV];
#pragma GCC unroll 4
    for (int r = 0; r < G; r++)
#pragma GCC unroll 8
      for (int x = 0; x < NV; x++) {
        o[r][x] = vf_load(acc + r * dvp + e + x * VF_W);
        if (rescale[r]) o[r][x] = vf_mul(o[r][x], va[r]);
      }
      // Keys [0, nmin) without the per-row test, then keys [nmin, nmax) with it.
#pragma GCC unroll 2
    for (int ph = 0; ph < 2; ph++) {
      const int64_t c0 = ph ? nmin : 0, c1 = ph ? nmax : nmin;
      for (int64_t c = c0; c < c1; c++) {
        const char *vr = v + (size_t)c * vrb;
        if (G <= pfv && c < npf) fl_dec_pf(vpf + (size_t)c * vrb + pb0, pb1 - pb0);
        vf_t vv[FL_ROW_NV], vsc = vf_zero();
#pragma GCC unroll 8
        for (int x = 0; x < NV; x++) {
          if (t == ATTN_DTYPE_Q8_0) {  // the block scale once per block (e: whole blocks or
                                       // inside one, NV·VF_W a power of 2)
            const attn_block_q8_0 *blk =
                (const attn_block_q8_0 *)vr + (e + x * VF_W) / ATTN_Q8_0_BLOCK;
            if (x == 0 || x * VF_W % ATTN_Q8_0_BLOCK == 0)
              vsc = H ? kv_w_scale_f16c(blk->d) : kv_w_scale(blk->d);
            vv[x] = vf_mul(vsc, kv_w_i8(blk->qs + (e + x * VF_W) % ATTN_Q8_0_BLOCK));
          } else {
            vv[x] = fl_kv_vec(t, vr, e + x * VF_W);
          }
        }
#pragma GCC unroll 4
        for (int r = 0; r < G; r++) {
          if (ph && c >= n[r]) continue;
          const vf_t pb = vf_set1(s[r][c]);
#pragma GCC unroll 8
          for (int x = 0; x < NV; x++) o[r][x] = vf_fma(pb, vv[x], o[r][x]);
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < G; r++)
#pragma GCC unroll 8
      for (int x = 0; x < NV; x++) vf_store(acc + r * dvp + e + x * VF_W, o[r][x]);
  }
  for (; e < dv; e += VF_W) {  // the rest one vector at a time; the last may be partial
    const int w = (int)(dv - e < VF_W ? dv - e : VF_W);
    vf_t o[FL_KV_RG];
#pragma GCC unroll 4
    for (int r = 0; r < G; r++) {
      o[r] = vf_load(acc + r * dvp + e);
      if (rescale[r]) o[r] = vf_mul(o[r], va[r]);
    }
    for (int64_t c = 0; c < nmax; c++) {
      const char *vr = v + (size_t)c * vrb;
      if (G <= pfv && e == 0 && c < npf) fl_dec_pf(vpf + (size_t)c * vrb, vrb);  // no full pass
      const vf_t vv = w == VF_W ? fl_kv_vec(t, vr, e) : fl_kv_vec_partial(t, vr, e, w);
#pragma GCC unroll 4
      for (int r = 0; r < G; r++)
        if (c < n[r]) o[r] = vf_fma(vf_set1(s[r][c]), vv, o[r]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < G; r++) vf_store(acc + r * dvp + e, o[r]);
  }
}

// The cases G = 1 .. FL_KV_RG of `switch (g)`, each calling STEP(G) with G a compile-time
// constant: each group size runs its own fully unrolled instance of the group loops.
// clang-format off
#define FL_DEC_CASE(G, STEP) case G: STEP(G); break;
#if FL_KV_RG >= 2
#define FL_DEC_CASE_2(STEP) FL_DEC_CASE(2, STEP)
#else
#define FL_DEC_CASE_2(STEP)
#endif
#if FL_KV_RG >= 3
#define FL_DEC_CASE_3(STEP) FL_DEC_CASE(3, STEP)
#else
#define FL_DEC_CASE_3(STEP)
#endif
#if FL_KV_RG >= 4
#define FL_DEC_CASE_4(STEP) FL_DEC_CASE(4, STEP)
#else
#define FL_DEC_CASE_4(STEP)
#endif
#define FL_DEC_GROUP_SWITCH(g, STEP) \
  switch (g) { FL_DEC_CASE(1, STEP) FL_DEC_CASE_2(STEP) FL_DEC_CASE_3(STEP) FL_DEC_CASE_4(STEP) \
               default: break; }
// clang-format on

// The rows a decode pass runs next, after this call's keys (the next head's run, the next
// page): its last block prefetches their first block as it would its own next block.
typedef struct fl_dec_next {
  const char *k, *v;  // first K and V row, at the call's strides
  int64_t n;          // rows (0: nothing next)
} fl_dec_next;

// Rows [0, nrows) (nrows < FL_QK_MR) of a task over its keys [0, nkeys), K/V of type t
// (K and V rows at k, v + key · krb, vrb bytes); row r sees keys [0, vis[r]) (causal:
// vis[r] < nkeys for rows before the last). fin (NULL: none) finishes each row's block
// scores (flash_opts.h); key 0 here is key kabs of the head. nx (NULL: none): the rows
// run next, prefetched by the last block.
FL_INLINE void fl_dec_t(const attn_dtype t, const int H, int64_t nrows, const float *q, int64_t dqk,
                        const char *k, size_t krb, const char *v, size_t vrb, int64_t dv,
                        int64_t dvp, int64_t nkeys, const int32_t *vis, float *acc, float *m,
                        float *l, const fl_fin *fin, int64_t kabs, const fl_dec_next *nx) {
  float s[FL_QK_MR][FL_ROW_KEYS + VF_W] __attribute__((aligned(64)));
  float sa[FL_KV_RG * FL_ROW_KEYS * VF_W] __attribute__((aligned(64)));
  int64_t n[FL_QK_MR];
  float alpha[FL_QK_MR];
  const size_t vbytes = fl_row_bytes(t, dv);
  // may be a run-time choice (flash_avx2.h, flash_avx512.h); rows contiguous: dense heads
  // and pages, not a ragged batch's (a head's rows kv_heads rows apart)
  const int pfv = FL_DEC_PF_V_PV(t, krb == fl_row_bytes(t, dqk) && vrb == vbytes);
  for (int64_t j0 = 0; j0 < nkeys; j0 += FL_ROW_KEYS) {
    const int64_t nk = nkeys - j0 < FL_ROW_KEYS ? nkeys - j0 : FL_ROW_KEYS;
    const int64_t ncol = (nk + VF_W - 1) / VF_W * VF_W;
    const char *kj = k + (size_t)j0 * krb, *vj = v + (size_t)j0 * vrb;
    // The block FL_DEC_PF_BLOCKS ahead: its npf keys, prefetched by the first row group.
    const int64_t pj = j0 + (int64_t)FL_DEC_PF_BLOCKS * FL_ROW_KEYS;
    int64_t npf = nkeys - pj < 0 ? 0 : nkeys - pj < FL_ROW_KEYS ? nkeys - pj : FL_ROW_KEYS;
    const char *kpf = npf ? k + (size_t)pj * krb : kj, *vpf = npf ? v + (size_t)pj * vrb : vj;
    if (!npf && nx && nx->n > 0 && j0 + FL_ROW_KEYS >= nkeys)  // the last block: what runs next
      npf = nx->n < FL_ROW_KEYS ? nx->n : FL_ROW_KEYS, kpf = nx->k, vpf = nx->v;
    for (int64_t r0 = 0; r0 < nrows; r0 += FL_KV_RG) {
      const int64_t g = nrows - r0 < FL_KV_RG ? nrows - r0 : FL_KV_RG;
      const float *qr = q + r0 * dqk;
#define FL_DEC_STEP(G)                                                                  \
  fl_dec_scores(t, H, G, qr, dqk, kj, krb, nk, ncol, sa, s + r0, kpf, vpf, vrb, vbytes, \
                r0 ? 0 : npf, pfv)
      FL_DEC_GROUP_SWITCH(g, FL_DEC_STEP);
#undef FL_DEC_STEP
    }
    for (int64_t r = 0; r < nrows; r++) {
      int64_t x = vis[r] - j0;  // keys of this block row r sees
      x = x < 0 ? 0 : x > nk ? nk : x;
      if (fin && x > 0) x = fl_fin_row(fin, r, s[r], kabs + j0, x);  // options; 0: none seen
      n[r] = x;
      alpha[r] = vs_online_softmax_row(s[r], x, ncol, &m[r], &l[r]);  // s: p from here
    }
    for (int64_t r0 = 0; r0 < nrows; r0 += FL_KV_RG) {
      const int64_t g = nrows - r0 < FL_KV_RG ? nrows - r0 : FL_KV_RG;
      float *ar = acc + r0 * dvp;
#define FL_DEC_STEP(G) \
  fl_dec_pv(t, H, G, s + r0, n + r0, alpha + r0, vj, vrb, dv, ar, dvp, vpf, r0 ? 0 : npf, pfv)
      FL_DEC_GROUP_SWITCH(g, FL_DEC_STEP);
#undef FL_DEC_STEP
    }
  }
}

#define FL_DEC_INSTANCE(name, T, H, ATTR)                                                         \
  ATTR static void name(int64_t nrows, const float *q, int64_t dqk, const char *k, size_t krb,    \
                        const char *v, size_t vrb, int64_t dv, int64_t dvp, int64_t nkeys,        \
                        const int32_t *vis, float *acc, float *m, float *l, const fl_fin *fin,    \
                        int64_t kabs, const fl_dec_next *nx) {                                    \
    fl_dec_t(T, H, nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l, fin, kabs, nx); \
  }
// H: q8_0 scales by kv_w_scale_f16c (the F16C instruction on AVX2, in a KV_F16C function).
FL_DEC_INSTANCE(fl_dec_f32, ATTN_DTYPE_F32, 0, )
FL_DEC_INSTANCE(fl_dec_f16, ATTN_DTYPE_F16, 0, KV_F16C)
FL_DEC_INSTANCE(fl_dec_bf16, ATTN_DTYPE_BF16, 0, )
FL_DEC_INSTANCE(fl_dec_q8_0, ATTN_DTYPE_Q8_0, 0, )
FL_DEC_INSTANCE(fl_dec_q8_0_f16c, ATTN_DTYPE_Q8_0, 1, KV_F16C)
#undef FL_DEC_INSTANCE

// The float32 decode rows (K and V rows of dqk and dv floats).
static void fl_row_fused(int64_t nrows, const float *q, int64_t dqk, const float *k, const float *v,
                         int64_t dv, int64_t dvp, int64_t nkeys, const int32_t *vis, float *acc,
                         float *m, float *l, const fl_fin *fin, int64_t kabs) {
  fl_dec_f32(nrows, q, dqk, (const char *)k, (size_t)dqk * sizeof(float), (const char *)v,
             (size_t)dv * sizeof(float), dv, dvp, nkeys, vis, acc, m, l, fin, kabs, NULL);
}

// Decode rows of type t (not F32) widened in registers when it can be (f16 needs the
// widening instruction: kv_have_f16c); returns 0 when the caller must take
// fl_row_fused_typed.
static int fl_dec_typed(attn_dtype t, int64_t nrows, const float *q, int64_t dqk, const char *k,
                        size_t krb, const char *v, size_t vrb, int64_t dv, int64_t dvp,
                        int64_t nkeys, const int32_t *vis, float *acc, float *m, float *l,
                        const fl_fin *fin, int64_t kabs, const fl_dec_next *nx) {
  switch (t) {
    case ATTN_DTYPE_F16:
      if (!kv_have_f16c()) return 0;
      fl_dec_f16(nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l, fin, kabs, nx);
      return 1;
    case ATTN_DTYPE_BF16:
      fl_dec_bf16(nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l, fin, kabs, nx);
      return 1;
    case ATTN_DTYPE_Q8_0:
      if (kv_have_f16c())
        fl_dec_q8_0_f16c(nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l, fin, kabs,
                         nx);
      else
        fl_dec_q8_0(nrows, q, dqk, k, krb, v, vrb, dv, dvp, nkeys, vis, acc, m, l, fin, kabs, nx);
      return 1;
    default:
      return 0;
  }
}

// The same rows through float32 scratch (f16 without F16C): each
// block of FL_KV_FUSED_KEYS keys is widened into kc (K rows, dqk floats) and vc (V rows,
// dv floats) — exact — and run through fl_row_fused, whose FL_ROW_KEYS blocks then start
// at the same keys as over the whole range: the same arithmetic on the stored values.
#define FL_KV_FUSED_KEYS FL_ROW_KEYS  // keys widened at once (a multiple of FL_ROW_KEYS)
_Static_assert(FL_KV_FUSED_KEYS % FL_ROW_KEYS == 0, "FL_KV_FUSED_KEYS: whole FL_ROW_KEYS blocks");
static void fl_row_fused_typed(attn_dtype t, int64_t nrows, const float *q, int64_t dqk,
                               const char *kb, size_t krb, const char *vb, size_t vrb, int64_t dv,
                               int64_t dvp, int64_t nkeys, const int32_t *vis, float *kc, float *vc,
                               float *acc, float *m, float *l, const fl_fin *fin, int64_t kabs) {
  int32_t bvis[FL_QK_MR];
  for (int64_t j0 = 0; j0 < nkeys; j0 += FL_KV_FUSED_KEYS) {
    const int64_t nk = nkeys - j0 < FL_KV_FUSED_KEYS ? nkeys - j0 : FL_KV_FUSED_KEYS;
    kv_widen_rows(t, kb + (size_t)j0 * krb, krb, nk, dqk, kc, dqk, dqk);
    kv_widen_rows(t, vb + (size_t)j0 * vrb, vrb, nk, dv, vc, dv, dv);
    for (int64_t r = 0; r < nrows; r++) {
      const int64_t n = vis[r] - j0;
      bvis[r] = (int32_t)(n < 0 ? 0 : n > nk ? nk : n);
    }
    fl_row_fused(nrows, q, dqk, kc, vc, dv, dvp, nk, bvis, acc, m, l, fin, kabs + j0);
  }
}
