// SPDX-License-Identifier: MIT
// regtile_args.h — the values of --regtile / regtile = and --kv-split / kv_split = (the
// command line, ATTNBENCH_REGTILE / ATTNBENCH_KV_SPLIT, sweep configs): header-only, so
// that the config parser builds without the rest of the harness (its tests, the fuzzer).
#pragma once

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"

// ATTNBENCH_KV_SPLIT's (and a config's) value: −1 when value is NULL or empty, else a whole
// number 0..ATTN_MAX_KV_SPLIT. Returns 0, or −1 with "NAME=value: expected ..." in err.
static inline int attn_placement_parse_kv_split(const char *name, const char *value, int *kv_split,
                                                char *err, size_t err_len) {
  *kv_split = -1;
  if (!value || !*value) return 0;
  char *end;
  errno = 0;
  const long v = strtol(value, &end, 10);
  if (!isdigit((unsigned char)value[0]) || errno || *end || v < 0 || v > ATTN_MAX_KV_SPLIT) {
    if (err && err_len)
      snprintf(err, err_len, "%s=%s: expected a whole number in 0..%d (0 = the kernel's rule)",
               name, value, ATTN_MAX_KV_SPLIT);
    return -1;
  }
  *kv_split = (int)v;
  return 0;
}

// True if value can name a register-tile variant: 1..31 characters of [A-Za-z0-9/_.-]
// (a name like "8x48/6x64" or an index). ATTNBENCH_REGTILE must be one (checked up front).
static inline bool attn_placement_regtile_syntax(const char *value) {
  if (!value || !*value || strlen(value) > 31) return false;
  for (const char *c = value; *c; c++)
    if (!(isalnum((unsigned char)*c) || *c == '/' || *c == '_' || *c == '.' || *c == '-'))
      return false;
  return true;
}

// The index of k's variant named value, or given as its index ("0".."N−1"); −1 with
// "<what> 'value': kernel K has no such register-tile variant (0..N−1: names)" in err.
static inline int attn_placement_regtile_index(const attn_kernel *k, const char *value,
                                               const char *what, char *err, size_t err_len) {
  const int n = attn_kernel_regtile_count(k);
  int i = attn_kernel_regtile_find(k, value);
  if (i < 0 && isdigit((unsigned char)value[0])) {
    char *end;
    const long v = strtol(value, &end, 10);
    if (!*end && v >= 0 && v < n) i = (int)v;
  }
  if (i >= 0) return i;
  if (err && err_len) {
    int w =
        snprintf(err, err_len, "%s '%s': kernel %s has no such register-tile variant (0..%d:", what,
                 value, k->name, n - 1);
    for (int j = 0; j < n && w >= 0 && (size_t)w < err_len; j++)
      w += snprintf(err + w, err_len - (size_t)w, " %s", attn_kernel_regtile(k, j).name);
    if (w >= 0 && (size_t)w < err_len) snprintf(err + w, err_len - (size_t)w, ")");
  }
  return -1;
}
