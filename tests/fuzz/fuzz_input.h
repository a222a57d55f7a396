// SPDX-License-Identifier: MIT
//
// fuzz_input.h — hands a fuzz input to an API that only takes paths: the bytes are put
// in one memfd per process (rewritten for every input) and the API opens
// /proc/self/fd/N, which starts at offset 0 on every open. Where memfd_create is
// missing, a temporary file under $TMPDIR (or /tmp) is used instead and removed at exit.
// The same bytes can also come from a pipe (no size known up front).
#pragma once

#include <stddef.h>
#include <stdint.h>

// The path holding exactly data[0..size) until the next call; NULL (with a message on
// stderr) if it could not be written — the caller then aborts, a harness failure.
const char *fuzz_input_path(const uint8_t *data, size_t size);

// A path to read data[0..size) from a pipe (size up to 64 KiB, the pipe's capacity;
// else NULL): the bytes are written, the write end closed, and /proc/self/fd/N of the
// read end returned. Call fuzz_input_pipe_close() after the read.
const char *fuzz_input_pipe(const uint8_t *data, size_t size);
void fuzz_input_pipe_close(void);

// Aborts with a message when an invariant of the code under test does not hold (the
// fuzzer records the input as a crash).
void fuzz_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

// libFuzzer's entry point, defined by each target; the replay driver calls it too.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
