// SPDX-License-Identifier: MIT
// Results-file context: machine (hwloc, CPU features), build, environment, peaks.
#define _POSIX_C_SOURCE 200809L  // environ, gethostname
#include "bench/context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/gbench/gbench.h"
#include "bench/inputs.h"
#include "bench/point.h"
#include "common/build_info.h"
#include "machine/cpu_ident.h"
#include "machine/peak/bandwidth.h"
#include "machine/peak/hugemem.h"
#include "machine/peak/peak.h"
#include "machine/placement.h"
#include "machine/topology.h"
#include "resolve/resolve.h"
#include "tune/tunefile.h"

#ifndef ATTNBENCH_VERSION
#define ATTNBENCH_VERSION "unknown"
#endif

extern char **environ;

enum { kMemo = 32 };
typedef struct peak_memo {
  attn_peak_key key;
  int threads;
  double v;
} peak_memo;
typedef struct bw_memo {
  int threads;
  double v;
} bw_memo;
static peak_memo g_peaks[kMemo];
static int g_npeaks;
static bw_memo g_bw[kMemo];
static int g_nbw;

// "avx512f", "avx512bf16", "neon-dotprod", … for one ATTN_ISA_* bit; "scalar" for 0.
static void isa_key(uint32_t isa, char *buf, size_t len) {
  if (isa)
    attn_isa_names(isa, buf, len);
  else
    snprintf(buf, len, "scalar");
}

// The context key of a peak: peak_fma_gflops_<isa>_T<n> for the FP32 FMA (the key plots
// and reports read since before the other units), peak_unit_gops_<unit>_<isa>_T<n> else.
static void peak_context_key(attn_peak_key key, int threads, char *buf, size_t len) {
  char isa[64];
  isa_key(key.isa, isa, sizeof isa);
  if (key.unit == ATTN_PEAK_FP32_FMA)
    snprintf(buf, len, "peak_fma_gflops_%s_T%d", isa, threads);
  else
    snprintf(buf, len, "peak_unit_gops_%s_%s_T%d", attn_peak_unit_name(key.unit), isa, threads);
}

double attn_bench_fma_peak(uint32_t isa, int threads) {
  return attn_bench_unit_peak((attn_peak_key){ATTN_PEAK_FP32_FMA, isa}, threads);
}

double attn_bench_unit_peak(attn_peak_key key, int threads) {
  for (int i = 0; i < g_npeaks; i++)
    if (g_peaks[i].key.unit == key.unit && g_peaks[i].key.isa == key.isa &&
        g_peaks[i].threads == threads)
      return g_peaks[i].v;
  double v = 0;
  // The probe takes the best of several short runs; on a busy machine a call can still
  // land entirely in a noisy stretch, so take the best of three calls (a peak is a max).
  for (int i = 0; i < 3; i++) {
    const double x = attn_peak_gops(key.unit, key.isa, threads);
    v = x > v ? x : v;
  }
  // On t <= physical cores the units are private, so the t-thread peak should be
  // about t x the one-thread peak. Far below that, another process held a core while we
  // measured: try a few more times, then keep the best measurement and say so (the
  // % peak counters of those points can then exceed 100).
  const int cores = attn_bench_physical_cores();
  if (threads > 1 && threads <= cores) {
    const double one = attn_bench_unit_peak(key, 1);
    int busy = 0;  // the best of every measurement stays low exactly when the last ones did
    if (v < ATTN_PEAK_SCALED_MIN * threads * one) {
      const double x = attn_peak_gops_scaled(key.unit, key.isa, threads, one, cores, &busy);
      v = x > v ? x : v;
    }
    if (busy) {
      char isa[64], key_name[96], msg[160];
      isa_key(key.isa, isa, sizeof isa);
      snprintf(key_name, sizeof key_name, "peak_warning_%s%s%s_T%d",
               key.unit == ATTN_PEAK_FP32_FMA ? "" : attn_peak_unit_name(key.unit),
               key.unit == ATTN_PEAK_FP32_FMA ? "" : "_", isa, threads);
      snprintf(msg, sizeof msg,
               "measured %.1f %s, below %d x the 1-thread %.1f: the machine "
               "was busy; %% of peak at %d threads is overstated",
               v, key.unit == ATTN_PEAK_FP32_FMA ? "GFLOP/s" : "G ops/s", threads, one, threads);
      attn_gb_add_context(key_name, msg);
      fprintf(stderr, "warning: %s peak (%s, %d threads) %s\n", attn_peak_unit_name(key.unit), isa,
              threads, msg);
    }
  }
  if (g_npeaks < kMemo) g_peaks[g_npeaks++] = (peak_memo){key, threads, v};
  return v;
}

double attn_bench_read_bandwidth(int threads) {
  for (int i = 0; i < g_nbw; i++)
    if (g_bw[i].threads == threads) return g_bw[i].v;
  double v = 0;
  attn_bandwidth bw;
  // 512 MiB: many times any last-level cache here, and quick to fill.
  if (attn_bandwidth_read((size_t)512 << 20, threads, 5, &bw) == 0 && bw.ok) v = bw.best_gbs;
  if (g_nbw < kMemo) g_bw[g_nbw++] = (bw_memo){threads, v};
  return v;
}

int attn_bench_physical_cores(void) {
  const int t = attn_placement_default_threads();
  return t > 0 ? t : 1;
}

static void ctx(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ctx(const char *key, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  attn_gb_add_context(key, buf);
}

// The attention options the plan's points use (bench/config.h), and how the sink logits
// are generated when some point has them: "attention_options": "window softcap sinks"
// ("none" without), "sink_logits": "2*N(0,1) per query head, seed 20240608".
static void option_context(const attn_bench_plan *plan) {
  bool align = false, window = false, softcap = false, alibi = false, sinks = false, mask = false,
       lse = false;
  for (size_t i = 0; i < plan->count; i++) {
    const attn_bench_opts *o = &plan->points[i].opts;
    align |= o->align == ATTN_ALIGN_TOP_LEFT;
    window |= o->window;
    softcap |= o->softcap != 0.0f;
    alibi |= o->alibi_max_bias != 0.0f;
    sinks |= o->sinks;
    mask |= o->mask;
    lse |= o->lse;
  }
  char buf[96] = "";
  const struct {
    bool on;
    const char *name;
  } used[] = {{align, "top-left"}, {window, "window"}, {softcap, "softcap"}, {alibi, "alibi"},
              {sinks, "sinks"},    {mask, "mask"},     {lse, "lse"}};
  for (size_t i = 0; i < sizeof used / sizeof used[0]; i++) {
    if (!used[i].on) continue;
    if (buf[0]) strncat(buf, " ", sizeof buf - strlen(buf) - 1);
    strncat(buf, used[i].name, sizeof buf - strlen(buf) - 1);
  }
  ctx("attention_options", "%s", buf[0] ? buf : "none");
  if (sinks)
    ctx("sink_logits", "2*N(0,1) per query head, seed %llu (attn_bench_sinks)",
        (unsigned long long)ATTN_BENCH_SINK_SEED);
  if (mask)
    ctx("mask_values",
        "[seq_q][seq_kv] broadcast: -inf with probability 1/8, else 2*N(0,1); seed %llu "
        "(attn_bench_mask)",
        (unsigned long long)ATTN_BENCH_MASK_SEED);
}

// Where each plug-in kernel came from (plugins/plugins.h loaded them; the registry keeps
// the origins): "example__scalar=/abs/example_plugin.so, other=/abs/b.so"; none: no entry.
static void plugins_context(void) {
  size_t len = 1;
  for (size_t i = attn_builtin_count(); i < attn_kernel_count(); i++)
    len += strlen(attn_kernel_at(i)->name) + strlen(attn_kernel_origin(attn_kernel_at(i))) + 3;
  if (len == 1) return;
  char *buf = malloc(len), *at = buf;
  if (!buf) return;  // the context is informational
  for (size_t i = attn_builtin_count(); i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    at += sprintf(at, "%s%s=%s", at == buf ? "" : ", ", k->name, attn_kernel_origin(k));
  }
  attn_gb_add_context("plugins", buf);
  free(buf);
}

void attn_bench_add_context(const attn_bench_plan *plan, const char *config_path, bool measure) {
  const attn_topology *t = attn_topology_get();
  char buf[512];
  ctx("attnbench_version", "%s", ATTNBENCH_VERSION);
  ctx("git_commit", "%s", ATTNBENCH_GIT_COMMIT);
  ctx("compiler", "%s", ATTNBENCH_COMPILER);
  ctx("cflags", "%s", ATTNBENCH_CFLAGS);
  ctx("build_type", "%s", ATTNBENCH_BUILD_TYPE);
  ctx("config", "%s", config_path ? config_path : "");
  plugins_context();
  option_context(plan);
  // The config's text, so a results file says exactly what was swept (first 16 KiB):
  // the text the loader read, never a second read of the path (a FIFO or /dev/stdin
  // has nothing left, a file may have changed since).
  if (plan->config_text) {
    static char text[16384];
    const size_t n = strnlen(plan->config_text, sizeof text - 1);
    memcpy(text, plan->config_text, n);
    text[n] = '\0';
    attn_gb_add_context("config_text", text);
  }
  ctx("cpu_model", "%s", t->cpu_model);
  // What the CPU is, for comparing machines (cpu_ident.h): the brand string above may be
  // generic under a hypervisor.
  const attn_cpu_ident *id = attn_cpu_ident_get();
  ctx("cpu_vendor", "%s", id->vendor);
  ctx("cpu_family", "%d", id->family);
  ctx("cpu_model_number", "%d", id->model);
  ctx("cpu_stepping", "%d", id->stepping);
  if (id->variant >= 0) ctx("cpu_variant", "%d", id->variant);
  ctx("cpu_uarch", "%s", id->uarch);
  if (id->note[0]) ctx("cpu_uarch_note", "%s", id->note);
  ctx("cpu_hypervisor", "%s", id->hypervisor ? "yes" : "no");
  ctx("isa", "%s", attn_isa_names(attn_cpu_features(), buf, sizeof buf));
  const uint32_t hidden = attn_cpu_units_not_exposed();  // the core has them; cpuid hides them
  if (hidden) ctx("isa_not_exposed", "%s", attn_isa_names(hidden, buf, sizeof buf));
  attn_topology_summary(t, buf, sizeof buf);
  ctx("topology", "%s", buf);
  ctx("hwloc_packages", "%d", t->packages);
  ctx("hwloc_cores", "%d", t->cores);
  ctx("hwloc_pus", "%d", t->pus);
  ctx("hwloc_numa_nodes", "%d", t->numa_nodes);
  ctx("l1d_bytes", "%llu", (unsigned long long)t->l1d_bytes);
  ctx("l2_bytes", "%llu", (unsigned long long)t->l2_bytes);
  ctx("l3_bytes", "%llu", (unsigned long long)t->l3_bytes);
  ctx("memory_bytes", "%llu", (unsigned long long)t->memory_bytes);
  ctx("transparent_huge_pages", "%s", attn_thp_mode(buf, sizeof buf));
  // Binding per thread count used (placement.h: OpenMP thread t -> physical core t).
  // Every point binds again before it is timed, so this is what the kernels ran with.
  int seen[64], nseen = 0;
  for (size_t i = 0; i < plan->count && nseen < 64; i++) {
    const int t = plan->points[i].threads;
    bool dup = false;
    for (int j = 0; j < nseen; j++) dup |= seen[j] == t;
    if (dup) continue;
    seen[nseen++] = t;
    char key[32];
    snprintf(key, sizeof key, "binding_T%d", t);
    if (attn_placement_bind(t, buf, sizeof buf) < 0)
      ctx(key, "unbound (%s)", buf);
    else
      ctx(key, "%s", buf);
  }
  ctx("threads_zero_means", "%d", attn_resolve_default_threads());
  ctx("cpuset", "%s", attn_placement_describe_set(buf, sizeof buf));  // set and --bind mode
  // The tuning every point ran with (tunefile.h): "built-in" or the file and its entries;
  // each point's `tuned` counter says whether its tiles came from the file.
  static char tuning[8192];
  attn_gb_add_context("tuning", attn_tune_describe(tuning, sizeof tuning));
  // The register-tile variants of the plan's kernels that have several, for the points'
  // `regtile` counters (an index): "flash__avx512 0=8x48/6x64 1=12x32/8x32 ...; ...".
  static char variants[4096];
  variants[0] = '\0';
  for (size_t i = 0; i < plan->count; i++) {
    const attn_kernel *k = plan->points[i].kernel;
    bool dup = attn_kernel_regtile_count(k) < 2;
    for (size_t j = 0; j < i && !dup; j++) dup = plan->points[j].kernel == k;
    size_t n = strlen(variants);
    if (dup || n + 1 >= sizeof variants) continue;
    n += (size_t)snprintf(variants + n, sizeof variants - n, "%s%s", n ? "; " : "", k->name);
    for (int r = 0; r < attn_kernel_regtile_count(k) && n < sizeof variants; r++)
      n += (size_t)snprintf(variants + n, sizeof variants - n, " %d=%s", r,
                            attn_kernel_regtile(k, r).name);
  }
  attn_gb_add_context("regtiles", variants[0] ? variants : "(no kernel with variants)");
  // Where each point's settings came from (resolve/resolve.h): its source_<setting>
  // counters are these codes (`bench --explain` prints them in words).
  ctx("setting_sources", "0 %s, 1 %s, 2 %s, 3 %s, 4 %s, 5 %s", attn_source_name(0),
      attn_source_name(1), attn_source_name(2), attn_source_name(3), attn_source_name(4),
      attn_source_name(5));
  // Every OpenMP / OpenBLAS variable in the environment, "NAME=value; ...".
  buf[0] = '\0';
  for (char **e = environ; *e; e++) {
    if (strncmp(*e, "OMP_", 4) && strncmp(*e, "GOMP_", 5) && strncmp(*e, "OPENBLAS_", 9) &&
        strncmp(*e, "ATTNBENCH_", 10))
      continue;
    if (buf[0]) strncat(buf, "; ", sizeof buf - strlen(buf) - 1);
    strncat(buf, *e, sizeof buf - strlen(buf) - 1);
  }
  ctx("environment", "%s", buf[0] ? buf : "(no OMP_*/GOMP_*/OPENBLAS_*/ATTNBENCH_* set)");

  // Peaks for every (unit, ISA, threads) the plan's points are judged by (and the
  // one-thread peaks the multi-thread ones are checked against), then one context entry
  // per measured peak. The points' peak_unit counter is a code of this list.
  ctx("peak_units", "%d %s, %d %s, %d %s, %d %s, %d %s", ATTN_PEAK_FP32_FMA,
      attn_peak_unit_name(ATTN_PEAK_FP32_FMA), ATTN_PEAK_BF16_DOT,
      attn_peak_unit_name(ATTN_PEAK_BF16_DOT), ATTN_PEAK_FP16_FMA,
      attn_peak_unit_name(ATTN_PEAK_FP16_FMA), ATTN_PEAK_INT8_DOT,
      attn_peak_unit_name(ATTN_PEAK_INT8_DOT), ATTN_PEAK_AMX_BF16,
      attn_peak_unit_name(ATTN_PEAK_AMX_BF16));
  for (size_t i = 0; i < plan->count; i++) {
    const attn_bench_point *pt = &plan->points[i];
    if (measure) (void)attn_bench_unit_peak(attn_bench_point_peak_key(pt), pt->threads);
  }
  for (int j = 0; j < g_npeaks; j++) {
    char key[128];
    peak_context_key(g_peaks[j].key, g_peaks[j].threads, key, sizeof key);
    if (g_peaks[j].v > 0)
      ctx(key, "%.1f", g_peaks[j].v);
    else
      ctx(key, "unavailable");
  }
  if (measure) {
    // The read bandwidth for every thread count the plan uses: each point's roofline
    // takes the bandwidth of its own thread count (one core cannot draw what two can).
    for (int j = 0; j < nseen; j++) {
      const double bw = attn_bench_read_bandwidth(seen[j]);
      char key[64];
      snprintf(key, sizeof key, "read_bandwidth_gbs_T%d", seen[j]);
      if (bw > 0)
        ctx(key, "%.1f", bw);
      else
        ctx(key, "unavailable");
    }
  } else {
    ctx("peaks", "not measured");
  }
}
