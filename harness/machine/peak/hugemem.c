// SPDX-License-Identifier: MIT
// hugemem.c — hugemem.h's allocation and THP mode (Linux: madvise, sysfs; elsewhere plain
// aligned buffers and "unavailable").
#define _DEFAULT_SOURCE  // madvise, MADV_HUGEPAGE (glibc hides them in strict C11)

#include "hugemem.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

void *attn_alloc_streamed(size_t bytes) {
  if (bytes < ATTN_HUGE_PAGE) return aligned_alloc(64, ((bytes ? bytes : 1) + 63) & ~(size_t)63);
  if (bytes > SIZE_MAX - ATTN_HUGE_PAGE) return NULL;
  const size_t whole = (bytes + ATTN_HUGE_PAGE - 1) & ~(ATTN_HUGE_PAGE - 1);
  void *p = aligned_alloc(ATTN_HUGE_PAGE, whole);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p) (void)madvise(p, whole, MADV_HUGEPAGE);  // advice only: refused means small pages
#endif
  return p;
}

const char *attn_thp_mode(char *buf, size_t len) {
  snprintf(buf, len, "unavailable");
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return buf;
  char line[128] = {0};
  const bool got = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  const char *a = got ? strchr(line, '[') : NULL, *b = a ? strchr(a, ']') : NULL;
  if (a && b && b > a + 1) snprintf(buf, len, "%.*s", (int)(b - a - 1), a + 1);
  return buf;
}
