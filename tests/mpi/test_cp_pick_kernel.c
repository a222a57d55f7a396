// SPDX-License-Identifier: MIT
// The kernel of an attnbench-mpi run (cp_pick_kernel, harness/mpi/cp_kernel.h): a
// preference list runs its first kernel available on this CPU, so one config runs on CPUs
// with and without a given ISA; a name no kernel has is refused wherever it stands (a typo
// is never skipped); a list with nothing available says why for each name; the default
// list always yields an available kernel.
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "mpi/cp_kernel.h"
#include "test_util.h"

static bool available(const char *name) {
  const attn_kernel *k = attn_kernel_find(name);
  char e[160];
  return k && attn_kernel_available(k, e, sizeof e);
}

int main(void) {
  char out[ATTN_KERNEL_NAME_MAX + 1], err[512];

  EXPECT(cp_pick_kernel("blocked", out, sizeof out, err, sizeof err) && !strcmp(out, "blocked"),
         "one available name: %s", err);
  EXPECT(cp_pick_kernel("  blocked ,naive", out, sizeof out, err, sizeof err) &&
             !strcmp(out, "blocked"),
         "blanks around names: %s", err);

  // A kernel this CPU lacks, if the build has one: skipped for the next name.
  const char *absent = NULL;
  for (size_t i = 0; i < attn_kernel_count() && !absent; i++)
    if (!available(attn_kernel_at(i)->name)) absent = attn_kernel_at(i)->name;
  if (absent) {
    char list[2 * ATTN_KERNEL_NAME_MAX + 8];
    snprintf(list, sizeof list, "%s, naive", absent);
    EXPECT(cp_pick_kernel(list, out, sizeof out, err, sizeof err) && !strcmp(out, "naive"),
           "'%s' picks naive: %s", list, err);
    EXPECT(!cp_pick_kernel(absent, out, sizeof out, err, sizeof err) &&
               strstr(err, "is available here") && strstr(err, absent),
           "'%s' alone is refused with its reason: %s", absent, err);
  } else {
    printf("every kernel of this build is available here: the skip case is not exercised\n");
  }

  EXPECT(!cp_pick_kernel("nope, blocked", out, sizeof out, err, sizeof err) &&
             strstr(err, "unknown kernel 'nope'"),
         "a typo first is refused: %s", err);
  EXPECT(!cp_pick_kernel("blocked, nope", out, sizeof out, err, sizeof err) &&
             strstr(err, "unknown kernel 'nope'"),
         "a typo after an available name is refused too: %s", err);
  EXPECT(
      !cp_pick_kernel(" , ,", out, sizeof out, err, sizeof err) && strstr(err, "no kernel named"),
      "an empty list is refused: %s", err);

  EXPECT(cp_pick_kernel(NULL, out, sizeof out, err, sizeof err) && available(out),
         "the default list gives an available kernel: %s", err);
  // ... the first of its names this build has and this CPU runs.
  const char *want = available("flash__avx512") ? "flash__avx512"
                     : available("flash__avx2") ? "flash__avx2"
                                                : "flash__neon";
  EXPECT(!strcmp(out, want), "the default picks %s, want %s", out, want);
  char dflt[ATTN_KERNEL_NAME_MAX + 1] = "x";
  cp_default_kernel(dflt, sizeof dflt);
  EXPECT(!strcmp(dflt, want), "a run naming no kernel takes %s, want %s", dflt, want);
  return test_finish("test_cp_pick_kernel");
}
