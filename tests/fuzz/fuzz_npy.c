// SPDX-License-Identifier: MIT
// Fuzz target: the .npy reader (npy_read_f32, and the K/V reader npy_read_f32_or_f16) on
// arbitrary bytes.
// Invariants checked on every input, beyond "no crash, leak or sanitizer report":
//   * success: 0 <= ndim <= NPY_MAX_DIMS, count = prod(shape) without overflow, and the
//     data are exactly the last 4·count bytes of the input (little-endian host);
//   * failure: *out is empty and the message is one line "<path>: <reason>", also when
//     the message buffer is too small for it (it is then cut, still terminated);
//   * the same bytes read from a pipe (size unknown up front) give the same verdict,
//     the same data or the same reason.
#define _POSIX_C_SOURCE 200809L  // strnlen
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_input.h"
#include "io/npy.h"

static void check_message(const char *path, const char *err, size_t cap) {
  const size_t n = strnlen(err, cap);
  if (n == cap) fuzz_fail("error message not terminated within its %zu-byte buffer", cap);
  if (n == 0) fuzz_fail("failure without a message");
  if (strchr(err, '\n')) fuzz_fail("error message spans lines: '%s'", err);
  const size_t pl = strlen(path);
  if (cap > pl + 2 && (strncmp(err, path, pl) != 0 || strncmp(err + pl, ": ", 2) != 0))
    fuzz_fail("error message does not start with the path: '%s'", err);
}

static void check_empty(const npy_array *a) {
  if (a->data || a->count || a->ndim) fuzz_fail("failed read left a non-empty array");
}

// Reads the input from path; returns whether it was accepted, and in reason the message
// without its "<path>: " prefix (empty on success). Checks every invariant above.
static bool read_and_check(const char *path, const uint8_t *data, size_t size, char *reason,
                           size_t reason_len) {
  npy_array a;
  char err[512];
  memset(err, 'x', sizeof err);
  reason[0] = '\0';
  if (!npy_read_f32(path, &a, err, sizeof err)) {
    check_empty(&a);
    check_message(path, err, sizeof err);
    snprintf(reason, reason_len, "%s", err + strlen(path) + 2);
    return false;
  }
  if (a.ndim < 0 || a.ndim > NPY_MAX_DIMS) fuzz_fail("ndim %d", a.ndim);
  size_t count = 1;
  for (int i = 0; i < a.ndim; i++) {
    if (a.shape[i] < 0) fuzz_fail("negative dimension %lld", (long long)a.shape[i]);
    const uint64_t d = (uint64_t)a.shape[i];
    if (d && count > SIZE_MAX / 4 / d) fuzz_fail("accepted a shape whose byte count overflows");
    count *= (size_t)d;
  }
  if (count != a.count) fuzz_fail("count %zu != prod(shape) %zu", a.count, count);
  if (!a.data) fuzz_fail("success without data");
  const size_t bytes = 4 * count;
  if (bytes + 10 > size) fuzz_fail("%zu bytes of data from a %zu-byte input", bytes, size);
  const uint16_t one = 1;
  uint8_t little;
  memcpy(&little, &one, 1);
  if (little && bytes && memcmp(a.data, data + size - bytes, bytes) != 0)
    fuzz_fail("the data are not the last %zu bytes of the input", bytes);
  npy_free(&a);
  if (a.data || a.count) fuzz_fail("npy_free left data");
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_input_path(data, size);
  if (!path) fuzz_fail("cannot hand the input over");
  char reason[512], piped[512];
  const bool ok = read_and_check(path, data, size, reason, sizeof reason);
  if (!ok) {
    npy_array a;
    char small[24];  // the same failure with a buffer too small for the message
    memset(small, 'x', sizeof small);
    if (npy_read_f32(path, &a, small, sizeof small))
      fuzz_fail("second read of the same input passed");
    check_empty(&a);
    if (!memchr(small, '\0', sizeof small)) fuzz_fail("cut message not terminated");
  }
  // The K/V reader ('<f4' or '<f2') agrees with npy_read_f32 on what is '<f4', and a
  // '<f2' array's binary16 values are the last 2·count bytes of the input.
  npy_array h;
  char herr[512];
  if (npy_read_f32_or_f16(path, &h, herr, sizeof herr)) {
    if (!h.data == !h.half) fuzz_fail("f16 reader: not exactly one of data and half");
    if (ok != (h.data != NULL)) fuzz_fail("f16 reader disagrees with npy_read_f32 on '<f4'");
    const size_t hb = (h.half ? 2 : 4) * h.count;
    if (hb + 10 > size) fuzz_fail("%zu bytes of data from a %zu-byte input", hb, size);
    const uint16_t one = 1;
    uint8_t little;
    memcpy(&little, &one, 1);
    const void *got = h.half ? (const void *)h.half : (const void *)h.data;
    if (little && hb && memcmp(got, data + size - hb, hb) != 0)
      fuzz_fail("f16 reader: the data are not the last %zu bytes of the input", hb);
    npy_free(&h);
  } else {
    if (ok) fuzz_fail("f16 reader refused what npy_read_f32 accepted");
    if (h.data || h.half || h.count || h.ndim) fuzz_fail("failed f16 read left a non-empty array");
    if (!memchr(herr, '\0', sizeof herr)) fuzz_fail("f16 reader: message not terminated");
  }
  const char *pipe_path = fuzz_input_pipe(data, size);
  if (!pipe_path) return 0;
  const bool pipe_ok = read_and_check(pipe_path, data, size, piped, sizeof piped);
  fuzz_input_pipe_close();
  if (pipe_ok != ok || strcmp(reason, piped) != 0)
    fuzz_fail("file and pipe disagree: '%s' vs '%s'", ok ? "ok" : reason, pipe_ok ? "ok" : piped);
  return 0;
}
