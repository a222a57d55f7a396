// SPDX-License-Identifier: MIT
// The floating-point environment kernels run in (attn.h, "Floating-point environment"):
// round to nearest, flush-to-zero and denormals-are-zero (tiny probabilities — exp of a
// very negative score — and their products never take a denormal slow path), every
// exception masked (a kernel computes inf/NaN-free values inside the input domain, and a
// trap left enabled by a caller or another kernel must not kill it). enter() sets it on
// the calling thread and returns the caller's; leave() restores the caller's exactly,
// exception flags included. attn_kernel_run brackets every kernel call with them, and
// OpenMP kernels call them in each thread of their team.
#include <stdio.h>

#include "core/attn_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
// MXCSR: bits 0-5 exception flags, 6 DAZ, 7-12 exception masks, 13-14 rounding control
// (00 = nearest), 15 FTZ. x87 control word: bits 0-5 exception masks, 10-11 rounding.
// The state word: MXCSR in bits 0-31, the x87 control word in bits 32-47.
enum {
  kMxcsrFlags = 0x003f,
  kMxcsrMasks = 0x1f80,
  kMxcsrRound = 0x6000,
  kMxcsrFtzDaz = 0x8040,
  kX87Masks = 0x003f,
  kX87Round = 0x0c00,
};

static uint64_t fp_state(void) {
  unsigned short cw;
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  return (uint64_t)_mm_getcsr() | (uint64_t)cw << 32;
}

static void fp_set(uint64_t s) {
  const unsigned short cw = (unsigned short)(s >> 32);
  __asm__ volatile("fldcw %0" ::"m"(cw));
  _mm_setcsr((unsigned)(s & 0xffffffffu));
}

// The kernels' state from the caller's: nearest, FTZ/DAZ, all masked, flags clear; the
// x87 unit (unused by kernels) keeps its precision control.
static uint64_t kernel_state(uint64_t caller) {
  const uint64_t mxcsr = kMxcsrMasks | kMxcsrFtzDaz;
  const uint64_t cw = ((caller >> 32) & 0xffffu & ~(uint64_t)kX87Round) | kX87Masks;
  return mxcsr | cw << 32;
}

// Control bits only (exception flags are status, not control).
static uint64_t control_of(uint64_t s) {
  return s & ~(uint64_t)kMxcsrFlags;
}

static void describe_state(uint64_t s, char *buf, size_t len) {
  static const char *const kRound[] = {"nearest", "down", "up", "toward zero"};
  const unsigned m = (unsigned)(s & 0xffffffffu);
  const unsigned cw = (unsigned)(s >> 32) & 0xffffu;
  snprintf(buf, len,
           "MXCSR 0x%04x (rounding %s, FTZ %s, DAZ %s, unmasked exceptions 0x%02x), x87 CW 0x%04x",
           m, kRound[(m & kMxcsrRound) >> 13], m & 0x8000 ? "on" : "off", m & 0x40 ? "on" : "off",
           (~m & kMxcsrMasks) >> 7, cw);
}
#elif defined(__aarch64__)
// FPCR: bits 8-12 and 15 exception trap enables, 22-23 rounding mode (00 = nearest),
// 24 FZ (flush denormal inputs and outputs to zero). FPSR holds the flags.
static const uint64_t kFpcrTraps = 0x9f00u, kFpcrRound = 0xc00000u, kFpcrFz = 1u << 24;

static uint64_t fp_state(void) {
  uint64_t fpcr, fpsr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  __asm__ volatile("mrs %0, fpsr" : "=r"(fpsr));
  return (fpcr & 0xffffffffu) | (fpsr & 0xffffffffu) << 32;
}

static void fp_set(uint64_t s) {
  const uint64_t fpcr = s & 0xffffffffu, fpsr = s >> 32;
  __asm__ volatile("msr fpcr, %0" ::"r"(fpcr));
  __asm__ volatile("msr fpsr, %0" ::"r"(fpsr));
}

static uint64_t kernel_state(uint64_t caller) {
  return ((caller & 0xffffffffu) & ~(kFpcrTraps | kFpcrRound)) | kFpcrFz;
}

static uint64_t control_of(uint64_t s) {
  return s & 0xffffffffu;  // FPCR; FPSR (flags) is status
}

static void describe_state(uint64_t s, char *buf, size_t len) {
  static const char *const kRound[] = {"nearest", "up", "down", "toward zero"};
  const uint64_t c = s & 0xffffffffu;
  snprintf(buf, len, "FPCR 0x%08llx (rounding %s, FZ %s, trap enables 0x%04llx)",
           (unsigned long long)c, kRound[(c & kFpcrRound) >> 22], c & kFpcrFz ? "on" : "off",
           (unsigned long long)(c & kFpcrTraps));
}
#else
#include <fenv.h>
// Elsewhere only the rounding mode is managed (portable C99 <fenv.h>).
static uint64_t fp_state(void) {
  return (uint64_t)(unsigned)fegetround();
}
static void fp_set(uint64_t s) {
  fesetround((int)s);
}
static uint64_t kernel_state(uint64_t caller) {
  (void)caller;
  return (uint64_t)(unsigned)FE_TONEAREST;
}
static uint64_t control_of(uint64_t s) {
  return s;
}
static void describe_state(uint64_t s, char *buf, size_t len) {
  snprintf(buf, len, "rounding mode %llu", (unsigned long long)s);
}
#endif

attn_fp_env attn_fp_env_enter(void) {
  const attn_fp_env env = {.saved = fp_state()};
  fp_set(kernel_state(env.saved));
  return env;
}

void attn_fp_env_leave(attn_fp_env env) {
  fp_set(env.saved);
}

uint64_t attn_fp_env_control(void) {
  return control_of(fp_state());
}

uint64_t attn_fp_env_kernel_control(attn_fp_env env) {
  return control_of(kernel_state(env.saved));
}

void attn_fp_env_describe(uint64_t control, char *buf, size_t len) {
  describe_state(control, buf, len);
}
