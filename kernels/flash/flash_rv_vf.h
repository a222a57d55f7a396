// SPDX-License-Identifier: MIT
// flash_rv_vf.h — the decode row vector of the rows-in-lanes path (flash_decode_lanes.h)
// as the ISA's whole vector vf_t: one lane per row, VF_W rows per vector. Included by an
// ISA file that has no narrower row vector (flash_avx2.h, flash_neon.c), after its
// simd/vec_<isa>.h; flash_avx512.h defines an 8-lane one instead.
#pragma once

#define FL_RV_W VF_W
typedef vf_t fl_rv_t;
static inline __attribute__((always_inline)) fl_rv_t fl_rv_zero(void) {
  return vf_zero();
}
static inline __attribute__((always_inline)) fl_rv_t fl_rv_load(const float *p) {
  return vf_load(p);
}
static inline __attribute__((always_inline)) void fl_rv_store(float *p, fl_rv_t x) {
  vf_store(p, x);
}
static inline __attribute__((always_inline)) fl_rv_t fl_rv_fma_bcast(const float *k, fl_rv_t q,
                                                                     fl_rv_t acc) {
  return vf_fma(vf_set1(*k), q, acc);
}
