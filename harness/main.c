// SPDX-License-Identifier: MIT
// attnbench CLI entry point (placeholder: `list` only, until the CLI lands).
#include <stdio.h>
#include <string.h>

#include "attn.h"

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "list") == 0) {
    for (size_t i = 0; i < attn_kernel_count(); i++) {
      const attn_kernel *k = attn_kernel_at(i);
      char why[96];
      const bool ok = attn_kernel_available(k, why, sizeof why);
      printf("%-20s %-24s %s\n", k->name, ok ? "available" : why, k->summary);
    }
    return 0;
  }
  fprintf(stderr, "usage: attnbench list\n");
  return 2;
}
