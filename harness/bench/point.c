// SPDX-License-Identifier: MIT
// One benchmark point: inputs (kept across Google Benchmark's calls for the same point),
// the correctness check (once per point, before any timing), the timed loop, counters.
#include "bench/point.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/adjacent.h"
#include "bench/inputs.h"
#include "bench/serving.h"
#include "check/check.h"
#include "check/inputs.h"
#include "common/util.h"
#include "core/convert.h"
#include "machine/peak/hugemem.h"  // the inputs on huge pages, like the bandwidth probe
#include "machine/placement.h"
#include "machine/topology.h"
#include "plugins/isolate.h"  // the hang watch around kernel calls
#include "resolve/resolve.h"

enum { kSeed = ATTN_BENCH_SEED };

// Inputs of the point being run. Google Benchmark calls a point's function several times
// (iteration-count probing, repetitions); the buffers are made once per point. Copy 0 is
// what the check reads; cold points have more copies (attn_bench_input_copies), with the
// same contents, and call i uses copy i mod copies. K and V are stored as the point's
// kv_dtype: generated in float32 (the same values as an F32 point of the shape), then
// converted (kernels/core/convert.h).
static struct {
  const attn_bench_point *owner;
  int copies;
  float *q[ATTN_BENCH_COLD_MAX_COPIES], *o[ATTN_BENCH_COLD_MAX_COPIES];
  void *k[ATTN_BENCH_COLD_MAX_COPIES], *v[ATTN_BENCH_COLD_MAX_COPIES];
  void *ws;
  uint32_t digest;  // attn_bench_inputs_digest of copy 0 (bench/inputs.h)
  // the point's options with their arrays (point_options), and its problem using them
  float *sinks, *mask, *lse;
  attn_options opts;
  attn_problem problem;
} g_buf;

static void *alloc64(size_t bytes) {
  return aligned_alloc(64, ((bytes ? bytes : 1) + 63) & ~(size_t)63);
}

void attn_bench_release_buffers(void) {
  for (int c = 0; c < g_buf.copies; c++) {
    free(g_buf.q[c]);
    free(g_buf.k[c]);
    free(g_buf.v[c]);
    free(g_buf.o[c]);
  }
  free(g_buf.ws);
  free(g_buf.sinks);
  free(g_buf.mask);
  free(g_buf.lse);
  memset(&g_buf, 0, sizeof g_buf);
}

// ── the point's options (attention variants) ───────────────────────────────────────

// A non-NULL stand-in for the sinks, mask and LSE arrays where only their presence matters
// (flops, tiles, workspace sizes, validation): never read or written through.
static float g_presence_marker;

// The point's problem with its options attached (opts NULL when it has none). sinks, mask
// and lse are the arrays to use when the point has those options (NULL: the marker).
static attn_problem point_problem(const attn_bench_point *pt, attn_options *o, float *sinks,
                                  float *mask, float *lse) {
  attn_problem p = pt->problem;
  p.opts = NULL;
  if (!attn_bench_opts_any(&pt->opts)) return p;
  attn_bench_opts_apply(&pt->opts, o);
  if (pt->opts.sinks) o->sinks = sinks ? sinks : &g_presence_marker;
  if (pt->opts.mask) o->mask = mask ? mask : &g_presence_marker;
  if (pt->opts.lse) o->lse = lse ? lse : &g_presence_marker;
  p.opts = o;
  return p;
}

// Allocates the option arrays of pt (sinks and mask from their seeds, the LSE output) and
// sets g_buf.opts/problem. False when out of memory.
static bool acquire_options(const attn_bench_point *pt) {
  const attn_problem *p = &pt->problem;
  if (pt->opts.sinks) {
    g_buf.sinks = malloc((size_t)p->heads * sizeof(float));
    if (!g_buf.sinks) return false;
    attn_bench_sinks(p->heads, ATTN_BENCH_SINK_SEED, g_buf.sinks);
  }
  if (pt->opts.mask) {
    g_buf.mask = alloc64((size_t)p->seq_q * (size_t)p->seq_kv * sizeof(float));
    if (!g_buf.mask) return false;
    attn_bench_mask(p->seq_q, p->seq_kv, ATTN_BENCH_MASK_SEED, g_buf.mask);
  }
  if (pt->opts.lse) {
    const size_t n = attn_layout_total_q(p) * (size_t)p->heads;  // [batch][heads][seq_q] dense
    g_buf.lse = alloc64(n * sizeof(float));
    if (!g_buf.lse) return false;
    memset(g_buf.lse, 0, n * sizeof(float));
  }
  g_buf.problem = point_problem(pt, &g_buf.opts, g_buf.sinks, g_buf.mask, g_buf.lse);
  return true;
}

// The point's inputs: float32 Q, K, V of the check's generator, K and V then stored as
// p->kv_dtype (a float32 scratch copy for the conversion). False if out of memory.
// Copy 0 of a point's inputs: the generated float32 values (attn_bench_fill_inputs: what
// --export-inputs writes, and what *digest covers), with K/V then stored as the point's type.
static bool fill_inputs(const attn_problem *p, float *q, void *k, void *v, uint32_t *digest) {
  if (p->kv_dtype == ATTN_DTYPE_F32) {
    attn_bench_fill_inputs(p, q, k, v);
    *digest = attn_bench_inputs_digest(p, q, k, v);
    return true;
  }
  float *k32 = malloc(attn_k_elems(p) * sizeof(float)),
        *v32 = malloc(attn_v_elems(p) * sizeof(float));
  const bool ok = k32 && v32;
  if (ok) {
    const size_t rows = attn_k_elems(p) / (size_t)p->head_dim_qk;  // a layout's pool too
    attn_bench_fill_inputs(p, q, k32, v32);
    *digest = attn_bench_inputs_digest(p, q, k32, v32);
    attn_quantize_rows(p->kv_dtype, k32, rows, p->head_dim_qk, k);
    attn_quantize_rows(p->kv_dtype, v32, rows, p->head_dim_v, v);
  }
  free(k32);
  free(v32);
  return ok;
}

static bool acquire_buffers(const attn_bench_point *pt, const attn_exec *exec) {
  if (g_buf.owner == pt) return true;
  attn_bench_release_buffers();
  // Bind this point's OpenMP team to physical cores (placement.h); a failure (e.g. no
  // binding in a container) leaves threads unbound, which the context records.
  char report[256];
  (void)attn_placement_bind(exec->threads, report, sizeof report);
  if (!acquire_options(pt)) {
    attn_bench_release_buffers();
    return false;
  }
  const attn_problem *p = &g_buf.problem;
  g_buf.ws = alloc64(attn_kernel_workspace_watched(pt->kernel, p, exec));
  if (!g_buf.ws) {
    attn_bench_release_buffers();
    return false;
  }
  const int copies = attn_bench_input_copies(pt);
  const size_t nq = attn_q_elems(p), no = attn_o_elems(p);
  const size_t kb = attn_k_bytes(p), vb = attn_v_bytes(p);  // as stored
  for (int c = 0; c < copies; c++) {
    g_buf.copies = c + 1;  // what release frees
    g_buf.q[c] = attn_alloc_streamed(nq * sizeof(float));
    g_buf.k[c] = attn_alloc_streamed(kb);
    g_buf.v[c] = attn_alloc_streamed(vb);
    g_buf.o[c] = attn_alloc_streamed(no * sizeof(float));
    if (!g_buf.q[c] || !g_buf.k[c] || !g_buf.v[c] || !g_buf.o[c]) {
      attn_bench_release_buffers();
      return false;
    }
    if (c == 0) {
      if (!fill_inputs(p, g_buf.q[0], g_buf.k[0], g_buf.v[0], &g_buf.digest)) {
        attn_bench_release_buffers();
        return false;
      }
    } else {
      memcpy(g_buf.q[c], g_buf.q[0], nq * sizeof(float));
      memcpy(g_buf.k[c], g_buf.k[0], kb);
      memcpy(g_buf.v[c], g_buf.v[0], vb);
    }
    memset(g_buf.o[c], 0, no * sizeof(float));  // touch every page before timing
  }
  g_buf.owner = pt;
  return true;
}

static double work(const attn_problem *p) {
  return (double)p->batch * (double)p->heads * (double)p->seq_q * (double)p->seq_kv *
         (double)(p->head_dim_qk + p->head_dim_v);
}

attn_problem attn_bench_check_shape(const attn_problem *p) {
  attn_problem c = *p;
  if (p->layout) return c;  // a serving batch is checked whole (its sequences are its shape)
  while (work(&c) > ATTN_BENCH_CHECK_BUDGET && (c.seq_q > 1 || c.seq_kv > 1)) {
    // Halve both lengths of a square problem (the causal diagonal keeps its shape);
    // otherwise the longer one.
    if (c.seq_q == c.seq_kv) {
      c.seq_q = c.seq_kv = (c.seq_q + 1) / 2;
    } else if (c.seq_q > c.seq_kv) {
      c.seq_q = (c.seq_q + 1) / 2;
    } else {
      c.seq_kv = (c.seq_kv + 1) / 2;
    }
  }
  return c;
}

static uint64_t tensor_bytes(const attn_problem *p) {
  return attn_tensor_bytes(p);
}

uint64_t attn_bench_point_bytes(const attn_bench_point *pt) {
  // The estimate of util.h, shared with `run` and `check`: the timed copies of Q, K, V,
  // O, the kernel's workspace (the fallback's when the kernel lacks one of the point's
  // options), and the check on its (possibly reduced) shape; a mask (seq_q·seq_kv floats,
  // and the check's copy at its shape, twice when reduced); the other option arrays (sinks,
  // LSE: heads and batch·heads·seq_q floats) are small against O.
  const attn_exec exec = {.threads = pt->threads};
  attn_options o;
  const attn_problem p = point_problem(pt, &o, NULL, NULL, NULL);
  const attn_problem c = attn_bench_check_shape(&p);
  const uint64_t copies = (uint64_t)attn_bench_input_copies(pt);
  const uint64_t timed = tensor_bytes(&p);
  // A plug-in's workspace() is its code: both queries (the timed shape's, the check's)
  // watched as its calls are (isolate.h).
  attn_kernel_guard_call_begin();
  const uint64_t ws = attn_kernel_workspace(pt->kernel, &p, &exec);
  const uint64_t check = attn_check_bytes(&c, pt->kernel, &exec);
  attn_kernel_guard_call_end();
  uint64_t mask = 0;
  if (pt->opts.mask)
    mask =
        attn_bytes_add(attn_bytes_mul((uint64_t)p.seq_q * (uint64_t)p.seq_kv, sizeof(float)),
                       attn_bytes_mul(2 * (uint64_t)c.seq_q * (uint64_t)c.seq_kv, sizeof(float)));
  return attn_bytes_add(attn_bytes_add(attn_bytes_add(attn_bytes_mul(copies, timed), ws), check),
                        mask);
}

attn_peak_key attn_bench_point_peak_key(const attn_bench_point *pt) {
  return attn_peak_unit_for(pt->kernel, &pt->problem, attn_cpu_features());
}

// The prepared reference (inputs, reference output, tolerance) depends on the shape
// only — inputs are a function of shape and seed — so consecutive points of one shape
// (kernels are the innermost loop of a sweep) share it.
static struct {
  attn_problem shape;
  attn_bench_opts opts;  // the options it was prepared with (arrays: from the seed)
  attn_check_prepared *pc;
} g_ref;

static bool same_opts(const attn_bench_opts *a, const attn_bench_opts *b) {
  return a->align == b->align && a->window == b->window && a->window_left == b->window_left &&
         a->window_right == b->window_right && a->softcap == b->softcap &&
         a->alibi_max_bias == b->alibi_max_bias && a->sinks == b->sinks && a->mask == b->mask &&
         a->lse == b->lse;
}

// The same problem (shape and options): same inputs and reference.
static bool same_shape(const attn_problem *a, const attn_problem *b) {
  return a->batch == b->batch && a->heads == b->heads && a->kv_heads == b->kv_heads &&
         a->seq_q == b->seq_q && a->seq_kv == b->seq_kv && a->head_dim_qk == b->head_dim_qk &&
         a->head_dim_v == b->head_dim_v && a->causal == b->causal && a->scale == b->scale &&
         a->kv_dtype == b->kv_dtype && a->layout == b->layout && a->compute == b->compute;
}

void attn_bench_release_reference(void) {
  attn_check_prepared_free(g_ref.pc);
  g_ref.pc = NULL;
}

static void run_check(attn_bench_state *s, const attn_exec *exec) {
  const attn_bench_point *pt = s->point;
  s->checked = true;
  s->checked_shape = attn_bench_check_shape(&g_buf.problem);
  const bool reduced =
      s->checked_shape.seq_q != pt->problem.seq_q || s->checked_shape.seq_kv != pt->problem.seq_kv;
  if (reduced)
    fprintf(stderr,
            "note: %s checked on seq_q %lld, seq_kv %lld (full size would take the "
            "double-precision reference too long); other dimensions as benchmarked\n",
            pt->name, (long long)s->checked_shape.seq_q, (long long)s->checked_shape.seq_kv);
  char err[192] = "";
  if (!g_ref.pc || !same_shape(&g_ref.shape, &s->checked_shape) ||
      !same_opts(&g_ref.opts, &pt->opts)) {
    attn_bench_release_reference();
    // A reduced shape, or K/V stored as another type (the same generated float32 values,
    // converted: attn_check_prepare knows the storage error), is prepared from the case.
    // With options, checked_shape.opts is g_buf.opts: the point's sinks (per head, the
    // same on the reduced shape) are copied, and the LSE is checked when the point has it.
    if ((reduced || pt->problem.kv_dtype != ATTN_DTYPE_F32) && !pt->problem.layout) {
      attn_check_case c = {.problem = s->checked_shape, .dist = ATTN_DIST_NORMAL, .seed = kSeed};
      // A mask is [seq_q][seq_kv]: the reduced shape gets its own, from the same seed.
      attn_options ro;
      float *rmask = NULL;
      const bool own_mask = reduced && pt->opts.mask;
      if (own_mask) {
        const attn_problem *r = &s->checked_shape;
        ro = g_buf.opts;
        rmask = malloc((size_t)r->seq_q * (size_t)r->seq_kv * sizeof(float));
        if (rmask) attn_bench_mask(r->seq_q, r->seq_kv, ATTN_BENCH_MASK_SEED, rmask);
        ro.mask = rmask;
        c.problem.opts = &ro;
      }
      if (own_mask && !rmask)
        snprintf(err, sizeof err, "out of memory for the mask of the reduced shape");
      else
        g_ref.pc = attn_check_prepare(&c, err, sizeof err);
      free(rmask);  // the prepared case holds its own copy
    } else {
      g_ref.pc = attn_check_prepare_inputs(&g_buf.problem, g_buf.q[0], g_buf.k[0], g_buf.v[0], err,
                                           sizeof err);
    }
    g_ref.shape = s->checked_shape;
    g_ref.opts = pt->opts;
  }
  attn_check_prepared *pc = g_ref.pc;
  if (!pc) {
    s->check_pass = false;
    snprintf(s->check_message, sizeof s->check_message, "check could not run: %s", err);
    return;
  }
  attn_check_result r;
  s->has_storage = attn_check_storage_error(pc, &s->storage_abs, &s->storage_ratio);
  attn_kernel_guard_call_begin();
  s->check_pass = attn_check_kernel(pt->kernel, pc, exec, &r);
  attn_kernel_guard_call_end();
  if (s->check_pass) return;
  const int n = snprintf(s->check_message, sizeof s->check_message,
                         "%s the correctness check%s: %s (max abs err %.3g, %.3gx tolerance)",
                         r.verdict == ATTN_CHECK_INCONCLUSIVE ? "got no verdict from" : "failed",
                         reduced ? " (reduced seq)" : "", r.message, r.max_abs_err, r.worst_ratio);
  (void)n;  // a long message is cut, never overflowed
}

double attn_bench_roofline_seconds(double flop, double bytes, double peak_gflops,
                                   double bandwidth_gbs, bool *memory_bound) {
  if (memory_bound) *memory_bound = false;
  if (!(peak_gflops > 0) || !(bandwidth_gbs > 0)) return 0;
  const double t_fma = flop / (peak_gflops * 1e9);
  const double t_mem = bytes / (bandwidth_gbs * 1e9);
  if (memory_bound) *memory_bound = t_mem > t_fma;
  return t_mem > t_fma ? t_mem : t_fma;
}

// The options as counters (bench/config.h attn_bench_opts; -1 = an unbounded window side,
// so no window is window_left = window_right = -1), and whether the kernel runs them
// natively: fallback 1 means the timings are the portable path's (attn_kernel_run).
static void option_counters(attn_gb_state *st, const attn_bench_point *pt, const attn_problem *p) {
  const attn_bench_opts *o = &pt->opts;
  attn_gb_set_counter(st, "align", o->align == ATTN_ALIGN_TOP_LEFT ? 1 : 0, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "window_left", o->window ? (double)o->window_left : -1, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "window_right", o->window ? (double)o->window_right : -1, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "softcap", o->softcap, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "alibi", o->alibi_max_bias, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "sinks", o->sinks ? 1 : 0, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "mask", o->mask ? 1 : 0, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "lse", o->lse ? 1 : 0, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "fallback", attn_kernel_native(pt->kernel, p) ? 0 : 1, ATTN_GB_PLAIN);
}

// Shape fields as counters, so scripts never parse benchmark names.
static void shape_counters(attn_gb_state *st, const attn_bench_point *pt, const attn_problem *p) {
  attn_gb_set_counter(st, "B", (double)p->batch, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "H", (double)p->heads, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "KV", (double)p->kv_heads, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "Sq", (double)p->seq_q, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "Skv", (double)p->seq_kv, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "Dqk", (double)p->head_dim_qk, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "Dv", (double)p->head_dim_v, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "causal", p->causal ? 1 : 0, ATTN_GB_PLAIN);
  // the attn_dtype code of K/V: 0 f32, 1 f16, 2 bf16, 3 q8_0 (the name says it too)
  attn_gb_set_counter(st, "kv_dtype", (double)p->kv_dtype, ATTN_GB_PLAIN);
  // the attn_compute code: 0 f32, 1 bf16, 2 f16, 3 int8 (the name says it too: /compute:…)
  attn_gb_set_counter(st, "compute", (double)p->compute, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "kernel_threads", pt->threads, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "flop", attn_flops(p), ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "bytes", (double)tensor_bytes(p), ATTN_GB_PLAIN);
}

// A serving batch (docs/serving.md): its sequences, the query tokens per second, the K/V
// bytes one call reads (each sequence's keys once, as stored) and that read rate, also as
// a percentage of the probed bandwidth.
static void serving_counters(attn_gb_state *st, const attn_bench_state *s, const attn_problem *p) {
  if (!p->layout) return;
  const double kv = (double)attn_serving_kv_bytes(p);
  attn_gb_set_counter(st, "seqs", (double)p->batch, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "paged", p->layout->kind == ATTN_LAYOUT_PAGED ? 1 : 0, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "page_size", (double)p->layout->page_size, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "tokens/s", (double)attn_serving_tokens(p), ATTN_GB_RATE_PER_ITER);
  attn_gb_set_counter(st, "kv_bytes", kv, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "KV_GB/s", kv * 1e-9, ATTN_GB_RATE_PER_ITER);
  if (s->bandwidth_gbs > 0)
    attn_gb_set_counter(st, "%bw_kv", kv * 1e-9 * 100.0 / s->bandwidth_gbs, ATTN_GB_RATE_PER_ITER);
}

// The bytes a call must move at least, for the roofline and GB/s: the K/V each sequence's
// rows can see, once per K/V head as stored (attn_serving_kv_bytes: a window's or a
// top-left mask's keys, not the whole tensor; for a serving batch not the pool's unused
// slots), and Q and O (float32). A dense point without such a mask: its whole tensors.
static double roofline_bytes(const attn_problem *p) {
  const double qo = (double)attn_layout_total_q(p) * (double)p->heads *
                    (double)(p->head_dim_qk + p->head_dim_v) * sizeof(float);
  return (double)attn_serving_kv_bytes(p) + qo;
}

// A cold point so small that its copies (at most ATTN_BENCH_COLD_MAX_COPIES) fit in the
// last-level cache together: its calls find their inputs there, not in DRAM.
static bool cold_in_llc(const attn_bench_point *pt, const attn_problem *p) {
  return pt->cold_inputs && attn_bytes_mul((uint64_t)g_buf.copies, tensor_bytes(p)) <=
                                attn_topology_llc_bytes(attn_topology_get());
}

// The bench's command-line layer beyond the per-point overrides: --tile-q, --tile-kv, --bind.
static attn_setting_layer g_cli;
static bool g_cli_set;

void attn_bench_set_cli_settings(const attn_setting_layer *cli) {
  g_cli = *cli;
  g_cli_set = true;
}

int attn_bench_point_settings(const attn_bench_point *pt, attn_settings *s,
                              attn_setting_fault *fault, char *err, size_t err_len) {
  attn_setting_layer cli, cfg;
  if (g_cli_set)
    cli = g_cli;
  else
    attn_setting_layer_clear(&cli);
  attn_setting_layer_clear(&cfg);
  // threads = 0 (config or --threads): not given, the resolver's default (pt->threads is
  // that default already: attn_bench_overrides.physical_cores).
  const bool t_cli = pt->from_cli & (1u << ATTN_SETTING_THREADS);
  const bool single = !(pt->kernel->caps & ATTN_CAP_THREADS);
  if (single || !pt->threads_default)
    attn_setting_layer_set(t_cli && !single ? &cli : &cfg, ATTN_SETTING_THREADS, pt->threads,
                           single  ? "single-thread kernel"
                           : t_cli ? "--threads"
                                   : "threads =");
  if (pt->regtile[0]) {
    const bool c = pt->from_cli & (1u << ATTN_SETTING_REGTILE);
    attn_setting_layer_regtile(c ? &cli : &cfg, pt->regtile, c ? "--regtile" : "regtile");
  }
  if (pt->kv_split >= 0) {
    const bool c = pt->from_cli & (1u << ATTN_SETTING_KV_SPLIT);
    attn_setting_layer_set(c ? &cli : &cfg, ATTN_SETTING_KV_SPLIT, pt->kv_split,
                           c ? "--kv-split" : "kv_split =");
  }
  return attn_resolve(pt->kernel, &pt->problem, &cli, &cfg, 0, s, fault, err, err_len);
}

void attn_bench_run_point(attn_gb_state *st, void *user) {
  attn_bench_state *s = user;
  const attn_bench_point *pt = s->point;
  attn_options sized_opts;  // values only, for the counters, tiles and sizes before the buffers
  const attn_problem sized = point_problem(pt, &sized_opts, NULL, NULL, NULL);
  const attn_problem *p = &sized;
  attn_gb_set_label(st, pt->kernel->name);
  shape_counters(st, pt, p);
  option_counters(st, pt, p);
  char err[320];
  // The settings (resolve.h: --threads/--regtile/... > the config > environment > tuning
  // file > machine rule > kernel default), checked there for this kernel once.
  attn_settings set;
  if (attn_bench_point_settings(pt, &set, NULL, err, sizeof err) != 0) {
    attn_gb_skip_with_error(st, err);
    return;
  }
  const attn_exec exec = set.exec;
  attn_placement_use_mode(set.bind);
  const bool tuned = set.source[ATTN_SETTING_TILE_Q] == ATTN_SOURCE_TUNE_FILE ||
                     set.source[ATTN_SETTING_TILE_KV] == ATTN_SOURCE_TUNE_FILE;
  const bool tuned_variant = set.source[ATTN_SETTING_REGTILE] == ATTN_SOURCE_TUNE_FILE ||
                             set.source[ATTN_SETTING_KV_SPLIT] == ATTN_SOURCE_TUNE_FILE;
  // Where each setting came from, as an attn_source code per setting (the results
  // context's "setting_sources" names them): "source_tile_q" = 3 is the environment.
  for (int f = 0; f < ATTN_SETTING_COUNT; f++) {
    char key[32];
    snprintf(key, sizeof key, "source_%s", attn_setting_name((attn_setting)f));
    attn_gb_set_counter(st, key, (double)set.source[f], ATTN_GB_PLAIN);
  }
  attn_gb_set_counter(st, "tile_q", exec.tile_q, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "tile_kv", exec.tile_kv, ATTN_GB_PLAIN);
  // the variant's index (attn_kernel_regtile; its name is in the context) and kv_split
  attn_gb_set_counter(st, "regtile", exec.regtile, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "kv_split", exec.kv_split, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "tuned", tuned ? 1 : 0, ATTN_GB_PLAIN);  // tiles from the file
  attn_gb_set_counter(st, "tuned_variant", tuned_variant ? 1 : 0,
                      ATTN_GB_PLAIN);  // regtile/kv_split
  // (The thread cap and the variant were checked by the resolver, before any buffer is
  // sized for or any parallel region run by this point: the timed loop calls the kernel's
  // entry point directly.)
  if (s->refused[0]) {
    attn_gb_skip_with_error(st, s->refused);
    return;
  }
  if (g_ref.pc) {  // a reference kept for another shape goes before new inputs arrive
    const attn_problem c = attn_bench_check_shape(p);
    if (!same_shape(&g_ref.shape, &c) || !same_opts(&g_ref.opts, &pt->opts))
      attn_bench_release_reference();
  }
  if (!acquire_buffers(pt, &exec)) {
    attn_gb_skip_with_error(st, "out of memory allocating the inputs");
    return;
  }
  p = &g_buf.problem;  // the same problem with the point's sinks and LSE arrays
  if (!s->checked) run_check(s, &exec);
  attn_gb_set_counter(st, "check_Sq", (double)s->checked_shape.seq_q, ATTN_GB_PLAIN);
  attn_gb_set_counter(st, "check_Skv", (double)s->checked_shape.seq_kv, ATTN_GB_PLAIN);
  if (!s->check_pass) {
    attn_gb_skip_with_error(st, s->check_message);
    return;
  }
  attn_gb_set_counter(st, "input_copies", g_buf.copies, ATTN_GB_PLAIN);
  if (pt->cold_inputs) attn_gb_set_counter(st, "cold_in_llc", cold_in_llc(pt, p), ATTN_GB_PLAIN);
  // The seconds per repetition this point was timed with (its section's min_time), which
  // scripts/bench-baselines gives the baselines run beside it.
  if (s->min_time > 0) attn_gb_set_counter(st, "min_time", s->min_time, ATTN_GB_PLAIN);
  // Which values were timed (bench/inputs.h): the external baselines record the digest of
  // the exported inputs they ran on, so a results file shows that both saw the same.
  attn_gb_set_counter(st, "inputs_digest", (double)g_buf.digest, ATTN_GB_PLAIN);
  if (s->has_storage) {  // what the K/V type costs against float32 K/V (not a kernel error)
    attn_gb_set_counter(st, "kv_storage_err", s->storage_abs, ATTN_GB_PLAIN);
    attn_gb_set_counter(st, "kv_storage_err/tol", s->storage_ratio, ATTN_GB_PLAIN);
  }
  // A memory-bound point (by the sweep's start probes) that reads DRAM on every call
  // (cold_inputs, or more bytes to read than the last-level cache holds): a shared machine's
  // bandwidth drifts by tens of percent over a sweep, so its % of bandwidth is also taken against a
  // probe run right before and right after this timed run (untimed: Google Benchmark's
  // clock runs inside the loop only). Each repetition has its own pair, so the median over
  // repetitions compares like with like. Not for cache-resident points: the probe evicts
  // the caches, and DRAM's bandwidth is not their limit.
  bool memory_bound = false;
  const double t_roof = attn_bench_roofline_seconds(
      attn_flops(p), roofline_bytes(p), s->peak_gflops, s->bandwidth_gbs, &memory_bound);
  const uint64_t llc = attn_topology_llc_bytes(attn_topology_get());
  const bool adjacent =
      s->adjacent_probe && memory_bound &&
      ((pt->cold_inputs && !cold_in_llc(pt, p)) || roofline_bytes(p) > (double)llc);
  const double bw_before = adjacent ? attn_bench_adjacent_bandwidth(pt->threads, 2) : 0;
  int c = 0;
  bool fallback = false;  // the portable path ran instead of the kernel (attn_kernel_run)
  while (attn_gb_keep_running(st)) {
    float *o = g_buf.o[c];
    attn_kernel_guard_call_begin();  // the hang watch (isolate.h): two relaxed increments
    const int rc = attn_kernel_run(pt->kernel, p, &exec, g_buf.q[c], g_buf.k[c], g_buf.v[c], o,
                                   g_buf.ws, &fallback);
    attn_kernel_guard_call_end();
    c = c + 1 == g_buf.copies ? 0 : c + 1;
    if (rc != ATTN_OK) {
      char msg[64];
      snprintf(msg, sizeof msg, "kernel returned status %d", rc);
      attn_gb_skip_with_error(st, msg);
      continue;  // keep_running now returns false
    }
    attn_gb_do_not_optimize(o);
  }
  const double bw_after =
      adjacent && !attn_gb_error_occurred(st) ? attn_bench_adjacent_bandwidth(pt->threads, 2) : 0;
  // 1: the timings are the portable fallback's, not this kernel's (options it lacks).
  attn_gb_set_counter(st, "fallback", fallback ? 1 : 0, ATTN_GB_PLAIN);
  // Per-iteration amounts; Google Benchmark turns them into rates (÷ seconds/iteration).
  const double gflop = attn_flops(p) * 1e-9;
  attn_gb_set_counter(st, "GFLOP/s", gflop, ATTN_GB_RATE_PER_ITER);
  attn_gb_set_counter(st, "GB/s", roofline_bytes(p) * 1e-9, ATTN_GB_RATE_PER_ITER);
  // The unit the point is judged by, as its code (the context's "peak_units" names them).
  attn_gb_set_counter(st, "peak_unit", (double)s->peak_key.unit, ATTN_GB_PLAIN);
  serving_counters(st, s, p);
  if (s->peak_gflops > 0) {
    attn_gb_set_counter(st, "%peak", gflop * 100.0 / s->peak_gflops, ATTN_GB_RATE_PER_ITER);
    attn_gb_set_counter(st, "peak_GFLOP/s", s->peak_gflops, ATTN_GB_PLAIN);
  }
  // The adjacent probe (above): the better of the two reads is this run's limit, against
  // the bytes the roofline counts (a serving point: the K/V its rows can see and the packed
  // Q and O, not the pool's unused slots nor keys outside a window).
  if (adjacent && !(bw_before > 0 && bw_after > 0))  // no buffer for it (adjacent.c) or a
    attn_gb_set_counter(st, "adj_bw_unavailable", 1, ATTN_GB_PLAIN);  // failed read
  if (bw_before > 0 && bw_after > 0) {
    const double near = bw_before > bw_after ? bw_before : bw_after;
    attn_gb_set_counter(st, "adj_bw_before_GB/s", bw_before, ATTN_GB_PLAIN);
    attn_gb_set_counter(st, "adj_bw_after_GB/s", bw_after, ATTN_GB_PLAIN);
    attn_gb_set_counter(st, "adj_bw_GB/s", near, ATTN_GB_PLAIN);
    attn_gb_set_counter(st, "%adj_bw", roofline_bytes(p) * 1e-9 * 100.0 / near,
                        ATTN_GB_RATE_PER_ITER);
  }
  // What the roofline and GB/s count (roofline_bytes above).
  attn_gb_set_counter(st, "roofline_bytes", roofline_bytes(p), ATTN_GB_PLAIN);
  // Scored against the limit that applies (t_roof above): % of the roofline time (t_roof /
  // time, a rate of t_roof per iteration), which limit it is, and the attainable rate.
  if (t_roof > 0) {
    attn_gb_set_counter(st, "%roofline", 100.0 * t_roof, ATTN_GB_RATE_PER_ITER);
    attn_gb_set_counter(st, "memory_bound", memory_bound ? 1 : 0, ATTN_GB_PLAIN);
    attn_gb_set_counter(st, "roofline_GFLOP/s", gflop / t_roof, ATTN_GB_PLAIN);
    attn_gb_set_counter(st, "read_bw_GB/s", s->bandwidth_gbs, ATTN_GB_PLAIN);
  }
}
