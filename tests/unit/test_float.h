// SPDX-License-Identifier: MIT
// test_float.h — float bit patterns and ulp sizes for the accuracy tests (test_vexp,
// test_vtanh).
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// One ulp of the float nearest to y (|y| normal): 2^(e − 24) for |y| in [2^(e−1), 2^e).
static inline double ulp_of(double y) {
  int e;
  frexp(fabs(y), &e);  // |y| = f·2^e, f in [0.5, 1)
  return ldexp(1.0, e - 24);
}
