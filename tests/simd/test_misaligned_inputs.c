// SPDX-License-Identifier: MIT
// Every available kernel gives bitwise the same output when Q, K, V and O are not
// vector-aligned: each tensor at 4, 16 and 36 bytes past a 64-byte boundary (a float
// array's alignment, malloc's 16 bytes, an odd view) against the 64-byte-aligned run, on
// prefill (D64 causal, GQA D128, odd head_dim), decode (MHA, GQA, MQA) and f16 / q8_0 K/V.
// (flash_body.h copies a V tile that is not vector-aligned before its P·V, vk_aligned_v:
// the values are the same, so the output must be.) --quick: fewer shapes.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "test_util.h"

// A buffer of `bytes` at `off` bytes past a 64-byte boundary (free the returned base).
static void *alloc_at(size_t bytes, size_t off, void **base) {
  *base = aligned_alloc(64, (bytes + off + 64 + 63) / 64 * 64);
  return *base ? (char *)*base + off : NULL;
}

static void run_case(const attn_problem *p32, attn_dtype t, uint64_t seed) {
  attn_problem pt = *p32;
  pt.kv_dtype = t;
  const attn_check_case cc = {.problem = *p32, .dist = (attn_dist)(seed % 3), .seed = seed};
  const size_t nq = attn_q_elems(p32), nk = attn_k_elems(p32), nv = attn_v_elems(p32);
  const size_t no = attn_o_elems(p32);
  const size_t kb = attn_k_bytes(&pt), vb = attn_v_bytes(&pt);
  float *q = malloc(nq * sizeof(float)), *kf = malloc(nk * sizeof(float));
  float *vf = malloc(nv * sizeof(float));
  void *kt = malloc(kb), *vt = malloc(vb);
  float *o0 = malloc(no * sizeof(float));
  if (!q || !kf || !vf || !kt || !vt || !o0) {
    EXPECT(0, "out of memory");
    exit(1);
  }
  attn_check_fill(&cc, q, kf, vf);
  attn_quantize_rows(t, kf, nk / (size_t)p32->head_dim_qk, p32->head_dim_qk, kt);
  attn_quantize_rows(t, vf, nv / (size_t)p32->head_dim_v, p32->head_dim_v, vt);
  char desc[200], err[512];
  attn_check_case_describe(&cc, desc, sizeof desc);
  static const size_t offs[] = {0, 4, 16, 36};
  for (size_t ki = 0; ki < attn_kernel_count(); ki++) {
    const attn_kernel *k = attn_kernel_at(ki);
    if (!attn_kernel_available(k, NULL, 0)) continue;
    for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
      void *bq, *bk, *bv, *bo;
      float *qa = alloc_at(nq * sizeof(float), offs[oi], &bq);
      void *ka = alloc_at(kb, offs[oi], &bk), *va = alloc_at(vb, offs[oi], &bv);
      float *oa = alloc_at(no * sizeof(float), offs[oi], &bo);
      if (!qa || !ka || !va || !oa) {
        EXPECT(0, "out of memory");
        exit(1);
      }
      memcpy(qa, q, nq * sizeof(float)), memcpy(ka, kt, kb), memcpy(va, vt, vb);
      const attn_exec ex = {.threads = 2};
      const int rc = attn_kernel_call(k, &pt, &ex, qa, ka, va, oa, err, sizeof err);
      EXPECT(rc == ATTN_OK, "%s %s %s offset %zu: %s", k->name, attn_dtype_name(t), desc, offs[oi],
             err);
      if (rc == ATTN_OK && oi == 0) memcpy(o0, oa, no * sizeof(float));
      if (rc == ATTN_OK && oi > 0)
        EXPECT(memcmp(o0, oa, no * sizeof(float)) == 0,
               "%s %s %s: output at offset %zu differs from the aligned run", k->name,
               attn_dtype_name(t), desc, offs[oi]);
      free(bq), free(bk), free(bv), free(bo);
    }
  }
  free(q), free(kf), free(vf), free(kt), free(vt), free(o0);
}

static attn_problem shape(int64_t h, int64_t kvh, int64_t sq, int64_t skv, int64_t d, bool causal) {
  return attn_problem_make(1, h, kvh, sq, skv, d, d, causal);
}

int main(int argc, char **argv) {
  const bool quick = argc > 1 && !strcmp(argv[1], "--quick");
  const attn_problem prefill[] = {shape(2, 2, 300, 300, 64, true),
                                  shape(4, 2, 200, 200, 128, false),
                                  shape(2, 1, 90, 130, 40, true)};
  const attn_problem decode[] = {shape(4, 4, 1, 700, 128, false), shape(8, 2, 1, 500, 64, false),
                                 shape(8, 1, 1, 400, 128, false)};
  uint64_t seed = 9100;
  for (size_t i = 0; i < sizeof prefill / sizeof prefill[0]; i++) {
    run_case(&prefill[i], ATTN_DTYPE_F32, seed++);
    if (quick) break;
  }
  for (size_t i = 0; i < sizeof decode / sizeof decode[0]; i++) {
    run_case(&decode[i], ATTN_DTYPE_F32, seed++);
    if (quick) break;
  }
  if (!quick) {
    run_case(&prefill[1], ATTN_DTYPE_F16, seed++);
    run_case(&prefill[0], ATTN_DTYPE_Q8_0, seed++);
    run_case(&decode[1], ATTN_DTYPE_Q8_0, seed++);
  }
  return test_finish("test_misaligned_inputs");
}
