// SPDX-License-Identifier: MIT
// harness/tunefile: the shape classes at their boundaries, format → parse round trip,
// attn_tune_matches naming the first differing identity field, attn_tune_set adding and
// replacing, the default path under XDG_CONFIG_HOME / HOME, and lookups through the active
// file (attn_tune_setup) including "none".
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "tune/tunefile.h"

static void test_classes(void) {
  static const struct {
    int64_t sq, d;
    const char *cls;
  } cases[] = {
      {1, 64, "decode d64"},         {16, 64, "decode d64"},     {17, 64, "prefill d64"},
      {2048, 1, "prefill d64"},      {2048, 65, "prefill d128"}, {2048, 128, "prefill d128"},
      {2048, 129, "prefill dlarge"}, {1, 256, "decode dlarge"},  {16, 65, "decode d128"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const attn_problem p = attn_problem_make(1, 2, 2, cases[i].sq, 64, cases[i].d, 8, false);
    char cls[32];
    attn_tune_class(&p, cls, sizeof cls);
    EXPECT(!strcmp(cls, cases[i].cls), "Sq %lld D %lld: class '%s', expected '%s'",
           (long long)cases[i].sq, (long long)cases[i].d, cls, cases[i].cls);
  }
}

static bool write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  const bool ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

static void test_round_trip(const char *dir) {
  static attn_tune_file f, g;
  memset(&f, 0, sizeof f);
  attn_tune_machine_here(&f.machine);
  EXPECT(attn_tune_set(&f, "flash__avx512", "prefill d64", 128, 96), "set 1");
  EXPECT(attn_tune_set(&f, "tiled__avx2", "decode d128", 6, 384), "set 2");
  EXPECT(attn_tune_set(&f, "flash__avx512", "prefill d64", 256, 192), "replace");
  EXPECT(f.count == 2, "replacing keeps 2 entries (got %zu)", f.count);
  EXPECT(attn_tune_set_variant(&f, "flash__avx512", "prefill d64", "12x32/8x32", 4), "variant");
  EXPECT(!attn_tune_set_variant(&f, "flash__avx512", "decode d64", "12x32/8x32", 4),
         "set_variant needs an existing entry");
  char *text = attn_tune_format(&f);
  EXPECT(text != NULL, "format");
  char path[512];
  snprintf(path, sizeof path, "%s/rt.ini", dir);
  EXPECT(text && write_text(path, text), "write %s", path);
  free(text);
  char err[512];
  EXPECT(attn_tune_parse(path, &g, err, sizeof err), "parse back: %s", err);
  EXPECT(g.count == 2 && !strcmp(g.entries[0].kernel, "flash__avx512") &&
             !strcmp(g.entries[0].cls, "prefill d64") && g.entries[0].tile_q == 256 &&
             g.entries[0].tile_kv == 192 && !strcmp(g.entries[1].kernel, "tiled__avx2") &&
             !strcmp(g.entries[1].cls, "decode d128") && g.entries[1].tile_q == 6 &&
             g.entries[1].tile_kv == 384,
         "entries survive the round trip (%zu)", g.count);
  EXPECT(!strcmp(g.entries[0].regtile, "12x32/8x32") && g.entries[0].kv_split == 4 &&
             !g.entries[1].regtile[0] && g.entries[1].kv_split == 0,
         "regtile / kv_split survive the round trip ('%s' %d, '%s' %d)", g.entries[0].regtile,
         g.entries[0].kv_split, g.entries[1].regtile, g.entries[1].kv_split);
  EXPECT(!memcmp(&g.machine, &f.machine, sizeof f.machine), "[machine] survives the round trip");
  char why[512];
  EXPECT(attn_tune_matches(&g, why, sizeof why), "this machine's file matches: %s", why);

  // Each identity field, changed alone, is named.
  static const char *const fields[] = {"vendor", "family", "model", "stepping", "ISA", "build"};
  for (int i = 0; i < 6; i++) {
    attn_tune_file h = g;
    switch (i) {
      case 0:
        snprintf(h.machine.vendor, sizeof h.machine.vendor, "OtherVendor");
        break;
      case 1:
        h.machine.family++;
        break;
      case 2:
        h.machine.model++;
        break;
      case 3:
        h.machine.stepping++;
        break;
      case 4:
        snprintf(h.machine.isa, sizeof h.machine.isa, "none");
        break;
      default:
        snprintf(h.machine.build, sizeof h.machine.build, "other");
        break;
    }
    why[0] = '\0';
    EXPECT(!attn_tune_matches(&h, why, sizeof why), "changed %s: no match", fields[i]);
    char want[32];
    snprintf(want, sizeof want, "written %s %s", i == 5 ? "by" : "for",
             i == 5 ? "build" : fields[i]);
    EXPECT(strstr(why, want) != NULL, "changed %s: reason '%s' names it", fields[i], why);
  }

  // The active file: lookups by kernel and class; "none" turns it off.
  char env[600];
  snprintf(env, sizeof env, "%s", path);
  setenv("ATTNBENCH_TUNE_FILE", env, 1);
  EXPECT(attn_tune_setup("test", NULL) == 0, "setup from ATTNBENCH_TUNE_FILE");
  const attn_kernel *k = attn_kernel_find("flash__avx512");
  const attn_problem pre = attn_problem_make(1, 8, 8, 512, 512, 64, 64, false);
  const attn_problem dec = attn_problem_make(1, 8, 8, 1, 512, 64, 64, false);
  int q = 0, kv = 0;
  EXPECT(k && attn_tune_lookup(k, &pre, &q, &kv) && q == 256 && kv == 192,
         "lookup prefill d64: %d %d", q, kv);
  EXPECT(!k || !attn_tune_lookup(k, &dec, &q, &kv), "no entry for decode d64");
  EXPECT(!attn_tune_lookup(NULL, &pre, &q, &kv), "no kernel, no lookup");
  char rt[32] = "?";
  int split = -1;
  EXPECT(k && attn_tune_lookup_variant(k, &pre, rt, sizeof rt, &split) &&
             !strcmp(rt, "12x32/8x32") && split == 4,
         "lookup_variant prefill d64: '%s' %d", rt, split);
  EXPECT(!k || !attn_tune_lookup_variant(k, &dec, rt, sizeof rt, &split), "no variant for decode");
  char desc[512];
  attn_tune_describe(desc, sizeof desc);
  EXPECT(strstr(desc, path) == desc &&
             strstr(desc,
                    "flash__avx512 prefill d64 tile_q 256 tile_kv 192 regtile 12x32/8x32 "
                    "kv_split 4"),
         "describe: %s", desc);
  EXPECT(attn_tune_setup("test", "none") == 0, "--tune-file none");
  EXPECT(!k || !attn_tune_lookup(k, &pre, &q, &kv), "none: no lookups");
  EXPECT(!strcmp(attn_tune_describe(desc, sizeof desc), "built-in"), "none: built-in");
  unsetenv("ATTNBENCH_TUNE_FILE");
}

static void test_default_path(void) {
  char buf[512];
  attn_tune_machine m;
  attn_tune_machine_here(&m);
  char want[512];
  setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
  snprintf(want, sizeof want, "/x/cfg/attnbench/tuning-%s-%d-%d-%d.ini", m.vendor, m.family,
           m.model, m.stepping);
  EXPECT(attn_tune_default_path(buf, sizeof buf) && !strcmp(buf, want), "XDG: %s", buf);
  unsetenv("XDG_CONFIG_HOME");
  setenv("HOME", "/h", 1);
  snprintf(want, sizeof want, "/h/.config/attnbench/tuning-%s-%d-%d-%d.ini", m.vendor, m.family,
           m.model, m.stepping);
  EXPECT(attn_tune_default_path(buf, sizeof buf) && !strcmp(buf, want), "HOME: %s", buf);
  unsetenv("HOME");
  EXPECT(!attn_tune_default_path(buf, sizeof buf), "neither set: no default");
}

int main(void) {
  char dir[] = "/tmp/attnbench-tunefile-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_classes();
  test_round_trip(dir);
  test_default_path();
  char path[600];
  snprintf(path, sizeof path, "%s/rt.ini", dir);
  unlink(path);
  rmdir(dir);
  return test_finish("test_tunefile");
}
