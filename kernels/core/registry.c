// SPDX-License-Identifier: MIT
// The kernel table, generated from attn_registry.def, the plug-in kernels added at run
// time after it (attn_registry_add), and the checked call path.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn_internal.h"
#include "core/convert.h"

#if defined(__x86_64__) || defined(__i386__)
#define ATTN_KERNEL_X86(sym) ATTN_KERNEL(sym)
#else
#define ATTN_KERNEL_X86(sym)
#endif
// AMX kernels: x86-64 builds whose compiler has -mamx-tile -mamx-bf16 (kernels/CMakeLists.txt).
#if defined(ATTNBENCH_HAVE_AMX)
#define ATTN_KERNEL_AMX(sym) ATTN_KERNEL(sym)
#else
#define ATTN_KERNEL_AMX(sym)
#endif
#if defined(__aarch64__)
#define ATTN_KERNEL_ARM(sym) ATTN_KERNEL(sym)
#else
#define ATTN_KERNEL_ARM(sym)
#endif

// Baselines built outside kernels/ (baselines/CMakeLists.txt defines this when found).
#if defined(ATTNBENCH_HAVE_BLAS)
#define ATTN_KERNEL_BLAS(sym) ATTN_KERNEL(sym)
#else
#define ATTN_KERNEL_BLAS(sym)
#endif

#define ATTN_KERNEL(sym) extern const attn_kernel attn_kernel_##sym;
#include "attn_registry.def"
#undef ATTN_KERNEL

static const attn_kernel *const kTable[] = {
#define ATTN_KERNEL(sym) &attn_kernel_##sym,
#include "attn_registry.def"
#undef ATTN_KERNEL
};

enum { kBuiltins = sizeof kTable / sizeof kTable[0] };

// Plug-in kernels, after the built-ins: kPlugins[i] came from the plug-in kOrigins[i].
// Grown by attn_registry_add only (start-up, one thread); never shrunk, since records
// live in the loaded objects for the rest of the process.
static const attn_kernel **kPlugins;
static const char **kOrigins;
static size_t kNumPlugins;

size_t attn_builtin_count(void) {
  return kBuiltins;
}

size_t attn_kernel_count(void) {
  return kBuiltins + kNumPlugins;
}

const attn_kernel *attn_kernel_at(size_t i) {
  if (i < kBuiltins) return kTable[i];
  return i - kBuiltins < kNumPlugins ? kPlugins[i - kBuiltins] : NULL;
}

const attn_kernel *attn_kernel_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < attn_kernel_count(); i++)
    if (strcmp(attn_kernel_at(i)->name, name) == 0) return attn_kernel_at(i);
  return NULL;
}

const char *attn_kernel_origin(const attn_kernel *k) {
  for (size_t i = 0; i < kNumPlugins; i++)
    if (kPlugins[i] == k) return kOrigins[i];
  return NULL;
}

#define ATTN_FAIL(...)                                       \
  do {                                                       \
    if (err && err_len) snprintf(err, err_len, __VA_ARGS__); \
    return false;                                            \
  } while (0)

bool attn_kernel_validate(const attn_kernel *k, char *err, size_t err_len) {
  if (!k) ATTN_FAIL("the kernel record is NULL");
  if (!k->name) ATTN_FAIL("a kernel record has a NULL name");
  const size_t len = strlen(k->name);
  if (len == 0) ATTN_FAIL("a kernel record has an empty name");
  for (size_t i = 0; i < len; i++) {
    const char c = k->name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    // Only the valid part is echoed: the rest may hold newlines or terminal escapes.
    if (!ok)
      ATTN_FAIL("kernel name '%.*s' has a character outside [A-Za-z0-9_.-] (byte 0x%02x at %zu)",
                (int)i, k->name, (unsigned)(unsigned char)c, i);
  }
  if (len > ATTN_KERNEL_NAME_MAX)
    ATTN_FAIL("kernel name '%.20s...' is longer than %d characters", k->name, ATTN_KERNEL_NAME_MAX);
  if (!k->summary) ATTN_FAIL("kernel %s: summary is NULL", k->name);
  if (!k->run) ATTN_FAIL("kernel %s: run (the entry point) is NULL", k->name);
  const uint32_t isa_known = ATTN_ISA_AVX2 | ATTN_ISA_AVX512F | ATTN_ISA_NEON | ATTN_ISA_F16C |
                             ATTN_ISA_AVX512BF16 | ATTN_ISA_AVX512FP16 | ATTN_ISA_AVX512VNNI |
                             ATTN_ISA_AVXVNNI | ATTN_ISA_AMXBF16 | ATTN_ISA_NEON_BF16 |
                             ATTN_ISA_NEON_DOTPROD | ATTN_ISA_NEON_FHM;
  if (k->required_isa & ~isa_known)
    ATTN_FAIL("kernel %s: required_isa 0x%x has unknown bits 0x%x (see ATTN_ISA_*)", k->name,
              (unsigned)k->required_isa, (unsigned)(k->required_isa & ~isa_known));
  const uint32_t caps_known = ATTN_CAP_ALL_SHAPES | ATTN_CAP_THREADS | ATTN_CAP_KV_SPLIT |
                              ATTN_CAP_OPT_ALL | ATTN_CAP_KV_ALL | ATTN_CAP_COMPUTE_ALL |
                              ATTN_CAP_LAYOUT_ALL;
  if (k->caps & ~caps_known)
    ATTN_FAIL("kernel %s: caps 0x%x has unknown bits 0x%x (see ATTN_CAP_*)", k->name,
              (unsigned)k->caps, (unsigned)(k->caps & ~caps_known));
  if (k->vec_width < 0 || k->qk_rows < 0 || k->qk_cols < 0 || k->pv_rows < 0 || k->pv_cols < 0)
    ATTN_FAIL("kernel %s: vec_width and the register tiles must be >= 0", k->name);
  if (k->regtile_count < 0 || k->regtile_count > ATTN_MAX_REGTILES)
    ATTN_FAIL("kernel %s: regtile_count %d is out of range (0..%d)", k->name, k->regtile_count,
              ATTN_MAX_REGTILES);
  if (k->regtile_count > 0 && !k->regtiles)
    ATTN_FAIL("kernel %s: regtile_count %d but regtiles is NULL", k->name, k->regtile_count);
  for (int i = 0; i < k->regtile_count; i++) {
    const attn_regtile *r = &k->regtiles[i];
    if (!r->name || !r->name[0] || strlen(r->name) > 31)
      ATTN_FAIL("kernel %s: register-tile variant %d needs a name of 1..31 characters", k->name, i);
    for (const char *c = r->name; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            *c == '_' || *c == '.' || *c == '-' || *c == '/'))
        ATTN_FAIL(
            "kernel %s: register-tile variant name '%.*s' has a character outside "
            "[A-Za-z0-9/_.-] (byte 0x%02x at %d)",
            k->name, (int)(c - r->name), r->name, (unsigned)(unsigned char)*c, (int)(c - r->name));
    if (r->qk_rows < 0 || r->qk_cols < 0 || r->pv_rows < 0 || r->pv_cols < 0)
      ATTN_FAIL("kernel %s: register-tile variant %s: tile sizes must be >= 0", k->name, r->name);
    for (int j = 0; j < i; j++)
      if (!strcmp(k->regtiles[j].name, r->name))
        ATTN_FAIL("kernel %s: register-tile variant name '%s' appears twice", k->name, r->name);
  }
  if (k->regtile_count > 0) {
    const attn_regtile *d = &k->regtiles[0];
    if (d->qk_rows != k->qk_rows || d->qk_cols != k->qk_cols || d->pv_rows != k->pv_rows ||
        d->pv_cols != k->pv_cols)
      ATTN_FAIL("kernel %s: register-tile variant 0 (%s) differs from the record's tiles", k->name,
                d->name);
  }
  if (err && err_len) err[0] = '\0';
  return true;
}

int attn_kernel_regtile_count(const attn_kernel *k) {
  return k->regtile_count > 0 ? k->regtile_count : 1;
}

attn_regtile attn_kernel_regtile(const attn_kernel *k, int i) {
  if (k->regtile_count > 0 && i >= 0 && i < k->regtile_count) return k->regtiles[i];
  return (attn_regtile){"default", k->qk_rows, k->qk_cols, k->pv_rows, k->pv_cols};
}

int attn_kernel_regtile_find(const attn_kernel *k, const char *name) {
  if (!name) return -1;
  const int n = attn_kernel_regtile_count(k);
  for (int i = 0; i < n; i++)
    if (!strcmp(attn_kernel_regtile(k, i).name, name)) return i;
  return -1;
}

int attn_kernel_exec_check(const attn_kernel *k, const attn_exec *exec, char *err, size_t err_len) {
  const int rc = attn_exec_check(exec, err, err_len);
  if (rc != ATTN_OK || !exec || !k) return rc;
  const int n = attn_kernel_regtile_count(k);
  if (exec->regtile >= n) {
    if (err && err_len) {
      int w = snprintf(err, err_len, "kernel %s has %d register-tile variant%s (0..%d:", k->name, n,
                       n == 1 ? "" : "s", n - 1);
      for (int i = 0; i < n && w >= 0 && (size_t)w < err_len; i++)
        w += snprintf(err + w, err_len - (size_t)w, " %s", attn_kernel_regtile(k, i).name);
      if (w >= 0 && (size_t)w < err_len)
        snprintf(err + w, err_len - (size_t)w, "); regtile %d is none of them", exec->regtile);
    }
    return ATTN_ERR_INVALID;
  }
  return ATTN_OK;
}

#undef ATTN_FAIL
#define ATTN_FAIL(code, ...)                                 \
  do {                                                       \
    if (err && err_len) snprintf(err, err_len, __VA_ARGS__); \
    return code;                                             \
  } while (0)

int attn_registry_add(const attn_plugin *pl, const char *origin, char *err, size_t err_len) {
  if (!origin) origin = "(unnamed plug-in)";
  if (!pl) ATTN_FAIL(ATTN_ERR_INVALID, "plug-in %s: the entry point returned NULL", origin);
  if (pl->abi_version != ATTN_PLUGIN_ABI_VERSION)
    ATTN_FAIL(
        ATTN_ERR_INVALID,
        "plug-in %s: ABI version %u, this attnbench needs %u (rebuild it against this attn.h)",
        origin, (unsigned)pl->abi_version, (unsigned)ATTN_PLUGIN_ABI_VERSION);
  if (pl->record_size != sizeof(attn_kernel))
    ATTN_FAIL(ATTN_ERR_INVALID,
              "plug-in %s: kernel record size %u, this attnbench needs %zu (rebuild it against "
              "this attn.h)",
              origin, (unsigned)pl->record_size, sizeof(attn_kernel));
  if (pl->count == 0 || !pl->kernels)
    ATTN_FAIL(ATTN_ERR_INVALID, "plug-in %s: declares no kernels", origin);
  char why[192];
  for (size_t i = 0; i < pl->count; i++) {
    const attn_kernel *k = pl->kernels[i];
    if (!k) ATTN_FAIL(ATTN_ERR_INVALID, "plug-in %s: kernel record %zu is NULL", origin, i);
    if (!attn_kernel_validate(k, why, sizeof why))
      ATTN_FAIL(ATTN_ERR_INVALID, "plug-in %s: record %zu: %s", origin, i, why);
    for (size_t j = 0; j < i; j++)
      if (strcmp(pl->kernels[j]->name, k->name) == 0)
        ATTN_FAIL(ATTN_ERR_INVALID, "plug-in %s: kernel name '%s' appears twice", origin, k->name);
    const attn_kernel *prev = attn_kernel_find(k->name);
    if (prev) {
      const char *o = attn_kernel_origin(prev);
      if (o)
        ATTN_FAIL(ATTN_ERR_INVALID, "plug-in %s: kernel '%s' is already registered by plug-in %s",
                  origin, k->name, o);
      ATTN_FAIL(ATTN_ERR_INVALID,
                "plug-in %s: kernel '%s' shadows the built-in kernel of that name", origin,
                k->name);
    }
  }
  const size_t n = kNumPlugins + pl->count;
  const attn_kernel **kp = realloc(kPlugins, n * sizeof *kp);
  if (kp) kPlugins = kp;
  const char **ko = kp ? realloc(kOrigins, n * sizeof *ko) : NULL;
  if (ko) kOrigins = ko;
  const size_t olen = strlen(origin) + 1;
  char *copy = ko ? malloc(olen) : NULL;
  if (!copy) ATTN_FAIL(ATTN_ERR_NOMEM, "plug-in %s: out of memory registering its kernels", origin);
  memcpy(copy, origin, olen);
  for (size_t i = 0; i < pl->count; i++) {
    kPlugins[kNumPlugins + i] = pl->kernels[i];
    kOrigins[kNumPlugins + i] = copy;  // shared by the plug-in's records; lives to exit
  }
  kNumPlugins = n;
  if (err && err_len) err[0] = '\0';
  return ATTN_OK;
}

#undef ATTN_FAIL

bool attn_kernel_available(const attn_kernel *k, char *why, size_t why_len) {
  const uint32_t missing = k->required_isa & ~attn_cpu_features();
  if (!missing) {
    if (why && why_len) why[0] = '\0';
    return true;
  }
  if (why && why_len) {
    char names[64];
    snprintf(why, why_len, "needs %s", attn_isa_names(missing, names, sizeof names));
  }
  return false;
}

bool attn_kernel_native(const attn_kernel *k, const attn_problem *p) {
  return (attn_problem_options_used(p) & ~k->caps) == 0;
}

bool attn_kernel_kv_native(const attn_kernel *k, const attn_problem *p) {
  return p->kv_dtype == ATTN_DTYPE_F32 || (k->caps & attn_dtype_cap(p->kv_dtype)) != 0;
}

// Bytes of x rounded up to 64 (saturating), so that what follows stays 64-byte aligned.
static size_t round64_sat(size_t x) {
  return x > SIZE_MAX - 63 ? SIZE_MAX : (x + 63) & ~(size_t)63;
}

bool attn_kernel_compute_native(const attn_kernel *k, const attn_problem *p) {
  return p->compute == ATTN_COMPUTE_F32 || (k->caps & attn_compute_cap(p->compute)) != 0;
}

// The float32 copies attn_kernel_run makes at the front of the workspace, each rounded up
// to 64 bytes: K and V when the kernel does not read p's K/V type, or when it does not
// run p's compute mode and that mode rounds K/V (attn_compute_rounds_kv); Q when it does
// not run the mode. f is the problem the kernel itself sees.
typedef struct copy_plan {
  bool kv, q;
  size_t k_bytes, v_bytes, q_bytes;  // each rounded up to 64; 0 when not copied
  attn_problem f;
} copy_plan;

static copy_plan plan_copies(const attn_kernel *k, const attn_problem *p) {
  copy_plan c = {.f = *p};
  // The options fallback (attn_kernel_native false) runs F32 only: it gets the copies too.
  const bool emulate = !attn_kernel_compute_native(k, p) || !attn_kernel_native(k, p);
  c.q = emulate && p->compute != ATTN_COMPUTE_F32;
  c.kv =
      !attn_kernel_kv_native(k, p) || (emulate && attn_compute_rounds_kv(p->compute, p->kv_dtype));
  if (c.kv) {
    c.k_bytes = round64_sat(attn_size_mul_sat(attn_k_elems(p), sizeof(float)));
    c.v_bytes = round64_sat(attn_size_mul_sat(attn_v_elems(p), sizeof(float)));
    c.f.kv_dtype = ATTN_DTYPE_F32;
  }
  if (c.q) {
    c.q_bytes = round64_sat(attn_size_mul_sat(attn_q_elems(p), sizeof(float)));
    c.f.compute = ATTN_COMPUTE_F32;
  }
  return c;
}

static size_t plan_bytes(const copy_plan *c) {
  return attn_size_add_sat(attn_size_add_sat(c->k_bytes, c->v_bytes), c->q_bytes);
}

// The copies, rows split evenly over the call's threads (each row is converted on its own,
// so the split changes no bit); every thread converts in the kernels' FP environment.
typedef enum copy_kind { COPY_KV, COPY_Q } copy_kind;
static void copy_rows(copy_kind kind, attn_compute mode, attn_dtype t, const void *x, size_t rows,
                      int64_t dim, float *out, int threads) {
  const size_t rb = kind == COPY_KV ? attn_kv_row_bytes(t, dim) : (size_t)dim * sizeof(float);
  // below ~1 MiB of output one thread is as fast (no team to start)
  if ((size_t)dim * rows < ((size_t)1 << 18)) threads = 1;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const attn_fp_env env = attn_fp_env_enter();
    const size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
    const size_t r0 = rows * id / nt, r1 = rows * (id + 1) / nt;
    const char *src = (const char *)x + r0 * rb;
    float *dst = out + r0 * (size_t)dim;
    if (kind == COPY_KV)
      attn_compute_round_kv(mode, t, src, r1 - r0, dim, dst);
    else
      attn_compute_round_q(mode, (const float *)src, r1 - r0, dim, dst);
    attn_fp_env_leave(env);
  }
}

size_t attn_kernel_workspace(const attn_kernel *k, const attn_problem *p, const attn_exec *exec) {
  static const attn_exec kDefaultExec = {0};
  if (attn_layout_gathered(k, p)) return attn_layout_workspace(k, p, exec);  // core/layout_gather.c
  const copy_plan c = plan_copies(k, p);
  const attn_problem *pk = &c.f;  // the kernel's own part is sized for what it sees
  size_t own;
  if (!attn_kernel_native(k, pk))
    own = attn_fallback_workspace(pk);
  else
    own = k->workspace ? k->workspace(pk, exec ? exec : &kDefaultExec) : 0;
  return attn_size_add_sat(plan_bytes(&c), own);
}

int attn_kernel_run(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                    const float *q, const void *kk, const void *v, float *o, void *workspace,
                    bool *fallback) {
  attn_run_info info;
  const int rc = attn_kernel_run_info(k, p, exec, q, kk, v, o, workspace, &info);
  if (fallback) *fallback = info.fallback;
  return rc;
}

// The one place every kernel call goes through: the kernel (or the fallback) runs in the
// kernels' FP environment (fp_env.c) and the caller's is restored afterwards, whatever
// the kernel left — so a plug-in cannot change a caller's rounding or unmask a trap for
// whatever runs next on this thread. What the kernel left is reported in info->fp_leak.
int attn_kernel_run_info(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                         const float *q, const void *kk, const void *v, float *o, void *workspace,
                         attn_run_info *info) {
  static const attn_exec kDefaultExec = {0};
  *info = (attn_run_info){0};
  if (!exec) exec = &kDefaultExec;
  if (attn_layout_gathered(k, p))  // one gathered dense sequence at a time (layout_gather.c)
    return attn_layout_run(k, p, exec, q, kk, v, o, workspace, info);
  // The copies are made in the kernels' FP environment too: the Q8_0 rule rounds to
  // nearest even whatever the caller's rounding mode.
  const attn_fp_env env = attn_fp_env_enter();
  const copy_plan c = plan_copies(k, p);
  // a kernel without ATTN_CAP_THREADS runs on one thread, and so do its copies
  const int threads = k->caps & ATTN_CAP_THREADS ? attn_exec_threads(exec) : 1;
  char *ws = workspace;
  if (c.kv) {  // K, V → float32 (exact), rounded as the mode reads them: one pass
    const attn_compute mode = c.q ? p->compute : ATTN_COMPUTE_F32;
    float *k32 = (float *)ws, *v32 = (float *)(ws + c.k_bytes);
    // every row of the tensors (a layout's packed keys or whole pool)
    copy_rows(COPY_KV, mode, p->kv_dtype, kk, attn_k_elems(p) / (size_t)p->head_dim_qk,
              p->head_dim_qk, k32, threads);
    copy_rows(COPY_KV, mode, p->kv_dtype, v, attn_v_elems(p) / (size_t)p->head_dim_v, p->head_dim_v,
              v32, threads);
    kk = k32, v = v32;
  }
  if (c.q) {  // Q rounded (or Q8_0-quantized) as the mode reads it; the kernel runs F32
    float *q32 = (float *)(ws + c.k_bytes + c.v_bytes);
    copy_rows(COPY_Q, p->compute, ATTN_DTYPE_F32, q, attn_q_elems(p) / (size_t)p->head_dim_qk,
              p->head_dim_qk, q32, threads);
    q = q32;
  }
  p = &c.f;
  if (plan_bytes(&c)) workspace = ws + plan_bytes(&c);
  const bool native = attn_kernel_native(k, p);
  info->fallback = !native;
  const int rc = native ? k->run(p, exec, q, kk, v, o, workspace)
                        : attn_fallback_run(p, q, kk, v, o, workspace);
  const uint64_t given = attn_fp_env_kernel_control(env), returned = attn_fp_env_control();
  attn_fp_env_leave(env);
  if (returned != given) *info = (attn_run_info){info->fallback, true, given, returned};
  return rc;
}

int attn_exec_check(const attn_exec *exec, char *err, size_t err_len) {
  static const attn_exec defaults = {0};
  if (!exec) exec = &defaults;  // all defaults: threads 0, so the OpenMP default is checked
  if (exec->threads < 0 || exec->threads > ATTN_MAX_THREADS) {
    if (err && err_len)
      snprintf(err, err_len, "threads = %d is out of range (0..%d, 0 = OpenMP default)",
               exec->threads, ATTN_MAX_THREADS);
    return ATTN_ERR_INVALID;
  }
  if (exec->tile_q < 0 || exec->tile_kv < 0 || exec->tile_q > ATTN_MAX_TILE ||
      exec->tile_kv > ATTN_MAX_TILE) {
    if (err && err_len)
      snprintf(err, err_len, "tile sizes must be in 0..%d (got tile_q %d, tile_kv %d)",
               ATTN_MAX_TILE, exec->tile_q, exec->tile_kv);
    return ATTN_ERR_INVALID;
  }
  if (exec->regtile < 0 || exec->regtile >= ATTN_MAX_REGTILES) {
    if (err && err_len)
      snprintf(err, err_len, "regtile = %d is out of range (0..%d, 0 = kernel default)",
               exec->regtile, ATTN_MAX_REGTILES - 1);
    return ATTN_ERR_INVALID;
  }
  if (exec->kv_split < 0 || exec->kv_split > ATTN_MAX_KV_SPLIT) {
    if (err && err_len)
      snprintf(err, err_len, "kv_split = %d is out of range (0..%d, 0 = kernel default)",
               exec->kv_split, ATTN_MAX_KV_SPLIT);
    return ATTN_ERR_INVALID;
  }
  if (exec->threads == 0) {
    const int def = omp_get_max_threads();
    if (def > ATTN_MAX_THREADS) {
      if (err && err_len)
        snprintf(err, err_len,
                 "the OpenMP default of %d threads (OMP_NUM_THREADS) exceeds the cap of %d; "
                 "set OMP_NUM_THREADS or the thread count to at most %d",
                 def, ATTN_MAX_THREADS, ATTN_MAX_THREADS);
      return ATTN_ERR_INVALID;
    }
  }
  return ATTN_OK;
}

int attn_kernel_call(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                     const float *q, const void *kk, const void *v, float *o, char *err,
                     size_t err_len) {
  attn_run_info info;
  return attn_kernel_call_info(k, p, exec, q, kk, v, o, err, err_len, &info);
}

int attn_kernel_call_info(const attn_kernel *k, const attn_problem *p, const attn_exec *exec,
                          const float *q, const void *kk, const void *v, float *o, char *err,
                          size_t err_len, attn_run_info *info) {
  static const attn_exec kDefaultExec = {0};
  *info = (attn_run_info){0};
  if (!exec) exec = &kDefaultExec;
  if (!k) {
    if (err && err_len) snprintf(err, err_len, "kernel is NULL");
    return ATTN_ERR_INVALID;
  }
  if (!attn_problem_validate(p, err, err_len)) return ATTN_ERR_INVALID;
  if (!q || !kk || !v || !o) {
    if (err && err_len) snprintf(err, err_len, "a tensor pointer (q, k, v or o) is NULL");
    return ATTN_ERR_INVALID;
  }
  // Before anything that sizes or starts a parallel region (workspace functions read
  // the thread count).
  int rc = attn_kernel_exec_check(k, exec, err, err_len);
  if (rc != ATTN_OK) return rc;
  char why[96];
  if (!attn_kernel_available(k, why, sizeof why)) {
    if (err && err_len)
      snprintf(err, err_len, "kernel %s is unavailable on this CPU: %s", k->name, why);
    return ATTN_ERR_INVALID;
  }
  rc = attn_inputs_domain(p, q, kk, v, err, err_len);  // the problem and pointers: above
  if (rc != ATTN_OK) return rc;
  const size_t ws_bytes = attn_kernel_workspace(k, p, exec);
  void *ws = NULL;
  if (ws_bytes) {
    // rounded up to the alignment; a size within 63 of SIZE_MAX cannot be allocated
    ws = ws_bytes <= SIZE_MAX - 63 ? aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63) : NULL;
    if (!ws) {
      if (err && err_len)
        snprintf(err, err_len, "kernel %s: cannot allocate %zu bytes of workspace", k->name,
                 ws_bytes);
      return ATTN_ERR_NOMEM;
    }
  }
  rc = attn_kernel_run_info(k, p, exec, q, kk, v, o, ws, info);
  free(ws);
  if (rc != ATTN_OK && err && err_len)
    snprintf(err, err_len, "kernel %s failed with status %d", k->name, rc);
  else if (err && err_len)
    err[0] = '\0';
  return rc;
}
