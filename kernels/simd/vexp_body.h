// SPDX-License-Identifier: MIT
// vexp_body.h — the array form of vf_exp, written once (include after a vec_<isa>.h).
#pragma once

#include <stddef.h>

static void vexp_array(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + VF_W <= n; i += VF_W) vf_store(y + i, vf_exp(vf_load(x + i)));
  if (i < n) vf_store_partial(y + i, vf_exp(vf_load_partial(x + i, (int)(n - i))), (int)(n - i));
}
