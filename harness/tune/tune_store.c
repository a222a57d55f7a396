// SPDX-License-Identifier: MIT
// The tuning file `attnbench tune` writes: what is there before the search (a file tune
// may replace, and the entries to keep) and the merge of a run's entries into it under
// its lock (tunefile.h, "The store").
#define _POSIX_C_SOURCE 200809L
#include "tune/tune_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool attn_tune_read_target(const char *path, attn_tune_file *keep, bool note) {
  static attn_tune_file old;
  char err[ATTN_TUNE_PATH_MAX + 512], why[512];
  bool missing = false;
  keep->count = 0;
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) return true;
  if (!attn_tune_parse(path, &old, &missing, err, sizeof err)) {
    if (missing) return true;
    fprintf(stderr,
            "attnbench tune: %s\nattnbench tune: %s is not a tuning file attnbench can read: "
            "refusing to replace it (remove it or choose another --tune-file)\n",
            err, path);
    return false;
  }
  if (!attn_tune_matches(&old, why, sizeof why)) {
    if (note)
      fprintf(stderr, "attnbench tune: note: replacing %s, not keeping its entries: %s\n", path,
              why);
    return true;
  }
  keep->count = old.count;
  memcpy(keep->entries, old.entries, old.count * sizeof old.entries[0]);
  return true;
}

bool attn_tune_merge_write(attn_output *out, const char *path, const attn_tune_file *file,
                           size_t *total, size_t *kept_other) {
  char err[ATTN_OUT_PATH_MAX + 512];
  if (!attn_output_lock_wait(out, 60, err, sizeof err)) {
    fprintf(stderr, "attnbench tune: %s; %s not changed\n", err, path);
    return false;
  }
  static attn_tune_file merged;
  memset(&merged, 0, sizeof merged);
  if (!attn_tune_read_target(path, &merged, true)) {
    attn_output_unlock(out);
    return false;
  }
  const size_t kept = merged.count;
  merged.machine = file->machine;
  bool ok = true;
  for (size_t i = 0; ok && i < file->count; i++) {
    const attn_tune_entry *e = &file->entries[i];
    ok =
        attn_tune_set(&merged, e->kernel, e->cls, e->tile_q, e->tile_kv, err, sizeof err) &&
        attn_tune_set_variant(&merged, e->kernel, e->cls, e->regtile, e->kv_split, err, sizeof err);
  }
  char *text = ok ? attn_tune_format(&merged) : NULL;
  if (ok && !text) snprintf(err, sizeof err, "out of memory");
  // Whatever tune writes must parse: the text is read back before it replaces anything.
  static attn_tune_file back;
  char back_err[ATTN_TUNE_PATH_MAX + 512] = "a different number of entries";
  if (text && (!attn_tune_parse_text(path, text, strlen(text), &back, back_err, sizeof back_err) ||
               back.count != merged.count)) {
    snprintf(err, sizeof err, "internal error: the text to write does not read back: %.1000s",
             back_err);
    free(text);
    text = NULL;
  }
  ok = text && attn_output_write(out, &(attn_buf){text, strlen(text)}, 1, err, sizeof err);
  free(text);
  attn_output_unlock(out);
  if (!ok) {
    fprintf(stderr, "attnbench tune: %s; %s not changed\n", err, path);
    return false;
  }
  *kept_other = 0;  // the file's entries this run did not retune
  for (size_t i = 0; i < kept; i++) {
    bool mine = false;
    for (size_t j = 0; j < file->count && !mine; j++)
      mine = !strcmp(merged.entries[i].kernel, file->entries[j].kernel) &&
             !strcmp(merged.entries[i].cls, file->entries[j].cls);
    *kept_other += !mine;
  }
  *total = merged.count;
  return true;
}
