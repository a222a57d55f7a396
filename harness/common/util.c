// SPDX-License-Identifier: MIT
// Shared pieces of the commands (see util.h).
#define _POSIX_C_SOURCE 200809L
#include "common/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double attn_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ── kernel names ────────────────────────────────────────────────────────────────────

void attn_print_kernel_names(FILE *f) {
  fprintf(f, "available kernels:");
  for (size_t i = 0; i < attn_kernel_count(); i++)
    if (attn_kernel_available(attn_kernel_at(i), NULL, 0))
      fprintf(f, " %s", attn_kernel_at(i)->name);
  bool any = false;
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    char why[96];
    if (attn_kernel_available(attn_kernel_at(i), why, sizeof why)) continue;
    fprintf(f, "%s %s (%s)", any ? "," : "; unavailable on this CPU:", attn_kernel_at(i)->name,
            why);
    any = true;
  }
}

void attn_report_unknown_kernel(const char *command, const char *name) {
  fprintf(stderr, "attnbench %s: unknown kernel '%s'; ", command, name);
  attn_print_kernel_names(stderr);
  fputc('\n', stderr);
}

// ── memory ──────────────────────────────────────────────────────────────────────────

uint64_t attn_bytes_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t attn_bytes_mul(uint64_t a, uint64_t b) {
  return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static uint64_t dims(int64_t a, int64_t b, int64_t c, int64_t d) {
  const int64_t v[4] = {a, b, c, d};
  uint64_t n = 1;
  for (int i = 0; i < 4; i++) n = attn_bytes_mul(n, v[i] > 0 ? (uint64_t)v[i] : 0);
  return n;
}

// A layout problem (attn.h, "Serving layouts"; valid) has its own sizes: packed tokens,
// the pool of pages.
static uint64_t q_elems(const attn_problem *p) {
  if (p->layout) return attn_q_elems(p);
  return dims(p->batch, p->heads, p->seq_q, p->head_dim_qk);
}
static uint64_t k_elems(const attn_problem *p) {
  if (p->layout) return attn_k_elems(p);
  return dims(p->batch, p->kv_heads, p->seq_kv, p->head_dim_qk);
}
static uint64_t v_elems(const attn_problem *p) {
  if (p->layout) return attn_v_elems(p);
  return dims(p->batch, p->kv_heads, p->seq_kv, p->head_dim_v);
}
static uint64_t o_elems(const attn_problem *p) {
  if (p->layout) return attn_o_elems(p);
  return dims(p->batch, p->heads, p->seq_q, p->head_dim_v);
}

// Bytes of K and V as stored (kv_dtype: attn_kv_row_bytes per row), saturating.
static uint64_t kv_stored_bytes(const attn_problem *p) {
  if (p->layout) return attn_bytes_add(attn_k_bytes(p), attn_v_bytes(p));
  const uint64_t rows = dims(p->batch, p->kv_heads, p->seq_kv, 1);
  return attn_bytes_add(attn_bytes_mul(rows, attn_kv_row_bytes(p->kv_dtype, p->head_dim_qk)),
                        attn_bytes_mul(rows, attn_kv_row_bytes(p->kv_dtype, p->head_dim_v)));
}

uint64_t attn_tensor_bytes(const attn_problem *p) {
  const uint64_t qo = attn_bytes_mul(attn_bytes_add(q_elems(p), o_elems(p)), sizeof(float));
  return attn_bytes_add(qo, kv_stored_bytes(p));
}

uint64_t attn_check_bytes(const attn_problem *c, const attn_kernel *k, const attn_exec *exec) {
  uint64_t inputs = attn_bytes_mul(
      attn_bytes_add(attn_bytes_add(q_elems(c), k_elems(c)), v_elems(c)), sizeof(float));
  // a non-F32 case also holds K/V as stored and their float32 source (check.h)
  if (c->kv_dtype != ATTN_DTYPE_F32)
    inputs = attn_bytes_add(attn_bytes_add(inputs, kv_stored_bytes(c)),
                            attn_bytes_mul(attn_bytes_add(k_elems(c), v_elems(c)), sizeof(float)));
  // a compute mode also holds Q (and K, V when the mode rounds them) as the mode reads
  // them, and the F32 reference's output for the mode's error (check.h)
  if (c->compute != ATTN_COMPUTE_F32)
    inputs = attn_bytes_add(
        inputs, attn_bytes_mul(attn_bytes_add(attn_bytes_add(attn_bytes_add(q_elems(c), k_elems(c)),
                                                             v_elems(c)),
                                              o_elems(c)),
                               sizeof(float)));
  uint64_t b = attn_bytes_add(inputs, attn_bytes_mul(o_elems(c), sizeof(float) + sizeof(double)));
  // a layout case also holds each sequence's own dense case (its rows gathered, with its
  // reference and tolerance): about the batch's share again
  if (c->layout) b = attn_bytes_mul(b, 2);
  if (k)
    b = attn_bytes_add(attn_bytes_add(b, attn_bytes_mul(o_elems(c), sizeof(float))),
                       attn_kernel_workspace(k, c, exec));
  return b;
}

uint64_t attn_run_bytes(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                        bool check) {
  uint64_t b = attn_bytes_add(attn_tensor_bytes(p), attn_kernel_workspace(k, p, exec));
  if (check) b = attn_bytes_add(b, attn_check_bytes(p, NULL, exec));
  return b;
}

const char *attn_format_bytes(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, u++;
  if (v == (double)(uint64_t)v)
    snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
  else
    snprintf(buf, len, "%.1f %s", v, units[u]);
  return buf;
}

// Reads one unsigned number from a file; false if absent or "max".
static bool read_u64(const char *path, uint64_t *v) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  unsigned long long x;
  const bool ok = fscanf(f, "%llu", &x) == 1;
  fclose(f);
  if (ok) *v = x;
  return ok;
}

uint64_t attn_available_memory(void) {
  uint64_t avail = 0;
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = (uint64_t)kb * 1024;
    fclose(f);
  }
  // cgroup v2, then v1: a limit below physical memory caps what we may use.
  uint64_t limit, used;
  if ((read_u64("/sys/fs/cgroup/memory.max", &limit) &&
       read_u64("/sys/fs/cgroup/memory.current", &used)) ||
      (read_u64("/sys/fs/cgroup/memory/memory.limit_in_bytes", &limit) &&
       read_u64("/sys/fs/cgroup/memory/memory.usage_in_bytes", &used))) {
    const uint64_t headroom = limit > used ? limit - used : 0;
    if (limit < (UINT64_C(1) << 60) && (avail == 0 || headroom < avail)) avail = headroom;
  }
  return avail;
}

bool attn_memory_budget(uint64_t *bytes, char *err, size_t err_len) {
  uint64_t avail = attn_available_memory();
  const char *s = getenv("ATTNBENCH_MEMORY_LIMIT");
  if (s) {
    char *end = NULL;
    errno = 0;
    const unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
    int shift = -1;
    if (end && end != s && errno == 0) {
      if (!*end)
        shift = 0;
      else if (!end[1]) {
        const char *units = "KMGT";
        const char *u = strchr(units, *end);
        if (u && *end) shift = 10 * (int)(u - units + 1);
      }
    }
    if (shift < 0 || v == 0 || (shift && v > (UINT64_MAX >> shift))) {
      snprintf(err, err_len,
               "ATTNBENCH_MEMORY_LIMIT='%s' is not a positive byte count (e.g. 4096, 512M, 8G)", s);
      return false;
    }
    const uint64_t limit = (uint64_t)v << shift;
    if (avail == 0 || limit < avail) avail = limit;
  }
  *bytes = avail;
  return true;
}

bool attn_memory_refused(uint64_t need, uint64_t budget, char *msg, size_t len) {
  if (!budget || (double)need <= 0.8 * (double)budget) return false;
  char a[32], b[32];
  snprintf(msg, len, "needs %s of memory, %s available (limit: 80%% of available)",
           attn_format_bytes(need, a, sizeof a), attn_format_bytes(budget, b, sizeof b));
  return true;
}

// ── output values ───────────────────────────────────────────────────────────────────

bool attn_first_nonfinite(const attn_problem *p, const float *o, attn_nonfinite *where) {
  const size_t n = (size_t)o_elems(p);
  for (size_t x = 0; x < n; x++) {
    if (isfinite(o[x])) continue;
    const uint64_t dv = (uint64_t)p->head_dim_v, sq = (uint64_t)p->seq_q;
    const uint64_t h = (uint64_t)p->heads;
    where->index = x;
    where->d = (int64_t)(x % dv);
    where->value = o[x];
    if (p->layout) {  // token-major: the sequence whose rows [cu[b], cu[b+1]) hold it
      const int64_t t = (int64_t)(x / dv / h), *cu = p->layout->cu_seqlens_q;
      int64_t b = 0;
      while (b + 1 < p->batch && cu[b + 1] <= t) b++;
      where->token = t;
      where->h = (int64_t)(x / dv % h);
      where->b = b;
      where->i = t - cu[b];
      return true;
    }
    where->token = -1;
    where->i = (int64_t)(x / dv % sq);
    where->h = (int64_t)(x / dv / sq % h);
    where->b = (int64_t)(x / dv / sq / h);
    return true;
  }
  return false;
}
