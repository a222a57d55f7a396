// SPDX-License-Identifier: MIT
// fin_fused_body.h — the body of test_fin_fused for one ISA: included by fin_fused_<isa>.c
// after its simd/vec_<isa>.h, with FIN_FUSED_FN naming the function it defines.
//
// fl_fin_softmax_row (kernels/flash/flash_opts.h, the tiled pass) against what it fuses:
// fl_fin_row then vs_online_softmax_row (simd/softmax.h). On random rows of random tiles —
// window starts inside and before the tile, rows of several heads (slopes and mask planes
// per head), softcap, ALiBi, a mask with −inf entries, each alone and combined, first and
// later tiles of a row (m = −∞, l = 0 or a running state), rows whose keys end inside the
// last vector, and distances j − i − off below and above 2^24 (query positions 2^25 to 2^40)
// — the probabilities, α, m and l must be bitwise the same. (Above 2^24 the distances are
// converted per vector; both group the vectors alike only from a vector boundary, so those
// cases start the row's keys at one: no window start inside a vector.)
#pragma once

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "flash/flash_opts.h"
#include "simd/softmax.h"

#define FF_TKV 192  // keys per tile (a multiple of 16 and 8)
#define FF_HEADS 3

static uint64_t ff_rng(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}
static float ff_normal(uint64_t *s) {  // sum of 4 uniforms, centred: rough N(0, 1/3)
  double t = 0;
  for (int k = 0; k < 4; k++) t += (double)(ff_rng(s) >> 11) * (1.0 / 9007199254740992.0);
  return (float)(2.0 * (t - 2.0));
}

int FIN_FUSED_FN(const char *isa, int cases) {
  (void)fl_fin_lanes;  // the decode path's variant: not tested here
  int fails = 0, compared = 0, compared_huge = 0, compared_win = 0;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  static float mask[FF_HEADS][8][2 * FF_TKV];  // [head][row position][key] (small cases)
  float s0[FF_TKV], s1[FF_TKV] __attribute__((aligned(64))),
      s2[FF_TKV] __attribute__((aligned(64)));
  const attn_fp_env env = attn_fp_env_enter();
  for (int t = 0; t < cases; t++) {
    const bool huge = t % 4 == 3;                         // query positions beyond 2^24
    const unsigned opt = (unsigned)(ff_rng(&seed) % 16);  // bits: window, softcap, ALiBi, mask
    const bool win = (opt & 1) && !huge, cap = opt & 2, alibi = (opt & 4) || huge,
               msk = (opt & 8) && !huge;
    const int64_t nq = 1 + (int64_t)(ff_rng(&seed) % 8), hs = 1 + (int64_t)(ff_rng(&seed) % 3);
    // huge: query positions from 2^25 to 2^40 (float ulps of 4 to 2^17 at the distances)
    const int64_t i0 =
        huge ? ((int64_t)1 << (25 + (t / 4) % 16)) + (int64_t)(ff_rng(&seed) % 1000) : 0;
    const int64_t seq_q = huge ? i0 + 2000 : nq, seq_kv = huge ? 2 * seq_q : 2 * FF_TKV;
    // top-left or bottom-right: the huge cases then take keys near 0 (|distance| ≈ i0, above
    // 2^24: converted per vector) or near the diagonal, shifted by off = seq_kv − seq_q
    // (small distances, stepped, at huge positions)
    const bool top_left = ff_rng(&seed) % 2;
    attn_options o = {.softcap = cap ? (t % 3 ? 5.0f : 30.0f) : 0.0f,
                      .alibi_max_bias = alibi ? 8.0f : 0.0f,
                      .align = top_left ? ATTN_ALIGN_TOP_LEFT : ATTN_ALIGN_BOTTOM_RIGHT};
    if (win) o.window = true, o.window_left = (int64_t)(ff_rng(&seed) % 300), o.window_right = 0;
    attn_problem p = attn_problem_make(1, FF_HEADS, 1, seq_q, seq_kv, 16, 16, false);
    p.opts = &o;
    const int64_t off = top_left ? 0 : seq_kv - seq_q;
    float slopes[FF_HEADS];
    for (int64_t h = 0; h < FF_HEADS; h++) slopes[h] = alibi ? attn_alibi_slope(&p, h) : 0.0f;
    if (msk)
      for (int64_t h = 0; h < FF_HEADS; h++)
        for (int64_t i = 0; i < 8; i++)
          for (int64_t j = 0; j < 2 * FF_TKV; j++)
            mask[h][i][j] = ff_rng(&seed) % 8 == 0 ? -INFINITY : ff_normal(&seed);
    const fl_fin f = {.p = &p,
                      .i0 = i0,
                      .nq = nq,
                      .off = off,
                      .seq_kv = seq_kv,
                      .scores = cap || alibi || msk,
                      .window_lo = win,
                      .softcap = o.softcap,
                      .inv_softcap = cap ? 1.0f / o.softcap : 0.0f,
                      .slopes = alibi ? slopes : NULL,
                      .mask = msk ? &mask[0][0][0] : NULL,
                      .mask_head_stride = msk ? 8 * 2 * FF_TKV : 0};
    const int64_t row = (int64_t)(ff_rng(&seed) % (uint64_t)(nq * hs));
    const int64_t i = i0 + row % nq;
    // The tile: j0 and the keys the row sees in it, [c0, n) (fl_row_limits: c0 < n).
    const int64_t ncol = 16 * (1 + (int64_t)(ff_rng(&seed) % (FF_TKV / 16)));
    const int64_t n = 1 + (int64_t)(ff_rng(&seed) % (uint64_t)ncol);
    int64_t j0 = huge && top_left ? (int64_t)(ff_rng(&seed) % 4096) * 16 : 0;
    if (huge && !top_left) j0 = off + i0 - 4 * FF_TKV + 16 * (int64_t)(ff_rng(&seed) % 64);
    if (win) {  // place the tile so that the row's window starts at c0 inside it
      const int64_t c0 = (int64_t)(ff_rng(&seed) % (uint64_t)n);
      int64_t lo, hi;
      attn_row_keys(&p, i, &lo, &hi);
      j0 = lo - c0 < 0 ? 0 : lo - c0;
      if (j0 + ncol > seq_kv) continue;
      if (lo - j0 >= n) continue;
    }
    for (int64_t c = 0; c < ncol; c++)
      s0[c] = 3.0f * ff_normal(&seed) * (t % 7 == 0 ? 400.0f : 1.0f);
    const bool first = ff_rng(&seed) % 2;
    const float m_in = first ? -INFINITY : ff_normal(&seed) * 4.0f;
    const float l_in = first ? 0.0f : 1.0f + (float)(ff_rng(&seed) % 100);
    memcpy(s1, s0, sizeof s0), memcpy(s2, s0, sizeof s0);
    float m1 = m_in, l1 = l_in, m2 = m_in, l2 = l_in;
    const float a1 = fl_fin_softmax_row(&f, row, s1, j0, n, ncol, &m1, &l1);
    fl_fin_row(&f, row, s2, j0, n);
    const float a2 = vs_online_softmax_row(s2, n, ncol, &m2, &l2);
    compared++, compared_huge += huge, compared_win += win;
    const bool same = memcmp(s1, s2, (size_t)ncol * sizeof(float)) == 0 &&
                      memcmp(&a1, &a2, sizeof a1) == 0 && memcmp(&m1, &m2, sizeof m1) == 0 &&
                      memcmp(&l1, &l2, sizeof l1) == 0;
    if (!same && fails++ < 10) {
      int64_t c = 0;
      while (c < ncol && memcmp(&s1[c], &s2[c], sizeof(float)) == 0) c++;
      fprintf(stderr,
              "%s case %d (window %d softcap %d alibi %d mask %d huge %d top-left %d, row %lld "
              "of %lld, j0 %lld, n %lld, ncol %lld): fused differs: alpha %g/%g m %g/%g l %g/%g, "
              "first P difference at key %lld\n",
              isa, t, win, cap, alibi, msk, huge, top_left, (long long)row, (long long)(nq * hs),
              (long long)j0, (long long)n, (long long)ncol, a1, a2, m1, m2, l1, l2, (long long)c);
    }
  }
  attn_fp_env_leave(env);
  printf(
      "%s: %d rows compared (%d with a window start in the tile, %d at query positions > 2^24)\n",
      isa, compared, compared_win, compared_huge);
  if (compared < cases / 2) fails++, fprintf(stderr, "%s: only %d cases ran\n", isa, compared);
  return fails;
}
