// SPDX-License-Identifier: MIT
// Deliberately broken plug-ins for tests/plugins/test_plugins.py, one per BAD_<what>
// definition (tests/plugins/CMakeLists.txt builds each as bad_<what>.so). Each must be
// refused with a message naming the problem, and nothing else may break. BAD_ENTRYSEGV
// crashes in its entry point and BAD_CTORSEGV in a library constructor, BAD_ENTRYHANG and
// BAD_CTORHANG never return from them: the command must end with the plug-in's path named.
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "attn.h"

static int dummy_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                     const void *v, float *o, void *workspace) {
  (void)p, (void)exec, (void)q, (void)k, (void)v, (void)o, (void)workspace;
  return ATTN_OK;
}

#define RECORD(nm, rn, cp) \
  { .name = nm, .summary = "bad plug-in", .caps = cp, .run = rn }

#if defined(BAD_NULLNAME)
static const attn_kernel kA = RECORD(NULL, dummy_run, 0);
#elif defined(BAD_SHADOW)
static const attn_kernel kA = RECORD("naive", dummy_run, 0);
#elif defined(BAD_NORUN)
static const attn_kernel kA = RECORD("bad_norun", NULL, 0);
#elif defined(BAD_CAPS)
static const attn_kernel kA = RECORD("bad_caps", dummy_run, 1u << 30);
#else
static const attn_kernel kA = RECORD("bad_first", dummy_run, 0);
#endif
#if defined(BAD_DUP)
static const attn_kernel kB = RECORD("bad_first", dummy_run, 0);
#else
static const attn_kernel kB = RECORD("bad_second", dummy_run, 0);
#endif

#if defined(BAD_NULLREC)
static const attn_kernel *const kKernels[] = {&kA, NULL, &kB};  // count 2: [1] is NULL
#else
static const attn_kernel *const kKernels[] = {&kA, &kB};
#endif

static const attn_plugin kPlugin = {
#if defined(BAD_ABI)
    .abi_version = ATTN_PLUGIN_ABI_VERSION + 1,
#else
    .abi_version = ATTN_PLUGIN_ABI_VERSION,
#endif
#if defined(BAD_RECSIZE)
    .record_size = sizeof(attn_kernel) - sizeof(int),
#else
    .record_size = sizeof(attn_kernel),
#endif
    .count = 2,
    .kernels = kKernels,
};

#if defined(BAD_ENTRYSEGV) || defined(BAD_CTORSEGV)
static void crash(void) {
  static volatile uintptr_t unmapped = 8;  // in the first page, never mapped
  *(volatile int *)unmapped = 1;
}
#endif
#if defined(BAD_CTORSEGV)
__attribute__((constructor)) static void on_load(void) {
  crash();
}
#endif
#if defined(BAD_ENTRYHANG) || defined(BAD_CTORHANG)
static void hang(void) {
  for (;;) pause();
}
#endif
#if defined(BAD_CTORHANG)
__attribute__((constructor)) static void on_load(void) {
  hang();
}
#endif

#if defined(BAD_NOENTRY)
// Exported under another name: the host must say the entry point is missing.
const attn_plugin *attn_plugin_v0(void) {
  return &kPlugin;
}
#elif defined(BAD_ENTRYSEGV)
const attn_plugin *attn_plugin_v1(void) {
  crash();
  return &kPlugin;
}
#elif defined(BAD_ENTRYHANG)
const attn_plugin *attn_plugin_v1(void) {
  hang();
  return &kPlugin;
}
#elif defined(BAD_NULLPLUGIN)
const attn_plugin *attn_plugin_v1(void) {
  return kPlugin.count ? NULL : &kPlugin;  // always NULL
}
#else
const attn_plugin *attn_plugin_v1(void) {
  return &kPlugin;
}
#endif
