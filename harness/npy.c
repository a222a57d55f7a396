// SPDX-License-Identifier: MIT
// Strict .npy float32 reader and atomic writer (contract in npy.h).
//
// File layout (NumPy format spec, numpy/lib/format.py):
//   "\x93NUMPY" major minor              8 bytes
//   header_len                           uint16 LE (v1.0) or uint32 LE (v2.0, v3.0)
//   header                               ASCII (v3.0: UTF-8) Python dict literal,
//                                        space-padded, ending in '\n'
//   data                                 prod(shape) items, C order
#define _POSIX_C_SOURCE 200809L
#include "npy.h"

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Largest header we accept. NumPy itself refuses headers above 10000 bytes by default;
// a float32 array needs far less, so anything bigger is corrupt or hostile.
enum { kMaxHeaderLen = 1 << 16 };

// "<path>: <reason>"; a path too long for err is shortened, never the reason (fileio.h).
static bool fail(char *err, size_t len, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  attn_path_verror(err, len, path, fmt, ap);
  va_end(ap);
  return false;
}

const char *npy_shape_string(int ndim, const int64_t *shape, char *buf, size_t len) {
  if (!buf || !len) return "";
  size_t used = 0;
  int n = snprintf(buf, len, "(");
  if (n > 0) used = (size_t)n;
  for (int i = 0; i < ndim && used < len; i++) {
    n = snprintf(buf + used, len - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < 0) break;
    used += (size_t)n;
  }
  if (used < len) snprintf(buf + used, len - used, ndim == 1 ? ",)" : ")");
  return buf;
}

void npy_free(npy_array *a) {
  if (!a) return;
  free(a->data);
  memset(a, 0, sizeof *a);
}

static bool host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static void byteswap32(float *x, size_t n) {
  unsigned char *p = (unsigned char *)x;
  for (size_t i = 0; i < n; i++, p += 4) {
    unsigned char t = p[0];
    p[0] = p[3];
    p[3] = t;
    t = p[1];
    p[1] = p[2];
    p[2] = t;
  }
}

// ── header parser ───────────────────────────────────────────────────────────────────
// A tiny recursive-descent parser for exactly the dict literal NumPy writes:
//   { 'descr': <str>, 'fortran_order': True|False, 'shape': ( [int {, int} [,]] ), }
// with any of the three keys in any order, each exactly once, and optional blanks.

typedef struct parser {
  const char *s, *end;
  char descr[64];
  int fortran;  // -1 unset, 0/1
  bool have_descr, have_shape, descr_not_string;
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  char msg[160];
} parser;

static void skip_ws(parser *p) {
  while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) p->s++;
}

static bool perr(parser *p, const char *what) {
  snprintf(p->msg, sizeof p->msg, "malformed header: %s", what);
  return false;
}

static bool expect(parser *p, char c) {
  skip_ws(p);
  if (p->s >= p->end || *p->s != c) {
    char what[48];
    snprintf(what, sizeof what, "expected '%c'", c);
    return perr(p, what);
  }
  p->s++;
  return true;
}

// A Python string literal in single or double quotes, without escapes.
static bool parse_string(parser *p, char *out, size_t cap) {
  skip_ws(p);
  if (p->s >= p->end || (*p->s != '\'' && *p->s != '"')) return perr(p, "expected a quoted string");
  const char q = *p->s++;
  size_t n = 0;
  while (p->s < p->end && *p->s != q) {
    if (*p->s == '\\' || *p->s == '\n') return perr(p, "unsupported character in string");
    if (n + 1 >= cap) return perr(p, "string too long");
    out[n++] = *p->s++;
  }
  if (p->s >= p->end) return perr(p, "unterminated string");
  p->s++;
  out[n] = '\0';
  return true;
}

static bool parse_bool(parser *p, int *out) {
  skip_ws(p);
  const size_t left = (size_t)(p->end - p->s);
  if (left >= 4 && memcmp(p->s, "True", 4) == 0) {
    p->s += 4;
    *out = 1;
    return true;
  }
  if (left >= 5 && memcmp(p->s, "False", 5) == 0) {
    p->s += 5;
    *out = 0;
    return true;
  }
  return perr(p, "'fortran_order' must be True or False");
}

static bool parse_shape(parser *p) {
  if (!expect(p, '(')) return perr(p, "'shape' must be a tuple");
  p->ndim = 0;
  for (;;) {
    skip_ws(p);
    if (p->s < p->end && *p->s == ')') {
      p->s++;
      return true;
    }
    if (p->s >= p->end || *p->s < '0' || *p->s > '9')
      return perr(p, "'shape' must be a tuple of non-negative integers");
    int64_t v = 0;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
      const int d = *p->s++ - '0';
      if (v > (INT64_MAX - d) / 10) return perr(p, "a 'shape' dimension overflows int64");
      v = v * 10 + d;
    }
    // NumPy may write Python 2 longs as "3L"; accept that spelling too.
    if (p->s < p->end && *p->s == 'L') p->s++;
    if (p->ndim >= NPY_MAX_DIMS) return perr(p, "'shape' has more than 32 dimensions");
    p->shape[p->ndim++] = v;
    skip_ws(p);
    if (p->s < p->end && *p->s == ',') {
      p->s++;
      continue;
    }
    if (p->s < p->end && *p->s == ')') continue;
    return perr(p, "expected ',' or ')' in 'shape'");
  }
}

static bool parse_header(parser *p) {
  p->fortran = -1;
  if (!expect(p, '{')) return perr(p, "not a dict (expected '{')");
  for (;;) {
    skip_ws(p);
    if (p->s < p->end && *p->s == '}') {
      p->s++;
      break;
    }
    char key[32];
    if (!parse_string(p, key, sizeof key)) return false;
    if (!expect(p, ':')) return false;
    if (strcmp(key, "descr") == 0) {
      if (p->have_descr) return perr(p, "duplicate key 'descr'");
      skip_ws(p);
      if (p->s < p->end && *p->s == '[') {  // structured dtype: a list of fields
        snprintf(p->msg, sizeof p->msg, "structured dtype (a list of fields), expected float32 '<f4'");
        p->descr_not_string = true;
        return false;
      }
      if (!parse_string(p, p->descr, sizeof p->descr)) return false;
      p->have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (p->fortran >= 0) return perr(p, "duplicate key 'fortran_order'");
      if (!parse_bool(p, &p->fortran)) return false;
    } else if (strcmp(key, "shape") == 0) {
      if (p->have_shape) return perr(p, "duplicate key 'shape'");
      if (!parse_shape(p)) return false;
      p->have_shape = true;
    } else {
      char what[80];
      snprintf(what, sizeof what, "unexpected key '%s'", key);
      return perr(p, what);
    }
    skip_ws(p);
    if (p->s < p->end && *p->s == ',') {
      p->s++;
      continue;
    }
    if (p->s < p->end && *p->s == '}') continue;
    return perr(p, "expected ',' or '}' after a value");
  }
  skip_ws(p);
  if (p->s != p->end) return perr(p, "unexpected text after the closing '}'");
  if (!p->have_descr) return perr(p, "missing key 'descr'");
  if (p->fortran < 0) return perr(p, "missing key 'fortran_order'");
  if (!p->have_shape) return perr(p, "missing key 'shape'");
  return true;
}

// Human name of a NumPy type-string like '<f8', for error messages.
static const char *dtype_name(const char *descr) {
  static const struct {
    const char *code, *name;
  } kNames[] = {
      {"f2", "float16"}, {"f4", "float32"}, {"f8", "float64"},   {"f16", "float128"},
      {"i1", "int8"},    {"i2", "int16"},   {"i4", "int32"},     {"i8", "int64"},
      {"u1", "uint8"},   {"u2", "uint16"},  {"u4", "uint32"},    {"u8", "uint64"},
      {"b1", "bool"},    {"c8", "complex64"}, {"c16", "complex128"}, {"V2", "bfloat16 (void)"},
  };
  const char *code = descr;
  if (*code == '<' || *code == '>' || *code == '|' || *code == '=') code++;
  for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; i++)
    if (strcmp(code, kNames[i].code) == 0) return kNames[i].name;
  return "an unsupported dtype";
}

// ── reader ──────────────────────────────────────────────────────────────────────────

static bool read_exact(FILE *f, void *buf, size_t n, size_t *got) {
  *got = fread(buf, 1, n, f);
  return *got == n;
}

bool npy_read_f32(const char *path, npy_array *out, char *err, size_t err_len) {
  if (!out) return fail(err, err_len, path ? path : "(null)", "no output array");
  memset(out, 0, sizeof *out);
  if (!path) return fail(err, err_len, "(null)", "no path");
  FILE *f = fopen(path, "rb");
  if (!f) return fail(err, err_len, path, "cannot open: %s", strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return fail(err, err_len, path, "is a directory, not a .npy file");
  }

  bool ok = false;
  char *header = NULL;
  float *data = NULL;
  unsigned char pre[12];
  size_t got;
  if (!read_exact(f, pre, 8, &got)) {
    if (ferror(f))
      fail(err, err_len, path, "read error: %s", strerror(errno));
    else if (got < 6 || memcmp(pre, "\x93NUMPY", 6) != 0)
      fail(err, err_len, path, "not a .npy file (%zu bytes, no \\x93NUMPY magic)", got);
    else
      fail(err, err_len, path, "truncated .npy preamble (%zu of 8 bytes)", got);
    goto done;
  }
  if (memcmp(pre, "\x93NUMPY", 6) != 0) {
    fail(err, err_len, path, "not a .npy file (bad magic; expected \\x93NUMPY)");
    goto done;
  }
  const int major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail(err, err_len, path, "unsupported .npy format version %d.%d (supported: 1.0, 2.0, 3.0)", major,
         minor);
    goto done;
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (!read_exact(f, pre + 8, len_bytes, &got)) {
    fail(err, err_len, path, "truncated .npy preamble (header length missing)");
    goto done;
  }
  size_t header_len = (size_t)pre[8] | (size_t)pre[9] << 8;
  if (major != 1) header_len |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  const size_t data_offset = 8 + len_bytes + header_len;
  if (header_len == 0 || header_len > kMaxHeaderLen) {
    fail(err, err_len, path, "implausible .npy header length %zu", header_len);
    goto done;
  }
  header = malloc(header_len + 1);
  if (!header) {
    fail(err, err_len, path, "out of memory reading the header");
    goto done;
  }
  if (!read_exact(f, header, header_len, &got)) {
    fail(err, err_len, path, "truncated header (%zu of %zu bytes)", got, header_len);
    goto done;
  }
  header[header_len] = '\0';
  if (memchr(header, '\0', header_len)) {
    fail(err, err_len, path, "malformed header: contains a NUL byte");
    goto done;
  }
  if (header[header_len - 1] != '\n') {
    fail(err, err_len, path, "malformed header: does not end with a newline");
    goto done;
  }

  parser p = {.s = header, .end = header + header_len};
  if (!parse_header(&p)) {
    fail(err, err_len, path, "%s", p.msg);
    goto done;
  }
  if (strcmp(p.descr, "<f4") != 0) {
    if (strcmp(p.descr, ">f4") == 0)
      fail(err, err_len, path, "dtype is big-endian float32 ('>f4'); expected little-endian float32 '<f4' "
                               "(convert with a.astype('<f4'))");
    else
      fail(err, err_len, path, "dtype is %s ('%s'); expected float32 '<f4' (convert with a.astype(np.float32))",
           dtype_name(p.descr), p.descr);
    goto done;
  }
  if (p.fortran) {
    fail(err, err_len, path, "array is in Fortran (column-major) order; expected C order "
                             "(save np.ascontiguousarray(a))");
    goto done;
  }

  size_t count = 1;
  for (int i = 0; i < p.ndim; i++) {
    const uint64_t d = (uint64_t)p.shape[i];
    if (d > SIZE_MAX || (d != 0 && count > SIZE_MAX / 4 / (size_t)d)) {
      char sb[400];
      fail(err, err_len, path, "shape %s is too large (byte count overflows size_t)",
           npy_shape_string(p.ndim, p.shape, sb, sizeof sb));
      goto done;
    }
    count *= (size_t)d;
  }
  const size_t bytes = count * 4;
  // Compare with the file size first, so a corrupt shape does not trigger a huge malloc.
  if (S_ISREG(st.st_mode)) {
    const uint64_t fsize = (uint64_t)st.st_size;
    if (fsize < data_offset + bytes) {
      char sb[400];
      fail(err, err_len, path, "truncated data: shape %s needs %zu bytes of data, file has %llu",
           npy_shape_string(p.ndim, p.shape, sb, sizeof sb), bytes,
           (unsigned long long)(fsize - data_offset));
      goto done;
    }
  }
  data = malloc(bytes ? bytes : 1);
  if (!data) {
    fail(err, err_len, path, "out of memory (%zu bytes of data)", bytes);
    goto done;
  }
  if (!read_exact(f, data, bytes, &got)) {
    char sb[400];
    if (ferror(f))
      fail(err, err_len, path, "read error: %s", strerror(errno));
    else
      fail(err, err_len, path, "truncated data: shape %s needs %zu bytes of data, file has %zu",
           npy_shape_string(p.ndim, p.shape, sb, sizeof sb), bytes, got);
    goto done;
  }
  unsigned char extra[256];
  size_t n_extra = 0;
  while ((got = fread(extra, 1, sizeof extra, f)) > 0) n_extra += got;
  if (ferror(f)) {
    fail(err, err_len, path, "read error: %s", strerror(errno));
    goto done;
  }
  if (n_extra) {
    fail(err, err_len, path, "trailing garbage: %zu unexpected bytes after the %zu bytes of data", n_extra,
         bytes);
    goto done;
  }
  if (!host_is_little_endian()) byteswap32(data, count);

  out->ndim = p.ndim;
  memcpy(out->shape, p.shape, sizeof p.shape);
  out->count = count;
  out->data = data;
  data = NULL;
  ok = true;
done:
  free(header);
  free(data);
  fclose(f);
  return ok;
}

// ── writer ──────────────────────────────────────────────────────────────────────────
// The file policy (what may be replaced, the temporary, fsync, rename, signals) is
// fileio.c's; this side only builds the header and the little-endian data.

bool npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, char *err,
                   size_t err_len) {
  if (!path || !*path) return fail(err, err_len, "(null)", "no output path");
  if (ndim < 0 || ndim > NPY_MAX_DIMS)
    return fail(err, err_len, path, "rank %d is not supported", ndim);
  size_t count = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return fail(err, err_len, path, "negative dimension %lld", (long long)shape[i]);
    if (shape[i] != 0 && count > SIZE_MAX / 4 / (uint64_t)shape[i])
      return fail(err, err_len, path, "array too large (byte count overflows size_t)");
    count *= (size_t)shape[i];
  }
  if (count && !data) return fail(err, err_len, path, "no data");

  // Header: dict, space padding, '\n', such that 10 + header_len is a multiple of 64.
  char dict[512], sb[400];
  const int dn =
      snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
               npy_shape_string(ndim, shape, sb, sizeof sb));
  if (dn < 0 || (size_t)dn >= sizeof dict)
    return fail(err, err_len, path, "shape too long for the header");
  const size_t total = ((10 + (size_t)dn + 1 + 63) / 64) * 64;
  const size_t header_len = total - 10;
  unsigned char head[600];
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  head[8] = (unsigned char)(header_len & 0xff);
  head[9] = (unsigned char)(header_len >> 8);
  memcpy(head + 10, dict, (size_t)dn);
  memset(head + 10 + dn, ' ', header_len - (size_t)dn - 1);
  head[total - 1] = '\n';

  const float *src = data;
  float *swapped = NULL;
  if (count && !host_is_little_endian()) {
    swapped = malloc(count * 4);
    if (!swapped) return fail(err, err_len, path, "out of memory");
    memcpy(swapped, data, count * 4);
    byteswap32(swapped, count);
    src = swapped;
  }
  const attn_buf parts[2] = {{head, total}, {src, count * 4}};
  const bool ok = attn_write_file_atomic(path, parts, 2, err, err_len);
  free(swapped);
  return ok;
}
