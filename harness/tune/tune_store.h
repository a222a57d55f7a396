// SPDX-License-Identifier: MIT
// The tuning file `attnbench tune` writes (tune_store.c); messages start "attnbench tune:".
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "io/fileio.h"
#include "tune/tunefile.h"

// The tuning file now at path, to merge into (tunefile.h, "The store"): true with its
// entries in *keep when it is a tuning file for this machine and build; true with no
// entries when nothing is there, the file is empty, or it is a tuning file for another
// machine or build (replaced, with a note when `note`). A file that is not a tuning file
// is never replaced: false after the message.
bool attn_tune_read_target(const char *path, attn_tune_file *keep, bool note);

// Merges this run's entries (*file) into the file at path as it is now, under out's lock
// (another tune may have written it since this one started; its entries for other (kernel,
// class) pairs stay), parses the text back and writes it through out. True with the
// file's entry count in *total and the entries kept from before in *kept_other; false
// after a message (the file not changed).
bool attn_tune_merge_write(attn_output *out, const char *path, const attn_tune_file *file,
                           size_t *total, size_t *kept_other);
