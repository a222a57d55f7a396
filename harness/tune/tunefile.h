// SPDX-License-Identifier: MIT
// tunefile.h — tuning files: the tile sizes `attnbench tune` measured best on one machine
// with one build, per (kernel, shape class), read back by run, check and bench
// (docs/tuning-files.md).
//
// Format (INI, parsed with inih; any error is "FILE:LINE: message"):
//   [machine]
//   vendor   = GenuineIntel          ; cpuid (cpu_ident.h)
//   family   = 6
//   model    = 143
//   stepping = 8
//   isa      = avx2 avx512f          ; attn_cpu_features() after ATTNBENCH_ISA_MASK
//   build    = <commit> <compiler> <build type> cflags-<hash>   ; attn_tune_build_id()
//   [flash__avx512 prefill d64]      ; "<kernel> <phase> <head-dim bucket>"
//   tile_q   = 128                   ; 1 .. ATTN_MAX_TILE
//   tile_kv  = 256
//   regtile  = 12x32/8x32            ; optional: a register-tile variant name (attn.h)
//   kv_split = 4                     ; optional: 1 .. ATTN_MAX_KV_SPLIT key chunks per task
// Every key of [machine] is required; each kernel section needs both tiles; unknown keys,
// unknown phases or buckets, repeated sections or keys are errors, and so is a regtile
// that is not one of the kernel's variants (for a kernel this build has; another
// kernel's name is only checked for its characters).
//
// Shape class of a problem: phase "decode" when seq_q <= 16, else "prefill"; head-dim
// bucket "d64" (head_dim_qk <= 64), "d128" (<= 128) or "dlarge". A problem whose class has
// no entry for its kernel gets the built-in rule.
//
// The store (docs/reliability.md "The tuning store"): a tuning file is read whole, and
// only if it is a regular file (or a symlink to one) of at most ATTN_TUNE_MAX_BYTES —
// directories, devices, FIFOs and sockets are refused before they are opened, a larger
// file from its size (io/fileio.h, attn_read_regular_file). `tune` writes it like a
// results file (temporary + rename, signals remove the temporary) and merges its entries
// into the file's current ones under the lock "<file>.lock", so concurrent runs for
// different kernels keep each other's entries; a file there that is not a tuning file
// is never replaced. What attn_tune_set accepts formats to a file attn_tune_parse reads
// back (every kernel name the registry accepts, tiles 1 .. ATTN_MAX_TILE).
//
// Which file: --tune-file PATH, else $ATTNBENCH_TUNE_FILE, else the default location
// $XDG_CONFIG_HOME/attnbench/tuning-<vendor>-<family>-<model>-<stepping>.ini ($HOME/.config
// when XDG_CONFIG_HOME is unset). "none" selects no file. A named file must exist; the
// default one may be absent (built-in rule, nothing said).
// A file whose [machine] differs from this CPU, ISA mask or build is ignored with a note.
//
// Precedence (kernels/core/settings.h): command line > config > environment > tuning file >
// machine rule > kernel default; resolve/resolve.h makes the file's entry a layer.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// Largest tuning file read: 256 entries of at most 6 lines of at most 190 characters
// are under 300 KiB; 1 MiB leaves room for comments.
enum { ATTN_TUNE_MAX_ENTRIES = 256, ATTN_TUNE_PATH_MAX = 4096, ATTN_TUNE_MAX_BYTES = 1 << 20 };

typedef struct attn_tune_entry {
  char kernel[ATTN_KERNEL_NAME_MAX + 1];  // any name the registry accepts
  char cls[32];                           // "prefill d64", ...
  int tile_q, tile_kv;
  char regtile[32];  // "" = not given (the kernel's default variant)
  int kv_split;      // 0 = not given (the kernel's split rule)
} attn_tune_entry;

typedef struct attn_tune_machine {
  char vendor[32];
  int family, model, stepping;
  char isa[128];
  char build[192];
} attn_tune_machine;

typedef struct attn_tune_file {
  attn_tune_machine machine;
  attn_tune_entry entries[ATTN_TUNE_MAX_ENTRIES];
  size_t count;
} attn_tune_file;

// This machine and build, as a tuning file records them.
void attn_tune_machine_here(attn_tune_machine *m);
// "<commit> <compiler> <build type> cflags-<16 hex digits of FNV-1a of the flags>".
const char *attn_tune_build_id(void);

// The shape class of p: "prefill d64", "decode d128", ... (see above).
void attn_tune_class(const attn_problem *p, char *buf, size_t len);

// A candidate tile for `tune`: v rounded to a multiple of step (a register tile's rows or
// columns), at least one step, at most cap (the problem's size) rounded up to a multiple,
// and always within 1..ATTN_MAX_TILE — what a tuning file holds — for any step and cap a
// validated kernel record can give (a register tile above ATTN_MAX_TILE counts as
// ATTN_MAX_TILE, one below 1 as 1).
int attn_tune_round_tile(int64_t v, int step, int64_t cap);

// The default location (see above). False with the reason in why (may be NULL): neither
// XDG_CONFIG_HOME nor HOME is set, or the path would not fit in len bytes.
bool attn_tune_default_path(char *buf, size_t len, char *why, size_t why_len);

// Reads path (see "The store" above) and parses it into f. False with "PATH:LINE:
// message" or "PATH: reason" in err; *missing (may be NULL) is true when nothing exists
// at path.
bool attn_tune_parse(const char *path, attn_tune_file *f, bool *missing, char *err, size_t err_len);
// Parses text[0 .. len) (named `name` in messages) into f, as attn_tune_parse does a file.
bool attn_tune_parse_text(const char *name, const char *text, size_t len, attn_tune_file *f,
                          char *err, size_t err_len);
// True if f was written on this CPU, ISA mask and build; otherwise false and why
// ("written for model 143, this CPU has model 85").
bool attn_tune_matches(const attn_tune_file *f, char *why, size_t why_len);
// The file's text (malloc'ed, NUL-terminated; NULL when out of memory).
char *attn_tune_format(const attn_tune_file *f);
// Sets (kernel, cls)'s tiles, adding the entry if new. False with the reason in err when
// a value could not be written so that attn_tune_parse reads it back (a kernel name
// outside 1..ATTN_KERNEL_NAME_MAX characters of [A-Za-z0-9_.-], an unknown class, a tile
// outside 1..ATTN_MAX_TILE) or the table is full; f is unchanged then.
bool attn_tune_set(attn_tune_file *f, const char *kernel, const char *cls, int tile_q, int tile_kv,
                   char *err, size_t err_len);

// Sets (kernel, cls)'s register-tile variant name (NULL or "": none) and kv_split (0: none);
// the entry must exist (attn_tune_set). False with the reason in err when it does not, or
// the name (1..31 characters of [A-Za-z0-9/_.-]) or kv_split (0..ATTN_MAX_KV_SPLIT) would
// not parse back.
bool attn_tune_set_variant(attn_tune_file *f, const char *kernel, const char *cls,
                           const char *regtile, int kv_split, char *err, size_t err_len);

// The commands' up-front call (run, check, bench): chooses the file (flag may be NULL),
// loads it, and prints one line on stderr saying which file is used or why one is
// ignored. Returns 0 (go on; no file, or one in use) or ATTNBENCH_EXIT_FAILURE (1) after
// "attnbench <command>: <error>" — a malformed file (FILE:LINE) or a missing named file.
int attn_tune_setup(const char *command, const char *flag);

// The file attn_tune_setup read (--tune-file, $ATTNBENCH_TUNE_FILE or the default), in use
// or ignored as another machine's; NULL when it read none. An output may not replace it.
const char *attn_tune_read_path(void);

// The active file's tiles for kernel k on problem p (false: no file or no entry).
bool attn_tune_lookup(const attn_kernel *k, const attn_problem *p, int *tile_q, int *tile_kv);
// The active file's regtile (copied to regtile, "" when the entry has none) and kv_split
// (0: none) for kernel k on problem p; false: no file or no entry.
bool attn_tune_lookup_variant(const attn_kernel *k, const attn_problem *p, char *regtile,
                              size_t regtile_len, int *kv_split);
// For results contexts: "built-in" or "PATH: flash__avx512 prefill d64 tile_q 128 tile_kv
// 256 [regtile 12x32/8x32] [kv_split 4]; ...". Returns buf.
const char *attn_tune_describe(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
