// SPDX-License-Identifier: MIT
// Fuzz target: the validation of a kernel record a plug-in registers (attn_kernel_validate,
// kernels/core/registry.c; attn_registry_add calls it for every record before anything is
// registered), on records built from arbitrary bytes — no dlopen. The bytes give the
// record's name (NULL, or any bytes up to a NUL), summary and run (NULL or not), the ISA
// and capability bits, the register tile, and 0..ATTN_MAX_REGTILES + 2 variants each with
// its own name and tiles (an array of exactly regtile_count entries, so a read past it
// is an ASan report). Invariants checked on every input, beyond "no crash or report":
//   * refusal: a non-empty one-line message;
//   * acceptance: an empty message; the name is 1..ATTN_KERNEL_NAME_MAX characters of
//     [A-Za-z0-9_.-]; summary and run are set; the tiles are >= 0; the variants are
//     1..ATTN_MAX_REGTILES, found by name at their own index; and what validation
//     accepts, tune can write: every variant's tiles give candidate tiles in
//     1..ATTN_MAX_TILE (attn_tune_round_tile), and (name, variant, tiles) go through
//     attn_tune_set / attn_tune_set_variant and format to a file that parses back (for
//     a name no built-in kernel has: attn_registry_add refuses the others).
#define _POSIX_C_SOURCE 200809L  // strnlen
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "fuzz_input.h"
#include "tune/tunefile.h"

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static uint8_t u8(reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}

static uint32_t u32(reader *r) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v = v << 8 | u8(r);
  return v;
}

// Mostly small values (the interesting edges), sometimes any 32-bit value.
static int tile(reader *r) {
  const uint8_t k = u8(r);
  if (k < 200) return k % 64;
  if (k < 230) return (int)(u32(r) % ((1u << 22) + 1));
  return (int)u32(r);
}

// A string of the input's bytes up to a NUL or the length byte's count (NULL on 0xff);
// malloc'ed, NUL-terminated.
static char *str(reader *r) {
  const uint8_t len = u8(r);
  if (len == 0xff) return NULL;
  const size_t n = len % 80;
  char *s = malloc(n + 1);
  if (!s) return NULL;
  size_t i = 0;
  for (; i < n && r->n; i++) s[i] = (char)u8(r);
  s[i] = '\0';
  return s;
}

static int dummy_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                     const void *v, float *o, void *ws) {
  (void)p, (void)exec, (void)q, (void)k, (void)v, (void)o, (void)ws;
  return ATTN_OK;
}

static bool name_ok(const char *s, size_t max, bool slash) {
  const size_t n = strlen(s);
  if (n == 0 || n > max) return false;
  for (size_t i = 0; i < n; i++) {
    const char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-' || (slash && c == '/')))
      return false;
  }
  return true;
}

static void check_accepted(const attn_kernel *k) {
  if (!k->name || !name_ok(k->name, ATTN_KERNEL_NAME_MAX, false)) fuzz_fail("accepted a bad name");
  if (!k->summary || !k->run) fuzz_fail("accepted a NULL summary or run");
  if (k->qk_rows < 0 || k->qk_cols < 0 || k->pv_rows < 0 || k->pv_cols < 0 || k->vec_width < 0)
    fuzz_fail("accepted a negative tile");
  const int nrt = attn_kernel_regtile_count(k);
  if (nrt < 1 || nrt > ATTN_MAX_REGTILES) fuzz_fail("%d variants", nrt);
  // A record named like a built-in kernel never registers (attn_registry_add refuses it as
  // shadowing), and the tuning file's entries of that name are the built-in's.
  if (attn_kernel_find(k->name)) return;
  static attn_tune_file f;
  memset(&f, 0, sizeof f);
  attn_tune_machine_here(&f.machine);
  static const char *const classes[] = {"prefill d64", "decode d128",   "prefill dlarge",
                                        "decode d64",  "decode dlarge", "prefill d128"};
  char err[512];
  for (int i = 0; i < nrt; i++) {
    const attn_regtile rt = attn_kernel_regtile(k, i);
    if (!rt.name || !name_ok(rt.name, 31, true)) fuzz_fail("variant %d: bad name", i);
    if (attn_kernel_regtile_find(k, rt.name) != i) fuzz_fail("variant %d not found by name", i);
    // tune's candidates: rows = the larger of the Q·Kᵀ and P·V rows (8 when none), columns
    // the Q·Kᵀ columns (32 when none), around any rule tile, capped by any problem size.
    const int sq = rt.qk_rows > rt.pv_rows ? rt.qk_rows : rt.pv_rows;
    const int step_q = sq > 0 ? sq : 8, step_kv = rt.qk_cols > 0 ? rt.qk_cols : 32;
    static const int64_t probes[] = {1, 64, 2048, 1 << 20, (int64_t)1 << 40};
    int tq = 1, tkv = 1;
    for (size_t a = 0; a < 5; a++)
      for (size_t b = 0; b < 5; b++) {
        tq = attn_tune_round_tile(probes[a], step_q, probes[b]);
        tkv = attn_tune_round_tile(probes[a], step_kv, probes[b]);
        if (tq < 1 || tq > ATTN_MAX_TILE || tkv < 1 || tkv > ATTN_MAX_TILE)
          fuzz_fail("variant %d (%d, %d): candidate tiles %d x %d", i, step_q, step_kv, tq, tkv);
      }
    const char *cls = classes[i % 6];
    if (!attn_tune_set(&f, k->name, cls, tq, tkv, err, sizeof err) ||
        !attn_tune_set_variant(&f, k->name, cls, k->regtile_count > 0 ? rt.name : NULL,
                               i % 2 ? ATTN_MAX_KV_SPLIT : 0, err, sizeof err))
      fuzz_fail("an accepted record cannot be written to a tuning file: %s", err);
  }
  char *text = attn_tune_format(&f);
  if (!text) return;
  static attn_tune_file back;
  // (The regtile names are checked against the registry only for registered kernels; this
  // record is not registered, so only their characters are.)
  if (!attn_tune_parse_text("formatted", text, strlen(text), &back, err, sizeof err))
    fuzz_fail("the tuning file for an accepted record does not parse: %s\n%s", err, text);
  free(text);
  if (back.count != f.count) fuzz_fail("%zu of %zu entries parsed back", back.count, f.count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  attn_kernel k;
  memset(&k, 0, sizeof k);
  char *name = str(&r);
  const uint8_t flags = u8(&r);
  k.name = name;
  k.summary = flags & 1 ? NULL : "fuzzed record";
  k.run = flags & 2 ? NULL : dummy_run;
  k.required_isa = flags & 4 ? u32(&r) : 0;
  k.caps = flags & 8 ? u32(&r) : 0;
  k.vec_width = tile(&r);
  k.qk_rows = tile(&r), k.qk_cols = tile(&r), k.pv_rows = tile(&r), k.pv_cols = tile(&r);
  const uint8_t nrt = u8(&r);
  k.regtile_count = nrt < 240 ? nrt % (ATTN_MAX_REGTILES + 3) : (int)u32(&r);
  const int alloc =
      k.regtile_count > 0 && k.regtile_count <= ATTN_MAX_REGTILES + 2 ? k.regtile_count : 0;
  attn_regtile *rts = alloc ? malloc((size_t)alloc * sizeof *rts) : NULL;
  char *names[ATTN_MAX_REGTILES + 2] = {0};
  for (int i = 0; i < alloc && rts; i++) {
    names[i] = str(&r);
    rts[i].name = names[i];
    const uint8_t same = u8(&r);
    if (i == 0 && same < 200)  // mostly a consistent default variant
      rts[i].qk_rows = k.qk_rows, rts[i].qk_cols = k.qk_cols, rts[i].pv_rows = k.pv_rows,
      rts[i].pv_cols = k.pv_cols;
    else
      rts[i].qk_rows = tile(&r), rts[i].qk_cols = tile(&r), rts[i].pv_rows = tile(&r),
      rts[i].pv_cols = tile(&r);
  }
  // A count the array does not back is only validated when the validator can refuse it
  // without reading the array (count out of range, or a NULL array).
  const bool backed = rts && alloc == k.regtile_count;
  k.regtiles = backed ? rts : NULL;
  if (k.regtile_count > 0 && k.regtile_count <= ATTN_MAX_REGTILES && !backed) k.regtiles = NULL;
  char err[256];
  memset(err, 'x', sizeof err);
  const bool ok = attn_kernel_validate(&k, err, sizeof err);
  const size_t n = strnlen(err, sizeof err);
  if (n == sizeof err) fuzz_fail("message not terminated");
  if (ok) {
    if (n) fuzz_fail("accepted with a message: '%s'", err);
    check_accepted(&k);
  } else {
    if (!n) fuzz_fail("refused without a message");
    if (strchr(err, '\n') || strchr(err, '\r')) fuzz_fail("message spans lines: '%s'", err);
  }
  for (int i = 0; i < alloc; i++) free(names[i]);
  free(rts);
  free(name);
  return 0;
}
