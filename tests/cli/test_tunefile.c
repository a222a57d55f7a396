// SPDX-License-Identifier: MIT
// harness/tunefile: the shape classes at their boundaries, format → parse round trip,
// attn_tune_matches naming the first differing identity field, attn_tune_set adding and
// replacing, the default path under XDG_CONFIG_HOME / HOME, and lookups through the active
// file (attn_tune_setup) including "none". The store's limits: attn_tune_set refuses what
// a file cannot hold (so what it accepts reads back: 64-character kernel names, tiles
// 1..ATTN_MAX_TILE), and attn_tune_parse refuses directories, FIFOs, devices and
// oversized files at once with a message saying what the path is.
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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
  char e[256];
  EXPECT(attn_tune_set(&f, "flash__avx512", "prefill d64", 128, 96, e, sizeof e), "set 1: %s", e);
  EXPECT(attn_tune_set(&f, "tiled__avx2", "decode d128", 6, 384, e, sizeof e), "set 2: %s", e);
  EXPECT(attn_tune_set(&f, "flash__avx512", "prefill d64", 256, 192, e, sizeof e), "replace: %s",
         e);
  EXPECT(f.count == 2, "replacing keeps 2 entries (got %zu)", f.count);
  EXPECT(attn_tune_set_variant(&f, "flash__avx512", "prefill d64", "12x32/8x32", 4, e, sizeof e),
         "variant: %s", e);
  EXPECT(!attn_tune_set_variant(&f, "flash__avx512", "decode d64", "12x32/8x32", 4, e, sizeof e) &&
             strstr(e, "no such entry"),
         "set_variant needs an existing entry: %s", e);
  char *text = attn_tune_format(&f);
  EXPECT(text != NULL, "format");
  char path[512];
  snprintf(path, sizeof path, "%s/rt.ini", dir);
  EXPECT(text && write_text(path, text), "write %s", path);
  free(text);
  char err[512];
  EXPECT(attn_tune_parse(path, &g, NULL, err, sizeof err), "parse back: %s", err);
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
  EXPECT(attn_tune_default_path(buf, sizeof buf, NULL, 0) && !strcmp(buf, want), "XDG: %s", buf);
  // An XDG_CONFIG_HOME too long for the path: the reason names it, not "not set".
  char *long_dir = malloc(5001);
  if (long_dir) {
    memset(long_dir, 'a', 5000);
    long_dir[0] = '/', long_dir[5000] = '\0';
    setenv("XDG_CONFIG_HOME", long_dir, 1);
    char why[256] = "";
    char big[ATTN_TUNE_PATH_MAX];
    EXPECT(!attn_tune_default_path(big, sizeof big, why, sizeof why) &&
               strstr(why, "XDG_CONFIG_HOME is 5000 bytes long") && !strstr(why, "not set"),
           "long XDG_CONFIG_HOME: '%s'", why);
    free(long_dir);
  }
  unsetenv("XDG_CONFIG_HOME");
  setenv("HOME", "/h", 1);
  snprintf(want, sizeof want, "/h/.config/attnbench/tuning-%s-%d-%d-%d.ini", m.vendor, m.family,
           m.model, m.stepping);
  EXPECT(attn_tune_default_path(buf, sizeof buf, NULL, 0) && !strcmp(buf, want), "HOME: %s", buf);
  unsetenv("HOME");
  char why[256] = "";
  EXPECT(!attn_tune_default_path(buf, sizeof buf, why, sizeof why) &&
             !strcmp(why, "neither XDG_CONFIG_HOME nor HOME is set"),
         "neither set: no default ('%s')", why);
}

// What attn_tune_set accepts, attn_tune_parse reads back; what it refuses it says why.
static void test_set_limits(const char *dir) {
  static attn_tune_file f, g;
  memset(&f, 0, sizeof f);
  attn_tune_machine_here(&f.machine);
  char e[256] = "";
  char name64[ATTN_KERNEL_NAME_MAX + 1], name65[ATTN_KERNEL_NAME_MAX + 2];
  memset(name64, 'k', ATTN_KERNEL_NAME_MAX);
  name64[ATTN_KERNEL_NAME_MAX] = '\0';
  memset(name65, 'k', ATTN_KERNEL_NAME_MAX + 1);
  name65[ATTN_KERNEL_NAME_MAX + 1] = '\0';
  EXPECT(attn_tune_set(&f, name64, "decode dlarge", ATTN_MAX_TILE, 1, e, sizeof e) &&
             attn_tune_set_variant(&f, name64, "decode dlarge", "abcdefghijklmnopqrstuvwxyz/1234",
                                   ATTN_MAX_KV_SPLIT, e, sizeof e),
         "a %d-character name, the largest tiles, a 31-character variant: %s", ATTN_KERNEL_NAME_MAX,
         e);
  EXPECT(!attn_tune_set(&f, name65, "prefill d64", 8, 8, e, sizeof e) && strstr(e, "1..64"),
         "a 65-character name is refused: %s", e);
  EXPECT(!attn_tune_set(&f, "a b", "prefill d64", 8, 8, e, sizeof e), "a blank in a name");
  EXPECT(!attn_tune_set(&f, "k", "prefill d32", 8, 8, e, sizeof e) && strstr(e, "class"),
         "an unknown class: %s", e);
  for (int bad = 0; bad < 4; bad++) {
    const int tq = bad == 0 ? 0 : bad == 1 ? ATTN_MAX_TILE + 1 : 8;
    const int tkv = bad == 2 ? 0 : bad == 3 ? -5 : 8;
    EXPECT(
        !attn_tune_set(&f, "k", "prefill d64", tq, tkv, e, sizeof e) && strstr(e, "tiles in 1.."),
        "tile_q %d tile_kv %d refused: %s", tq, tkv, e);
  }
  EXPECT(f.count == 1, "refusals add nothing (%zu entries)", f.count);
  EXPECT(!attn_tune_set_variant(&f, name64, "decode dlarge", "has space", 0, e, sizeof e),
         "a variant name with a blank");
  EXPECT(
      !attn_tune_set_variant(&f, name64, "decode dlarge", NULL, ATTN_MAX_KV_SPLIT + 1, e, sizeof e),
      "kv_split above the limit");
  char *text = attn_tune_format(&f);
  char err[512] = "";
  EXPECT(text && attn_tune_parse_text("mem", text, strlen(text), &g, err, sizeof err) &&
             g.count == 1 && !strcmp(g.entries[0].kernel, name64) &&
             g.entries[0].tile_q == ATTN_MAX_TILE && g.entries[0].kv_split == ATTN_MAX_KV_SPLIT,
         "the 64-character entry reads back: %s", err);
  free(text);
  // A 65-character section in a file is an error at its line, not a truncated name.
  char bad[256];
  snprintf(bad, sizeof bad, "[%s prefill d64]\ntile_q = 8\ntile_kv = 8\n", name65);
  EXPECT(!attn_tune_parse_text("mem", bad, strlen(bad), &g, err, sizeof err) &&
             strstr(err, "mem:1: ") && strstr(err, "is not a kernel name"),
         "a 65-character section: %s", err);
  // The table's limit is its own message.
  memset(&f, 0, sizeof f);
  for (int i = 0; i < ATTN_TUNE_MAX_ENTRIES; i++) {
    char k[32];
    snprintf(k, sizeof k, "k%d", i);
    attn_tune_set(&f, k, "prefill d64", 8, 8, e, sizeof e);
  }
  EXPECT(f.count == ATTN_TUNE_MAX_ENTRIES &&
             !attn_tune_set(&f, "one_more", "prefill d64", 8, 8, e, sizeof e) &&
             strstr(e, "already holds 256 entries"),
         "a full table: %s", e);
  // Candidate tiles stay in 1..ATTN_MAX_TILE for any register tile a record may declare
  // (a register tile of 2^21 rows once rounded to tile_q 0, which no parser accepts).
  static const int steps[] = {1, 6, 1000, ATTN_MAX_TILE, ATTN_MAX_TILE + 1, 1 << 21, 0x7fffffff, 0};
  static const int64_t vals[] = {0, 1, 7, 1 << 20, (int64_t)1 << 40};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    for (size_t j = 0; j < sizeof vals / sizeof vals[0]; j++)
      for (size_t c = 0; c < sizeof vals / sizeof vals[0]; c++) {
        const int t = attn_tune_round_tile(vals[j], steps[i], vals[c]);
        EXPECT(t >= 1 && t <= ATTN_MAX_TILE, "round_tile(%lld, %d, %lld) = %d", (long long)vals[j],
               steps[i], (long long)vals[c], t);
      }
  EXPECT(attn_tune_round_tile(100, 8, 2048) == 104 && attn_tune_round_tile(3, 8, 2048) == 8 &&
             attn_tune_round_tile(4096, 8, 100) == 104,
         "round_tile: nearest multiple, at least one step, at most the size rounded up");
  (void)dir;
}

// attn_tune_parse on things that are not regular files, or too large: at once, saying so.
static void test_parse_refusals(const char *dir) {
  static attn_tune_file f;
  char err[512];
  bool missing = false;
  char path[600];
  snprintf(path, sizeof path, "%s/nope.ini", dir);
  EXPECT(!attn_tune_parse(path, &f, &missing, err, sizeof err) && missing &&
             strstr(err, "No such file"),
         "missing: '%s'", err);
  EXPECT(!attn_tune_parse(dir, &f, &missing, err, sizeof err) && !missing &&
             strstr(err, "is a directory; expected a regular file (a tuning file)"),
         "a directory: '%s'", err);
  EXPECT(!attn_tune_parse("/dev/zero", &f, &missing, err, sizeof err) &&
             strstr(err, "is a character device"),
         "/dev/zero: '%s'", err);
  snprintf(path, sizeof path, "%s/fifo", dir);
  if (mkfifo(path, 0600) == 0) {  // no writer: an open that blocks would hang the test
    EXPECT(!attn_tune_parse(path, &f, &missing, err, sizeof err) && strstr(err, "is a FIFO"),
           "a FIFO: '%s'", err);
    char link[600];
    snprintf(link, sizeof link, "%s/link.ini", dir);
    EXPECT(symlink(path, link) == 0, "symlink");
    EXPECT(!attn_tune_parse(link, &f, &missing, err, sizeof err) && strstr(err, "is a FIFO"),
           "a symlink to a FIFO: '%s'", err);
    unlink(link);
    unlink(path);
  }
  // A file whose size says 0 but has content (procfs) is read, up to the limit.
  EXPECT(!attn_tune_parse("/proc/self/status", &f, &missing, err, sizeof err) &&
             strstr(err, "/proc/self/status:1: "),
         "/proc/self/status is read and parsed: '%s'", err);
  // 300 MB (sparse): refused from its size, without reading it.
  snprintf(path, sizeof path, "%s/big.ini", dir);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  EXPECT(fd >= 0 && ftruncate(fd, 300000000) == 0, "a 300 MB file");
  if (fd >= 0) close(fd);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  EXPECT(!attn_tune_parse(path, &f, &missing, err, sizeof err) &&
             strstr(err, "is 300000000 bytes, more than the 1048576 allowed"),
         "300 MB: '%s'", err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  EXPECT(dt < 0.5, "300 MB refused in %.3f s", dt);
  unlink(path);
}

int main(void) {
  char dir[] = "/tmp/attnbench-tunefile-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_classes();
  test_round_trip(dir);
  test_default_path();
  test_set_limits(dir);
  test_parse_refusals(dir);
  char path[600];
  snprintf(path, sizeof path, "%s/rt.ini", dir);
  unlink(path);
  rmdir(dir);
  return test_finish("test_tunefile");
}
