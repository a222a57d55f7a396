// SPDX-License-Identifier: MIT
// attnbench_py.c — the flat C interface the Python module (python/attnbench) loads with
// ctypes. It takes plain integers, floats and pointers only, so the Python side never
// depends on the layout of attn_problem / attn_exec / attn_check_result: a field added to
// those structs (kernels/attn.h) changes this file, not the Python code.
//
// Problem arguments, everywhere below: dims = {batch, heads, kv_heads, seq_q, seq_kv,
// head_dim_qk, head_dim_v}; has_scale == 0 means the default scale 1/sqrt(head_dim_qk).
// Status codes: the kernels' ATTN_OK / ATTN_ERR_INVALID / ATTN_ERR_NOMEM / ATTN_ERR_RANGE
// (any other positive value is a kernel's own code), and the ATTNPY_* codes below.
#define _GNU_SOURCE  // sched_getaffinity (Linux)
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/settings.h"

#ifdef __linux__
#include <sched.h>
#endif

#define ATTNPY_EXPORT __attribute__((visibility("default")))

enum {
  ATTNPY_ABI = 2,                // bumped when a signature below changes
  ATTNPY_ERR_UNKNOWN = -1,       // no kernel of that name
  ATTNPY_ERR_UNAVAILABLE = -2,   // the CPU lacks an ISA the kernel needs
  ATTNPY_ERR_INVALID_EXEC = -3,  // threads / tiles outside their limits
};

ATTNPY_EXPORT int attnpy_abi(void) {
  return ATTNPY_ABI;
}

ATTNPY_EXPORT size_t attnpy_kernel_count(void) {
  return attn_kernel_count();
}

// Record i: name, summary, required ISA names, capability bits, availability (why when not).
ATTNPY_EXPORT int attnpy_kernel_info(size_t i, const char **name, const char **summary, char *isa,
                                     size_t isa_len, uint32_t *caps, int *available, char *why,
                                     size_t why_len) {
  const attn_kernel *k = attn_kernel_at(i);
  if (!k) return ATTNPY_ERR_UNKNOWN;
  *name = k->name, *summary = k->summary ? k->summary : "";
  attn_isa_names(k->required_isa, isa, isa_len);
  *caps = k->caps;
  if (why_len) why[0] = '\0';
  *available = attn_kernel_available(k, why, why_len);
  return ATTN_OK;
}

static int problem_of(const int64_t *dims, int causal, int has_scale, double scale, attn_problem *p,
                      char *err, size_t err_len) {
  *p =
      attn_problem_make(dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], causal != 0);
  if (has_scale) p->scale = (float)scale;
  if (has_scale && isfinite(scale) && !isfinite(p->scale)) {
    snprintf(err, err_len, "scale %g does not fit in float32", scale);
    return ATTN_ERR_INVALID;
  }
  return attn_problem_validate(p, err, err_len) ? ATTN_OK : ATTN_ERR_INVALID;
}

static int kernel_of(const char *name, const attn_kernel **k, char *err, size_t err_len) {
  *k = attn_kernel_find(name);
  if (!*k) {
    snprintf(err, err_len, "unknown kernel '%s' (attnbench.kernels() lists them)", name);
    return ATTNPY_ERR_UNKNOWN;
  }
  char why[96];
  if (!attn_kernel_available(*k, why, sizeof why)) {
    snprintf(err, err_len, "kernel %s is unavailable on this CPU: %s", name, why);
    return ATTNPY_ERR_UNAVAILABLE;
  }
  return ATTN_OK;
}

// ── The machine, as far as the module can see it without hwloc ───────────────────────
// The settings resolver's machine layer (kernels/core/settings.h) needs the physical cores
// this process may run on and one core's L1d and L2 sizes. `attnbench` reads them with
// hwloc; on Linux hwloc reads them from sysfs, as this does: the cores are the distinct
// (package, core) pairs of the CPUs in the affinity mask, the caches those of the first
// such CPU (cpuN/cache/indexI: level, type, size). Elsewhere nothing is known and the
// kernel defaults apply. Read once.
typedef struct machine {
  size_t l1d, l2;
  int cores;
} machine;

static long read_long(const char *path, char *unit) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long v = -1;
  char u = '\0';
  if (fscanf(f, "%ld%c", &v, &u) < 1) v = -1;
  fclose(f);
  if (unit) *unit = u;
  return v;
}

static machine machine_of(void) {
  static machine m;
  static int done;
  if (done) return m;
  done = 1;
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return m;
  enum { kMaxCores = 4096 };
  static long seen[kMaxCores];
  int first = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &set)) continue;
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
    const long core = read_long(path, NULL);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    const long pkg = read_long(path, NULL);
    if (core < 0 || pkg < 0) return (machine){0};  // no topology: know nothing
    if (first < 0) first = cpu;
    const long key = pkg * 65536 + core;
    int dup = 0;
    for (int i = 0; i < m.cores && !dup; i++) dup = seen[i] == key;
    if (!dup && m.cores < kMaxCores) seen[m.cores++] = key;
  }
  for (int i = 0; first >= 0 && i < 16; i++) {
    char path[128], type[16] = "", unit = '\0';
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", first, i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    const int got = fscanf(f, "%15s", type);
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", first, i);
    const long level = read_long(path, NULL);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", first, i);
    long size = read_long(path, &unit);
    if (got != 1 || size <= 0) continue;
    size *= unit == 'K' ? 1024L : unit == 'M' ? 1024L * 1024 : 1;
    if (level == 1 && !strcmp(type, "Data") && !m.l1d) m.l1d = (size_t)size;
    if (level == 2 && strcmp(type, "Instruction") && !m.l2) m.l2 = (size_t)size;
  }
#endif
  return m;
}

static const char *process_getenv(const char *name) {
  return getenv(name);
}

// The settings of kernel k (NULL: none) on p through the one resolver: the arguments are
// the command-line layer (0, NULL or −1: not given), then the environment, the machine
// above and the kernel defaults (no tuning file: the module reads none).
static int settings_of(const attn_kernel *k, const attn_problem *p, int threads, int tile_q,
                       int tile_kv, const char *regtile, int kv_split, attn_settings *s, char *err,
                       size_t err_len) {
  const attn_exec given = {.threads = threads,
                           .tile_q = tile_q,
                           .tile_kv = tile_kv,
                           .kv_split = kv_split > 0 ? kv_split : 0};
  if (attn_exec_check(&given, err, err_len) != ATTN_OK) return ATTNPY_ERR_INVALID_EXEC;
  if (regtile && !attn_settings_regtile_syntax(regtile)) {
    snprintf(err, err_len, "regtile '%.40s': expected a register-tile variant name or index",
             regtile);
    return ATTNPY_ERR_INVALID_EXEC;
  }
  static attn_setting_layers ls;  // a few KiB; the module is called from one thread at a time
  attn_setting_layers_clear(&ls);
  attn_setting_layer *cli = &ls.layer[ATTN_SOURCE_CLI];
  if (threads > 0) attn_setting_layer_set(cli, ATTN_SETTING_THREADS, threads, "threads=");
  if (tile_q > 0) attn_setting_layer_set(cli, ATTN_SETTING_TILE_Q, tile_q, "tile_q=");
  if (tile_kv > 0) attn_setting_layer_set(cli, ATTN_SETTING_TILE_KV, tile_kv, "tile_kv=");
  if (regtile) attn_setting_layer_regtile(cli, regtile, "regtile=");
  if (kv_split >= 0) attn_setting_layer_set(cli, ATTN_SETTING_KV_SPLIT, kv_split, "kv_split=");
  if (attn_settings_env(&ls.layer[ATTN_SOURCE_ENV], process_getenv, err, err_len) != 0)
    return ATTNPY_ERR_INVALID_EXEC;
  const machine m = machine_of();
  attn_settings_machine(&ls.layer[ATTN_SOURCE_MACHINE], p, m.l1d, m.l2, m.cores, false);
  if (attn_settings_resolve(k, p, &ls, s, NULL, err, err_len) != 0) return ATTNPY_ERR_INVALID_EXEC;
  return ATTN_OK;
}

// What every entry point starts from: kernel `name` (NULL: none, *kern = NULL), the
// problem and its resolved settings (settings_of). ATTN_OK (err empty) or the first error.
static int setup_of(const char *name, const int64_t *dims, int causal, int has_scale, double scale,
                    int threads, int tile_q, int tile_kv, const char *regtile, int kv_split,
                    const attn_kernel **kern, attn_problem *p, attn_settings *s, char *err,
                    size_t err_len) {
  if (err_len) err[0] = '\0';
  *kern = NULL;
  int rc = name ? kernel_of(name, kern, err, err_len) : ATTN_OK;
  if (rc == ATTN_OK) rc = problem_of(dims, causal, has_scale, scale, p, err, err_len);
  if (rc == ATTN_OK)
    rc = settings_of(*kern, p, threads, tile_q, tile_kv, regtile, kv_split, s, err, err_len);
  return rc;
}

// The resolved settings of kernel `name` (NULL: none) on a problem, without running it:
// values[ATTN_SETTING_COUNT] (threads, bind, tile_q, tile_kv, regtile, kv_split),
// sources[ATTN_SETTING_COUNT] (attn_source codes) and, in explain, `attnbench run
// --explain`'s lines. Arguments as attnpy_run's.
ATTNPY_EXPORT int attnpy_settings(const char *name, const int64_t *dims, int causal, int has_scale,
                                  double scale, int threads, int tile_q, int tile_kv,
                                  const char *regtile, int kv_split, int *values, int *sources,
                                  char *explain, size_t explain_len, char *err, size_t err_len) {
  const attn_kernel *kern;
  attn_problem p;
  attn_settings s;
  const int rc = setup_of(name, dims, causal, has_scale, scale, threads, tile_q, tile_kv, regtile,
                          kv_split, &kern, &p, &s, err, err_len);
  if (rc != ATTN_OK) return rc;
  const int v[ATTN_SETTING_COUNT] = {s.exec.threads, (int)s.bind,    s.exec.tile_q,
                                     s.exec.tile_kv, s.exec.regtile, s.exec.kv_split};
  for (int f = 0; f < ATTN_SETTING_COUNT; f++) values[f] = v[f], sources[f] = (int)s.source[f];
  attn_settings_explain(&s, kern, explain, explain_len);
  return ATTN_OK;
}

// Validates the problem alone (the Python side checks shapes against it first).
ATTNPY_EXPORT int attnpy_problem_check(const int64_t *dims, int causal, int has_scale, double scale,
                                       char *err, size_t err_len) {
  attn_problem p;
  return problem_of(dims, causal, has_scale, scale, &p, err, err_len);
}

// Runs kernel `name` through attn_kernel_call (problem, exec, ISA and input domain checked).
// The settings are resolved as `attnbench run` resolves them (settings_of).
ATTNPY_EXPORT int attnpy_run(const char *name, const int64_t *dims, int causal, int has_scale,
                             double scale, int threads, int tile_q, int tile_kv,
                             const char *regtile, int kv_split, const float *q, const float *k,
                             const float *v, float *o, char *err, size_t err_len) {
  const attn_kernel *kern;
  attn_problem p;
  attn_settings s;
  int rc = setup_of(name, dims, causal, has_scale, scale, threads, tile_q, tile_kv, regtile,
                    kv_split, &kern, &p, &s, err, err_len);
  if (rc == ATTN_OK) rc = attn_kernel_call(kern, &p, &s.exec, q, k, v, o, err, err_len);
  return rc;
}

// The checker's verdict (kernels/check/check.h). With name != NULL: runs that kernel on
// q, k, v and compares; with name == NULL: compares the caller's output o. stats gets
// {max_abs_err, max_rel_err, worst_ratio, worst_index}; *verdict an attn_check_verdict;
// message the checker's reason (empty on pass). ref, if not NULL, gets the reference O.
// With name == NULL and o == NULL nothing is compared (*verdict = -1): the reference only.
ATTNPY_EXPORT int attnpy_check(const char *name, const int64_t *dims, int causal, int has_scale,
                               double scale, int threads, int tile_q, int tile_kv,
                               const char *regtile, int kv_split, const float *q, const float *k,
                               const float *v, const float *o, float *ref, int *verdict,
                               double *stats, char *message, size_t message_len) {
  const attn_kernel *kern;
  attn_problem p;
  attn_settings s;
  int rc = setup_of(name, dims, causal, has_scale, scale, threads, tile_q, tile_kv, regtile,
                    kv_split, &kern, &p, &s, message, message_len);
  if (rc != ATTN_OK) return rc;
  const attn_exec e = s.exec;
  attn_check_prepared *pc = attn_check_prepare_inputs(&p, q, k, v, message, message_len);
  if (!pc) return ATTN_ERR_NOMEM;
  attn_check_result r = {.verdict = (attn_check_verdict)-1};
  if (kern)
    attn_check_kernel(kern, pc, &e, &r);
  else if (o)
    attn_check_output(pc, o, &r);
  if (ref) memcpy(ref, attn_check_reference_output(pc), attn_o_elems(&p) * sizeof(float));
  attn_check_prepared_free(pc);
  *verdict = (int)r.verdict;
  stats[0] = r.max_abs_err, stats[1] = r.max_rel_err, stats[2] = r.worst_ratio;
  stats[3] = (double)r.worst_index;
  snprintf(message, message_len, "%s", r.message);
  return ATTN_OK;
}
