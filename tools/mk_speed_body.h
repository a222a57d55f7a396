// SPDX-License-Identifier: MIT
// mk_speed_body.h — the loops microkernel_speed times, written once over the vf_* mapping
// (included by mk_speed_<isa>.c after its vec_<isa>.h). Everything stays in L1: these are
// the micro-kernels alone, as llvm-mca models them (docs/mca.md), on the real core.
#include <stdint.h>

#include "mk_speed.h"
// The micro-kernel's accumulator array bounds every tile timed here;
// VK_K_UNROLL and VK_PF_LOCALITY are the flash ISA header's.
#define VK_MR_MAX 16
#define VK_NV_MAX 8
#include "simd/microkernel.h"
#include "simd/softmax.h"

// reps calls of one MR × NV register tile over nk k steps, B rows ldb floats apart (a
// contiguous panel: ldb = NV·VF_W; the flash K̂ᵀ: ldb = tile_kv), A a packed MR-row panel,
// C overwritten every call (Q·Kᵀ: init 0) or accumulated (P·V: init load).
#define MK_TILE_FN(MR, NV)                                                                     \
  static void mk_tile_##MR##x##NV(const float *a, const float *b, int64_t ldb, int64_t nk,     \
                                  float *c, int64_t reps, int load) {                          \
    for (int64_t i = 0; i < reps; i++) {                                                       \
      if (load)                                                                                \
        vk_tile(MR, NV, VK_INIT_LOAD, NULL, a, 1, MR, b, ldb, nk, c, NV *VF_W, NULL, 0, NULL); \
      else                                                                                     \
        vk_tile(MR, NV, VK_INIT_ZERO, NULL, a, 1, MR, b, ldb, nk, c, NV *VF_W, NULL, 0, NULL); \
      __asm__ volatile("" ::: "memory");                                                       \
    }                                                                                          \
  }
MK_TILE_FN(6, 2)
MK_TILE_FN(4, 3)
MK_TILE_FN(3, 4)
MK_TILE_FN(8, 3)
MK_TILE_FN(6, 4)

static int mk_tile(int mr, int nv, const float *a, const float *b, int64_t ldb, int64_t nk,
                   float *c, int64_t reps, int load) {
  if (mr == 6 && nv == 2)
    mk_tile_6x2(a, b, ldb, nk, c, reps, load);
  else if (mr == 4 && nv == 3)
    mk_tile_4x3(a, b, ldb, nk, c, reps, load);
  else if (mr == 3 && nv == 4)
    mk_tile_3x4(a, b, ldb, nk, c, reps, load);
  else if (mr == 8 && nv == 3)
    mk_tile_8x3(a, b, ldb, nk, c, reps, load);
  else if (mr == 6 && nv == 4)
    mk_tile_6x4(a, b, ldb, nk, c, reps, load);
  else
    return -1;
  return 0;
}

// reps passes of the online softmax's exponential loop over n_pad scores (in L1), the
// loop the flash kernels run per row and K/V tile (softmax.h, pass 2).
static float mk_exp_rows(float *s, const float *src, int64_t n_pad, int64_t reps) {
  float m = 0.0f, l = 0.0f, acc = 0.0f;
  for (int64_t i = 0; i < reps; i++) {
    for (int64_t j = 0; j < n_pad; j += VF_W) vf_store(s + j, vf_load(src + j));
    m = 0.0f, l = 0.0f;
    acc += vs_online_softmax_exp(s, n_pad, 0.0f, &m, &l);
  }
  return acc + l;
}

const mk_speed_ops MK_OPS = {.vec_width = VF_W, .tile = mk_tile, .exp_rows = mk_exp_rows};
