// SPDX-License-Identifier: MIT
// The .npy reader's size arithmetic: shapes whose byte count overflows size_t, shapes
// whose byte count plus the data offset wraps (the old "file too short" check passed
// and the reader asked for ~2^64 bytes), and reads from a pipe, where the file size is
// unknown and the buffer must grow with the data that actually arrives.
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/npy.h"
#include "test_util.h"

static char g_dir[64];
static char g_path[128];

// A version 1.0 image of dict, padded to a 64-byte boundary, then data_bytes of data
// (value i at float i). Returns a malloc'ed buffer; *n gets its size.
static unsigned char *image(const char *dict, size_t data_bytes, size_t *n) {
  const size_t dn = strlen(dict), total = ((10 + dn + 1 + 63) / 64) * 64, hl = total - 10;
  unsigned char *b = malloc(total + data_bytes);
  if (!b) exit(2);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)(hl & 0xff);
  b[9] = (unsigned char)(hl >> 8);
  memcpy(b + 10, dict, dn);
  memset(b + 10 + dn, ' ', hl - dn - 1);
  b[total - 1] = '\n';
  for (size_t i = 0; i < data_bytes / 4; i++) {
    const float x = (float)i;
    memcpy(b + total + 4 * i, &x, 4);
  }
  *n = total + data_bytes;
  return b;
}

static const char *write_file(const unsigned char *b, size_t n) {
  snprintf(g_path, sizeof g_path, "%s/x.npy", g_dir);
  FILE *f = fopen(g_path, "wb");
  if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
    perror(g_path);
    exit(2);
  }
  return g_path;
}

// Reads the image through a pipe (a child writes it), so the reader cannot know the
// size up front. The path is /proc/self/fd/N of the read end.
static bool read_via_pipe(const unsigned char *b, size_t n, npy_array *a, char *err, size_t len) {
  int fd[2];
  if (pipe(fd) != 0) exit(2);
  const pid_t pid = fork();
  if (pid < 0) exit(2);
  if (pid == 0) {
    close(fd[0]);
    signal(SIGPIPE, SIG_DFL);
    for (size_t off = 0; off < n;) {
      const ssize_t w = write(fd[1], b + off, n - off);
      if (w <= 0) _exit(0);  // the reader stopped early (an error): fine
      off += (size_t)w;
    }
    _exit(0);
  }
  close(fd[1]);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd[0]);
  const bool ok = npy_read_f32(path, a, err, len);
  close(fd[0]);
  int status;
  waitpid(pid, &status, 0);
  return ok;
}

static void expect_reject(const char *label, const char *dict, size_t data_bytes, const char *want,
                          const char *not_want) {
  size_t n;
  unsigned char *b = image(dict, data_bytes, &n);
  for (int via_pipe = 0; via_pipe < 2; via_pipe++) {
    npy_array a;
    char err[1024] = "";
    const bool ok = via_pipe ? read_via_pipe(b, n, &a, err, sizeof err)
                             : npy_read_f32(write_file(b, n), &a, err, sizeof err);
    const char *how = via_pipe ? "pipe" : "file";
    EXPECT(!ok, "%s (%s): accepted", label, how);
    EXPECT(a.data == NULL && a.count == 0, "%s (%s): failed read left data", label, how);
    EXPECT(strstr(err, want) != NULL, "%s (%s): '%s' lacks '%s'", label, how, err, want);
    EXPECT(!not_want || strstr(err, not_want) == NULL, "%s (%s): '%s' says '%s'", label, how, err,
           not_want);
    npy_free(&a);
  }
  free(b);
}

static void test_wrapping_sizes(void) {
  // 4·(2^62 - 1) = 2^64 - 4: fits size_t, but data_offset + bytes wraps to 60.
  expect_reject(
      "2^62-1 floats",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387903,), }", 16,
      "truncated data: shape (4611686018427387903,) needs 18446744073709551612 bytes of data, ",
      "out of memory");
  // The same in two dimensions, and with the byte count one float short of wrapping.
  expect_reject("2 dims",
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 1537228672809129301), }", 0,
                "truncated data", "out of memory");
  expect_reject("no data at all",
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }", 0,
                "needs 4000000000000 bytes of data, file has 0", "out of memory");
  // A lying header on a pipe: only what arrives is buffered, then "truncated data".
  expect_reject("lying pipe", "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }",
                4096, "needs 4000000000 bytes of data, file has 4096", "out of memory");
}

static void test_overflowing_shapes(void) {
  // 4·2^62 = 2^64: the byte count itself overflows.
  expect_reject("2^62 floats",
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0,
                "is too large", NULL);
  expect_reject("2^31 x 2^31",
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648, 2147483648), }", 0,
                "shape (2147483648, 2147483648) is too large", NULL);
  expect_reject("int64 max",
                "{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807,), }", 0,
                "is too large", NULL);
  // A zero dimension makes the array empty whatever the others are (no overflow).
  size_t n;
  unsigned char *b =
      image("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904), }", 0, &n);
  npy_array a;
  char err[512] = "";
  EXPECT(npy_read_f32(write_file(b, n), &a, err, sizeof err), "(0, 2^62) rejected: %s", err);
  EXPECT(a.count == 0 && a.ndim == 2, "(0, 2^62) is empty (count %zu)", a.count);
  npy_free(&a);
  free(b);
}

static void test_pipe_reads(void) {
  // 300000 floats (1.2 MB) through a pipe: the buffer grows past its first 1 MiB.
  size_t n;
  unsigned char *b =
      image("{'descr': '<f4', 'fortran_order': False, 'shape': (600, 500), }", 300000 * 4, &n);
  npy_array a;
  char err[512] = "";
  EXPECT(read_via_pipe(b, n, &a, err, sizeof err), "pipe read failed: %s", err);
  EXPECT(a.count == 300000 && a.ndim == 2 && a.shape[0] == 600 && a.shape[1] == 500,
         "pipe read shape (count %zu)", a.count);
  bool same = a.data != NULL;
  for (size_t i = 0; same && i < a.count; i++) same = a.data[i] == (float)i;
  EXPECT(same, "pipe read values");
  npy_free(&a);
  // One float too many after the data is still trailing garbage on a pipe.
  free(b);
  b = image("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 16, &n);
  EXPECT(!read_via_pipe(b, n, &a, err, sizeof err) && strstr(err, "trailing garbage: 4"),
         "trailing bytes on a pipe: '%s'", err);
  free(b);
  // An endless stream after the data (like /dev/zero): the read stops and says so.
  b = image("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4, &n);
  int fd[2];
  if (pipe(fd) != 0) exit(2);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    static unsigned char zeros[65536];
    if (write(fd[1], b, n) != (ssize_t)n) _exit(1);
    while (write(fd[1], zeros, sizeof zeros) > 0) {
    }
    _exit(0);  // the reader closed the pipe (EPIPE; SIGPIPE is ignored below)
  }
  close(fd[1]);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd[0]);
  EXPECT(!npy_read_f32(path, &a, err, sizeof err) && strstr(err, "trailing garbage: more than"),
         "endless trailing data: '%s'", err);
  close(fd[0]);
  waitpid(pid, NULL, 0);
  free(b);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/attn_npylim_XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);  // writers in children see EPIPE once the reader stops
  test_wrapping_sizes();
  test_overflowing_shapes();
  test_pipe_reads();
  unlink(g_path);
  rmdir(g_dir);
  return test_finish("test_npy_limits");
}
