// SPDX-License-Identifier: MIT
// flash_store.h — a flash task's result, written once for every kernel that runs the flash
// plan (flash_body.h's fl_store, flash_avx512bf16.c, flash_lp_neon.h). Include after a
// simd/vec_<isa>.h (vf_t, VF_W, vf_set1, vf_load, vf_mul, vf_store, vf_store_partial).
#pragma once

#include <stdint.h>

#include "core/attn_internal.h"
#include "flash/flash_plan.h"

// The result of task t, whose rows are query heads h0 .. h0 + hs at positions i0 .. i0 + nq
// of batch entry (or sequence) b, O and LSE where io says (flash_plan.h's flash_io: dense,
// or packed by tokens) (row hh·nq + r: head h0 + hh, position i0 + r; acc rows of plan->dvp
// floats):
// under split-KV its partial block for flash_merge (flash_partial_store: acc, then m at
// rows·dvp and l at rows·(dvp + 1), rows = plan->rows), else O = acc / (l + e^(sink − m)) (the sink
// term only with sinks; l = 0: the row saw no key, zeros) with a masked head_dim_v tail, and LSE =
// m + log l (−inf when l = 0) if asked.
static void flash_store_rows(const attn_problem *p, const flash_plan *pl, const flash_io *io,
                             int64_t h0, int64_t hs, int64_t i0, int64_t nq, int64_t b, int64_t t,
                             const float *acc, const float *m, const float *l, float *partials) {
  const int64_t dv = p->head_dim_v, dvp = pl->dvp;
  if (pl->nsplit > 1) {
    flash_partial_store(pl, t, hs * nq, acc, m, l, partials);
    return;
  }
  for (int64_t hh = 0; hh < hs; hh++) {
    const attn_head_opts ho = p->opts ? attn_head_opts_of(p, b, h0 + hh) : (attn_head_opts){0};
    float *lse = io->lse ? io->lse + (h0 + hh) * io->lse_hs : NULL;
    for (int64_t r = 0; r < nq; r++) {
      const int64_t row = hh * nq + r;
      if (lse) lse[i0 + r] = attn_row_lse(l[row], m[row]);
      const float inv = l[row] > 0.0f ? 1.0f / attn_denominator(&ho, l[row], m[row]) : 0.0f;
      const vf_t iv = vf_set1(inv);
      const float *ar = acc + row * dvp;
      float *orow = io->o + (h0 + hh) * io->o_hs + (i0 + r) * io->o_is;
      int64_t e = 0;
      for (; e + VF_W <= dv; e += VF_W) vf_store(orow + e, vf_mul(vf_load(ar + e), iv));
      if (e < dv) vf_store_partial(orow + e, vf_mul(vf_load(ar + e), iv), (int)(dv - e));
    }
  }
}
