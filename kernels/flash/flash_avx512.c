// SPDX-License-Identifier: MIT
// flash__avx512 — OpenMP FlashAttention-2-style kernel, AVX-512F (16 lanes). The
// algorithm is flash/flash_body.h and the task split flash/flash_plan.h; this file only
// picks the register tiles for 32 zmm registers:
//   Q·Kᵀ: 8 query rows × 32 keys = 16 accumulators (+2 K vectors, 1 broadcast)
//   P·V:  6 query rows × 64 columns = 24 accumulators (+4 V vectors, 1 broadcast)
#include "simd/vec_avx512.h"

// Decode row vectors (flash_body.h, fl_lanes): 8-lane __m256. MQA decode has 8 rows per
// K/V head; a __m512 would leave half of its lanes empty, and on Zen 4 two 256-bit FMAs
// per cycle match one 512-bit FMA. (No AVX512VL here, so 16 ymm registers: 8 score
// accumulators, the Q̂ᵀ row vector and the broadcast K element.)
#define FL_RV_W 8
typedef __m256 fl_rv_t;
static inline fl_rv_t fl_rv_zero(void) { return _mm256_setzero_ps(); }
static inline fl_rv_t fl_rv_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void fl_rv_store(float *p, fl_rv_t x) { _mm256_storeu_ps(p, x); }
static inline fl_rv_t fl_rv_fma_bcast(const float *k, fl_rv_t q, fl_rv_t acc) {
  return _mm256_fmadd_ps(_mm256_broadcast_ss(k), q, acc);
}
#define FL_LANES_MAX_ROWS 8  // 9–16 rows: the packed 8×32 tiles measured faster
// Blocks (and prefetch distance) of 32 keys: MQA decode from DRAM 1.19–1.42 ms vs
// 1.36–1.51 with 64 (2 threads); flash__avx2 measured slower with 32 and keeps 64.
#define FL_DEC_BLOCK 32

#define FL_QK_MR 8
#define FL_QK_NV 2
#define FL_PV_MR 6
#define FL_PV_NV 4
// The spread-out next-tile prefetch asks for L2 (prefetcht1), not L1: the next K and V
// tiles (2 × 64 KiB at D128) do not fit L1 anyway. MQA decode (Skv 32768, D128, 8 heads
// over 1 KV head), A/B against prefetcht0 in one session: 2 threads 1.39/1.62 → 1.15/1.21
// ms fastest, 1 thread 2.96/2.76 → 2.53/2.41 ms; prefill unchanged within noise.
#define VK_PF_LOCALITY 2
#define FL_RUN flash_avx512_run
#define FL_WORKSPACE flash_avx512_workspace
#include "flash/flash_body.h"

const attn_kernel attn_kernel_flash__avx512 = {
    .name = "flash__avx512",
    .summary = "OpenMP FlashAttention-2 style, AVX-512F 8x32 QK^T / 6x64 PV tiles, GQA-shared "
               "packed K/V, causal tile skipping, split-KV decode",
    .required_isa = ATTN_ISA_AVX512F,
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS,
    .workspace = FL_WORKSPACE,
    .run = FL_RUN,
    FL_RECORD_TILES,
};
