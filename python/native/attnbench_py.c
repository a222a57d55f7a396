// SPDX-License-Identifier: MIT
// attnbench_py.c — the flat C interface the Python module (python/attnbench) loads with
// ctypes. It takes plain integers, floats and pointers only, so the Python side never
// depends on the layout of attn_problem / attn_exec / attn_check_result: a field added to
// those structs (kernels/attn.h) changes this file, not the Python code. It links the
// kernels (kernels/) and the harness parts that need nothing beyond libc and OpenMP: the
// FMA peak and bandwidth probes (harness/machine/peak) and the CPU identification
// (harness/machine/cpu_ident.c).
//
// Problem arguments, everywhere below: dims = {batch, heads, kv_heads, seq_q, seq_kv,
// head_dim_qk, head_dim_v}; has_scale == 0 means the default scale 1/sqrt(head_dim_qk).
// Status codes: the kernels' ATTN_OK / ATTN_ERR_INVALID / ATTN_ERR_NOMEM / ATTN_ERR_RANGE
// (any other positive value is a kernel's own code), and the ATTNPY_* codes below.
#define _GNU_SOURCE  // sched_getaffinity (Linux)
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn.h"
#include "check/check.h"
#include "core/convert.h"
#include "core/settings.h"
#include "machine/cpu_ident.h"
#include "machine/peak/bandwidth.h"
#include "machine/peak/peak.h"

#ifdef __linux__
#include <sched.h>
#endif

#define ATTNPY_EXPORT __attribute__((visibility("default")))

enum {
  ATTNPY_ABI = 6,                // bumped when a signature below changes
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

// The dense problem of dims with its scale, not yet validated.
static int problem_base(const int64_t *dims, int causal, int has_scale, double scale,
                        attn_problem *p, char *err, size_t err_len) {
  *p =
      attn_problem_make(dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], causal != 0);
  if (has_scale) p->scale = (float)scale;
  if (has_scale && isfinite(scale) && !isfinite(p->scale)) {
    snprintf(err, err_len, "scale %g does not fit in float32", scale);
    return ATTN_ERR_INVALID;
  }
  return ATTN_OK;
}

static int problem_of(const int64_t *dims, int causal, int has_scale, double scale, attn_problem *p,
                      char *err, size_t err_len) {
  const int rc = problem_base(dims, causal, has_scale, scale, p, err, err_len);
  if (rc != ATTN_OK) return rc;
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

static machine g_machine;

static void machine_read(void) {
  machine m = {0};
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
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
    if (core < 0 || pkg < 0) return;  // no topology: know nothing
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
  g_machine = m;
}

// Read once, whichever Python thread calls first (ctypes releases the GIL during a call).
static machine machine_of(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, machine_read);
  return g_machine;
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
  // A few KiB, one per thread: Python threads may call the module at once (ctypes
  // releases the GIL), and each call resolves its own settings.
  static _Thread_local attn_setting_layers ls;
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

// The end of every check entry point: the reference O into ref (if not NULL and the problem
// has one: a layout's sequences each have their own), the verdict, stats {max_abs_err,
// max_rel_err, worst_ratio, worst_index} and the message; frees pc.
static int check_done(attn_check_prepared *pc, const attn_check_result *r, float *ref, int *verdict,
                      double *stats, char *message, size_t message_len) {
  const float *reference = attn_check_reference_output(pc);
  if (ref && reference)
    memcpy(ref, reference, attn_o_elems(attn_check_problem(pc)) * sizeof(float));
  attn_check_prepared_free(pc);
  *verdict = (int)r->verdict;
  stats[0] = r->max_abs_err, stats[1] = r->max_rel_err, stats[2] = r->worst_ratio;
  stats[3] = (double)r->worst_index;
  snprintf(message, message_len, "%s", r->message);
  return ATTN_OK;
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
  return check_done(pc, &r, ref, verdict, stats, message, message_len);
}

// ── attention(): the problem with its options, compute mode and K/V type ────────────
// iopt[ATTNPY_IOPT_COUNT] and fopt[ATTNPY_FOPT_COUNT] (indices below) and the option
// arrays (NULL = not given) describe the problem; `opts` receives the options it points
// to (used only when one is set).
enum {
  ATTNPY_IO_CAUSAL,
  ATTNPY_IO_ALIGN,        // attn_align
  ATTNPY_IO_WINDOW,       // 1: the window below applies
  ATTNPY_IO_WINDOW_LEFT,  // >= 0 or ATTN_WINDOW_UNBOUNDED
  ATTNPY_IO_WINDOW_RIGHT,
  ATTNPY_IO_MASK_PER_HEAD,
  ATTNPY_IO_KV_DTYPE,  // attn_dtype
  ATTNPY_IO_COMPUTE,   // attn_compute
  ATTNPY_IO_HAS_SCALE,
  ATTNPY_IOPT_COUNT
};
enum { ATTNPY_FO_SCALE, ATTNPY_FO_SOFTCAP, ATTNPY_FO_ALIBI_MAX_BIAS, ATTNPY_FOPT_COUNT };

ATTNPY_EXPORT int attnpy_opt_counts(int *iopt_count, int *fopt_count) {
  *iopt_count = ATTNPY_IOPT_COUNT, *fopt_count = ATTNPY_FOPT_COUNT;
  return ATTN_OK;
}

// Whether this build's kernels implement the compute modes: attn_problem_validate then
// enforces their contract (INT8 needs Q8_0 K/V, attn.h "Compute modes"). Until it does, a
// mode other than F32 would be ignored, so it is refused instead of run as F32.
static bool compute_modes_in_force(void) {
  attn_problem t = attn_problem_make(1, 1, 1, 1, 1, 32, 32, false);
  t.compute = ATTN_COMPUTE_INT8;
  return !attn_problem_validate(&t, NULL, 0);
}

// The problem arguments of the attention entry points (ATTNPY_PROBLEM_PARAMS, in this
// order): dims, iopt, fopt (above), the option arrays slopes [heads], sinks [heads], mask
// (NULL = not given), and the batch layout (attn.h "Serving layouts"): lay = NULL for the
// dense layout, else lay[ATTNPY_LAY_COUNT] (below) with cu_q and cu_kv [sequences + 1] and,
// for PAGED, table [sequences][pages_per_seq]. dims' batch, seq_q and seq_kv are then
// taken from the layout (attn_problem_set_layout).
enum {
  ATTNPY_LAY_KIND,  // attn_layout_kind: RAGGED or PAGED
  ATTNPY_LAY_SEQS,  // sequences (the problem's batch), >= 1
  ATTNPY_LAY_PAGE_SIZE,
  ATTNPY_LAY_NUM_PAGES,
  ATTNPY_LAY_PAGES_PER_SEQ,
  ATTNPY_LAY_COUNT
};
#define ATTNPY_PROBLEM_PARAMS                                                         \
  const int64_t *dims, const int64_t *iopt, const double *fopt, const float *slopes,  \
      const float *sinks, const float *mask, const int64_t *lay, const int64_t *cu_q, \
      const int64_t *cu_kv, const int32_t *table
#define ATTNPY_PROBLEM_ARGS \
  (&(const attnpy_args){dims, iopt, fopt, slopes, sinks, mask, lay, cu_q, cu_kv, table})
typedef struct attnpy_args {
  const int64_t *dims, *iopt;
  const double *fopt;
  const float *slopes, *sinks, *mask;
  const int64_t *lay, *cu_q, *cu_kv;
  const int32_t *table;
} attnpy_args;

ATTNPY_EXPORT int attnpy_lay_count(void) {
  return ATTNPY_LAY_COUNT;
}

// Sets p's layout (storage *l) from a->lay; attn_problem_validate then checks it.
static int layout_of(const attnpy_args *a, attn_problem *p, attn_layout *l, char *err,
                     size_t err_len) {
  const int64_t *lay = a->lay;
  if (lay[ATTNPY_LAY_SEQS] < 1 || !a->cu_q || !a->cu_kv ||
      (lay[ATTNPY_LAY_KIND] == ATTN_LAYOUT_PAGED && !a->table)) {
    snprintf(err, err_len, "layout: %lld sequences or a missing array",
             (long long)lay[ATTNPY_LAY_SEQS]);
    return ATTN_ERR_INVALID;
  }
  *l = (attn_layout){.kind = (attn_layout_kind)lay[ATTNPY_LAY_KIND],
                     .cu_seqlens_q = a->cu_q,
                     .cu_seqlens_kv = a->cu_kv,
                     .page_size = lay[ATTNPY_LAY_PAGE_SIZE],
                     .num_pages = lay[ATTNPY_LAY_NUM_PAGES],
                     .pages_per_seq = lay[ATTNPY_LAY_PAGES_PER_SEQ],
                     .page_table = a->table};
  attn_problem_set_layout(p, l, lay[ATTNPY_LAY_SEQS]);
  return ATTN_OK;
}

static int problem_ex(const attnpy_args *a, float *lse, attn_problem *p, attn_options *opts,
                      attn_layout *l, char *err, size_t err_len) {
  const int64_t *iopt = a->iopt;
  const double *fopt = a->fopt;
  int rc = problem_base(a->dims, (int)iopt[ATTNPY_IO_CAUSAL], (int)iopt[ATTNPY_IO_HAS_SCALE],
                        fopt[ATTNPY_FO_SCALE], p, err, err_len);
  if (rc == ATTN_OK && a->lay) rc = layout_of(a, p, l, err, err_len);
  if (rc != ATTN_OK) return rc;
  if (iopt[ATTNPY_IO_KV_DTYPE] < 0 || iopt[ATTNPY_IO_KV_DTYPE] >= ATTN_DTYPE_COUNT ||
      iopt[ATTNPY_IO_COMPUTE] < 0 || iopt[ATTNPY_IO_COMPUTE] >= ATTN_COMPUTE_COUNT) {
    snprintf(err, err_len, "kv_dtype %lld / compute %lld out of range",
             (long long)iopt[ATTNPY_IO_KV_DTYPE], (long long)iopt[ATTNPY_IO_COMPUTE]);
    return ATTN_ERR_INVALID;
  }
  p->kv_dtype = (attn_dtype)iopt[ATTNPY_IO_KV_DTYPE];
  p->compute = (attn_compute)iopt[ATTNPY_IO_COMPUTE];
  if (p->compute != ATTN_COMPUTE_F32 && !compute_modes_in_force()) {
    snprintf(err, err_len, "compute mode %lld: this build's kernels implement only f32",
             (long long)p->compute);
    return ATTN_ERR_INVALID;
  }
  const float softcap = (float)fopt[ATTNPY_FO_SOFTCAP];
  const float max_bias = (float)fopt[ATTNPY_FO_ALIBI_MAX_BIAS];
  *opts = (attn_options){
      .align = (attn_align)iopt[ATTNPY_IO_ALIGN],
      .window = iopt[ATTNPY_IO_WINDOW] != 0,
      .window_left = iopt[ATTNPY_IO_WINDOW_LEFT],
      .window_right = iopt[ATTNPY_IO_WINDOW_RIGHT],
      .softcap = softcap,
      .alibi_max_bias = max_bias,
      .alibi_slopes = a->slopes,
      .sinks = a->sinks,
      .mask = a->mask,
      .mask_per_head = iopt[ATTNPY_IO_MASK_PER_HEAD] != 0,
      .lse = lse,
  };
  const bool any = opts->align != ATTN_ALIGN_BOTTOM_RIGHT || opts->window || softcap != 0 ||
                   max_bias != 0 || a->slopes || a->sinks || a->mask || lse;
  if (any) p->opts = opts;
  return attn_problem_validate(p, err, err_len) ? ATTN_OK : ATTN_ERR_INVALID;
}

// What attention entry points start from: kernel `name` (NULL: none), the problem with
// its options and layout (storage in *st) and the resolved settings (threads only; tiles
// etc. from the resolver).
typedef struct attnpy_setup {
  const attn_kernel *kern;
  attn_problem p;
  attn_options opts;
  attn_layout layout;
  attn_settings s;
} attnpy_setup;

static int setup_ex(const char *name, const attnpy_args *a, float *lse, int threads,
                    attnpy_setup *st, char *err, size_t err_len) {
  if (err_len) err[0] = '\0';
  st->kern = NULL;
  int rc = name ? kernel_of(name, &st->kern, err, err_len) : ATTN_OK;
  if (rc == ATTN_OK) rc = problem_ex(a, lse, &st->p, &st->opts, &st->layout, err, err_len);
  if (rc == ATTN_OK)
    rc = settings_of(st->kern, &st->p, threads, 0, 0, NULL, -1, &st->s, err, err_len);
  return rc;
}

// Runs kernel `name` on the problem (attn_kernel_call: problem, exec, ISA and the input
// domain checked). o gets O, lse (if not NULL) the LSE ([batch][heads][seq_q]; with a
// layout [heads][total_q]). *fallback (if not NULL): whether the shared portable path ran
// (attn_kernel_native).
ATTNPY_EXPORT int attnpy_attention(const char *name, ATTNPY_PROBLEM_PARAMS, float *lse, int threads,
                                   const float *q, const void *k, const void *v, float *o,
                                   int *fallback, char *err, size_t err_len) {
  attnpy_setup st;
  int rc = setup_ex(name, ATTNPY_PROBLEM_ARGS, lse, threads, &st, err, err_len);
  if (rc != ATTN_OK) return rc;
  if (fallback) *fallback = !attn_kernel_native(st.kern, &st.p);
  return attn_kernel_call(st.kern, &st.p, &st.s.exec, q, k, v, o, err, err_len);
}

// The checker's verdict on an O (and LSE, when lse != NULL) computed for the problem:
// as attnpy_check with name == NULL. ref (if not NULL) gets the reference O.
ATTNPY_EXPORT int attnpy_attention_check(ATTNPY_PROBLEM_PARAMS, const float *q, const void *k,
                                         const void *v, const float *o, const float *lse,
                                         float *ref, int *verdict, double *stats, char *message,
                                         size_t message_len) {
  attnpy_setup st;
  // A non-NULL lse pointer asks the checker to check LSE (it is not written).
  int rc = setup_ex(NULL, ATTNPY_PROBLEM_ARGS, (float *)lse, 0, &st, message, message_len);
  if (rc != ATTN_OK) return rc;
  attn_check_prepared *pc = attn_check_prepare_inputs(&st.p, q, k, v, message, message_len);
  if (!pc) return ATTN_ERR_NOMEM;
  attn_check_result r = {.verdict = (attn_check_verdict)-1};
  attn_check_output_lse(pc, o, lse, &r);
  return check_done(pc, &r, ref, verdict, stats, message, message_len);
}

// ── benchmark(): a timed loop over attn_kernel_run ──────────────────────────────────
static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Times kernel `name` on the problem. One checked call first (attn_kernel_call: all
// validation, the input domain, and a warm-up), then samples: each sample times `number`
// consecutive attn_kernel_run calls with a workspace allocated once, number chosen so
// that a sample lasts at least min_time / repeats (>= 1 call). Samples are taken until
// there are `repeats` of them and they add up to min_time, at most `cap`.
// samples[i] = seconds per call of sample i; out[] = {samples taken, number, threads
// used (the resolved setting; 0 = OpenMP default), fallback (1: the portable path ran)}.
ATTNPY_EXPORT int attnpy_bench(const char *name, ATTNPY_PROBLEM_PARAMS, int threads, const float *q,
                               const void *k, const void *v, float *o, int repeats, double min_time,
                               int cap, double *samples, int64_t *out, char *err, size_t err_len) {
  attnpy_setup st;
  int rc = setup_ex(name, ATTNPY_PROBLEM_ARGS, NULL, threads, &st, err, err_len);
  if (rc != ATTN_OK) return rc;
  const attn_kernel *kern = st.kern;
  const attn_problem *p = &st.p;
  const attn_exec *exec = &st.s.exec;
  if (repeats < 1 || cap < repeats || !(min_time >= 0) || min_time > 3600) {
    snprintf(err, err_len, "repeats %d (1..%d) or min_time %g s (0..3600) out of range", repeats,
             cap, min_time);
    return ATTNPY_ERR_INVALID_EXEC;
  }
  rc = attn_kernel_call(kern, p, exec, q, k, v, o, err, err_len);
  if (rc != ATTN_OK) return rc;
  const size_t ws = attn_kernel_workspace(kern, p, exec);
  void *work = NULL;
  if (ws) {
    work = aligned_alloc(64, (ws + 63) / 64 * 64);
    if (!work) {
      snprintf(err, err_len, "cannot allocate the %zu-byte workspace", ws);
      return ATTN_ERR_NOMEM;
    }
  }
  bool fallback = false;
  const double target = min_time / repeats;
  int64_t number = 1;
  for (;;) {  // calibrate: double the calls per sample until one sample reaches target
    const double t0 = now_seconds();
    for (int64_t i = 0; i < number && rc == ATTN_OK; i++)
      rc = attn_kernel_run(kern, p, exec, q, k, v, o, work, &fallback);
    const double t = now_seconds() - t0;
    if (rc != ATTN_OK || t >= target || number >= ((int64_t)1 << 40)) break;
    number *= t > 0 ? (int64_t)fmin(fmax(2.0, 1.2 * target / t), 1e3) : 2;
  }
  int n = 0;
  double total = 0;
  while (rc == ATTN_OK && n < cap && (n < repeats || total < min_time)) {
    const double t0 = now_seconds();
    for (int64_t i = 0; i < number && rc == ATTN_OK; i++)
      rc = attn_kernel_run(kern, p, exec, q, k, v, o, work, &fallback);
    const double t = now_seconds() - t0;
    samples[n++] = t / (double)number;
    total += t;
  }
  free(work);
  if (rc != ATTN_OK) {
    snprintf(err, err_len, "kernel %s returned %d in the timed loop", name, rc);
    return rc;
  }
  out[0] = n, out[1] = number, out[2] = exec->threads, out[3] = fallback;
  return ATTN_OK;
}

// Useful FLOPs of the problem (attn_flops) and the ATTN_ISA_* bit whose FP32 FMA peak is
// the kernel's yardstick — the rule of `attnbench bench` (harness/bench/point.c,
// attn_bench_peak_isa): the kernel's best required ISA, AVX-512F over AVX2, NEON, or the
// CPU's best for a portable kernel; 0 = the scalar peak. *caps gets the kernel's caps.
// *kv_keys: the keys one call must read per K/V head, Σ_b attn_layout_visible_keys (the
// rule of bench's serving counters, harness/bench/serving.c).
ATTNPY_EXPORT int attnpy_problem_info(const char *name, ATTNPY_PROBLEM_PARAMS, double *flops,
                                      double *kv_keys, uint32_t *peak_isa, uint32_t *caps,
                                      char *err, size_t err_len) {
  attnpy_setup st;
  int rc = setup_ex(name, ATTNPY_PROBLEM_ARGS, NULL, 0, &st, err, err_len);
  if (rc != ATTN_OK) return rc;
  const attn_kernel *kern = st.kern;
  *flops = attn_flops(&st.p);
  *kv_keys = 0;
  for (int64_t b = 0; b < st.p.batch; b++) *kv_keys += (double)attn_layout_visible_keys(&st.p, b);
  const uint32_t isa = kern->required_isa ? kern->required_isa : attn_cpu_features();
  *peak_isa = (isa & ATTN_ISA_AVX512F) ? ATTN_ISA_AVX512F
              : (isa & ATTN_ISA_AVX2)  ? ATTN_ISA_AVX2
                                       : isa & ATTN_ISA_NEON;
  *caps = kern->caps;
  return ATTN_OK;
}

// ── info(): the machine ─────────────────────────────────────────────────────────────
// ints[] = {ATTN_ISA_* bits of this CPU, physical cores available, L1d bytes, L2 bytes,
// family, model, stepping, hypervisor}; vendor, uarch: cpu_ident.h's strings.
ATTNPY_EXPORT int attnpy_machine(int64_t *ints, char *vendor, size_t vendor_len, char *uarch,
                                 size_t uarch_len) {
  const machine m = machine_of();
  const attn_cpu_ident *id = attn_cpu_ident_get();
  ints[0] = attn_cpu_features(), ints[1] = m.cores, ints[2] = (int64_t)m.l1d;
  ints[3] = (int64_t)m.l2, ints[4] = id->family, ints[5] = id->model, ints[6] = id->stepping;
  ints[7] = id->hypervisor;
  snprintf(vendor, vendor_len, "%s", id->vendor);
  snprintf(uarch, uarch_len, "%s", id->uarch);
  return ATTN_OK;
}

// Names of the ATTN_ISA_* bits in isa ("avx2 avx512f", "none").
ATTNPY_EXPORT int attnpy_isa_names(uint32_t isa, char *buf, size_t len) {
  attn_isa_names(isa, buf, len);
  return ATTN_OK;
}

// The measured FP32 FMA peak (GFLOP/s) of one ATTN_ISA_* bit (0 = scalar) on `threads`
// threads (harness/machine/peak/peak.h; ~0.3 s) in *gflops: 0 when the CPU lacks the ISA.
// Threads outside the kernels' limits (attn_exec_check) are refused with the reason.
ATTNPY_EXPORT int attnpy_fma_peak(uint32_t isa, int threads, double *gflops, char *err,
                                  size_t err_len) {
  *gflops = 0.0;
  if (attn_peak_threads(threads, err, err_len) == 0) return ATTNPY_ERR_INVALID_EXEC;
  *gflops = attn_peak_fma_gflops(isa, threads);
  return ATTN_OK;
}

// Read bandwidth (bandwidth.h): best and median GB/s of `passes` reads of `bytes`.
ATTNPY_EXPORT int attnpy_bandwidth(size_t bytes, int threads, int passes, double *best,
                                   double *median) {
  attn_bandwidth b;
  const int rc = attn_bandwidth_read(bytes, threads, passes, &b);
  if (rc != 0 || !b.ok) return rc != 0 ? ATTN_ERR_NOMEM : ATTN_ERR_INVALID;
  *best = b.best_gbs, *median = b.median_gbs;
  return ATTN_OK;
}

// Stores rows × dim float32 values as dtype (kernels/core/convert.h: F16 and BF16 round to
// nearest even, Q8_0 per 32-element block); out holds rows · attn_kv_row_bytes(dtype, dim).
ATTNPY_EXPORT int attnpy_quantize(int dtype, const float *x, int64_t rows, int64_t dim, void *out,
                                  char *err, size_t err_len) {
  if (dtype <= ATTN_DTYPE_F32 || dtype >= ATTN_DTYPE_COUNT || rows < 0 || dim < 1 ||
      (dtype == ATTN_DTYPE_Q8_0 && dim % ATTN_Q8_0_BLOCK)) {
    snprintf(err, err_len, "cannot store rows of %lld elements as %s", (long long)dim,
             attn_dtype_name((attn_dtype)dtype));
    return ATTN_ERR_INVALID;
  }
  attn_quantize_rows((attn_dtype)dtype, x, (size_t)rows, dim, out);
  return ATTN_OK;
}
