// SPDX-License-Identifier: MIT
// prefetch.h — a spread-out software prefetch of the next tile, handed out a little at a
// time by the micro-kernels' inner loops (microkernel.h). Include after a vec_<isa>.h.
//
// A cursor covers up to two byte ranges (the next tile's K rows, then its V rows).
// vk_pf_step asks for the next two 64-byte lines of the current range and advances; when
// the range is done it moves on to the second one. A kernel that streams K and V from
// memory with little arithmetic per byte calls one step per inner-loop iteration, so the
// requests are spread over the tile's whole compute time instead of filling the core's
// miss queue in one burst (docs/design.md).
//
// VK_PF_LOCALITY (the includer defines it: 3 = prefetcht0 into L1, 2 = prefetcht1 into
// L2) is the __builtin_prefetch locality of vk_pf_step; vk_pf_step_l2 always uses 2.
#pragma once

#include <stdint.h>

#if !defined(VK_PF_LOCALITY)
#error "prefetch.h: define VK_PF_LOCALITY before including"
#endif

typedef struct vk_pf {
  const char *p, *end;    // current range
  const char *p2, *end2;  // the range after it (empty when p2 == end2)
} vk_pf;

// The move to the second range happens in the step that finishes the first, so that once
// both are done a step is one compare and a not-taken branch: the micro-kernels call it
// every k step, and most of their steps come after the next tile has been requested.
#define VK_PF_STEP_FN(name, locality)                                      \
  static inline __attribute__((always_inline)) void name(vk_pf *c) {       \
    if (c->p < c->end) {                                                   \
      __builtin_prefetch(c->p, 0, locality);                               \
      __builtin_prefetch(c->p + 64, 0, locality);                          \
      c->p += 128;                                                         \
      if (c->p >= c->end) c->p = c->p2, c->end = c->end2, c->p2 = c->end2; \
    }                                                                      \
  }
VK_PF_STEP_FN(vk_pf_step, VK_PF_LOCALITY)
VK_PF_STEP_FN(vk_pf_step_l2, 2)
#undef VK_PF_STEP_FN

// A cursor over [a, ae) then [b, be); an empty first range is skipped here, since
// vk_pf_step only moves on from a range it has just finished.
static inline __attribute__((always_inline)) vk_pf vk_pf_make(const char *a, const char *ae,
                                                              const char *b, const char *be) {
  if (a >= ae) return (vk_pf){b, be, be, be};
  return (vk_pf){a, ae, b, be};
}

// A cursor over the K rows, then the V rows, of the n keys (n ≤ 0: none) that start at
// k (rows of dqk floats) and v (rows of dv floats).
static inline __attribute__((always_inline)) vk_pf vk_pf_keys(const float *k, const float *v,
                                                              int64_t n, int64_t dqk, int64_t dv) {
  if (n <= 0) return (vk_pf){0};
  const char *kc = (const char *)k, *vc = (const char *)v;
  return vk_pf_make(kc, kc + n * dqk * 4, vc, vc + n * dv * 4);
}

// The same over n rows of krow_bytes (K) and vrow_bytes (V) bytes: rows of any stored
// element type (attn.h "K/V element types"), so the distance is in bytes actually read.
static inline __attribute__((always_inline)) vk_pf vk_pf_rows(const void *k, const void *v,
                                                              int64_t n, size_t krow_bytes,
                                                              size_t vrow_bytes) {
  if (n <= 0) return (vk_pf){0};
  const char *kc = (const char *)k, *vc = (const char *)v;
  return vk_pf_make(kc, kc + (size_t)n * krow_bytes, vc, vc + (size_t)n * vrow_bytes);
}
