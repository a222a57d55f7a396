// SPDX-License-Identifier: MIT
// .npy reader/writer: round trips (ranks 0..5, empty dims, versions 1/2/3 on read) and
// every malformed-input case the reader must reject with a specific message, plus the
// writer's atomicity (no temporary left behind, target untouched on failure).
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/npy.h"
#include "test_util.h"

static char g_dir[64];

static const char *path_in_dir(const char *name, char *buf, size_t len) {
  snprintf(buf, len, "%s/%s", g_dir, name);
  return buf;
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(2);
  }
  if (n && fwrite(data, 1, n, f) != n) exit(2);
  fclose(f);
}

// Builds a .npy image: magic, version, header length, dict padded with spaces to a
// 64-byte boundary plus '\n' (unless raw_header), then data bytes. Returns its size.
static size_t build(unsigned char *buf, int major, const char *dict, const void *data,
                    size_t data_bytes) {
  const size_t pre = major == 1 ? 10 : 12;
  const size_t dn = strlen(dict);
  const size_t total = ((pre + dn + 1 + 63) / 64) * 64;
  const size_t hl = total - pre;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  buf[8] = (unsigned char)(hl & 0xff);
  buf[9] = (unsigned char)((hl >> 8) & 0xff);
  if (major != 1) {
    buf[10] = (unsigned char)((hl >> 16) & 0xff);
    buf[11] = (unsigned char)((hl >> 24) & 0xff);
  }
  memcpy(buf + pre, dict, dn);
  memset(buf + pre + dn, ' ', hl - dn - 1);
  buf[total - 1] = '\n';
  if (data_bytes) memcpy(buf + total, data, data_bytes);
  return total + data_bytes;
}

static unsigned char g_buf[1 << 16];

// Writes bytes to a file, reads it, expects failure whose message contains want.
static void expect_reject(const char *label, const void *bytes, size_t n, const char *want) {
  char path[128], err[512];
  path_in_dir("bad.npy", path, sizeof path);
  write_bytes(path, bytes, n);
  npy_array a;
  const bool ok = npy_read_f32(path, &a, err, sizeof err);
  EXPECT(!ok, "%s: read should fail", label);
  EXPECT(a.data == NULL && a.count == 0, "%s: failed read must leave an empty array", label);
  if (!ok) {
    EXPECT(strstr(err, want) != NULL, "%s: message '%s' lacks '%s'", label, err, want);
    EXPECT(strstr(err, path) != NULL, "%s: message '%s' does not name the file", label, err);
  }
  npy_free(&a);
}

static void expect_reject_dict(const char *label, const char *dict, size_t data_bytes,
                               const char *want) {
  static const float zeros[1024];
  expect_reject(label, g_buf, build(g_buf, 1, dict, zeros, data_bytes), want);
}

static void test_round_trip(void) {
  char path[128], err[512];
  path_in_dir("rt.npy", path, sizeof path);
  const int64_t shapes[][5] = {{0}, {5}, {2, 3}, {1, 1, 1}, {2, 3, 4, 5}, {1, 2, 1, 3, 2}, {3, 0}};
  const int ranks[] = {0, 1, 2, 3, 4, 5, 2};
  for (size_t s = 0; s < sizeof ranks / sizeof ranks[0]; s++) {
    size_t count = 1;
    for (int d = 0; d < ranks[s]; d++) count *= (size_t)shapes[s][d];
    float *x = malloc((count ? count : 1) * sizeof *x);
    for (size_t i = 0; i < count; i++) x[i] = (float)i * 0.37f - 3.5f + (i % 3 ? 1e-30f : -1e30f);
    EXPECT(npy_write_f32(path, x, ranks[s], shapes[s], err, sizeof err), "write rank %d: %s",
           ranks[s], err);
    npy_array a;
    const bool ok = npy_read_f32(path, &a, err, sizeof err);
    EXPECT(ok, "read back rank %d: %s", ranks[s], err);
    if (ok) {
      EXPECT(a.ndim == ranks[s], "rank %d read as %d", ranks[s], a.ndim);
      EXPECT(a.count == count, "count %zu read as %zu", count, a.count);
      for (int d = 0; d < a.ndim && d < ranks[s]; d++)
        EXPECT(a.shape[d] == shapes[s][d], "dim %d", d);
      EXPECT(count == 0 || memcmp(a.data, x, count * sizeof *x) == 0, "data differs (rank %d)",
             ranks[s]);
      // The header NumPy would write: 64-byte aligned data, '\n'-terminated header.
      struct stat st;
      EXPECT(stat(path, &st) == 0 && (st.st_size - (off_t)(count * 4)) % 64 == 0,
             "data not 64-byte aligned");
    }
    npy_free(&a);
    free(x);
  }
  // The widest header: 32 dimensions of 19 digits, one of them 0 (no element), written
  // whole and read back.
  int64_t wide[NPY_MAX_DIMS];
  for (int d = 0; d < NPY_MAX_DIMS; d++) wide[d] = d == 0 ? 0 : INT64_C(1000000000000000000);
  EXPECT(npy_write_f32(path, NULL, NPY_MAX_DIMS, wide, err, sizeof err), "write 32-D: %s", err);
  npy_array a;
  EXPECT(npy_read_f32(path, &a, err, sizeof err) && a.ndim == NPY_MAX_DIMS && a.count == 0 &&
             a.shape[NPY_MAX_DIMS - 1] == wide[NPY_MAX_DIMS - 1],
         "read back the widest header: %s", err);
  npy_free(&a);
}

static void test_versions_and_spellings(void) {
  const float data[6] = {1, 2, 3, 4, 5, 6};
  char path[128], err[512];
  path_in_dir("ok.npy", path, sizeof path);
  const struct {
    int major;
    const char *dict;
  } ok_cases[] = {
      {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {1,
       "{'shape': (2,3,), 'fortran_order': False, 'descr': '<f4'}"},  // key order, trailing comma
      {1,
       "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2L, 3L)}"},  // "quotes", longs
      {1, "  {  'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 ) }  "},
  };
  for (size_t i = 0; i < sizeof ok_cases / sizeof ok_cases[0]; i++) {
    write_bytes(path, g_buf, build(g_buf, ok_cases[i].major, ok_cases[i].dict, data, sizeof data));
    npy_array a;
    const bool ok = npy_read_f32(path, &a, err, sizeof err);
    EXPECT(ok, "case %zu (v%d %s): %s", i, ok_cases[i].major, ok_cases[i].dict, err);
    if (ok)
      EXPECT(a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3 && a.data[5] == 6.0f, "case %zu", i);
    npy_free(&a);
  }
}

static void test_rejects(void) {
  const char *F = "'fortran_order': False";
  char d[256];
  // Not .npy at all / bad magic / version / truncation of the preamble and header.
  expect_reject("empty file", "", 0, "not a .npy file");
  expect_reject("text file", "hello, world\n", 13, "not a .npy file");
  expect_reject("bad magic", "\x93NUMPX\x01\x00\x10\x00{}", 12, "bad magic");
  expect_reject("version 4", "\x93NUMPY\x04\x00\x10\x00{}", 12,
                "unsupported .npy format version 4.0");
  expect_reject("preamble cut", "\x93NUMPY\x01", 7, "truncated");
  expect_reject("length cut", "\x93NUMPY\x01\x00\x10", 9, "truncated");
  expect_reject("header cut", "\x93NUMPY\x01\x00\x40\x00{'descr'", 17, "truncated header");
  expect_reject("zero header", "\x93NUMPY\x01\x00\x00\x00", 10, "header length");
  // Header syntax.
  expect_reject_dict("not a dict", "['descr', '<f4']", 0, "malformed header");
  snprintf(d, sizeof d, "{'descr': '<f4', %s}", F);
  expect_reject_dict("missing shape", d, 0, "missing key 'shape'");
  expect_reject_dict("missing descr", "{'fortran_order': False, 'shape': (1,)}", 4,
                     "missing key 'descr'");
  expect_reject_dict("missing order", "{'descr': '<f4', 'shape': (1,)}", 4,
                     "missing key 'fortran_order'");
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': (1,), 'extra': 1}", F);
  expect_reject_dict("extra key", d, 4, "unexpected key 'extra'");
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': (1,), 'shape': (1,)}", F);
  expect_reject_dict("duplicate key", d, 4, "duplicate key 'shape'");
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': [2, 3]}", F);
  expect_reject_dict("shape list", d, 24, "'shape' must be a tuple");
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': (-1, 3)}", F);
  expect_reject_dict("negative dim", d, 0, "non-negative integers");
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': (2 3)}", F);
  expect_reject_dict("no comma", d, 24, "expected ',' or ')'");
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': (2, 3)} x", F);
  expect_reject_dict("text after dict", d, 24, "after the closing '}'");
  expect_reject_dict("bad bool", "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", 4,
                     "True or False");
  {
    unsigned char b[256];
    const size_t n =
        build(b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "\0\0\0\0", 4);
    b[n - 5] = ' ';  // the header's final '\n'
    expect_reject("no newline", b, n, "newline");
  }
  // dtype, order.
  snprintf(d, sizeof d, "{'descr': '<f8', %s, 'shape': (2,)}", F);
  expect_reject_dict("float64", d, 16, "float64 ('<f8')");
  snprintf(d, sizeof d, "{'descr': '<i4', %s, 'shape': (2,)}", F);
  expect_reject_dict("int32", d, 8, "int32 ('<i4')");
  snprintf(d, sizeof d, "{'descr': '<f2', %s, 'shape': (2,)}", F);
  expect_reject_dict("float16", d, 4, "float16");
  snprintf(d, sizeof d, "{'descr': '>f4', %s, 'shape': (2,)}", F);
  expect_reject_dict("big endian", d, 8, "big-endian");
  snprintf(d, sizeof d, "{'descr': '=f4', %s, 'shape': (2,)}", F);
  expect_reject_dict("native order", d, 8, "'=f4' does not state little-endian byte order");
  snprintf(d, sizeof d, "{'descr': '|f4', %s, 'shape': (2,)}", F);
  expect_reject_dict("no order", d, 8, "expected '<f4'");
  snprintf(d, sizeof d, "{'descr': [('a', '<f4')], %s, 'shape': (2,)}", F);
  expect_reject_dict("structured", d, 8, "structured dtype");
  expect_reject_dict("fortran", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}", 24,
                     "Fortran");
  // Sizes: overflow, truncated data, trailing bytes, too many dims.
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': (4611686018427387904, 8)}", F);
  expect_reject_dict("size overflow", d, 0, "too large");
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': (99999999999999999999,)}", F);
  expect_reject_dict("int64 overflow", d, 0, "overflows int64");
  snprintf(d, sizeof d, "{'descr': '<f4', %s, 'shape': (2, 3)}", F);
  expect_reject_dict("truncated data", d, 20, "truncated data");
  expect_reject_dict("trailing bytes", d, 28, "trailing garbage: 4");
  snprintf(d, sizeof d,
           "{'descr': '<f4', %s, 'shape': "
           "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}",
           F);
  expect_reject_dict("33 dims", d, 4, "more than 32");
  // Not a regular file / missing file.
  char err[512];
  npy_array a;
  EXPECT(!npy_read_f32(g_dir, &a, err, sizeof err) && strstr(err, "directory"), "directory: %s",
         err);
  char path[128];
  EXPECT(!npy_read_f32(path_in_dir("missing.npy", path, sizeof path), &a, err, sizeof err) &&
             strstr(err, "cannot open"),
         "missing: %s", err);
}

static size_t count_dir_entries(void) {
  DIR *d = opendir(g_dir);
  size_t n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  if (d) closedir(d);
  return n;
}

static void test_writer_atomic(void) {
  char path[128], err[512];
  const float x[4] = {1, 2, 3, 4};
  const int64_t shape[2] = {2, 2};
  // Clean the directory of earlier files first.
  const char *names[] = {"rt.npy", "ok.npy", "bad.npy"};
  for (size_t i = 0; i < 3; i++) unlink(path_in_dir(names[i], path, sizeof path));
  EXPECT(count_dir_entries() == 0, "temp dir not empty before writer tests");

  // Into a missing directory: fails, nothing created.
  EXPECT(
      !npy_write_f32(path_in_dir("nodir/o.npy", path, sizeof path), x, 2, shape, err, sizeof err),
      "write into a missing directory should fail");
  EXPECT(strstr(err, "nodir/o.npy") != NULL, "message should name the path: %s", err);
  EXPECT(count_dir_entries() == 0, "a failed write left a file behind");

  // Onto an existing directory: rename fails, the temporary is removed.
  mkdir(path_in_dir("adir", path, sizeof path), 0777);
  EXPECT(!npy_write_f32(path, x, 2, shape, err, sizeof err), "write over a directory should fail");
  EXPECT(count_dir_entries() == 1, "a failed write over a directory left a temporary behind");
  rmdir(path);

  // Replacing an existing file: new content in place, no temporary left.
  path_in_dir("o.npy", path, sizeof path);
  write_bytes(path, "old", 3);
  EXPECT(npy_write_f32(path, x, 2, shape, err, sizeof err), "replace: %s", err);
  EXPECT(count_dir_entries() == 1, "temporary left after a successful write");
  npy_array a;
  EXPECT(npy_read_f32(path, &a, err, sizeof err) && a.count == 4 && a.data[3] == 4.0f,
         "replaced: %s", err);
  npy_free(&a);
  npy_free(&a);  // idempotent

  // A stale temporary with our pid (left by a crashed process) is neither reused nor
  // clobbered: the writer picks another name and the stale file stays as it was.
  char stale[160];
  snprintf(stale, sizeof stale, "%s.tmp.%ld", path, (long)getpid());
  write_bytes(stale, "stale", 5);
  EXPECT(npy_write_f32(path, x, 2, shape, err, sizeof err), "write next to a stale temporary: %s",
         err);
  struct stat st;
  EXPECT(stat(stale, &st) == 0 && st.st_size == 5, "the stale temporary must be left untouched");
  EXPECT(count_dir_entries() == 2, "exactly the target and the stale file remain");
  unlink(stale);

  // Invalid arguments.
  const int64_t neg[1] = {-1};
  EXPECT(!npy_write_f32(path, x, 1, neg, err, sizeof err), "negative dim should fail");
  EXPECT(!npy_write_f32(path, x, 33, shape, err, sizeof err), "rank 33 should fail");
  EXPECT(!npy_write_f32(path, NULL, 2, shape, err, sizeof err), "NULL data should fail");
  EXPECT(npy_read_f32(path, &a, err, sizeof err) && a.data[0] == 1.0f,
         "failed writes must not touch the target");
  npy_free(&a);
  unlink(path);
}

// '<f2' (npy_read_f32_or_f16, the K/V reader): read as binary16 into half (data NULL); the
// float32 reader still refuses it by name; '>f2', a truncated '<f2' array and other dtypes
// are refused by the f16-accepting reader too, '>V2' and '=V2' for their byte order;
// '<f4' still arrives as float32.
static void test_f16(void) {
  char path[128], err[512];
  path_in_dir("ok.npy", path, sizeof path);
  const uint16_t h[6] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x3555};
  write_bytes(
      path, g_buf,
      build(g_buf, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", h, sizeof h));
  npy_array a;
  EXPECT(npy_read_f32_or_f16(path, &a, err, sizeof err), "'<f2' read: %s", err);
  EXPECT(a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3 && a.count == 6 && !a.data && a.half &&
             memcmp(a.half, h, sizeof h) == 0,
         "'<f2' array: its shape and the binary16 values");
  npy_free(&a);
  EXPECT(!npy_read_f32(path, &a, err, sizeof err) && strstr(err, "float16 ('<f2')"),
         "the float32 reader refuses '<f2' by name: %s", err);
  write_bytes(
      path, g_buf,
      build(g_buf, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", h, 10));
  EXPECT(!npy_read_f32_or_f16(path, &a, err, sizeof err) && strstr(err, "needs 12 bytes"),
         "a truncated '<f2' array (2 bytes per element): %s", err);
  write_bytes(path, g_buf,
              build(g_buf, 1, "{'descr': '>f2', 'fortran_order': False, 'shape': (3,), }", h, 6));
  EXPECT(!npy_read_f32_or_f16(path, &a, err, sizeof err) && strstr(err, "big-endian"),
         "'>f2' refused: %s", err);
  write_bytes(path, g_buf,
              build(g_buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", h, 8));
  EXPECT(!npy_read_f32_or_f16(path, &a, err, sizeof err) &&
             strstr(err, "'<f4', float16 '<f2' or bfloat16 '<V2'"),
         "'<f8' refused naming both accepted dtypes: %s", err);
  // bfloat16 bits in another byte order are refused for their byte order, a structured
  // dtype naming the three dtypes this reader takes
  static const struct {
    const char *descr, *want;
  } v2[] = {{"'>V2'",
             "dtype is big-endian ('>V2'); expected little-endian float32 '<f4', "
             "float16 '<f2' or bfloat16 '<V2'"},
            {"'=V2'", "dtype '=V2' does not state little-endian byte order; expected '<V2'"},
            {"[('', '<V2')]",
             "structured dtype (a list of fields), expected float32 '<f4', "
             "float16 '<f2' or bfloat16 '<V2'"}};
  for (size_t i = 0; i < sizeof v2 / sizeof v2[0]; i++) {
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': %s, 'fortran_order': False, 'shape': (3,), }",
             v2[i].descr);
    write_bytes(path, g_buf, build(g_buf, 1, dict, h, 6));
    EXPECT(!npy_read_f32_or_f16(path, &a, err, sizeof err) && strstr(err, v2[i].want),
           "%s refused: '%s' (want '%s')", v2[i].descr, err, v2[i].want);
  }
  const float f[2] = {1.5f, -2.0f};
  write_bytes(
      path, g_buf,
      build(g_buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f, sizeof f));
  EXPECT(npy_read_f32_or_f16(path, &a, err, sizeof err) && a.data && !a.half && a.data[1] == -2.0f,
         "'<f4' through the f16-accepting reader: %s", err);
  npy_free(&a);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "%s", "/tmp/attnbench-npy-XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 2;
  }
  test_round_trip();
  test_versions_and_spellings();
  test_rejects();
  test_writer_atomic();
  test_f16();
  char path[128];
  unlink(path_in_dir("bad.npy", path, sizeof path));
  unlink(path_in_dir("ok.npy", path, sizeof path));
  unlink(path_in_dir("rt.npy", path, sizeof path));
  rmdir(g_dir);
  return test_finish("test_npy");
}
