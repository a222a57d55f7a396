// SPDX-License-Identifier: MIT
// harness/util: the non-finite scan `run` uses (first bad element and its [b][h][i][d]),
// the memory budget (ATTNBENCH_MEMORY_LIMIT parsing), the 80% refusal rule, and the
// estimates (consistent with each other, saturating instead of wrapping).
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "test_util.h"

static void test_nonfinite(void) {
  const attn_problem p = attn_problem_make(2, 3, 1, 4, 5, 8, 6, false);
  const size_t n = attn_o_elems(&p);
  float *o = calloc(n, sizeof *o);
  attn_nonfinite nf;
  EXPECT(!attn_first_nonfinite(&p, o, &nf), "all zeros are finite");
  // O[1][2][3][4] = ((1·3 + 2)·4 + 3)·6 + 4
  const size_t at = ((1 * 3 + 2) * 4 + 3) * 6 + 4;
  o[at] = NAN;
  EXPECT(attn_first_nonfinite(&p, o, &nf), "NaN found");
  EXPECT(nf.index == at && nf.b == 1 && nf.h == 2 && nf.i == 3 && nf.d == 4 && isnan(nf.value),
         "NaN at %zu = [%lld][%lld][%lld][%lld]", nf.index, (long long)nf.b, (long long)nf.h,
         (long long)nf.i, (long long)nf.d);
  o[7] = -INFINITY;  // O[0][0][1][1], earlier
  EXPECT(attn_first_nonfinite(&p, o, &nf) && nf.index == 7 && nf.i == 1 && nf.d == 1 &&
             isinf(nf.value) && nf.value < 0,
         "the first one is reported (%zu)", nf.index);
  o[7] = o[at] = 0;
  o[n - 1] = INFINITY;
  EXPECT(attn_first_nonfinite(&p, o, &nf) && nf.b == 1 && nf.h == 2 && nf.i == 3 && nf.d == 5 &&
             nf.token == -1,
         "the last element");
  free(o);
}

// A serving batch's O is [total_q][heads][head_dim_v]: the token, then its sequence and
// query index from cu_seqlens_q (sequences of 2, 0 and 3 query tokens).
static void test_nonfinite_layout(void) {
  static const int64_t cq[] = {0, 2, 2, 5}, ckv[] = {0, 4, 5, 9};
  const attn_layout l = {.kind = ATTN_LAYOUT_RAGGED, .cu_seqlens_q = cq, .cu_seqlens_kv = ckv};
  attn_problem p = attn_problem_make(1, 3, 1, 1, 1, 8, 6, false);
  attn_problem_set_layout(&p, &l, 3);
  const size_t n = attn_o_elems(&p);
  EXPECT(n == 5 * 3 * 6, "O holds the packed tokens (%zu)", n);
  float *o = calloc(n, sizeof *o);
  const size_t at = (3 * 3 + 1) * 6 + 2;  // token 3 = sequence 2's query 1, head 1, d 2
  o[at] = NAN;
  attn_nonfinite nf;
  EXPECT(attn_first_nonfinite(&p, o, &nf) && nf.token == 3 && nf.b == 2 && nf.i == 1 && nf.h == 1 &&
             nf.d == 2,
         "token %lld = sequence %lld query %lld, head %lld, d %lld", (long long)nf.token,
         (long long)nf.b, (long long)nf.i, (long long)nf.h, (long long)nf.d);
  o[at] = 0;
  o[6 + 5] = INFINITY;  // token 0, head 1, d 5
  EXPECT(attn_first_nonfinite(&p, o, &nf) && nf.token == 0 && nf.b == 0 && nf.i == 0 && nf.h == 1 &&
             nf.d == 5,
         "the first token");
  free(o);
}

static void test_budget(void) {
  uint64_t b;
  char err[256];
  setenv("ATTNBENCH_MEMORY_LIMIT", "64K", 1);
  EXPECT(attn_memory_budget(&b, err, sizeof err) && b <= 65536 && b > 0, "64K -> %llu",
         (unsigned long long)b);
  setenv("ATTNBENCH_MEMORY_LIMIT", "4096", 1);
  EXPECT(attn_memory_budget(&b, err, sizeof err) && b <= 4096, "4096 -> %llu",
         (unsigned long long)b);
  const char *bad[] = {
      "", "x", "0", "-5", " 5", "5 ", "12Q", "1KB", "99999999999999999999", "17179869184T"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("ATTNBENCH_MEMORY_LIMIT", bad[i], 1);
    EXPECT(!attn_memory_budget(&b, err, sizeof err) && strstr(err, "ATTNBENCH_MEMORY_LIMIT"),
           "'%s' is refused", bad[i]);
  }
  unsetenv("ATTNBENCH_MEMORY_LIMIT");
  EXPECT(attn_memory_budget(&b, err, sizeof err), "no limit: ok");
  char msg[160];
  EXPECT(!attn_memory_refused(80, 100, msg, sizeof msg), "80%% fits");
  EXPECT(attn_memory_refused(81, 100, msg, sizeof msg) && strstr(msg, "needs 81 B of memory"),
         "81%% is refused: %s", msg);
  EXPECT(!attn_memory_refused(UINT64_MAX, 0, msg, sizeof msg), "unknown budget: never refused");
}

static void test_estimates(void) {
  const attn_kernel *k = attn_kernel_find("blocked");
  const attn_exec e = {0};
  const attn_problem p = attn_problem_make(1, 4, 2, 33, 47, 16, 8, true);
  const uint64_t tensors =
      4 * (uint64_t)(attn_q_elems(&p) + attn_k_elems(&p) + attn_v_elems(&p) + attn_o_elems(&p));
  EXPECT(attn_tensor_bytes(&p) == tensors, "tensor bytes");
  const uint64_t ws = attn_kernel_workspace(k, &p, &e);
  EXPECT(attn_run_bytes(k, &p, &e, false) == tensors + ws, "run without check");
  const uint64_t ref = 4 * (uint64_t)(attn_q_elems(&p) + attn_k_elems(&p) + attn_v_elems(&p)) +
                       12 * (uint64_t)attn_o_elems(&p);
  EXPECT(attn_check_bytes(&p, NULL, &e) == ref, "the reference");
  EXPECT(attn_run_bytes(k, &p, &e, true) == tensors + ws + ref, "run --check");
  EXPECT(attn_check_bytes(&p, k, &e) == ref + 4 * (uint64_t)attn_o_elems(&p) + ws,
         "check of a kernel: + guarded O + workspace");
  attn_problem huge = p;
  huge.batch = huge.heads = huge.seq_q = huge.head_dim_qk = (int64_t)1 << 40;
  EXPECT(attn_tensor_bytes(&huge) == UINT64_MAX, "saturates instead of wrapping");
  EXPECT(attn_bytes_add(UINT64_MAX - 1, 5) == UINT64_MAX &&
             attn_bytes_mul(1ull << 40, 1ull << 40) == UINT64_MAX,
         "saturating arithmetic");
}

int main(void) {
  test_nonfinite();
  test_nonfinite_layout();
  test_budget();
  test_estimates();
  return test_finish("test_cmd_util");
}
