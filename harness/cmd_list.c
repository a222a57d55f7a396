// SPDX-License-Identifier: MIT
// `attnbench list` — every kernel in the registry, one line each:
//     <name>  available|unavailable (needs avx512f)  <caps>  <summary>
// Unavailable kernels are listed, not hidden. `--json` prints the same as a JSON array.
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "cli_args.h"
#include "commands.h"

static const struct {
  unsigned bit;
  const char *name;
} kCaps[] = {
    {ATTN_CAP_CAUSAL, "causal"}, {ATTN_CAP_CROSS, "cross"}, {ATTN_CAP_GQA, "gqa"},
    {ATTN_CAP_DV_NE_DQK, "dv!=dqk"}, {ATTN_CAP_THREADS, "threads"},
};

// Comma-separated capability names, "-" for none.
static const char *caps_string(unsigned caps, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof kCaps / sizeof kCaps[0]; i++) {
    if (!(caps & kCaps[i].bit)) continue;
    const int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", kCaps[i].name);
    if (n < 0 || (size_t)n >= len - used) break;
    used += (size_t)n;
  }
  if (!used) snprintf(buf, len, "-");
  return buf;
}

// Writes s as a JSON string literal.
static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static void print_json(bool only_available) {
  printf("[");
  bool first = true;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    char why[96], isa[64];
    const bool ok = attn_kernel_available(k, why, sizeof why);
    if (only_available && !ok) continue;
    printf("%s\n  {\"name\": ", first ? "" : ",");
    first = false;
    json_string(stdout, k->name);
    printf(", \"available\": %s, \"unavailable_reason\": ", ok ? "true" : "false");
    json_string(stdout, why);
    printf(", \"required_isa\": ");
    json_string(stdout, k->required_isa ? attn_isa_names(k->required_isa, isa, sizeof isa) : "");
    printf(", \"caps\": [");
    bool first_cap = true;
    for (size_t c = 0; c < sizeof kCaps / sizeof kCaps[0]; c++) {
      if (!(k->caps & kCaps[c].bit)) continue;
      printf("%s", first_cap ? "" : ", ");
      first_cap = false;
      json_string(stdout, kCaps[c].name);
    }
    printf("], \"summary\": ");
    json_string(stdout, k->summary);
    printf("}");
  }
  printf("%s]\n", first ? "" : "\n");
}

int cmd_list(int argc, char **argv) {
  bool json = false, only_available = false;
  const cli_option opts[] = {
      {.name = "json", .kind = CLI_FLAG, .dest = &json, .help = "print a JSON array instead of text"},
      {.name = "available", .kind = CLI_FLAG, .dest = &only_available,
       .help = "list only kernels this CPU can run"},
  };
  const cli_spec spec = {
      .command = "list",
      .summary = "List every compiled kernel: name, availability on this CPU, natively handled\n"
                 "cases (causal, cross, gqa, dv!=dqk, threads) and a one-line summary.\n"
                 "Every kernel accepts every valid problem; the flags say which cases it\n"
                 "handles natively rather than by a general path.",
      .epilog = "example:\n  attnbench list\n  attnbench list --available --json",
      .options = opts,
      .n_options = sizeof opts / sizeof opts[0],
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);

  if (json) {
    print_json(only_available);
    return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
  }
  // Two passes: column widths first, so the columns line up for any registry.
  int w[3] = {0, 0, 0};
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < attn_kernel_count(); i++) {
      const attn_kernel *k = attn_kernel_at(i);
      char why[96], avail[128], caps[96];
      const bool ok = attn_kernel_available(k, why, sizeof why);
      if (only_available && !ok) continue;
      if (ok)
        snprintf(avail, sizeof avail, "available");
      else
        snprintf(avail, sizeof avail, "unavailable (%s)", why);
      caps_string(k->caps, caps, sizeof caps);
      const char *col[3] = {k->name, avail, caps};
      if (pass == 0) {
        for (int c = 0; c < 3; c++)
          if ((int)strlen(col[c]) > w[c]) w[c] = (int)strlen(col[c]);
      } else {
        printf("%-*s  %-*s  %-*s  %s\n", w[0], col[0], w[1], col[1], w[2], col[2], k->summary);
      }
    }
  }
  return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
}
