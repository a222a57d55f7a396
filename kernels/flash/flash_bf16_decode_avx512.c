// SPDX-License-Identifier: MIT
// The BF16 compute mode's decode route (flash/flash_bf16_decode.h): bf16(Q) into the
// front of the workspace, then flash__avx512's F32 path over the stored BF16 K/V.
#include "flash/flash_bf16_decode.h"

#include "core/attn_internal.h"
#include "core/convert.h"
#include "flash/flash_avx512.h"

bool flash_bf16_decode_route(const attn_problem *p) {
  if (p->compute != ATTN_COMPUTE_BF16 || p->kv_dtype != ATTN_DTYPE_BF16) return false;
  if (p->layout && p->layout->kind != ATTN_LAYOUT_DENSE) return false;
  const int64_t rows = p->seq_q * (p->heads / p->kv_heads);
  return rows <= FLASH_BF16_DECODE_ROWS;
}

// The F32 problem the route runs, and the bytes of its rounded Q.
static attn_problem route_problem(const attn_problem *p) {
  attn_problem f = *p;
  f.compute = ATTN_COMPUTE_F32;
  return f;
}

static size_t route_q_bytes(const attn_problem *p) {
  const size_t b = attn_size_mul_sat(attn_q_elems(p), sizeof(float));
  return b > SIZE_MAX - 63 ? SIZE_MAX : (b + 63) & ~(size_t)63;
}

size_t flash_bf16_decode_workspace(const attn_problem *p, const attn_exec *exec) {
  const attn_problem f = route_problem(p);
  return attn_size_add_sat(route_q_bytes(p), flash_avx512_workspace(&f, exec));
}

int flash_bf16_decode_run(const attn_problem *p, const attn_exec *exec, const float *q,
                          const void *k, const void *v, float *o, void *workspace) {
  float *qr = workspace;
  attn_compute_round_q(ATTN_COMPUTE_BF16, q, attn_q_elems(p) / (size_t)p->head_dim_qk,
                       p->head_dim_qk, qr);
  const attn_problem f = route_problem(p);
  return flash_avx512_run(&f, exec, qr, k, v, o, (char *)workspace + route_q_bytes(p));
}
