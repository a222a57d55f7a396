// SPDX-License-Identifier: MIT
// Fuzz target: the tuning-file parser (attn_tune_parse: the bounded regular-file reader,
// the line reader, inih, the section and key rules) on arbitrary bytes. Invariants checked
// on every input, beyond "no crash, leak, hang or sanitizer report":
//   * the file and the same bytes in memory (attn_tune_parse_text) give the same verdict;
//   * success: at most ATTN_TUNE_MAX_ENTRIES entries, each with a kernel name the
//     registry's rule accepts, a known shape class, tiles in 1..ATTN_MAX_TILE, a valid or
//     empty regtile, kv_split in 0..ATTN_MAX_KV_SPLIT, no (kernel, class) twice; every
//     entry goes through attn_tune_set / attn_tune_set_variant (what the parser accepts,
//     tune can write), and the formatted file parses back to the same machine and entries;
//   * failure: the table is empty and the message is one line "<path>:<line>: <reason>"
//     (the line at most one past the input's last newline) or "<path>: <reason>".
#define _POSIX_C_SOURCE 200809L  // strnlen
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "fuzz_input.h"
#include "tune/tunefile.h"

static bool name_ok(const char *s, size_t max, bool slash) {
  const size_t n = strnlen(s, max + 1);
  if (n == 0 || n > max) return false;
  for (size_t i = 0; i < n; i++) {
    const char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-' || (slash && c == '/')))
      return false;
  }
  return true;
}

static void check_message(const char *path, const char *err, size_t cap, const uint8_t *data,
                          size_t size) {
  const size_t n = strnlen(err, cap), pl = strlen(path);
  if (n == cap) fuzz_fail("error message not terminated");
  if (strchr(err, '\n')) fuzz_fail("error message spans lines: '%s'", err);
  if (strncmp(err, path, pl) != 0 || err[pl] != ':' || n < pl + 3)
    fuzz_fail("error message does not start with the path: '%s'", err);
  if (err[pl + 1] >= '0' && err[pl + 1] <= '9') {
    const long line = strtol(err + pl + 1, NULL, 10);
    size_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
    if (line < 1 || (size_t)line > lines)
      fuzz_fail("error names line %ld of a %zu-line input: '%s'", line, lines, err);
  }
}

static void check_file(const attn_tune_file *f) {
  if (f->count > ATTN_TUNE_MAX_ENTRIES) fuzz_fail("%zu entries", f->count);
  static const char *const classes[] = {"prefill d64", "prefill d128", "prefill dlarge",
                                        "decode d64",  "decode d128",  "decode dlarge"};
  static attn_tune_file again;
  memset(&again, 0, sizeof again);
  again.machine = f->machine;
  char err[512];
  for (size_t i = 0; i < f->count; i++) {
    const attn_tune_entry *e = &f->entries[i];
    if (!name_ok(e->kernel, ATTN_KERNEL_NAME_MAX, false)) fuzz_fail("entry %zu: bad kernel", i);
    bool cls = false;
    for (size_t c = 0; c < 6; c++) cls |= !strcmp(e->cls, classes[c]);
    if (!cls) fuzz_fail("entry %zu: class '%s'", i, e->cls);
    if (e->tile_q < 1 || e->tile_q > ATTN_MAX_TILE || e->tile_kv < 1 || e->tile_kv > ATTN_MAX_TILE)
      fuzz_fail("entry %zu: tiles %d x %d", i, e->tile_q, e->tile_kv);
    if (e->regtile[0] && !name_ok(e->regtile, 31, true)) fuzz_fail("entry %zu: regtile", i);
    if (e->kv_split < 0 || e->kv_split > ATTN_MAX_KV_SPLIT) fuzz_fail("entry %zu: kv_split", i);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(e->kernel, f->entries[j].kernel) && !strcmp(e->cls, f->entries[j].cls))
        fuzz_fail("entries %zu and %zu: the same (kernel, class)", j, i);
    if (!attn_tune_set(&again, e->kernel, e->cls, e->tile_q, e->tile_kv, err, sizeof err) ||
        !attn_tune_set_variant(&again, e->kernel, e->cls, e->regtile, e->kv_split, err, sizeof err))
      fuzz_fail("entry %zu parsed but cannot be set: %s", i, err);
  }
  char *text = attn_tune_format(&again);
  if (!text) return;  // out of memory
  static attn_tune_file back;
  if (!attn_tune_parse_text("formatted", text, strlen(text), &back, err, sizeof err))
    fuzz_fail("the formatted file does not parse back: %s\n%s", err, text);
  free(text);
  if (memcmp(&back.machine, &f->machine, sizeof back.machine) != 0)
    fuzz_fail("[machine] changed in the round trip");
  if (back.count != f->count) fuzz_fail("%zu entries came back of %zu", back.count, f->count);
  for (size_t i = 0; i < f->count; i++)
    if (memcmp(&back.entries[i], &f->entries[i], sizeof back.entries[i]) != 0)
      fuzz_fail("entry %zu changed in the round trip", i);
}

static bool empty(const attn_tune_file *f) {
  static const attn_tune_file zero;
  return memcmp(f, &zero, sizeof *f) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_input_path(data, size);
  if (!path) fuzz_fail("cannot hand the input over");
  static attn_tune_file f, g;
  char err[512], err2[512];
  memset(err, 'x', sizeof err);
  const bool ok = attn_tune_parse(path, &f, NULL, err, sizeof err);
  const bool ok2 = attn_tune_parse_text(path, (const char *)data, size, &g, err2, sizeof err2);
  if (ok != ok2)
    fuzz_fail("file and memory disagree: %d '%s' / %d '%s'", ok, ok ? "" : err, ok2,
              ok2 ? "" : err2);
  if (ok) {
    if (memcmp(&f, &g, sizeof f) != 0) fuzz_fail("file and memory parse differently");
    check_file(&f);
    return 0;
  }
  if (!empty(&f)) fuzz_fail("a failed parse left entries");
  check_message(path, err, sizeof err, data, size);
  if (strcmp(err, err2) != 0) fuzz_fail("file and memory fail differently: '%s' / '%s'", err, err2);
  return 0;
}
