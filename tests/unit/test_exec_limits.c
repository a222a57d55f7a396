// SPDX-License-Identifier: MIT
// One thread cap for every source (attn.h, ATTN_MAX_THREADS) and tiles clamped to the
// problem in every kernel.
//   test_exec_limits              exec.threads < 0, > cap, the OpenMP default set above
//                                 the cap in-process (omp_set_num_threads); tiles of 2^20
//                                 on a 4×5 problem; a workspace size near SIZE_MAX.
//   test_exec_limits --omp-env    run by CTest with OMP_NUM_THREADS=100000: threads = 0
//                                 (the OpenMP default) is refused naming OMP_NUM_THREADS,
//                                 an explicit count still runs. (Before: SIGSEGV in
//                                 libgomp from flash__avx2.)
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "test_util.h"

static float g_q[1 * 2 * 4 * 8], g_k[1 * 2 * 5 * 8], g_v[1 * 2 * 5 * 8], g_o[1 * 2 * 4 * 8];

static void fill(void) {
  uint64_t s = 3;
  float *all[3] = {g_q, g_k, g_v};
  const size_t n[3] = {sizeof g_q / 4, sizeof g_k / 4, sizeof g_v / 4};
  for (int t = 0; t < 3; t++)
    for (size_t i = 0; i < n[t]; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      all[t][i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

// Every available kernel through attn_kernel_call with exec: want status, message with text.
static void every_kernel(const attn_exec *exec, int want, const char *text, const char *what) {
  const attn_problem p = attn_problem_make(1, 2, 2, 4, 5, 8, 8, false);
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!attn_kernel_available(k, NULL, 0)) continue;
    char err[256] = "";
    const int rc = attn_kernel_call(k, &p, exec, g_q, g_k, g_v, g_o, err, sizeof err);
    EXPECT(rc == want, "%s: %s returned %d, want %d (%s)", what, k->name, rc, want, err);
    if (text)
      EXPECT(strstr(err, text) != NULL, "%s: %s: '%s' lacks '%s'", what, k->name, err, text);
  }
}

// A kernel that asks for SIZE_MAX - 1 bytes of workspace.
static bool g_greedy_ran;
static size_t greedy_ws(const attn_problem *p, const attn_exec *e) {
  (void)p, (void)e;
  return SIZE_MAX - 1;
}
static int greedy_run(const attn_problem *p, const attn_exec *e, const float *q, const void *k,
                      const void *v, float *o, void *ws) {
  (void)p, (void)e, (void)q, (void)k, (void)v, (void)o, (void)ws;
  g_greedy_ran = true;
  return ATTN_OK;
}

static int omp_env_mode(void) {
  const int def = omp_get_max_threads();
  if (def <= ATTN_MAX_THREADS) {
    fprintf(
        stderr,
        "--omp-env: OMP_NUM_THREADS is not above the cap here (omp default %d); run via CTest\n",
        def);
    return 1;
  }
  const attn_exec dflt = {0}, two = {.threads = 2};
  char err[256];
  EXPECT(attn_exec_check(&dflt, err, sizeof err) == ATTN_ERR_INVALID, "OpenMP default %d accepted",
         def);
  EXPECT(strstr(err, "OMP_NUM_THREADS") != NULL, "message names OMP_NUM_THREADS: %s", err);
  every_kernel(&dflt, ATTN_ERR_INVALID, "OMP_NUM_THREADS",
               "threads = 0 under OMP_NUM_THREADS=100000");
  every_kernel(NULL, ATTN_ERR_INVALID, "OMP_NUM_THREADS",
               "exec = NULL under OMP_NUM_THREADS=100000");
  every_kernel(&two, ATTN_OK, NULL, "threads = 2 under OMP_NUM_THREADS=100000");
  return test_finish("test_exec_limits --omp-env");
}

int main(int argc, char **argv) {
  fill();
  if (argc > 1 && strcmp(argv[1], "--omp-env") == 0) return omp_env_mode();

  // ── the thread cap ──
  const int bad[] = {-1, ATTN_MAX_THREADS + 1, 65536, 100000, 1 << 30};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const attn_exec e = {.threads = bad[i]};
    char what[64];
    snprintf(what, sizeof what, "threads = %d", bad[i]);
    every_kernel(&e, ATTN_ERR_INVALID, "out of range", what);
  }
  const attn_exec at_cap = {.threads = ATTN_MAX_THREADS};
  EXPECT(attn_exec_check(&at_cap, NULL, 0) == ATTN_OK, "threads = ATTN_MAX_THREADS refused");
  EXPECT(attn_exec_check(NULL, NULL, 0) == ATTN_OK || omp_get_max_threads() > ATTN_MAX_THREADS,
         "exec = NULL refused");
  // The OpenMP default above the cap, set in-process (the CTest variant sets the environment).
  const int saved = omp_get_max_threads();
  omp_set_num_threads(ATTN_MAX_THREADS + 1);
  const attn_exec dflt = {0};
  char err[256];
  EXPECT(attn_exec_check(&dflt, err, sizeof err) == ATTN_ERR_INVALID,
         "OpenMP default above the cap accepted");
  EXPECT(strstr(err, "OMP_NUM_THREADS") != NULL, "message: %s", err);
  EXPECT(attn_exec_check(NULL, err, sizeof err) == ATTN_ERR_INVALID,
         "NULL exec (all defaults) with the OpenMP default above the cap accepted");
  every_kernel(&dflt, ATTN_ERR_INVALID, "OMP_NUM_THREADS", "OpenMP default 1025");
  const attn_exec two = {.threads = 2};
  every_kernel(&two, ATTN_OK, NULL, "threads = 2 with the OpenMP default 1025");
  omp_set_num_threads(saved);
  every_kernel(&dflt, ATTN_OK, NULL, "OpenMP default restored");

  // ── tiles ──
  const attn_exec neg = {.tile_q = -1}, over = {.tile_kv = ATTN_MAX_TILE + 1};
  every_kernel(&neg, ATTN_ERR_INVALID, "tile", "tile_q = -1");
  every_kernel(&over, ATTN_ERR_INVALID, "tile", "tile_kv = 2^20 + 1");
  // Tiles of 2^20 on a 4×5 problem: clamped, so the workspace stays small (was
  // 4 TiB for blocked) and the answer still passes the check.
  const attn_problem p = attn_problem_make(1, 2, 2, 4, 5, 8, 8, false);
  const attn_exec huge = {.tile_q = ATTN_MAX_TILE, .tile_kv = ATTN_MAX_TILE, .threads = 2};
  char perr[256];
  attn_check_prepared *pc = attn_check_prepare_inputs(&p, g_q, g_k, g_v, perr, sizeof perr);
  EXPECT(pc != NULL, "prepare: %s", perr);
  for (size_t i = 0; i < attn_kernel_count() && pc; i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (!attn_kernel_available(k, NULL, 0)) continue;
    const size_t ws = attn_kernel_workspace(k, &p, &huge);
    EXPECT(ws <= ((size_t)1 << 20), "%s: %zu bytes of workspace for a 4x5 problem with 2^20 tiles",
           k->name, ws);
    attn_check_result r;
    EXPECT(attn_check_kernel(k, pc, &huge, &r), "%s with 2^20 tiles: %s", k->name, r.message);
  }
  attn_check_prepared_free(pc);

  // ── workspace sizes of absurd (valid) shapes saturate instead of wrapping ──
  // head_dim_qk 2^58 with one row: every tensor's byte count still fits size_t, so the
  // problem is valid. The flash kernels keep a packed K tile (head_dim_qk × tile_kv
  // floats) per thread, which is far beyond size_t here: the size must saturate at
  // SIZE_MAX (attn_kernel_call then refuses to allocate), not wrap to something small.
  // (Kernels that read K in place need little, which is right: no bound to test there.)
  const attn_problem wide = attn_problem_make(1, 1, 1, 1, 1, (int64_t)1 << 58, 1, false);
  const attn_exec t1024 = {.threads = ATTN_MAX_THREADS};
  EXPECT(attn_problem_validate(&wide, NULL, 0), "the wide problem should be valid");
  size_t n_flash = 0;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if (strncmp(k->name, "flash__", 7) != 0 || !attn_kernel_available(k, NULL, 0)) continue;
    n_flash++;
    const size_t ws = attn_kernel_workspace(k, &wide, &t1024);
    EXPECT(ws == SIZE_MAX, "%s: %zu bytes of workspace for head_dim_qk 2^58 (wrapped)", k->name,
           ws);
  }
  EXPECT(n_flash > 0, "no flash kernel available to test");

  // ── a workspace size near SIZE_MAX is refused, not rounded up past zero ──
  // (ws + 63) & ~63 wrapped to 0 for sizes within 63 of SIZE_MAX: the kernel then ran
  // on a zero-byte allocation.
  const attn_kernel greedy = {.name = "greedy",
                              .summary = "test-only",
                              .caps = ATTN_CAP_ALL_SHAPES,
                              .workspace = greedy_ws,
                              .run = greedy_run};
  char gerr[256];
  EXPECT(
      attn_kernel_call(&greedy, &p, NULL, g_q, g_k, g_v, g_o, gerr, sizeof gerr) == ATTN_ERR_NOMEM,
      "a SIZE_MAX workspace was not refused (%s)", gerr);
  EXPECT(!g_greedy_ran, "the kernel ran without its workspace");
  return test_finish("test_exec_limits");
}
