// SPDX-License-Identifier: MIT
// Minimal assertion helpers for the C unit tests (CTest runs each test binary; exit
// status 0 = pass, 77 = skipped, anything else = fail).
#pragma once

#include <stdio.h>
#include <stdlib.h>

static int g_failures = 0;

#define EXPECT(cond, ...)                                                       \
  do {                                                                          \
    if (!(cond)) {                                                              \
      g_failures++;                                                             \
      fprintf(stderr, "%s:%d: EXPECT(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                             \
      fputc('\n', stderr);                                                      \
    }                                                                           \
  } while (0)

#define TEST_SKIP 77

static inline int test_finish(const char *name) {
  if (g_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, g_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}
