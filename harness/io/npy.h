// SPDX-License-Identifier: MIT
//
// npy.h — strict reader and atomic writer for NumPy .npy files holding float32 arrays.
// Depends only on libc (and POSIX for fsync/rename), so tests can use it.
//
// The contract (docs/cli.md):
//   * read: format versions 1.0, 2.0 and 3.0; the header must be a dict with exactly
//     the keys 'descr' ('<f4': little-endian float32), 'fortran_order' (False) and
//     'shape' (a tuple of non-negative ints, at most NPY_MAX_DIMS); the data must be
//     exactly prod(shape)·4 bytes, with nothing after it. Anything else is an error
//     whose message names the file and what is wrong (the dtype found, the byte counts
//     of a truncation, ...).
//   * write: format 1.0 ('<f4', C order), replacing <path> atomically under fileio.h's
//     output contract (only regular files or symlinks to them are replaced; a unique
//     temporary "<path>.tmp.<pid>.<random>" is fsync'ed and renamed over it); on any
//     error the temporary is removed and <path> untouched.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/fileio.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { NPY_MAX_DIMS = 32 };

typedef struct npy_array {
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  size_t count;    // product of shape (1 for a 0-d array)
  float *data;     // count floats, host byte order; free with npy_free (NULL if half)
  uint16_t *half;  // count 16-bit values (npy_read_f32_or_f16 only), else NULL: IEEE binary16
                   // ('<f2'), or bfloat16 bits when bf16 is set
  bool bf16;       // half holds bfloat16 ('<V2' / '|V2': what np.save writes for ml_dtypes'
                   // bfloat16 — 2-byte void elements; view them with .view(ml_dtypes.bfloat16))
} npy_array;

// Reads path into *out (zeroed first). Returns true on success; otherwise false, *out
// holds nothing to free, and err gets "<path>: <reason>".
bool npy_read_f32(const char *path, npy_array *out, char *err, size_t err_len);

// The same, but also accepts '<f2' (little-endian IEEE float16, e.g. a K/V cache) and
// bfloat16 as ml_dtypes saves it ('<V2' or '|V2', little-endian bfloat16 bits): then
// out->half holds the count 16-bit values (host byte order), out->bf16 says which type, and
// out->data is NULL. Every other rule is npy_read_f32's.
bool npy_read_f32_or_f16(const char *path, npy_array *out, char *err, size_t err_len);

// The most data bytes a read from a pipe or device (a source whose size is not known up
// front) may announce in its header; a larger shape is refused before anything is
// allocated ("… more than this command may hold"). 0 (the default): no limit, and the
// buffer grows with what actually arrives. A regular file is checked against its size.
void npy_set_stream_limit(uint64_t bytes);

// Frees a->data (and a->half) and zeroes *a. Safe on a zeroed or already freed array.
void npy_free(npy_array *a);

// Writes data (count = product of shape) to path atomically (see above). ndim may be 0
// (a scalar). Returns true on success; otherwise false and err gets "<path>: <reason>".
bool npy_write_f32(const char *path, const float *data, int ndim, const int64_t *shape, char *err,
                   size_t err_len);

// The same for 16-bit elements: IEEE binary16 ('<f2') or, when bf16, bfloat16 bits written
// with descr '<V2' (as np.save writes ml_dtypes.bfloat16; np.load(f).view(ml_dtypes.bfloat16)).
bool npy_write_half(const char *path, const uint16_t *data, bool bf16, int ndim,
                    const int64_t *shape, char *err, size_t err_len);

// One array of a set written together: float32 (f32), or 16-bit (half: binary16, or
// bfloat16 bits when bf16) when f32 is NULL, to a prepared output.
typedef struct npy_out {
  const attn_output *out;
  const float *f32;
  const uint16_t *half;
  bool bf16;
  int ndim;
  const int64_t *shape;
} npy_out;

// Writes the n arrays (n ≤ ATTN_OUTPUT_SET_MAX) as one set (attn_output_write_set): a
// failure before the renames leaves every target as it was.
bool npy_write_set(const npy_out *set, size_t n, char *err, size_t err_len);

// "(2, 8, 100, 64)"; "()" for 0-d; "(5,)" for 1-d, like NumPy prints shapes.
const char *npy_shape_string(int ndim, const int64_t *shape, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
