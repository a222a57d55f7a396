// SPDX-License-Identifier: MIT
// The plug-in half of the registry (attn.h "Plug-ins"): attn_registry_add accepts valid
// records after the built-ins, and refuses every defect with a message, all or none.
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "test_util.h"

static int run_zero(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                    const void *v, float *o, void *ws) {
  (void)exec, (void)q, (void)k, (void)v, (void)ws;
  for (size_t i = 0; i < attn_o_elems(p); i++) o[i] = 0.0f;
  return ATTN_OK;
}

#define REC(nm) \
  { .name = nm, .summary = "test", .run = run_zero }

// Adds {recs} as a plug-in and expects rc; on failure also that err contains want and
// the registry kept its size.
static void expect_add(const attn_kernel *const *recs, size_t n, uint32_t abi, uint32_t size,
                       int want_rc, const char *want) {
  const attn_plugin pl = {.abi_version = abi, .record_size = size, .count = n, .kernels = recs};
  const size_t before = attn_kernel_count();
  char err[256] = "";
  const int rc = attn_registry_add(&pl, "test.so", err, sizeof err);
  EXPECT(rc == want_rc, "rc %d, want %d (%s)", rc, want_rc, err);
  if (want_rc != ATTN_OK) {
    EXPECT(attn_kernel_count() == before, "registry changed by a refused plug-in (%s)", want);
    EXPECT(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
    EXPECT(strstr(err, "test.so") != NULL, "message '%s' does not name the plug-in", err);
  }
}

int main(void) {
  const size_t builtins = attn_kernel_count();
  EXPECT(attn_builtin_count() == builtins, "builtin count %zu != %zu", attn_builtin_count(),
         builtins);
  for (size_t i = 0; i < builtins; i++) {
    char err[256];
    EXPECT(attn_kernel_validate(attn_kernel_at(i), err, sizeof err), "built-in invalid: %s", err);
    EXPECT(attn_kernel_origin(attn_kernel_at(i)) == NULL, "built-in has an origin");
  }
  const uint32_t V = ATTN_PLUGIN_ABI_VERSION, S = sizeof(attn_kernel);

  static const attn_kernel good1 = REC("plug_one"), good2 = REC("plug_two");
  static const attn_kernel nullname = REC(NULL), empty = REC(""), space = REC("has space");
  static const attn_kernel norun = {.name = "plug_norun", .summary = "x"};
  static const attn_kernel nosum = {.name = "plug_nosum", .run = run_zero};
  static const attn_kernel badcaps = {
      .name = "plug_caps", .summary = "x", .caps = 1u << 30, .run = run_zero};
  static const attn_kernel badisa = {
      .name = "plug_isa", .summary = "x", .required_isa = 1u << 30, .run = run_zero};
  static const attn_kernel badtile = {
      .name = "plug_tile", .summary = "x", .run = run_zero, .qk_rows = -1};
  static const attn_kernel dup = REC("plug_one");
  // Register-tile variants: NULL array, duplicate names, [0] not the record's tiles, a bad
  // name character, too many.
  static const attn_regtile rts[] = {{"2x4/2x4", 2, 4, 2, 4},
                                     {"4x4/2x4", 4, 4, 2, 4},
                                     {"2x4/2x4", 2, 4, 2, 4},
                                     {"a b", 1, 4, 1, 4}};
#define RT_REC(nm, n, arr)                                                                   \
  {                                                                                          \
    .name = nm, .summary = "x", .run = run_zero, .vec_width = 4, .qk_rows = 2, .qk_cols = 4, \
    .pv_rows = 2, .pv_cols = 4, .regtile_count = n, .regtiles = arr                          \
  }
  static const attn_kernel rt_ok = RT_REC("plug_rt_ok", 2, rts);
  static const attn_kernel rt_null = RT_REC("plug_rt_null", 2, NULL);
  static const attn_kernel rt_dup = RT_REC("plug_rt_dup", 3, rts);
  static const attn_kernel rt_first = RT_REC("plug_rt_first", 1, rts + 1);
  static const attn_kernel rt_char = RT_REC("plug_rt_char", 1, rts + 3);
  static const attn_kernel rt_many = RT_REC("plug_rt_many", ATTN_MAX_REGTILES + 1, rts);
#undef RT_REC
  {
    char err[256];
    EXPECT(attn_kernel_validate(&rt_ok, err, sizeof err), "two variants: %s", err);
    const struct {
      const attn_kernel *k;
      const char *why;
    } bad[] = {{&rt_null, "regtiles is NULL"},
               {&rt_dup, "appears twice"},
               {&rt_first, "differs from the record"},
               {&rt_char, "character outside"},
               {&rt_many, "regtile_count"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      err[0] = '\0';
      EXPECT(!attn_kernel_validate(bad[i].k, err, sizeof err) && strstr(err, bad[i].why),
             "%s: want '%s', got '%s'", bad[i].k->name, bad[i].why, err);
    }
  }
  const attn_kernel *shadow = attn_kernel_at(0);  // a built-in record, same name

  {
    const attn_kernel *r[] = {&good1};
    expect_add(r, 1, V + 1, S, ATTN_ERR_INVALID, "ABI version");
  }
  {
    const attn_kernel *r[] = {&good1};
    expect_add(r, 1, V, S - 4, ATTN_ERR_INVALID, "record size");
  }
  { expect_add(NULL, 1, V, S, ATTN_ERR_INVALID, "no kernels"); }
  {
    const attn_kernel *r[] = {&good1};
    expect_add(r, 0, V, S, ATTN_ERR_INVALID, "no kernels");
  }
  {
    const attn_kernel *r[] = {&good1, NULL};
    expect_add(r, 2, V, S, ATTN_ERR_INVALID, "record 1 is NULL");
  }
  {
    const attn_kernel *r[] = {&good1, &nullname};
    expect_add(r, 2, V, S, ATTN_ERR_INVALID, "NULL name");
  }
  {
    const attn_kernel *r[] = {&empty};
    expect_add(r, 1, V, S, ATTN_ERR_INVALID, "empty name");
  }
  {
    const attn_kernel *r[] = {&space};
    expect_add(r, 1, V, S, ATTN_ERR_INVALID, "character");
  }
  {
    const attn_kernel *r[] = {&norun};
    expect_add(r, 1, V, S, ATTN_ERR_INVALID, "run");
  }
  {
    const attn_kernel *r[] = {&nosum};
    expect_add(r, 1, V, S, ATTN_ERR_INVALID, "summary");
  }
  {
    const attn_kernel *r[] = {&badcaps};
    expect_add(r, 1, V, S, ATTN_ERR_INVALID, "caps");
  }
  {
    const attn_kernel *r[] = {&badisa};
    expect_add(r, 1, V, S, ATTN_ERR_INVALID, "required_isa");
  }
  {
    const attn_kernel *r[] = {&badtile};
    expect_add(r, 1, V, S, ATTN_ERR_INVALID, "tiles");
  }
  {
    const attn_kernel *r[] = {&good1, &dup};
    expect_add(r, 2, V, S, ATTN_ERR_INVALID, "appears twice");
  }
  {
    const attn_kernel *r[] = {&good1, shadow};
    expect_add(r, 2, V, S, ATTN_ERR_INVALID, "shadows the built-in");
  }
  {
    char err[128];
    EXPECT(attn_registry_add(NULL, "test.so", err, sizeof err) == ATTN_ERR_INVALID, "NULL plugin");
    EXPECT(strstr(err, "returned NULL"), "NULL plugin message: %s", err);
  }
  EXPECT(attn_kernel_find("plug_one") == NULL, "a refused record is findable");

  // A good plug-in: after the built-ins, findable, with its origin, callable.
  {
    const attn_kernel *r[] = {&good1, &good2};
    expect_add(r, 2, V, S, ATTN_OK, "");
  }
  EXPECT(attn_kernel_count() == builtins + 2, "count %zu after adding 2", attn_kernel_count());
  EXPECT(attn_kernel_at(builtins) == &good1 && attn_kernel_at(builtins + 1) == &good2, "order");
  EXPECT(attn_kernel_at(builtins + 2) == NULL, "past the end");
  EXPECT(attn_kernel_find("plug_two") == &good2, "find plug_two");
  EXPECT(attn_kernel_origin(&good2) && strcmp(attn_kernel_origin(&good2), "test.so") == 0,
         "origin of plug_two");
  EXPECT(attn_builtin_count() == builtins, "builtin count changed");
  {
    const attn_problem p = attn_problem_make(1, 1, 1, 2, 3, 4, 4, false);
    float q[8] = {1}, k[12] = {1}, v[12] = {1}, o[8] = {5};
    char err[128];
    EXPECT(attn_kernel_call(attn_kernel_find("plug_one"), &p, NULL, q, k, v, o, err, sizeof err) ==
               ATTN_OK,
           "call: %s", err);
    EXPECT(o[0] == 0.0f, "the plug-in's run was not called");
  }
  // A second plug-in may not reuse the first one's names.
  {
    const attn_kernel *r[] = {&dup};
    expect_add(r, 1, V, S, ATTN_ERR_INVALID, "already registered by plug-in test.so");
  }
  EXPECT(attn_kernel_count() == builtins + 2, "count changed by a refused duplicate");

  return test_finish("test_registry");
}
