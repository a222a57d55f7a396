// SPDX-License-Identifier: MIT
// Flush-to-zero / denormals-are-zero around kernel work, so that tiny probabilities
// (exp of a very negative score) and their products never take a denormal slow path.
#include "attn.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
// MXCSR bit 15 = FTZ, bit 6 = DAZ.
attn_fp_env attn_fp_env_enter(void) {
  attn_fp_env env = {.saved = _mm_getcsr()};
  _mm_setcsr((unsigned)env.saved | 0x8040u);
  return env;
}
void attn_fp_env_leave(attn_fp_env env) {
  _mm_setcsr((unsigned)env.saved);
}
#elif defined(__aarch64__)
// FPCR bit 24 = FZ (flush denormal inputs and outputs to zero).
attn_fp_env attn_fp_env_enter(void) {
  uint64_t fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  __asm__ volatile("msr fpcr, %0" ::"r"(fpcr | (1ull << 24)));
  return (attn_fp_env){.saved = fpcr};
}
void attn_fp_env_leave(attn_fp_env env) {
  __asm__ volatile("msr fpcr, %0" ::"r"(env.saved));
}
#else
attn_fp_env attn_fp_env_enter(void) {
  return (attn_fp_env){0};
}
void attn_fp_env_leave(attn_fp_env env) {
  (void)env;
}
#endif
