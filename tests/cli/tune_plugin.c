// SPDX-License-Identifier: MIT
// A plug-in for tests/cli/tune_store.py: records the registry accepts at its limits, which
// `tune` must therefore tune and write so that every command reads the file back —
//   a kernel whose name has ATTN_KERNEL_NAME_MAX (64) characters, and
//   a kernel whose register tile is 2^21 rows (above ATTN_MAX_TILE: no tile_q is a
//   multiple of it, and rounding once gave tile_q = 0).
// The kernels write zeros (tune times them; nothing checks their output) after a busy
// loop as long as exec->tile_q: the smallest tile_q candidate wins the search and the
// confirmation by far, so a candidate rounded to tile_q 0 would be the one written.
// tune_plugin_sleepy sleeps 40 µs per row of exec->tile_q instead of spinning: its times are
// the same on a loaded machine, so a test can make the confirmation rounds (of the rule's
// tiles against the smallest tile_q) outlast the whole --budget.
// Three more, tuned only when named, misbehave (tune must name them, exit 1 and leave the
// file alone): tune_plugin_segv writes to an unmapped address on every call,
// tune_plugin_hang never returns from a call, and tune_plugin_ws_hang's workspace function
// never returns after its first call (the first is the validating call's, the next one
// tune's own, for timing).
#define _POSIX_C_SOURCE 200809L  // nanosleep
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "attn.h"

static int zero_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                    const void *v, float *o, void *workspace) {
  (void)q, (void)k, (void)v, (void)workspace;
  volatile unsigned sink = 0;  // wraps by definition (UBSan: no signed overflow)
  for (int i = 0; i < exec->tile_q * 64; i++) sink = sink + (unsigned)i;
  // O is batch × heads × seq_q × head_dim_v floats (attn.h; no attnkernels symbol here)
  memset(o, 0, (size_t)(p->batch * p->heads * p->seq_q * p->head_dim_v) * sizeof *o);
  return ATTN_OK;
}

static int sleepy_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                      const void *v, float *o, void *workspace) {
  const long ns = 40000L * exec->tile_q;  // tile_q ≤ 2^20: < 42 s
  struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return zero_run(p, &(attn_exec){.tile_q = 0}, q, k, v, o, workspace);
}

static int segv_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                    const void *v, float *o, void *workspace) {
  (void)p, (void)exec, (void)q, (void)k, (void)v, (void)o, (void)workspace;
  static volatile uintptr_t unmapped = 8;  // in the first page, never mapped
  *(volatile int *)unmapped = 1;
  return ATTN_OK;
}

static int hang_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                    const void *v, float *o, void *workspace) {
  (void)p, (void)exec, (void)q, (void)k, (void)v, (void)o, (void)workspace;
  for (volatile unsigned long spin = 0;; spin++) {
  }
  return ATTN_OK;
}

static size_t hang_workspace(const attn_problem *p, const attn_exec *exec) {
  (void)p, (void)exec;
  static unsigned calls;
  if (calls++ > 0)
    for (volatile unsigned long spin = 0;; spin++) {
    }
  return 0;
}

// A tiled record (a register tile 4 × 16: tune searches it) running fn, workspace ws.
#define TILED(nm, sm, fn, ws)                                                           \
  {                                                                                     \
    .name = nm, .summary = sm, .caps = ATTN_CAP_ALL_SHAPES, .workspace = ws, .run = fn, \
    .vec_width = 1, .qk_rows = 4, .qk_cols = 16, .pv_rows = 4, .pv_cols = 16            \
  }
#define MISBEHAVING(nm, fn, ws) TILED(nm, "tune test plug-in: misbehaves", fn, ws)
static const attn_kernel kSegv = MISBEHAVING("tune_plugin_segv", segv_run, NULL);
static const attn_kernel kHang = MISBEHAVING("tune_plugin_hang", hang_run, NULL);
static const attn_kernel kWsHang = MISBEHAVING("tune_plugin_ws_hang", zero_run, hang_workspace);

static const attn_kernel kLongName =
    TILED("tune_plugin_sixty_four_characters_long_name_xxxxxxxxxxxxxxxxxxxx",
          "tune test plug-in: a 64-character name", zero_run, NULL);

static const attn_kernel kSleepy = TILED(
    "tune_plugin_sleepy", "tune test plug-in: sleeps 40 us per row of tile_q", sleepy_run, NULL);

static const attn_kernel kHugeTile = {
    .name = "tune_plugin_huge_register_tile",
    .summary = "tune test plug-in: a 2^21-row register tile",
    .caps = ATTN_CAP_ALL_SHAPES,
    .run = zero_run,
    .vec_width = 1,
    .qk_rows = 1 << 21,
    .qk_cols = 1 << 21,
    .pv_rows = 1 << 21,
    .pv_cols = 1 << 21,
};

static const attn_kernel *const kKernels[] = {&kLongName, &kHugeTile, &kSleepy,
                                              &kSegv,     &kHang,     &kWsHang};

static const attn_plugin kPlugin = {
    .abi_version = ATTN_PLUGIN_ABI_VERSION,
    .record_size = sizeof(attn_kernel),
    .count = sizeof kKernels / sizeof kKernels[0],
    .kernels = kKernels,
};

__attribute__((visibility("default"))) const attn_plugin *attn_plugin_v1(void) {
  return &kPlugin;
}
