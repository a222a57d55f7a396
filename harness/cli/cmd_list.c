// SPDX-License-Identifier: MIT
// `attnbench list` — every kernel in the registry, one line each:
//     <name>  available|unavailable (needs avx512f)  <caps>  <opts>  <kv>  <tiles>  <summary>
// <opts> is "opts=" and the attention options (attn.h) the entry point handles natively,
// comma-separated ("opts=align,window,softcap,alibi,sinks,mask,lse,offset"), or "opts=fallback"
// when it handles none: problems with options it lacks run on the portable path.
// <kv> is "kv=" and the K/V element types (attn.h) the entry point reads natively besides
// f32 ("kv=f16,bf16,q8_0"), or "kv=convert": it gets float32 copies (attn_kernel_run).
// <tiles> is the record's vector width and register tiles (attn.h): "w16 qk8x48 pv6x64"
// (16 lanes; Q·Kᵀ tile 8 query rows × 32 keys; P·V tile 6 rows × 64 head_dim_v columns),
// "scalar" for portable C, "-" when the kernel does not declare them; a kernel with
// register-tile variants (attn_exec.regtile) adds "rt=" and their names in index order
// ("rt=8x48/6x64,12x32/8x32,6x64/8x48"; JSON "regtiles": every variant, the implicit
// "default" one included, with its name and tiles).
// Unavailable kernels are listed, not hidden. Plug-in kernels (--plugin, docs/plugins.md)
// end their line with "[plug-in: PATH]"; in JSON "plugin" is that path, null for built-ins.
// `--json` prints the same as a JSON array.
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "cli/commands.h"
#include "common/cli_args.h"

static const struct {
  unsigned bit;
  const char *name;
} kCaps[] = {
    {ATTN_CAP_CAUSAL, "causal"},     {ATTN_CAP_CROSS, "cross"},     {ATTN_CAP_GQA, "gqa"},
    {ATTN_CAP_DV_NE_DQK, "dv!=dqk"}, {ATTN_CAP_THREADS, "threads"}, {ATTN_CAP_KV_SPLIT, "kv_split"},
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

// "opts=a,b" or "opts=fallback", as described at the top.
static const char *opts_string(unsigned caps, char *buf, size_t len) {
  char names[128];
  if (!(caps & ATTN_CAP_OPT_ALL)) {
    snprintf(buf, len, "opts=fallback");
    return buf;
  }
  attn_option_names(caps & ATTN_CAP_OPT_ALL, names, sizeof names);
  for (char *c = names; *c; c++)
    if (*c == ' ') *c = ',';
  snprintf(buf, len, "opts=%s", names);
  return buf;
}

// "kv=f16,bf16" or "kv=convert", as described at the top; names (JSON) gets the list too.
static const char *kv_string(unsigned caps, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "kv=");
  for (int t = 1; t < ATTN_DTYPE_COUNT && used < len; t++) {
    if (!(caps & attn_dtype_cap((attn_dtype)t))) continue;
    used += (size_t)snprintf(buf + used, len - used, "%s%s", used > 3 ? "," : "",
                             attn_dtype_name((attn_dtype)t));
  }
  if (used == 3) snprintf(buf, len, "kv=convert");
  return buf;
}

// The vector width and register tiles of the record, as described at the top.
static const char *tiles_string(const attn_kernel *k, char *buf, size_t len) {
  if (k->vec_width <= 0)
    snprintf(buf, len, "-");
  else if (k->qk_rows <= 0 && k->pv_rows <= 0)
    snprintf(buf, len, k->vec_width == 1 ? "scalar" : "w%d", k->vec_width);
  else
    snprintf(buf, len, "w%d qk%dx%d pv%dx%d", k->vec_width, k->qk_rows, k->qk_cols, k->pv_rows,
             k->pv_cols);
  const int n = attn_kernel_regtile_count(k);
  for (int i = 0; n > 1 && i < n; i++) {
    const size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", i ? "," : " rt=", attn_kernel_regtile(k, i).name);
  }
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
    char onames[128];
    attn_option_names(k->caps & ATTN_CAP_OPT_ALL, onames, sizeof onames);
    printf("], \"native_options\": [");
    if (k->caps & ATTN_CAP_OPT_ALL) {
      bool first_opt = true;
      for (char *tok = strtok(onames, " "); tok; tok = strtok(NULL, " ")) {
        printf("%s", first_opt ? "" : ", ");
        first_opt = false;
        json_string(stdout, tok);
      }
    }
    printf("], \"native_kv_types\": [");
    bool first_kv = true;
    for (int t = 1; t < ATTN_DTYPE_COUNT; t++) {
      if (!(k->caps & attn_dtype_cap((attn_dtype)t))) continue;
      printf("%s", first_kv ? "" : ", ");
      first_kv = false;
      json_string(stdout, attn_dtype_name((attn_dtype)t));
    }
    printf("], \"vec_width\": %d, \"qk_tile\": [%d, %d], \"pv_tile\": [%d, %d]", k->vec_width,
           k->qk_rows, k->qk_cols, k->pv_rows, k->pv_cols);
    printf(", \"regtiles\": [");
    for (int r = 0; r < attn_kernel_regtile_count(k); r++) {
      const attn_regtile t = attn_kernel_regtile(k, r);
      printf("%s{\"name\": ", r ? ", " : "");
      json_string(stdout, t.name);
      printf(", \"qk_tile\": [%d, %d], \"pv_tile\": [%d, %d]}", t.qk_rows, t.qk_cols, t.pv_rows,
             t.pv_cols);
    }
    printf("]");
    printf(", \"summary\": ");
    json_string(stdout, k->summary);
    const char *origin = attn_kernel_origin(k);
    printf(", \"plugin\": ");
    if (origin)
      json_string(stdout, origin);
    else
      printf("null");
    printf("}");
  }
  printf("%s]\n", first ? "" : "\n");
}

int cmd_list(int argc, char **argv) {
  bool json = false, only_available = false;
  const cli_option opts[] = {
      {.name = "json",
       .kind = CLI_FLAG,
       .dest = &json,
       .help = "print a JSON array instead of text"},
      {.name = "available",
       .kind = CLI_FLAG,
       .dest = &only_available,
       .help = "list only kernels this CPU can run"},
  };
  const cli_spec spec = {
      .command = "list",
      .summary =
          "List every kernel (built-in, then plug-in): name, availability on this CPU,\n"
          "natively handled cases (causal, cross, gqa, dv!=dqk, threads, kv_split), vector\n"
          "width and register tiles (w16 qk8x48 pv6x64: 16 lanes, Q.K^T tile 8 rows x 48\n"
          "keys, P.V tile 6 rows x 64 columns; rt= the register-tile variants that\n"
          "--regtile picks, default first) and a one-line summary; plug-in kernels end with\n"
          "[plug-in: PATH]. opts= lists the attention options (align, window, softcap,\n"
          "alibi, sinks, mask, lse, offset) handled natively; opts=fallback: problems with\n"
          "options"
          " run on the shared portable path. kv= lists the K/V types (f16, bf16, q8_0)\n"
          "read natively; kv=convert: they reach the kernel as float32 copies.\n"
          "Every kernel accepts every valid problem; the flags say which cases it\n"
          "handles natively rather than by a general path.",
      .epilog = "example:\n  attnbench list\n  attnbench list --available --json",
      CLI_OPTIONS(opts),
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);

  if (json) {
    print_json(only_available);
    return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
  }
  // Two passes: column widths first, so the columns line up for any registry.
  int w[6] = {0, 0, 0, 0, 0, 0};
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < attn_kernel_count(); i++) {
      const attn_kernel *k = attn_kernel_at(i);
      char why[96], avail[128], caps[96], tiles[400], nopts[160], kv[40];
      const bool ok = attn_kernel_available(k, why, sizeof why);
      if (only_available && !ok) continue;
      if (ok)
        snprintf(avail, sizeof avail, "available");
      else
        snprintf(avail, sizeof avail, "unavailable (%s)", why);
      caps_string(k->caps, caps, sizeof caps);
      tiles_string(k, tiles, sizeof tiles);
      opts_string(k->caps, nopts, sizeof nopts);
      kv_string(k->caps, kv, sizeof kv);
      const char *col[6] = {k->name, avail, caps, nopts, kv, tiles};
      if (pass == 0) {
        for (int c = 0; c < 6; c++)
          if ((int)strlen(col[c]) > w[c]) w[c] = (int)strlen(col[c]);
      } else {
        const char *origin = attn_kernel_origin(k);
        printf("%-*s  %-*s  %-*s  %-*s  %-*s  %-*s  %s%s%s%s\n", w[0], col[0], w[1], col[1], w[2],
               col[2], w[3], col[3], w[4], col[4], w[5], col[5], k->summary,
               origin ? " [plug-in: " : "", origin ? origin : "", origin ? "]" : "");
      }
    }
  }
  return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
}
