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
#include "io/npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fileio.h"

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
  free(a->half);
  memset(a, 0, sizeof *a);
}

static bool host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static void byteswap16(uint16_t *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = (uint16_t)((x[i] >> 8) | (x[i] << 8));
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
  bool allow_f2;  // '<f2' accepted (npy_read_f32_or_f16)
  size_t elem;    // bytes per element of the accepted dtype: 4, or 2 for '<f2' and '<V2'
  bool bf16;      // '<V2' / '|V2': bfloat16 bits (ml_dtypes)
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
        snprintf(p->msg, sizeof p->msg, "structured dtype (a list of fields), expected %s",
                 p->allow_f2 ? "float32 '<f4', float16 '<f2' or bfloat16 '<V2'" : "float32 '<f4'");
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
      {"f2", "float16"}, {"f4", "float32"},   {"f8", "float64"},     {"f16", "float128"},
      {"i1", "int8"},    {"i2", "int16"},     {"i4", "int32"},       {"i8", "int64"},
      {"u1", "uint8"},   {"u2", "uint16"},    {"u4", "uint32"},      {"u8", "uint64"},
      {"b1", "bool"},    {"c8", "complex64"}, {"c16", "complex128"}, {"V2", "bfloat16 (void)"},
  };
  const char *code = descr;
  if (*code == '<' || *code == '>' || *code == '|' || *code == '=') code++;
  for (size_t i = 0; i < sizeof kNames / sizeof kNames[0]; i++)
    if (strcmp(code, kNames[i].code) == 0) return kNames[i].name;
  return "an unsupported dtype";
}

// A float type whose byte order is not written as little-endian: '=f4' (native) or
// '|f4' (not applicable) for a float, '=V2' for bfloat16 bits ('|V2' is read: void
// elements have no byte order); the reader wants the order stated as '<'.
static bool float_order_unstated(const char *descr) {
  return (descr[0] == '=' || descr[0] == '|') &&
         (strcmp(descr + 1, "f4") == 0 || strcmp(descr + 1, "f2") == 0 ||
          strcmp(descr + 1, "V2") == 0);
}

// ── reader ──────────────────────────────────────────────────────────────────────────
// npy_read_f32 runs these steps in order; each reports its own error. Size arithmetic
// never wraps: the byte count is bounded by SIZE_MAX before it is formed, and the file
// size is compared as (file size - data offset) against it, never as a sum.

// A shape string for messages: up to NPY_MAX_DIMS dimensions of 19 digits and ", ".
enum { kShapeStrLen = NPY_MAX_DIMS * 21 + 8 };

typedef struct npy_source {
  const char *path;
  FILE *f;
  bool regular;        // a regular file: its size is known up front
  uint64_t file_size;  // if regular
  size_t header_len;   // bytes of the header dict, including its padding and '\n'
  size_t data_offset;  // preamble + header
} npy_source;

static bool read_exact(FILE *f, void *buf, size_t n, size_t *got) {
  *got = fread(buf, 1, n, f);
  return *got == n;
}

// Step 1: open path; directories are refused (fopen succeeds on them).
static bool open_source(npy_source *src, const char *path, char *err, size_t err_len) {
  src->path = path;
  src->f = fopen(path, "rb");
  if (!src->f) return fail(err, err_len, path, "cannot open: %s", strerror(errno));
  struct stat st;
  if (fstat(fileno(src->f), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return fail(err, err_len, path, "is a directory, not a .npy file");
    src->regular = S_ISREG(st.st_mode);
    src->file_size = src->regular && st.st_size > 0 ? (uint64_t)st.st_size : 0;
  }
  return true;
}

// Step 2: magic, version and header length (the header is at most kMaxHeaderLen bytes,
// so data_offset = 8 + 2|4 + header_len cannot overflow).
static bool read_preamble(npy_source *src, char *err, size_t err_len) {
  const char *path = src->path;
  unsigned char pre[12];
  size_t got;
  if (!read_exact(src->f, pre, 8, &got)) {
    if (ferror(src->f)) return fail(err, err_len, path, "read error: %s", strerror(errno));
    if (got < 6 || memcmp(pre, "\x93NUMPY", 6) != 0)
      return fail(err, err_len, path, "not a .npy file (%zu bytes, no \\x93NUMPY magic)", got);
    return fail(err, err_len, path, "truncated .npy preamble (%zu of 8 bytes)", got);
  }
  if (memcmp(pre, "\x93NUMPY", 6) != 0)
    return fail(err, err_len, path, "not a .npy file (bad magic; expected \\x93NUMPY)");
  const int major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fail(err, err_len, path,
                "unsupported .npy format version %d.%d (supported: 1.0, 2.0, 3.0)", major, minor);
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (!read_exact(src->f, pre + 8, len_bytes, &got))
    return fail(err, err_len, path, "truncated .npy preamble (header length missing)");
  uint32_t header_len = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
  if (major != 1) header_len |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
  if (header_len == 0 || header_len > kMaxHeaderLen)
    return fail(err, err_len, path, "implausible .npy header length %lu",
                (unsigned long)header_len);
  src->header_len = header_len;
  src->data_offset = 8 + len_bytes + header_len;
  return true;
}

// Step 3: the header text, NUL-terminated; it must hold no NUL and end in '\n'.
static char *read_header_text(const npy_source *src, char *err, size_t err_len) {
  const size_t n = src->header_len;
  char *header = malloc(n + 1);
  if (!header) return fail(err, err_len, src->path, "out of memory reading the header"), NULL;
  size_t got;
  if (!read_exact(src->f, header, n, &got)) {
    fail(err, err_len, src->path, "truncated header (%zu of %zu bytes)", got, n);
    free(header);
    return NULL;
  }
  header[n] = '\0';
  const char *why = memchr(header, '\0', n) ? "contains a NUL byte"
                    : header[n - 1] != '\n' ? "does not end with a newline"
                                            : NULL;
  if (!why) return header;
  fail(err, err_len, src->path, "malformed header: %s", why);
  free(header);
  return NULL;
}

// Step 4: the dict is well formed and describes a little-endian float32 C-order array.
static bool parse_and_check_header(const npy_source *src, const char *header, parser *p, char *err,
                                   size_t err_len) {
  const char *path = src->path;
  const bool allow_f2 = p->allow_f2;
  *p = (parser){.s = header, .end = header + src->header_len, .allow_f2 = allow_f2, .elem = 4};
  if (!parse_header(p)) return fail(err, err_len, path, "%s", p->msg);
  if (allow_f2 && strcmp(p->descr, "<f2") == 0) {
    p->elem = 2;
  } else if (allow_f2 && (strcmp(p->descr, "<V2") == 0 || strcmp(p->descr, "|V2") == 0)) {
    p->elem = 2, p->bf16 = true;  // ml_dtypes' bfloat16, saved as 2-byte void elements
  } else if (float_order_unstated(p->descr) && (allow_f2 || p->descr[2] == '4')) {
    if (p->descr[1] == 'V')  // bfloat16 bits: astype('<V2') would not convert a float array
      return fail(err, err_len, path,
                  "dtype '%s' does not state little-endian byte order; expected '<V2' "
                  "(bfloat16 as ml_dtypes saves it)",
                  p->descr);
    return fail(err, err_len, path,
                "dtype '%s' does not state little-endian byte order; expected '<%s' (save with "
                "a.astype('<%s'))",
                p->descr, p->descr + 1, p->descr + 1);
  } else if (allow_f2 && strcmp(p->descr, "<f4") != 0) {
    if (strcmp(p->descr, ">f4") == 0 || strcmp(p->descr, ">f2") == 0 ||
        strcmp(p->descr, ">V2") == 0)
      return fail(err, err_len, path,
                  "dtype is big-endian ('%s'); expected little-endian float32 '<f4', float16 "
                  "'<f2' or bfloat16 '<V2' (convert with a.astype('<f4'))",
                  p->descr);
    return fail(err, err_len, path,
                "dtype is %s ('%s'); expected float32 '<f4', float16 '<f2' or bfloat16 "
                "'<V2' (ml_dtypes; convert with a.astype(np.float32))",
                dtype_name(p->descr), p->descr);
  } else if (strcmp(p->descr, "<f4") != 0) {
    if (strcmp(p->descr, ">f4") == 0)
      return fail(err, err_len, path,
                  "dtype is big-endian float32 ('>f4'); expected little-endian float32 '<f4' "
                  "(convert with a.astype('<f4'))");
    return fail(err, err_len, path,
                "dtype is %s ('%s'); expected float32 '<f4' (convert with a.astype(np.float32))",
                dtype_name(p->descr), p->descr);
  }
  if (p->fortran)
    return fail(err, err_len, path,
                "array is in Fortran (column-major) order; expected C order "
                "(save np.ascontiguousarray(a))");
  return true;
}

// The most data bytes a read from a pipe or device may announce (npy_set_stream_limit).
static uint64_t g_stream_limit;

void npy_set_stream_limit(uint64_t bytes) {
  g_stream_limit = bytes;
}

// Step 5: count = prod(shape) and bytes = elem·count (elem 4, or 2 for '<f2'), refused
// when 4·count > SIZE_MAX; then,
// for a regular file, the data must be exactly bytes long (checked before any big malloc).
static bool data_size(const npy_source *src, const parser *p, size_t *count, size_t *bytes,
                      char *err, size_t err_len) {
  char sb[kShapeStrLen];
  size_t n = 1;
  for (int i = 0; i < p->ndim; i++) {
    const uint64_t d = (uint64_t)p->shape[i];
    if (d > SIZE_MAX || (d != 0 && n > SIZE_MAX / 4 / (size_t)d))
      return fail(err, err_len, src->path, "shape %s is too large (byte count overflows size_t)",
                  npy_shape_string(p->ndim, p->shape, sb, sizeof sb));
    n *= (size_t)d;
  }
  *count = n;
  *bytes = n * p->elem;  // <= SIZE_MAX by the loop's bound
  if (!src->regular && g_stream_limit && (uint64_t)*bytes > g_stream_limit)
    return fail(err, err_len, src->path,
                "shape %s needs %zu bytes of data from a pipe or device, more than this "
                "command may hold (%llu bytes); save the array to a file",
                npy_shape_string(p->ndim, p->shape, sb, sizeof sb), *bytes,
                (unsigned long long)g_stream_limit);
  if (src->regular) {
    const uint64_t have = src->file_size > src->data_offset ? src->file_size - src->data_offset : 0;
    if (have < *bytes)
      return fail(err, err_len, src->path,
                  "truncated data: shape %s needs %zu bytes of data, file has %llu",
                  npy_shape_string(p->ndim, p->shape, sb, sizeof sb), *bytes,
                  (unsigned long long)have);
  }
  return true;
}

// Step 6: the data. A regular file's size was checked, so its buffer is allocated at
// once; from a pipe or device the buffer grows with what actually arrives (at most
// doubling), so a lying header cannot make us allocate more than twice the input.
static void *read_data(const npy_source *src, const parser *p, size_t bytes, char *err,
                       size_t err_len) {
  const char *path = src->path;
  char sb[kShapeStrLen];
  size_t cap = src->regular || bytes < (1u << 20) ? bytes : (1u << 20), got = 0;
  unsigned char *data = malloc(cap ? cap : 1);
  if (!data) return fail(err, err_len, path, "out of memory (%zu bytes of data)", cap), NULL;
  for (;;) {
    got += fread(data + got, 1, cap - got, src->f);
    if (got == bytes || got < cap) break;  // done, or end of input / error
    const size_t next = cap > bytes / 2 ? bytes : 2 * cap;
    unsigned char *bigger = realloc(data, next);
    if (!bigger) {
      free(data);
      return fail(err, err_len, path, "out of memory (%zu bytes of data)", next), NULL;
    }
    data = bigger;
    cap = next;
  }
  if (got == bytes) return data;
  if (ferror(src->f))
    fail(err, err_len, path, "read error: %s", strerror(errno));
  else
    fail(err, err_len, path, "truncated data: shape %s needs %zu bytes of data, file has %zu",
         npy_shape_string(p->ndim, p->shape, sb, sizeof sb), bytes, got);
  free(data);
  return NULL;
}

// Step 7: nothing may follow the data. Counting stops after kMaxTrailing bytes, so an
// endless stream (a device, `yes |`) ends the read too.
enum { kMaxTrailing = 1 << 20 };

static bool check_no_trailing(const npy_source *src, size_t bytes, char *err, size_t err_len) {
  unsigned char extra[4096];
  size_t n_extra = 0, got;
  while (n_extra <= kMaxTrailing && (got = fread(extra, 1, sizeof extra, src->f)) > 0)
    n_extra += got;
  if (ferror(src->f)) return fail(err, err_len, src->path, "read error: %s", strerror(errno));
  if (n_extra > kMaxTrailing)
    return fail(err, err_len, src->path,
                "trailing garbage: more than %d unexpected bytes after the %zu bytes of data",
                kMaxTrailing, bytes);
  if (n_extra)
    return fail(err, err_len, src->path,
                "trailing garbage: %zu unexpected bytes after the %zu bytes of data", n_extra,
                bytes);
  return true;
}

static bool read_npy(const char *path, bool allow_f2, npy_array *out, char *err, size_t err_len) {
  if (!out) return fail(err, err_len, path ? path : "(null)", "no output array");
  memset(out, 0, sizeof *out);
  if (!path) return fail(err, err_len, "(null)", "no path");
  npy_source src = {0};
  char *header = NULL;
  void *data = NULL;
  parser p = {.allow_f2 = allow_f2};
  size_t count = 0, bytes = 0;
  const bool ok = open_source(&src, path, err, err_len) && read_preamble(&src, err, err_len) &&
                  (header = read_header_text(&src, err, err_len)) != NULL &&
                  parse_and_check_header(&src, header, &p, err, err_len) &&
                  data_size(&src, &p, &count, &bytes, err, err_len) &&
                  (data = read_data(&src, &p, bytes, err, err_len)) != NULL &&
                  check_no_trailing(&src, bytes, err, err_len);
  free(header);
  if (src.f) fclose(src.f);
  if (!ok) {
    free(data);
    return false;
  }
  out->ndim = p.ndim;
  memcpy(out->shape, p.shape, sizeof p.shape);
  out->count = count;
  if (p.elem == 2) {
    if (!host_is_little_endian()) byteswap16(data, count);
    out->half = data;
    out->bf16 = p.bf16;
  } else {
    if (!host_is_little_endian()) byteswap32(data, count);
    out->data = data;
  }
  return true;
}

bool npy_read_f32(const char *path, npy_array *out, char *err, size_t err_len) {
  return read_npy(path, false, out, err, err_len);
}

bool npy_read_f32_or_f16(const char *path, npy_array *out, char *err, size_t err_len) {
  return read_npy(path, true, out, err, err_len);
}

// ── writer ──────────────────────────────────────────────────────────────────────────
// The file policy (what may be replaced, the temporary, fsync, rename, signals) is
// fileio.c's; this side only builds the header and the little-endian data.

// A file's contents: the header (head[0 .. head_len)) and the little-endian data.
typedef struct npy_encoded {
  unsigned char head[1024 + 64 + 16];
  attn_buf parts[2];
  void *swapped;  // the byte-swapped copy on a big-endian host (freed by encoded_free)
} npy_encoded;

static void encoded_free(npy_encoded *e) {
  free(e->swapped);
  e->swapped = NULL;
}

// data (count = product of shape, elem bytes each: 4 or 2) under the header descr, into
// e->parts; path names the file in errors.
static bool encode_npy(const char *path, const void *data, size_t elem, const char *descr, int ndim,
                       const int64_t *shape, npy_encoded *e, char *err, size_t err_len) {
  e->swapped = NULL;
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

  // Header: dict, space padding, '\n', such that 10 + header_len is a multiple of 64. Any
  // shape (NPY_MAX_DIMS dimensions, no sign: checked above) fits sb and the dict fits
  // dict, so neither is cut short.
  char dict[1024], sb[kShapeStrLen];
  const int dn =
      snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
               npy_shape_string(ndim, shape, sb, sizeof sb));
  if (dn < 0 || (size_t)dn >= sizeof dict)
    return fail(err, err_len, path, "shape too long for the header");
  const size_t total = ((10 + (size_t)dn + 1 + 63) / 64) * 64;
  const size_t header_len = total - 10;
  unsigned char *head = e->head;
  memcpy(head, "\x93NUMPY\x01\x00", 8);
  head[8] = (unsigned char)(header_len & 0xff);
  head[9] = (unsigned char)(header_len >> 8);
  memcpy(head + 10, dict, (size_t)dn);
  memset(head + 10 + dn, ' ', header_len - (size_t)dn - 1);
  head[total - 1] = '\n';

  const void *src = data;
  if (count && !host_is_little_endian()) {
    e->swapped = malloc(count * elem);
    if (!e->swapped) return fail(err, err_len, path, "out of memory");
    memcpy(e->swapped, data, count * elem);
    if (elem == 4)
      byteswap32(e->swapped, count);
    else
      byteswap16(e->swapped, count);
    src = e->swapped;
  }
  e->parts[0] = (attn_buf){head, total};
  e->parts[1] = (attn_buf){src, count * elem};
  return true;
}

static bool write_npy(const char *path, const void *data, size_t elem, const char *descr, int ndim,
                      const int64_t *shape, char *err, size_t err_len) {
  if (!path || !*path) return fail(err, err_len, "(null)", "no output path");
  npy_encoded e;
  if (!encode_npy(path, data, elem, descr, ndim, shape, &e, err, err_len)) return false;
  const bool ok = attn_write_file_atomic(path, e.parts, 2, err, err_len);
  encoded_free(&e);
  return ok;
}

bool npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, char *err,
                   size_t err_len) {
  return write_npy(path, data, 4, "<f4", ndim, shape, err, err_len);
}

bool npy_write_half(const char *path, const uint16_t *data, bool bf16, int ndim,
                    const int64_t *shape, char *err, size_t err_len) {
  return write_npy(path, data, 2, bf16 ? "<V2" : "<f2", ndim, shape, err, err_len);
}

bool npy_write_set(const npy_out *set, size_t n, char *err, size_t err_len) {
  if (n > ATTN_OUTPUT_SET_MAX)
    return fail(err, err_len, "(set)", "more than %d arrays in one set", ATTN_OUTPUT_SET_MAX);
  npy_encoded e[ATTN_OUTPUT_SET_MAX];
  const attn_output *outs[ATTN_OUTPUT_SET_MAX] = {0};
  const attn_buf *parts[ATTN_OUTPUT_SET_MAX] = {0};
  size_t n_parts[ATTN_OUTPUT_SET_MAX] = {0}, ready = 0;
  bool ok = true;
  for (; ready < n && ok; ready++) {
    const npy_out *a = &set[ready];
    ok = a->f32 ? encode_npy(a->out->target, a->f32, 4, "<f4", a->ndim, a->shape, &e[ready], err,
                             err_len)
                : encode_npy(a->out->target, a->half, 2, a->bf16 ? "<V2" : "<f2", a->ndim, a->shape,
                             &e[ready], err, err_len);
    outs[ready] = a->out, parts[ready] = e[ready].parts, n_parts[ready] = 2;
  }
  if (ok) ok = attn_output_write_set(outs, parts, n_parts, n, err, err_len);
  for (size_t i = 0; i < ready; i++) encoded_free(&e[i]);
  return ok;
}
