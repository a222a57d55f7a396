// SPDX-License-Identifier: MIT
// Replay driver: runs a fuzz target's LLVMFuzzerTestOneInput on files, without libFuzzer,
// so that the seed corpora and every committed crash input run in the normal CTest suite
// (and under ASan/UBSan in the sanitizer build).
//   fuzz_replay_<target> PATH...   each PATH a file or a directory of inputs (names
//                                  starting with '.' and README* are skipped)
// Exits 0 after all inputs ran (an invariant violation aborts), 1 if none was found.
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_input.h"

static int by_string(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  size_t cap = 4096, n = 0;
  unsigned char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  if (!buf || ferror(f)) {
    fprintf(stderr, "%s: read failed\n", path);
    exit(1);
  }
  fclose(f);
  // An exactly sized copy, so a read past the input is an ASan report.
  unsigned char *exact = malloc(n ? n : 1);
  if (!exact) exit(1);
  memcpy(exact, buf, n);
  free(buf);
  fprintf(stderr, "replay %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 1;
}

static int run_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    exit(1);
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0) continue;
    if (n == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names))) exit(1);
    const size_t len = strlen(dir) + strlen(e->d_name) + 2;
    if (!(names[n] = malloc(len))) exit(1);
    snprintf(names[n++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof *names, by_string);
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) count += run_file(names[i]);
    free(names[i]);
  }
  free(names);
  return count;
}

int main(int argc, char **argv) {
  int count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    count += S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
  }
  if (count == 0) {
    fprintf(stderr, "%s: no inputs found\n", argv[0]);
    return 1;
  }
  printf("%s: %d inputs replayed, all invariants held\n", argv[0], count);
  return 0;
}
