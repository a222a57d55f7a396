// SPDX-License-Identifier: MIT
// One reusable file per process for the fuzz inputs (see fuzz_input.h).
#define _GNU_SOURCE  // memfd_create
#include "fuzz_input.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int g_fd = -1;
static char g_path[4200];
static char g_tmp[4096];  // the temporary file to remove at exit ("" with a memfd)

static void remove_tmp(void) {
  if (g_tmp[0]) unlink(g_tmp);
}

static int open_input_file(void) {
  const int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
  if (fd >= 0) return fd;
  const char *dir = getenv("TMPDIR");
  snprintf(g_tmp, sizeof g_tmp, "%s/fuzz-input-XXXXXX", dir && *dir ? dir : "/tmp");
  const int tfd = mkstemp(g_tmp);
  if (tfd < 0) {
    g_tmp[0] = '\0';
    return -1;
  }
  atexit(remove_tmp);
  return tfd;
}

const char *fuzz_input_path(const uint8_t *data, size_t size) {
  if (g_fd < 0) {
    g_fd = open_input_file();
    if (g_fd < 0) {
      fprintf(stderr, "fuzz: cannot create an input file: %s\n", strerror(errno));
      return NULL;
    }
    snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
  }
  if (ftruncate(g_fd, 0) != 0) goto fail;
  for (size_t off = 0; off < size;) {
    const ssize_t w = pwrite(g_fd, data + off, size - off, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) goto fail;
    off += (size_t)w;
  }
  return g_path;
fail:
  fprintf(stderr, "fuzz: cannot write the input file: %s\n", strerror(errno));
  return NULL;
}

static int g_pipe = -1;
static char g_pipe_path[64];

const char *fuzz_input_pipe(const uint8_t *data, size_t size) {
  if (size > 65536) return NULL;
  int fd[2];
  if (pipe(fd) != 0) return NULL;
  for (size_t off = 0; off < size;) {
    const ssize_t w = write(fd[1], data + off, size - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd[0]);
      close(fd[1]);
      return NULL;
    }
    off += (size_t)w;
  }
  close(fd[1]);
  g_pipe = fd[0];
  snprintf(g_pipe_path, sizeof g_pipe_path, "/proc/self/fd/%d", g_pipe);
  return g_pipe_path;
}

void fuzz_input_pipe_close(void) {
  if (g_pipe >= 0) close(g_pipe);
  g_pipe = -1;
}

void fuzz_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fuzz: invariant violated: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}
