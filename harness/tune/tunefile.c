// SPDX-License-Identifier: MIT
// Tuning files (tunefile.h): parse, match against this machine and build, format, and the
// process-wide active file that the settings resolver consults (resolve/resolve.c).
#define _POSIX_C_SOURCE 200809L
#include "tune/tunefile.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/build_info.h"
#include "common/cli_args.h"
#include "io/fileio.h"
#include "machine/cpu_ident.h"

// Longest line accepted (inih's own line buffer is INI_MAX_LINE = 200 bytes).
enum { kMaxLine = 190 };

// src into dst[len], cut at len - 1 bytes (callers pass text validated to fit).
static void copy(char *dst, size_t len, const char *src) {
  if (!len) return;
  const size_t n = strnlen(src, len - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

// True if s has 1..max characters, each a letter, digit, '_', '-', '.' or one of `extra`:
// the registry's rule for kernel names (attn_kernel_validate; extra "") and register-tile
// variant names (extra "/").
static bool valid_name(const char *s, size_t max, const char *extra) {
  const size_t n = strlen(s);
  if (n == 0 || n > max) return false;
  for (; *s; s++)
    if (!(*s == '_' || *s == '-' || *s == '.' || (*s >= '0' && *s <= '9') ||
          (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || strchr(extra, *s)))
      return false;
  return true;
}

// The register-tile variant name's longest form (attn_kernel_validate: 1..31 characters).
enum { kRegtileNameMax = 31 };

static const char *const kClasses[] = {"prefill d64", "prefill d128", "prefill dlarge",
                                       "decode d64",  "decode d128",  "decode dlarge"};
static bool known_class(const char *cls) {
  for (size_t i = 0; i < sizeof kClasses / sizeof kClasses[0]; i++)
    if (!strcmp(cls, kClasses[i])) return true;
  return false;
}

// Blanks (spaces) in place of anything that would break one INI value or a file name.
static void sanitize(char *s, char blank) {
  for (; *s; s++)
    if (*s == ' ' || *s == '\t' || *s == ';' || *s == '#' || *s == '/' || *s == '[' || *s == ']')
      *s = blank;
}

const char *attn_tune_build_id(void) {
  static char id[192];
  if (!id[0]) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 of the compile flags
    for (const char *c = ATTNBENCH_CFLAGS; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
    char compiler[64];
    copy(compiler, sizeof compiler, ATTNBENCH_COMPILER);
    sanitize(compiler, '-');
    char type[32];
    copy(type, sizeof type, ATTNBENCH_BUILD_TYPE[0] ? ATTNBENCH_BUILD_TYPE : "none");
    sanitize(type, '-');
    char commit[48];
    copy(commit, sizeof commit, ATTNBENCH_GIT_COMMIT);
    sanitize(commit, '-');
    snprintf(id, sizeof id, "%s %s %s cflags-%016llx", commit, compiler, type,
             (unsigned long long)h);
  }
  return id;
}

void attn_tune_machine_here(attn_tune_machine *m) {
  memset(m, 0, sizeof *m);
  const attn_cpu_ident *id = attn_cpu_ident_get();
  copy(m->vendor, sizeof m->vendor, id->vendor);
  sanitize(m->vendor, '_');
  m->family = id->family;
  m->model = id->model;
  m->stepping = id->stepping;
  attn_isa_names(attn_cpu_features(), m->isa, sizeof m->isa);
  copy(m->build, sizeof m->build, attn_tune_build_id());
}

void attn_tune_class(const attn_problem *p, char *buf, size_t len) {
  const char *phase = p->seq_q <= 16 ? "decode" : "prefill";
  const char *dim = p->head_dim_qk <= 64 ? "d64" : p->head_dim_qk <= 128 ? "d128" : "dlarge";
  snprintf(buf, len, "%s %s", phase, dim);
}

int attn_tune_round_tile(int64_t v, int step, int64_t cap) {
  if (step > ATTN_MAX_TILE) step = ATTN_MAX_TILE;  // no multiple in range: the largest tile
  if (step < 1) step = 1;
  if (v < 0) v = 0;
  if (v > ATTN_MAX_TILE) v = ATTN_MAX_TILE;  // (v + step / 2) cannot overflow
  if (cap < 1) cap = 1;
  if (cap > ATTN_MAX_TILE) cap = ATTN_MAX_TILE;
  int64_t r = (v + step / 2) / step * step;
  if (r < step) r = step;
  const int64_t c = (cap + step - 1) / step * step;  // the problem's size, rounded up
  if (r > c) r = c;
  if (r > ATTN_MAX_TILE) r = ATTN_MAX_TILE / step * step;  // ≥ step since step ≤ the limit
  return (int)r;
}

bool attn_tune_default_path(char *buf, size_t len, char *why, size_t why_len) {
  const char *xdg = getenv("XDG_CONFIG_HOME");
  const char *home = getenv("HOME");
  attn_tune_machine m;
  attn_tune_machine_here(&m);
  int n;
  const char *var = xdg && *xdg ? "XDG_CONFIG_HOME" : "HOME";
  if (xdg && *xdg)
    n = snprintf(buf, len, "%s/attnbench/tuning-%s-%d-%d-%d.ini", xdg, m.vendor, m.family, m.model,
                 m.stepping);
  else if (home && *home)
    n = snprintf(buf, len, "%s/.config/attnbench/tuning-%s-%d-%d-%d.ini", home, m.vendor, m.family,
                 m.model, m.stepping);
  else {
    if (why && why_len) snprintf(why, why_len, "neither XDG_CONFIG_HOME nor HOME is set");
    return false;
  }
  if (n > 0 && (size_t)n < len) return true;
  if (why && why_len)
    snprintf(why, why_len,
             "%s is %zu bytes long: the default tuning-file path under it would be %d bytes, "
             "more than the %zu allowed",
             var, strlen(getenv(var)), n, len ? len - 1 : 0);
  if (len) buf[0] = '\0';
  return false;
}

// ── parsing ─────────────────────────────────────────────────────────────────────────

typedef struct parse_ctx {
  const char *text;  // the file's bytes: text[pos .. len) not read yet
  size_t len, pos;
  const char *path;
  attn_tune_file *out;
  int line;                        // the line inih is processing (the reader counts them)
  int err_line;                    // first error (0: none)
  char err[320];                   // its message, without "PATH:LINE: "
  bool in_machine;                 // the current section is [machine]
  int machine_line, seen_machine;  // bit per [machine] key seen
  int entry_line;                  // line of the current kernel section's header
  int entry_seen;                  // bit 0 tile_q, 1 tile_kv, 2 regtile, 3 kv_split
  bool machine_section_seen;
} parse_ctx;

static int fail(parse_ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(parse_ctx *c, int line, const char *fmt, ...) {
  if (c->err_line) return 0;
  c->err_line = line > 0 ? line : 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  return 0;
}

static bool parse_int(const char *v, int64_t lo, int64_t hi, int *out) {
  int64_t x;
  if (!cli_parse_i64(v, lo, hi, &x)) return false;
  *out = (int)x;
  return true;
}

static void trim(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    s[--n] = '\0';
  size_t b = 0;
  while (s[b] == ' ' || s[b] == '\t') b++;
  memmove(s, s + b, n - b + 1);
}

static const char *const kMachineKeys[] = {"vendor", "family", "model", "stepping", "isa", "build"};
enum { kMachineKeyCount = 6 };

// A [machine] text value the writer can put back as "key = value": non-empty, shorter than
// size, not starting with ';' or '#' (after "= " inih would read that as a comment), and
// short enough that "key = value" fits a line (kMaxLine): "key =value" can be one
// character shorter than what the writer puts back.
static bool text_value_ok(const char *key, const char *value, size_t size) {
  return value[0] && value[0] != ';' && value[0] != '#' && strlen(value) < size &&
         strlen(key) + 3 + strlen(value) <= kMaxLine;
}

// Closes the section being read: [machine] or a kernel section must be complete.
static void end_section(parse_ctx *c) {
  if (c->in_machine) {
    for (int i = 0; i < kMachineKeyCount; i++)
      if (!(c->seen_machine & (1 << i))) {
        fail(c, c->machine_line, "[machine] needs '%s'", kMachineKeys[i]);
        break;
      }
  } else if (c->entry_line && (c->entry_seen & 3) != 3) {
    const attn_tune_entry *e = &c->out->entries[c->out->count - 1];
    fail(c, c->entry_line, "[%s %s] needs both tile_q and tile_kv (missing %s)", e->kernel, e->cls,
         (c->entry_seen & 1) ? "tile_kv" : "tile_q");
  }
  c->in_machine = false, c->entry_line = 0;
}

// A "[name]" line (seen by the reader, before inih parses it).
static void start_section(parse_ctx *c, char *section) {
  end_section(c);
  if (!strcmp(section, "machine")) {
    if (c->machine_section_seen) {
      fail(c, c->line, "[machine] appears twice");
      return;
    }
    c->machine_section_seen = true, c->in_machine = true, c->machine_line = c->line;
    return;
  }
  // Three blank-separated words; each is copied only if it fits (a longer one is an
  // error below, never a truncated name).
  char word[3][ATTN_KERNEL_NAME_MAX + 2];
  int n = 0;
  for (const char *s = section; *s;) {
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) break;
    const size_t w = strcspn(s, " \t");
    if (n < 3)
      snprintf(word[n], sizeof word[n], "%.*s", (int)(w < sizeof word[n] ? w : sizeof word[n] - 1),
               s);
    n++;
    s += w;
  }
  if (n != 3) {
    fail(c, c->line,
         "section [%s]: expected [machine] or [<kernel> <prefill|decode> <d64|d128|dlarge>]",
         section);
    return;
  }
  const char *kernel = word[0], *phase = word[1], *dim = word[2];
  if (!valid_name(kernel, ATTN_KERNEL_NAME_MAX, "")) {
    fail(c, c->line, "section [%s]: '%s' is not a kernel name (1..%d characters of [A-Za-z0-9_.-])",
         section, kernel, ATTN_KERNEL_NAME_MAX);
    return;
  }
  if (strcmp(phase, "prefill") && strcmp(phase, "decode")) {
    fail(c, c->line, "section [%s]: unknown phase '%s' (expected prefill or decode)", section,
         phase);
    return;
  }
  if (strcmp(dim, "d64") && strcmp(dim, "d128") && strcmp(dim, "dlarge")) {
    fail(c, c->line, "section [%s]: unknown head-dim bucket '%s' (expected d64, d128 or dlarge)",
         section, dim);
    return;
  }
  char cls[32];  // phase and dim are known words here: "prefill dlarge" at most
  snprintf(cls, sizeof cls, "%.7s %.6s", phase, dim);
  for (size_t i = 0; i < c->out->count; i++)
    if (!strcmp(c->out->entries[i].kernel, kernel) && !strcmp(c->out->entries[i].cls, cls)) {
      fail(c, c->line, "section [%s %s] appears twice", kernel, cls);
      return;
    }
  if (c->out->count == ATTN_TUNE_MAX_ENTRIES) {
    fail(c, c->line, "more than %d kernel sections", ATTN_TUNE_MAX_ENTRIES);
    return;
  }
  attn_tune_entry *e = &c->out->entries[c->out->count++];
  memset(e, 0, sizeof *e);
  copy(e->kernel, sizeof e->kernel, kernel);
  copy(e->cls, sizeof e->cls, cls);
  c->entry_line = c->line, c->entry_seen = 0;
}

// inih's line reader: one whole line per call, so c->line is the line inih is parsing.
static char *read_line(char *str, int num, void *stream) {
  parse_ctx *c = stream;
  int n = 0, ch;
  bool any = false;
  while (c->pos < c->len) {
    ch = (unsigned char)c->text[c->pos++];
    any = true;
    if (ch == '\0') {
      fail(c, c->line + 1, "NUL byte in line (is this a text file?)");
      ch = ' ';
    }
    if (ch == '\n') break;
    if (n < num - 2 && n < kMaxLine)
      str[n++] = (char)ch;
    else
      fail(c, c->line + 1, "line too long (at most %d characters)", kMaxLine);
  }
  if (!any) return NULL;
  str[n] = '\n';
  str[n + 1] = '\0';
  c->line++;
  char s[kMaxLine + 2];
  copy(s, sizeof s, str);
  trim(s);
  // inih reads an indented line after a key as more of that key's value.
  if ((str[0] == ' ' || str[0] == '\t') && s[0] && s[0] != ';' && s[0] != '#')
    fail(c, c->line, "indented line (tuning files have no continuation lines)");
  if (s[0] == '[') {
    char *close = strchr(s, ']');
    if (close) {
      *close = '\0';
      char *name = s + 1;
      trim(name);
      start_section(c, name);
    }
  }
  return str;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
  parse_ctx *c = user;
  if (c->err_line) return 1;  // the first error is the one reported
  (void)section;
  if (!c->in_machine && !c->entry_line) return fail(c, c->line, "key '%s' outside a section", name);
  if (c->in_machine) {
    attn_tune_machine *m = &c->out->machine;
    int i = 0;
    while (i < kMachineKeyCount && strcmp(name, kMachineKeys[i])) i++;
    if (i == kMachineKeyCount)
      return fail(c, c->line,
                  "[machine]: unknown key '%s' (expected vendor, family, model, stepping, isa, "
                  "build)",
                  name);
    if (c->seen_machine & (1 << i)) return fail(c, c->line, "[machine]: '%s' given twice", name);
    c->seen_machine |= 1 << i;
    bool ok = true;
    switch (i) {
      case 0:
        ok = text_value_ok(name, value, sizeof m->vendor);
        copy(m->vendor, sizeof m->vendor, value);
        break;
      case 1:
        ok = parse_int(value, -1, 1 << 20, &m->family);
        break;
      case 2:
        ok = parse_int(value, -1, 1 << 20, &m->model);
        break;
      case 3:
        ok = parse_int(value, -1, 1 << 20, &m->stepping);
        break;
      case 4:
        ok = text_value_ok(name, value, sizeof m->isa);
        copy(m->isa, sizeof m->isa, value);
        break;
      default:
        ok = text_value_ok(name, value, sizeof m->build);
        copy(m->build, sizeof m->build, value);
        break;
    }
    if (!ok)
      return fail(c, c->line, "[machine]: %s = '%s': expected %s", name, value,
                  i >= 1 && i <= 3 ? "a whole number (-1 = unknown)"
                                   : "a non-empty value not starting with ';' or '#' "
                                     "that fits a line as 'key = value'");
    return 1;
  }
  attn_tune_entry *e = &c->out->entries[c->out->count - 1];
  const int bit = !strcmp(name, "tile_q")     ? 1
                  : !strcmp(name, "tile_kv")  ? 2
                  : !strcmp(name, "regtile")  ? 4
                  : !strcmp(name, "kv_split") ? 8
                                              : 0;
  if (!bit)
    return fail(c, c->line,
                "[%s %s]: unknown key '%s' (expected tile_q, tile_kv, regtile, kv_split)",
                e->kernel, e->cls, name);
  if (c->entry_seen & bit)
    return fail(c, c->line, "[%s %s]: '%s' given twice", e->kernel, e->cls, name);
  c->entry_seen |= bit;
  if (bit == 4) {
    const attn_kernel *k = attn_kernel_find(e->kernel);
    if (!valid_name(value, kRegtileNameMax, "/"))
      return fail(c, c->line, "[%s %s]: regtile = '%s': expected a register-tile variant name",
                  e->kernel, e->cls, value);
    if (k && attn_kernel_regtile_find(k, value) < 0) {
      char names[256] = "";
      for (int i = 0, w = 0; i < attn_kernel_regtile_count(k) && w >= 0 && (size_t)w < sizeof names;
           i++)
        w += snprintf(names + w, sizeof names - (size_t)w, "%s%s", i ? ", " : "",
                      attn_kernel_regtile(k, i).name);
      return fail(c, c->line, "[%s %s]: regtile = '%s': %s has no such variant (expected %s)",
                  e->kernel, e->cls, value, e->kernel, names);
    }
    copy(e->regtile, sizeof e->regtile, value);
    return 1;
  }
  if (bit == 8) {
    if (!parse_int(value, 1, ATTN_MAX_KV_SPLIT, &e->kv_split))
      return fail(c, c->line, "[%s %s]: kv_split = '%s': expected a whole number in 1..%d",
                  e->kernel, e->cls, value, ATTN_MAX_KV_SPLIT);
    return 1;
  }
  if (!parse_int(value, 1, ATTN_MAX_TILE, bit == 1 ? &e->tile_q : &e->tile_kv))
    return fail(c, c->line, "[%s %s]: %s = '%s': expected a whole number in 1..%d", e->kernel,
                e->cls, name, value, ATTN_MAX_TILE);
  return 1;
}

bool attn_tune_parse_text(const char *path, const char *text, size_t len, attn_tune_file *f,
                          char *err, size_t err_len) {
  memset(f, 0, sizeof *f);
  parse_ctx c = {.text = text, .len = len, .path = path, .out = f};
  const int rc = ini_parse_stream(read_line, &c, handler, &c);
  if (!c.err_line) end_section(&c);
  if (rc > 0 && (!c.err_line || rc < c.err_line))
    c.err_line = rc,
    snprintf(c.err, sizeof c.err, "syntax error (expected [section] or key = value)");
  if (rc < 0 && !c.err_line) {
    snprintf(err, err_len, "%s: out of memory", path);
    return false;
  }
  if (!c.err_line && !c.machine_section_seen)
    fail(&c, 1, "no [machine] section (not a tuning file written by attnbench tune?)");
  if (c.err_line) {
    snprintf(err, err_len, "%s:%d: %s", path, c.err_line, c.err);
    memset(f, 0, sizeof *f);
    return false;
  }
  return true;
}

bool attn_tune_parse(const char *path, attn_tune_file *f, bool *missing, char *err,
                     size_t err_len) {
  memset(f, 0, sizeof *f);
  char *text;
  size_t len;
  if (!attn_read_regular_file(path, ATTN_TUNE_MAX_BYTES, &text, &len, missing, err, err_len)) {
    // Say what was expected: "x: is a FIFO; expected a regular file" → "... (a tuning file)".
    const size_t n = strlen(err);
    if (n + 17 < err_len && strstr(err, "; expected a regular file"))
      snprintf(err + n, err_len - n, " (a tuning file)");
    return false;
  }
  const bool ok = attn_tune_parse_text(path, text, len, f, err, err_len);
  free(text);
  return ok;
}

bool attn_tune_matches(const attn_tune_file *f, char *why, size_t why_len) {
  attn_tune_machine h;
  attn_tune_machine_here(&h);
  const attn_tune_machine *m = &f->machine;
  if (strcmp(m->vendor, h.vendor))
    snprintf(why, why_len, "written for vendor %s, this CPU is %s", m->vendor, h.vendor);
  else if (m->family != h.family)
    snprintf(why, why_len, "written for family %d, this CPU has family %d", m->family, h.family);
  else if (m->model != h.model)
    snprintf(why, why_len, "written for model %d, this CPU has model %d", m->model, h.model);
  else if (m->stepping != h.stepping)
    snprintf(why, why_len, "written for stepping %d, this CPU has stepping %d", m->stepping,
             h.stepping);
  else if (strcmp(m->isa, h.isa))
    snprintf(why, why_len, "written for ISA '%s', this run has '%s' (ATTNBENCH_ISA_MASK?)", m->isa,
             h.isa);
  else if (strcmp(m->build, h.build))
    snprintf(why, why_len, "written by build '%s', this is build '%s'", m->build, h.build);
  else
    return true;
  return false;
}

char *attn_tune_format(const attn_tune_file *f) {
  const size_t cap = 1024 + f->count * 240;
  char *s = malloc(cap);
  if (!s) return NULL;
  const attn_tune_machine *m = &f->machine;
  size_t n = (size_t)snprintf(s, cap,
                              "; attnbench tuning file, written by `attnbench tune` "
                              "(format: docs/tuning-files.md)\n"
                              "[machine]\nvendor = %s\nfamily = %d\nmodel = %d\nstepping = %d\n"
                              "isa = %s\nbuild = %s\n",
                              m->vendor, m->family, m->model, m->stepping, m->isa, m->build);
  for (size_t i = 0; i < f->count && n < cap; i++) {
    const attn_tune_entry *e = &f->entries[i];
    n += (size_t)snprintf(s + n, cap - n, "\n[%s %s]\ntile_q = %d\ntile_kv = %d\n", e->kernel,
                          e->cls, e->tile_q, e->tile_kv);
    if (e->regtile[0] && n < cap)
      n += (size_t)snprintf(s + n, cap - n, "regtile = %s\n", e->regtile);
    if (e->kv_split > 0 && n < cap)
      n += (size_t)snprintf(s + n, cap - n, "kv_split = %d\n", e->kv_split);
  }
  return s;
}

bool attn_tune_set(attn_tune_file *f, const char *kernel, const char *cls, int tile_q, int tile_kv,
                   char *err, size_t err_len) {
  if (!kernel || !valid_name(kernel, ATTN_KERNEL_NAME_MAX, "")) {
    snprintf(
        err, err_len,
        "kernel name '%s' cannot be a tuning-file section (1..%d characters of [A-Za-z0-9_.-])",
        kernel ? kernel : "(null)", ATTN_KERNEL_NAME_MAX);
    return false;
  }
  if (!cls || !known_class(cls)) {
    snprintf(err, err_len, "%s: unknown shape class '%s'", kernel, cls ? cls : "(null)");
    return false;
  }
  if (tile_q < 1 || tile_q > ATTN_MAX_TILE || tile_kv < 1 || tile_kv > ATTN_MAX_TILE) {
    snprintf(err, err_len, "%s %s: tile_q %d, tile_kv %d: a tuning file holds tiles in 1..%d",
             kernel, cls, tile_q, tile_kv, ATTN_MAX_TILE);
    return false;
  }
  size_t i = 0;
  while (i < f->count && (strcmp(f->entries[i].kernel, kernel) || strcmp(f->entries[i].cls, cls)))
    i++;
  if (i == f->count) {
    if (f->count == ATTN_TUNE_MAX_ENTRIES) {
      snprintf(err, err_len, "%s %s: the tuning file already holds %d entries, its limit", kernel,
               cls, ATTN_TUNE_MAX_ENTRIES);
      return false;
    }
    memset(&f->entries[i], 0, sizeof f->entries[i]);
    f->count++;
    copy(f->entries[i].kernel, sizeof f->entries[i].kernel, kernel);
    copy(f->entries[i].cls, sizeof f->entries[i].cls, cls);
  }
  f->entries[i].tile_q = tile_q, f->entries[i].tile_kv = tile_kv;
  return true;
}

bool attn_tune_set_variant(attn_tune_file *f, const char *kernel, const char *cls,
                           const char *regtile, int kv_split, char *err, size_t err_len) {
  if (regtile && regtile[0] && !valid_name(regtile, kRegtileNameMax, "/")) {
    snprintf(err, err_len,
             "%s %s: register-tile variant name '%s' cannot be written (1..%d characters of "
             "[A-Za-z0-9/_.-])",
             kernel, cls, regtile, kRegtileNameMax);
    return false;
  }
  if (kv_split < 0 || kv_split > ATTN_MAX_KV_SPLIT) {
    snprintf(err, err_len, "%s %s: kv_split %d is outside 0..%d", kernel, cls, kv_split,
             ATTN_MAX_KV_SPLIT);
    return false;
  }
  for (size_t i = 0; i < f->count; i++) {
    attn_tune_entry *e = &f->entries[i];
    if (strcmp(e->kernel, kernel) || strcmp(e->cls, cls)) continue;
    copy(e->regtile, sizeof e->regtile, regtile ? regtile : "");
    e->kv_split = kv_split;
    return true;
  }
  snprintf(err, err_len, "%s %s: no such entry to set a variant of", kernel, cls);
  return false;
}

// ── the active file ─────────────────────────────────────────────────────────────────

static struct {
  bool active;
  char path[ATTN_TUNE_PATH_MAX];
  char read[ATTN_TUNE_PATH_MAX];  // the file parsed, in use or ignored ("" : none)
  attn_tune_file file;
} g_tune;

const char *attn_tune_read_path(void) {
  return g_tune.read[0] ? g_tune.read : NULL;
}

int attn_tune_setup(const char *command, const char *flag) {
  g_tune.active = false;
  g_tune.read[0] = '\0';
  const char *named = flag ? flag : getenv("ATTNBENCH_TUNE_FILE");
  if (named && !*named) named = NULL;
  const char *what = flag ? "--tune-file" : "ATTNBENCH_TUNE_FILE";
  if (named && !strcmp(named, "none")) return 0;
  char path[ATTN_TUNE_PATH_MAX];
  if (named) {
    if (strlen(named) >= sizeof path) {
      fprintf(stderr, "attnbench %s: %s: path too long\n", command, what);
      return ATTNBENCH_EXIT_FAILURE;
    }
    copy(path, sizeof path, named);
  } else {
    char why[256];
    if (!attn_tune_default_path(path, sizeof path, why, sizeof why)) {
      // No HOME at all is a plain environment (built-in rule, nothing said); a path that
      // does not fit is worth a note.
      const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
      if ((xdg && *xdg) || (home && *home))
        fprintf(stderr, "attnbench %s: note: no default tuning file: %s; built-in tiles\n", command,
                why);
      return 0;
    }
  }
  static attn_tune_file f;  // large; one per process
  char err[ATTN_TUNE_PATH_MAX + 512];
  bool missing = false;
  if (!attn_tune_parse(path, &f, &missing, err, sizeof err)) {
    if (missing && !named) return 0;  // no default file: the built-in rule
    fprintf(stderr, "attnbench %s: %s%s%s\n", command, named ? what : "", named ? " " : "", err);
    return ATTNBENCH_EXIT_FAILURE;
  }
  copy(g_tune.read, sizeof g_tune.read, path);
  char why[512];
  if (!attn_tune_matches(&f, why, sizeof why)) {
    fprintf(stderr,
            "attnbench %s: note: ignoring tuning file %s: %s; built-in tiles (run attnbench tune "
            "to retune)\n",
            command, path, why);
    return 0;
  }
  g_tune.file = f;
  copy(g_tune.path, sizeof g_tune.path, path);
  g_tune.active = true;
  fprintf(stderr, "attnbench %s: using tuning file %s (%zu kernel/shape-class entries)\n", command,
          path, f.count);
  return 0;
}

// The active file's entry for kernel k and p's shape class, or NULL.
static const attn_tune_entry *tune_entry(const attn_kernel *k, const attn_problem *p) {
  if (!g_tune.active || !k) return NULL;
  char cls[32];
  attn_tune_class(p, cls, sizeof cls);
  for (size_t i = 0; i < g_tune.file.count; i++) {
    const attn_tune_entry *e = &g_tune.file.entries[i];
    if (!strcmp(e->kernel, k->name) && !strcmp(e->cls, cls)) return e;
  }
  return NULL;
}

bool attn_tune_lookup(const attn_kernel *k, const attn_problem *p, int *tile_q, int *tile_kv) {
  const attn_tune_entry *e = tune_entry(k, p);
  if (!e) return false;
  *tile_q = e->tile_q, *tile_kv = e->tile_kv;
  return true;
}

bool attn_tune_lookup_variant(const attn_kernel *k, const attn_problem *p, char *regtile,
                              size_t regtile_len, int *kv_split) {
  const attn_tune_entry *e = tune_entry(k, p);
  if (!e) return false;
  copy(regtile, regtile_len, e->regtile);
  *kv_split = e->kv_split;
  return true;
}

const char *attn_tune_describe(char *buf, size_t len) {
  if (!g_tune.active) {
    snprintf(buf, len, "built-in");
    return buf;
  }
  size_t n = (size_t)snprintf(buf, len, "%s:", g_tune.path);
  for (size_t i = 0; i < g_tune.file.count && n < len; i++) {
    const attn_tune_entry *e = &g_tune.file.entries[i];
    n += (size_t)snprintf(buf + n, len - n, "%s %s %s tile_q %d tile_kv %d", i ? ";" : "",
                          e->kernel, e->cls, e->tile_q, e->tile_kv);
    if (e->regtile[0] && n < len)
      n += (size_t)snprintf(buf + n, len - n, " regtile %s", e->regtile);
    if (e->kv_split > 0 && n < len)
      n += (size_t)snprintf(buf + n, len - n, " kv_split %d", e->kv_split);
  }
  return buf;
}
