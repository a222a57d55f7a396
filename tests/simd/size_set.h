// SPDX-License-Identifier: MIT
// A small set of sizes for the edge-case tests (the sizes below, at and above a kernel's
// register and cache tiles): distinct positive values in insertion order, at most 64.
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct set64 {
  int64_t v[64];
  size_t n;
} set64;

// Adds x unless it is < 1, already there, or the set is full.
static inline void add(set64 *s, int64_t x) {
  if (x < 1 || s->n == 64) return;
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == x) return;
  s->v[s->n++] = x;
}
