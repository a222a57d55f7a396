// SPDX-License-Identifier: MIT
// vtanh_body.h — the array forms of vf_tanh and vf_softcap, written once (include after a
// vec_<isa>.h).
#pragma once

#include <stddef.h>

static void vtanh_array(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + VF_W <= n; i += VF_W) vf_store(y + i, vf_tanh(vf_load(x + i)));
  if (i < n) vf_store_partial(y + i, vf_tanh(vf_load_partial(x + i, (int)(n - i))), (int)(n - i));
}

static void vsoftcap_array(const float *x, float *y, size_t n, float c) {
  const vf_t cap = vf_set1(c), icap = vf_set1(1.0f / c);
  size_t i = 0;
  for (; i + VF_W <= n; i += VF_W) vf_store(y + i, vf_softcap(vf_load(x + i), cap, icap));
  if (i < n)
    vf_store_partial(y + i, vf_softcap(vf_load_partial(x + i, (int)(n - i)), cap, icap),
                     (int)(n - i));
}
