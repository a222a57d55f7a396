// SPDX-License-Identifier: MIT
// `attnbench tune` — search tile_q × tile_kv (then register-tile variants and kv_split)
// for the tiled kernels on this machine and write the winners to a tuning file
// (tunefile.h; docs/tuning-files.md).
//
// Groups: one per (kernel, shape class) among the shapes of --config (or the default set
// below); the first shape of a class in the config stands for the class, timed as the
// config gives it — its K/V type (bench's inputs stored as that type) and its serving
// layout (the loaded sweep owns the layouts and outlives the groups). The built-in
// default of a group is what `run` would use without a tuning file: the settings resolver
// (resolve/resolve.h: --threads > environment > machine rule > kernel default; --explain
// prints them), except that ATTNBENCH_TILE_*, _REGTILE and _KV_SPLIT are left out (the
// default recorded is never a passing override). Candidates: the default's tiles
// r_q × r_kv (the tile rule with hwloc's caches) and the grid
//     tile_q  ∈ {r_q/2, r_q, 3r_q/2, 2r_q},   tile_kv ∈ {r_kv/2, r_kv, 2r_kv}
// with tile_q rounded to a multiple of the kernel's register-tile rows and tile_kv of its
// Q·Kᵀ register-tile columns (at least one register tile), tile_q capped at seq_q and
// tile_kv at seq_kv rounded up to those multiples (larger tiles are the same tiles: kernels
// clamp to the problem), duplicates dropped; the rule's tiles are timed first. Each
// candidate: one warm-up call, then the median of --reps calls of attn_kernel_run on the
// same inputs and workspace (attn_kernel_call validated the inputs once, at the rule's
// tiles). Budget: each group may spend (budget left) / (groups left) seconds; a group stops
// after the candidate that crosses its share (the rule's tiles always run). The winner is
// the candidate with the least median if that is at least kMinGain (2%) below the rule's
// median, else the rule's tiles.
// Then, at the winning tiles, the kernel's other register-tile variants than the default's
// (attn_exec.regtile; kernels with several) and, for decode classes of kernels with
// ATTN_CAP_KV_SPLIT, a few kv_split values around the default plan's chunk count d (flash_plan.h:
// 1, d/4, d/2, 2d, 4d within 1..ATTN_MAX_KV_SPLIT, d itself dropped): each phase compares its
// candidates with the best so far by the same rule (least median, kept only if kMinGain below), in
// the same group budget share — the tile grid may use the share up to the fraction of the
// group's candidates it holds, the later phases whatever is left (their first candidate
// always runs). Written: the tiles, regtile (the winning variant's name, the default's
// included) for kernels with variants, kv_split when a value won.
// A plug-in kernel runs under the in-process guard and hang watch (plugins/isolate.h), as in
// `run`: one that crashes, calls exit() or has a call last --case-timeout seconds (default
// 60) ends tune with the kernel, the shape and the class named, exit 1, nothing written.
// Confirmation: a search choice other than the built-in default (the rule's tiles, the
// default variant and split) is timed against that default once more, the two alternated
// over --confirm rounds (each the median of --reps calls), and kept only if the median of
// the per-round ratios tuned / default is at least kMinGain below 1 — one lucky median in
// the search, on a shared machine, does not write a slower setting. Outside the budget.
// stdout: one line per group with one ratio — the confirmed one, or the search's marked
// unconfirmed (--confirm 0) — then "wrote PATH (...)".
// The file (tunefile.h "The store"): refused up front if it is not a regular file or not
// a tuning file; at the end this run's entries are merged into the file's current ones
// under the lock "<file>.lock" (a concurrent tune's entries for other kernels and classes
// stay), the text is parsed back before it replaces anything, and it is written through
// a temporary + rename that SIGINT/SIGTERM/SIGHUP remove (io/fileio.h).
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attn.h"
#include "bench/config.h"
#include "bench/inputs.h"
#include "cli/commands.h"
#include "cli/option_args.h"
#include "common/cli_args.h"
#include "common/util.h"
#include "core/convert.h"  // attn_quantize_rows: K/V stored as the shape's type
#include "core/tiles.h"
#include "io/fileio.h"
#include "machine/placement.h"
#include "plugins/isolate.h"  // the in-process guard and hang watch around plug-in calls
#include "resolve/resolve.h"
#include "tune/tune_grid.h"
#include "tune/tune_store.h"
#include "tune/tunefile.h"

typedef struct tune_args {
  const char *config;
  cli_list kernels;
  exec_args x;  // --threads, --explain (option_args.h)
  double budget;
  int reps;
  int confirm;
  const char *out;
  double case_timeout;  // --case-timeout: a plug-in kernel's call limit (isolate.h's watch)
  bool case_timeout_given;
} tune_args;

typedef struct tune_group {
  const attn_kernel *kernel;
  attn_problem problem;
  char cls[32];
} tune_group;

enum { kMaxGroups = 128, kMaxCand = ATTN_TUNE_MAX_CANDIDATES };
// A candidate must beat the rule's median by this fraction to replace it.
static const double kMinGain = 0.02;

// A kernel whose record declares a register tile is a tiled kernel: its tile_q / tile_kv
// are what tune searches (tiled__*, omp__*, flash__* and plug-ins alike).
static bool has_tiles(const attn_kernel *k) {
  return k->qk_rows > 0 && k->qk_cols > 0;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// x[0 .. n) sorted in place; its median (the upper one of the middle two for even n).
static double median_of(double *x, int n) {
  qsort(x, (size_t)n, sizeof x[0], cmp_double);
  return x[n / 2];
}

// "B1 H8 KV8 Sq2048 Skv2048 D64 causal", then the K/V type when not f32 and the serving
// layout when there is one ("bf16 paged").
static void shape_text(const attn_problem *p, char *buf, size_t len) {
  snprintf(buf, len, "B%lld H%lld KV%lld Sq%lld Skv%lld D%lld%s%s%s%s", (long long)p->batch,
           (long long)p->heads, (long long)p->kv_heads, (long long)p->seq_q, (long long)p->seq_kv,
           (long long)p->head_dim_qk, p->causal ? " causal" : "",
           p->kv_dtype != ATTN_DTYPE_F32 ? " " : "",
           p->kv_dtype != ATTN_DTYPE_F32 ? attn_dtype_name(p->kv_dtype) : "",
           !p->layout                             ? ""
           : p->layout->kind == ATTN_LAYOUT_PAGED ? " paged"
                                                  : " ragged");
}

// Times one candidate: warm-up + median of reps calls. Returns the median in seconds, or
// a negative value after a message.
static double time_candidate(const attn_kernel *k, const attn_problem *p, const attn_exec *ex,
                             const float *q, const void *kk, const void *v, float *o, int reps) {
  char err[512];
  if (attn_kernel_exec_check(k, ex, err, sizeof err) != ATTN_OK) {
    fprintf(stderr, "attnbench tune: %s\n", err);
    return -1;
  }
  const size_t ws_bytes = attn_kernel_workspace_watched(k, p, ex);
  void *ws = ws_bytes ? aligned_alloc(64, (ws_bytes + 63) / 64 * 64) : NULL;
  if (ws_bytes && !ws) {
    fprintf(stderr, "attnbench tune: out of memory (workspace of %zu bytes)\n", ws_bytes);
    return -1;
  }
  double t[64];
  double result = -1;
  for (int r = -1; r < reps; r++) {  // r = -1: warm-up
    attn_kernel_guard_call_begin();  // the hang watch (isolate.h): two relaxed increments
    const double t0 = attn_now_seconds();
    const int rc = attn_kernel_run(k, p, ex, q, kk, v, o, ws, NULL);
    const double dt = attn_now_seconds() - t0;
    attn_kernel_guard_call_end();
    if (rc != ATTN_OK) {
      fprintf(stderr, "attnbench tune: %s returned status %d at tile_q %d tile_kv %d\n", k->name,
              rc, ex->tile_q, ex->tile_kv);
      goto out;
    }
    if (r >= 0) t[r] = dt;
  }
  result = median_of(t, reps);
out:
  free(ws);
  return result;
}

static int parse(tune_args *a, int argc, char **argv) {
  const cli_option opts[] = {
      {.name = "config",
       .kind = CLI_STRING,
       .dest = &a->config,
       .metavar = "FILE",
       .help = "tune for the shapes of this sweep config (its kernels are ignored; default: "
               "prefill B1 H8 S2048 D64 and D128, decode H32 KV8 Skv16384 D128)"},
      {.name = "kernel",
       .kind = CLI_STRING_LIST,
       .dest = &a->kernels,
       .metavar = "NAME",
       .help = "tune this kernel (repeatable; tiled__*, omp__*, flash__*; default: the flash__* "
               "and tiled__* kernels this CPU runs)"},
      ATTN_EXEC_THREADS_OPTION(&a->x.threads, CLI_INT, ATTN_EXEC_THREADS_HELP),
      ATTN_EXEC_EXPLAIN_OPTION(&a->x),
      {.name = "budget",
       .kind = CLI_DOUBLE,
       .dest = &a->budget,
       .metavar = "SECONDS",
       .fmin = 0.001,
       .fmax = 86400,
       .help = "time to spend searching, shared out over the (kernel, shape class) groups "
               "(default 60)"},
      {.name = "reps",
       .kind = CLI_INT,
       .dest = &a->reps,
       .metavar = "N",
       .min = 1,
       .max = 63,
       .help = "timed calls per candidate after one warm-up call; the median counts (default 3)"},
      {.name = "confirm",
       .kind = CLI_INT,
       .dest = &a->confirm,
       .metavar = "N",
       .min = 0,
       .max = 99,
       .help = "rounds alternating a group's tuned choice with the built-in default before it "
               "is written; kept if the median ratio is 2% below 1 (0 = no check; default 5)"},
      ATTN_EXEC_TUNE_FILE_OPTION(&a->out,
                                 "write here (default: $ATTNBENCH_TUNE_FILE, else the file "
                                 "for this CPU under $XDG_CONFIG_HOME/attnbench)"),
      ATTN_CASE_TIMEOUT_OPTION(&a->case_timeout, &a->case_timeout_given),
  };
  const cli_spec spec = {
      .command = "tune",
      .summary =
          "Search tile_q x tile_kv per kernel and shape class on this machine, then the\n"
          "kernel's register-tile variants and (decode classes) kv_split values at the best\n"
          "tiles, and write the fastest to a tuning file that run, check and bench then use.",
      .epilog =
          "examples:\n"
          "  attnbench tune --budget 120\n"
          "  attnbench tune --config configs/llm.ini --kernel flash__avx512 --threads 2\n"
          "\nexit codes: 0 written, 1 a kernel failed or the file could not be written,\n"
          "2 bad command line, unknown kernel or bad config\n"
          "File format and precedence: docs/tuning-files.md",
      CLI_OPTIONS(opts),
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);
  if (!attn_case_timeout_settle("tune", &a->case_timeout, a->case_timeout_given))
    return ATTNBENCH_EXIT_USAGE;
  return attn_resolve_env_bad("tune") ? ATTNBENCH_EXIT_USAGE : -1;  // ATTNBENCH_TILE_* etc.
}

// The kernels to tune: --kernel, or the available flash__* and tiled__* kernels.
static int pick_kernels(const tune_args *a, const attn_kernel **ks, size_t *nk) {
  *nk = 0;
  for (size_t i = 0; i < a->kernels.count; i++) {
    const attn_kernel *k = attn_kernel_find(a->kernels.items[i]);
    if (!k) {
      attn_report_unknown_kernel("tune", a->kernels.items[i]);
      return ATTNBENCH_EXIT_USAGE;
    }
    if (!has_tiles(k)) {
      fprintf(stderr,
              "attnbench tune: kernel '%s' has no tiles to tune (its record declares no register "
              "tile: tiled__*, omp__*, flash__* do)\n",
              k->name);
      return ATTNBENCH_EXIT_USAGE;
    }
    char why[96];
    if (!attn_kernel_available(k, why, sizeof why)) {
      fprintf(stderr, "attnbench tune: kernel '%s' is unavailable on this CPU (%s)\n", k->name,
              why);
      return ATTNBENCH_EXIT_FAILURE;
    }
    ks[(*nk)++] = k;
  }
  for (size_t i = 0; a->kernels.count == 0 && i < attn_kernel_count() && *nk < CLI_LIST_MAX; i++) {
    const attn_kernel *k = attn_kernel_at(i);
    if ((!strncmp(k->name, "flash__", 7) || !strncmp(k->name, "tiled__", 7)) &&
        attn_kernel_available(k, NULL, 0))
      ks[(*nk)++] = k;
  }
  if (*nk == 0) {
    fprintf(stderr, "attnbench tune: no tiled kernel can run on this CPU\n");
    return ATTNBENCH_EXIT_FAILURE;
  }
  return -1;
}

// Adds (k, p's class) unless present; *dropped counts groups beyond kMaxGroups.
static void add_group(tune_group *g, size_t *ng, const attn_kernel *k, const attn_problem *p,
                      size_t *dropped) {
  char cls[32];
  attn_tune_class(p, cls, sizeof cls);
  for (size_t i = 0; i < *ng; i++)
    if (g[i].kernel == k && !strcmp(g[i].cls, cls)) return;  // the first shape stands for it
  if (*ng == kMaxGroups) {
    ++*dropped;
    return;
  }
  g[*ng].kernel = k, g[*ng].problem = *p;
  snprintf(g[*ng].cls, sizeof g[*ng].cls, "%s", cls);
  (*ng)++;
}

// Allocates and fills Q, K, V, O for p: bench's float32 inputs (bench/inputs.h), K and V
// then stored as p->kv_dtype (as bench stores a point's), a serving layout's pool included.
// False when out of memory.
static bool alloc_inputs(const attn_problem *p, float **q, void **k, void **v, float **o) {
  *q = malloc(attn_q_elems(p) * sizeof(float));
  *k = malloc(attn_k_bytes(p));
  *v = malloc(attn_v_bytes(p));
  *o = malloc(attn_o_elems(p) * sizeof(float));
  if (!*q || !*k || !*v || !*o) return false;
  if (p->kv_dtype == ATTN_DTYPE_F32) {
    attn_bench_fill_inputs(p, *q, *k, *v);
    return true;
  }
  float *k32 = malloc(attn_k_elems(p) * sizeof(float)),
        *v32 = malloc(attn_v_elems(p) * sizeof(float));
  const bool ok = k32 && v32;
  if (ok) {
    const size_t rows = attn_k_elems(p) / (size_t)p->head_dim_qk;  // K and V: the same rows
    attn_bench_fill_inputs(p, *q, k32, v32);
    attn_quantize_rows(p->kv_dtype, k32, rows, p->head_dim_qk, *k);
    attn_quantize_rows(p->kv_dtype, v32, rows, p->head_dim_v, *v);
  }
  free(k32);
  free(v32);
  return ok;
}

// Where to write: --tune-file, ATTNBENCH_TUNE_FILE, or the default (its directory made).
// -1 with the path in path[ATTN_TUNE_PATH_MAX], else the exit code after a message.
static int target_path(const tune_args *a, char path[ATTN_TUNE_PATH_MAX]) {
  const char *named = a->out ? a->out : getenv("ATTNBENCH_TUNE_FILE");
  if (named && *named && strcmp(named, "none")) {
    snprintf(path, ATTN_TUNE_PATH_MAX, "%s", named);
    return -1;
  }
  if (named && !strcmp(named, "none")) {
    fprintf(stderr, "attnbench tune: --tune-file none: nowhere to write the results\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  char why[256];
  if (!attn_tune_default_path(path, ATTN_TUNE_PATH_MAX, why, sizeof why)) {
    fprintf(stderr, "attnbench tune: no default tuning file: %s; give --tune-file\n", why);
    return ATTNBENCH_EXIT_USAGE;
  }
  char dir[ATTN_TUNE_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  *slash = '\0';
  char *parent = strrchr(dir, '/');
  if (parent && parent != dir) {  // $XDG_CONFIG_HOME (or ~/.config), then attnbench/
    *parent = '\0';
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "attnbench tune: %s: %s\n", dir, strerror(errno));
      return ATTNBENCH_EXIT_FAILURE;
    }
    *parent = '/';
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "attnbench tune: %s: %s\n", dir, strerror(errno));
    return ATTNBENCH_EXIT_FAILURE;
  }
  return -1;
}

// The (kernel, shape class) groups of --config's shapes, or of the default shapes, for
// the kernels ks[0 .. nk). -1 with groups[0 .. *ng), else the exit code after a message.
// With --config, *plan holds the loaded sweep (*have_plan set): a group's problem is a
// copy of a point's, whose serving layout lives in the plan, so the caller frees the plan
// only after the last group ran.
static int make_groups(const tune_args *a, const attn_kernel *const *ks, size_t nk,
                       tune_group groups[kMaxGroups], size_t *ng, attn_bench_plan *plan,
                       bool *have_plan) {
  const int plan_threads = 1;  // the config's points stand for shapes only
  size_t dropped = 0;
  *ng = 0;
  if (a->config) {
    attn_bench_overrides ov = {.kernels = ks,
                               .kernel_count = nk,
                               .threads = &plan_threads,
                               .thread_count = 1,
                               .physical_cores = 1};
    char err[ATTN_OUT_PATH_MAX + 512];
    if (!attn_bench_plan_load(a->config, &ov, stderr, plan, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      return ATTNBENCH_EXIT_USAGE;
    }
    *have_plan = true;
    for (size_t i = 0; i < plan->count; i++)
      add_group(groups, ng, plan->points[i].kernel, &plan->points[i].problem, &dropped);
  } else {
    const attn_problem shapes[] = {
        attn_problem_make(1, 8, 8, 2048, 2048, 64, 64, false),
        attn_problem_make(1, 8, 8, 2048, 2048, 128, 128, false),
        attn_problem_make(1, 32, 8, 1, 16384, 128, 128, false),
    };
    for (size_t i = 0; i < nk; i++)
      for (size_t j = 0; j < sizeof shapes / sizeof shapes[0]; j++)
        add_group(groups, ng, ks[i], &shapes[j], &dropped);
  }
  if (*ng == 0) {
    fprintf(stderr, "attnbench tune: the config has no shape to tune\n");
    return ATTNBENCH_EXIT_USAGE;
  }
  if (dropped)
    fprintf(stderr,
            "attnbench tune: note: more than %d (kernel, shape class) groups; only the first %d "
            "are tuned (fewer --kernel or a smaller config tunes the rest)\n",
            kMaxGroups, kMaxGroups);
  return -1;
}

// One group's search: its inputs, its candidates and the choice so far.
typedef struct group_search {
  const tune_group *G;
  const attn_problem *p;
  size_t g, ng;  // the group's index and the count (progress lines)
  int threads, reps;
  char shape[160];
  float *q, *o;
  void *k, *v;     // stored as the problem's kv_dtype
  attn_exec base;  // the built-in default: `run`'s settings
  attn_exec ex;    // the settings being varied
  double g_start, share;
  int cq[kMaxCand], ckv[kMaxCand], nc;
  int best, best_rt, best_kv;  // the choice: a tile candidate, a register tile, a kv_split
  double best_t, rule_t;       // its median, the rule's tiles' median
} group_search;

// The tile grid within tile_share seconds of the group's start; sets best, best_t and
// rule_t. False after a message when a kernel failed.
static bool search_tiles(group_search *s, double tile_share) {
  const tune_group *G = s->G;
  s->best = -1, s->best_t = 0, s->rule_t = 0;
  int tried = 0;
  for (int c = 0; c < s->nc; c++) {
    if (c > 0 && attn_now_seconds() - s->g_start >= tile_share) break;
    s->ex.tile_q = s->cq[c], s->ex.tile_kv = s->ckv[c];
    const double t = time_candidate(G->kernel, s->p, &s->ex, s->q, s->k, s->v, s->o, s->reps);
    if (t < 0) return false;
    tried++;
    if (c == 0) s->rule_t = t;
    if (s->best < 0 || t < s->best_t) s->best = c, s->best_t = t;
    fprintf(stderr,
            "[%zu/%zu %d/%d] %s %s (%s, T%d) tile_q %d tile_kv %d: %.3f ms%s (best %d x %d, "
            "%.3f ms)\n",
            s->g + 1, s->ng, c + 1, s->nc, G->kernel->name, G->cls, s->shape, s->threads, s->cq[c],
            s->ckv[c], t * 1e3, c == 0 ? " [built-in rule]" : "", s->cq[s->best], s->ckv[s->best],
            s->best_t * 1e3);
  }
  // Within kMinGain of the rule is measurement noise: keep the rule's tiles then.
  if (s->best != 0 && s->best_t > (1.0 - kMinGain) * s->rule_t) {
    fprintf(stderr,
            "attnbench tune: %s %s: best %d x %d is within %.0f%% of the built-in rule; keeping "
            "the rule's %d x %d\n",
            G->kernel->name, G->cls, s->cq[s->best], s->ckv[s->best], kMinGain * 100, s->cq[0],
            s->ckv[0]);
    s->best = 0, s->best_t = s->rule_t;
  }
  if (tried < s->nc)
    fprintf(stderr, "attnbench tune: %s %s: budget share %.3g s spent after %d of %d candidates\n",
            G->kernel->name, G->cls, tile_share, tried, s->nc);
  return true;
}

// At the winning tiles: the register-tile variants other than the default's (phase 0),
// then the kv_split values kvc[0 .. nkv) (phase 1); sets best_rt, best_kv, best_t. False
// after a message when a kernel failed.
static bool search_variants(group_search *s, int nrt, const int kvc[], int nkv) {
  const tune_group *G = s->G;
  const attn_exec *base = &s->base;
  s->ex.tile_q = s->cq[s->best], s->ex.tile_kv = s->ckv[s->best], s->ex.regtile = base->regtile,
  s->ex.kv_split = base->kv_split;
  s->best_rt = base->regtile, s->best_kv = base->kv_split;
  for (int phase = 0; phase < 2; phase++) {
    const int n = phase == 0 ? nrt - 1 : nkv;
    const double ref_t = s->best_t;  // the best so far: what a candidate must beat
    int win = -1, done = 0;
    double win_t = 0;
    for (int c = 0; c < n; c++) {
      if (c > 0 && attn_now_seconds() - s->g_start >= s->share) break;
      attn_exec e = s->ex;
      if (phase == 0)  // the variants other than the default's
        e.regtile = c < base->regtile ? c : c + 1;
      else
        e.regtile = s->best_rt, e.kv_split = kvc[c];
      const double t = time_candidate(G->kernel, s->p, &e, s->q, s->k, s->v, s->o, s->reps);
      if (t < 0) return false;
      done++;
      if (win < 0 || t < win_t) win = c, win_t = t;
      const char *cur = attn_kernel_regtile(G->kernel, e.regtile).name;
      if (phase == 0)
        fprintf(stderr,
                "[%zu/%zu regtile %d/%d] %s %s (%s, T%d) tile_q %d tile_kv %d regtile %s: %.3f "
                "ms (%s: %.3f ms)\n",
                s->g + 1, s->ng, c + 1, n, G->kernel->name, G->cls, s->shape, s->threads, e.tile_q,
                e.tile_kv, cur, t * 1e3, attn_kernel_regtile(G->kernel, base->regtile).name,
                ref_t * 1e3);
      else
        fprintf(stderr,
                "[%zu/%zu kv_split %d/%d] %s %s (%s, T%d) tile_q %d tile_kv %d regtile %s "
                "kv_split %d: %.3f ms (default split: %.3f ms)\n",
                s->g + 1, s->ng, c + 1, n, G->kernel->name, G->cls, s->shape, s->threads, e.tile_q,
                e.tile_kv, cur, e.kv_split, t * 1e3, ref_t * 1e3);
    }
    if (done < n)
      fprintf(stderr,
              "attnbench tune: %s %s: budget share %.3g s spent after %d of %d %s candidates\n",
              G->kernel->name, G->cls, s->share, done, n, phase == 0 ? "regtile" : "kv_split");
    if (win < 0) continue;
    char label[64];  // the winner and what it had to beat
    const int win_rt = win < base->regtile ? win : win + 1;
    if (phase == 0)
      snprintf(label, sizeof label, "regtile %s", attn_kernel_regtile(G->kernel, win_rt).name);
    else
      snprintf(label, sizeof label, "kv_split %d", kvc[win]);
    if (win_t > (1.0 - kMinGain) * ref_t) {  // noise: keep what the earlier phase chose
      fprintf(stderr,
              "attnbench tune: %s %s: best %s (%.3f ms) is not %.0f%% below %s (%.3f ms); "
              "keeping that\n",
              G->kernel->name, G->cls, label, win_t * 1e3, kMinGain * 100,
              phase == 0 ? attn_kernel_regtile(G->kernel, base->regtile).name : "the default split",
              ref_t * 1e3);
      continue;
    }
    s->best_t = win_t;
    if (phase == 0)
      s->best_rt = win_rt;
    else
      s->best_kv = kvc[win];
  }
  return true;
}

// Whether the choice differs from the built-in default.
static bool is_tuned(const group_search *s) {
  return s->best != 0 || s->best_rt != s->base.regtile || s->best_kv != s->base.kv_split;
}

// Confirmation (see the top): the choice against the built-in default, alternated over
// `rounds` rounds. *ratio: the median tuned / default, 0 when not confirmed by rounds;
// *refuted: the rounds turned the choice down (reset to the default). False after a
// message when a kernel failed.
static bool confirm_choice(group_search *s, int rounds, double *ratio_out, bool *refuted) {
  const tune_group *G = s->G;
  *ratio_out = 0, *refuted = false;
  if (rounds <= 0 || !is_tuned(s)) return true;
  attn_exec tuned = s->ex;
  const attn_exec dflt = s->base;
  tuned.regtile = s->best_rt, tuned.kv_split = s->best_kv;
  double ratio[100];
  for (int r = 0; r < rounds; r++) {
    double t[2];  // t[0] the default, t[1] the tuned choice; the first alternates
    for (int i = 0; i < 2; i++) {
      const int which = (r + i) % 2;
      t[which] =
          time_candidate(G->kernel, s->p, which ? &tuned : &dflt, s->q, s->k, s->v, s->o, s->reps);
      if (t[which] < 0) return false;
    }
    ratio[r] = t[1] / t[0];
    fprintf(stderr,
            "[%zu/%zu confirm %d/%d] %s %s (%s, T%d): built-in %.3f ms, tuned %.3f ms "
            "(%.3f)\n",
            s->g + 1, s->ng, r + 1, rounds, G->kernel->name, G->cls, s->shape, s->threads,
            t[0] * 1e3, t[1] * 1e3, ratio[r]);
  }
  *ratio_out = median_of(ratio, rounds);
  if (*ratio_out > 1.0 - kMinGain) {
    fprintf(stderr,
            "attnbench tune: %s %s: not confirmed (tuned / built-in %.3f over %d alternated "
            "rounds, not %.0f%% below 1): keeping the built-in default\n",
            G->kernel->name, G->cls, *ratio_out, rounds, kMinGain * 100);
    s->best = 0, s->best_rt = s->base.regtile, s->best_kv = s->base.kv_split, s->best_t = s->rule_t;
    *ratio_out = 0, *refuted = true;
  }
  return true;
}

// Records the group's choice in *file and prints its stdout line. False after a message.
static bool record_group(const group_search *s, int nrt, int rounds, double confirm_ratio,
                         bool refuted, attn_tune_file *file, const char *path) {
  const tune_group *G = s->G;
  char err[ATTN_OUT_PATH_MAX + 512];
  // The default's tiles (cq[0], ckv[0]) come from the resolver, not attn_tune_round_tile:
  // attn_tune_set refuses anything a tuning file cannot hold (never written as is).
  const char *rt_name = nrt > 1 ? attn_kernel_regtile(G->kernel, s->best_rt).name : NULL;
  if (!attn_tune_set(file, G->kernel->name, G->cls, s->cq[s->best], s->ckv[s->best], err,
                     sizeof err) ||
      !attn_tune_set_variant(file, G->kernel->name, G->cls, rt_name, s->best_kv, err, sizeof err)) {
    fprintf(stderr, "attnbench tune: cannot record the result: %s; %s not changed\n", err, path);
    return false;
  }
  // One line per group, one ratio on it: the confirmed one when rounds ran, else the
  // search's (said to be unconfirmed); the search's times are on stderr.
  char extra[96] = "";
  if (rt_name) snprintf(extra, sizeof extra, " regtile %s", rt_name);
  if (s->best_kv > 0)
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " kv_split %d", s->best_kv);
  char verdict[160];
  if (!is_tuned(s))
    snprintf(verdict, sizeof verdict, "the built-in default%s",
             refuted ? " (the search's choice was not confirmed)" : "");
  else if (confirm_ratio > 0)
    snprintf(verdict, sizeof verdict,
             "tuned: %.2fx the built-in default's speed (median of %d alternated rounds)",
             1.0 / confirm_ratio, rounds);
  else
    snprintf(verdict, sizeof verdict,
             "tuned: %.2fx the built-in default's speed in the search, not confirmed "
             "(--confirm 0)",
             s->best_t > 0 ? s->rule_t / s->best_t : 1.0);
  printf("%-16s %-14s tile_q %4d tile_kv %4d%s: %s; built-in %d x %d\n", G->kernel->name, G->cls,
         s->cq[s->best], s->ckv[s->best], extra, verdict, s->cq[0], s->ckv[0]);
  fflush(stdout);
  return true;
}

// Tunes groups[g] with the settings dflt (its built-in default) in `share` seconds and
// records the result in *file. -1, else the exit code after a message; *confirm_s: the
// seconds its confirmation rounds took (outside the budget).
static int tune_group_run(const tune_args *a, const tune_group *groups, size_t g, size_t ng,
                          const attn_settings *dflt, double share, attn_tune_file *file,
                          const char *path, double *confirm_s) {
  static group_search s;  // the candidate arrays are the bulk of it
  memset(&s, 0, sizeof s);
  s.G = &groups[g], s.p = &groups[g].problem, s.g = g, s.ng = ng;
  s.threads = dflt->exec.threads, s.reps = a->reps, s.share = share;
  s.g_start = attn_now_seconds();
  const tune_group *G = s.G;
  shape_text(s.p, s.shape, sizeof s.shape);
  if (!alloc_inputs(s.p, &s.q, &s.k, &s.v, &s.o)) {
    free(s.q), free(s.k), free(s.v), free(s.o);
    fprintf(stderr, "attnbench tune: out of memory for %s %s\n", G->kernel->name, s.shape);
    return ATTNBENCH_EXIT_FAILURE;
  }
  s.base = dflt->exec;
  s.nc = attn_tune_tile_candidates(G->kernel, s.p, s.base.tile_q, s.base.tile_kv, s.cq, s.ckv);
  s.ex = s.base;
  int rc = ATTNBENCH_EXIT_FAILURE;
  // A plug-in that crashes, calls exit() or does not return within --case-timeout ends the
  // command with its name and the shape, exit 1, the file unchanged (isolate.h, the
  // in-process guard and its watch: every call below is bracketed).
  char who[sizeof s.shape + 128];
  snprintf(who, sizeof who, "%s on %s (%s)", G->kernel->name, s.shape, G->cls);
  bool guard = attn_kernel_guard_enter("tune", G->kernel, who, a->case_timeout);
  // Validate the problem, the exec and the inputs once (as run/check/bench do).
  char err[ATTN_OUT_PATH_MAX + 512];
  const int crc =
      attn_kernel_call_watched(G->kernel, s.p, &s.ex, s.q, s.k, s.v, s.o, err, sizeof err);
  if (crc != ATTN_OK) {
    fprintf(stderr, "attnbench tune: %s on %s: %s\n", G->kernel->name, s.shape, err);
    goto out;
  }
  const int nrt = attn_kernel_regtile_count(G->kernel);
  const bool decode = !strncmp(G->cls, "decode", 6);
  int kvc[8], nkv = 0;
  if (decode && (G->kernel->caps & ATTN_CAP_KV_SPLIT)) {
    int all[8];
    const int n = attn_tune_kv_split_candidates(G->kernel, s.p, &s.ex, all);
    for (int i = 0; i < n; i++)  // the default's own split is not a candidate
      if (all[i] != s.base.kv_split) kvc[nkv++] = all[i];
  }
  // The tile grid's part of the share (the later phases get what is left).
  const double tile_share = share * s.nc / (double)(s.nc + (nrt - 1) + nkv);
  double confirm_ratio;
  bool refuted;
  if (!search_tiles(&s, tile_share) || !search_variants(&s, nrt, kvc, nkv)) goto out;
  const double c0 = attn_now_seconds();  // the confirmation rounds are outside the budget
  if (!confirm_choice(&s, a->confirm, &confirm_ratio, &refuted)) goto out;
  *confirm_s = attn_now_seconds() - c0;
  attn_kernel_guard_leave(guard);
  guard = false;
  free(s.q), free(s.k), free(s.v), free(s.o);
  s.q = s.o = NULL, s.k = s.v = NULL;
  if (record_group(&s, nrt, a->confirm, confirm_ratio, refuted, file, path)) rc = -1;
out:
  attn_kernel_guard_leave(guard);
  free(s.q), free(s.k), free(s.v), free(s.o);
  return rc;
}

// The command; *plan is --config's sweep once loaded (*have_plan set), freed by cmd_tune.
static int tune_main(int argc, char **argv, attn_bench_plan *plan, bool *have_plan) {
  tune_args a = {.budget = 60, .reps = 3, .confirm = 5};
  int rc = parse(&a, argc, argv);
  if (rc >= 0) return rc;
  const attn_kernel *ks[CLI_LIST_MAX];
  size_t nk;
  if ((rc = pick_kernels(&a, ks, &nk)) >= 0) return rc;
  attn_setting_layer cli;  // --threads; the rest is resolved per group
  exec_args_layer(&a.x, &cli);

  char path[ATTN_TUNE_PATH_MAX];
  if ((rc = target_path(&a, path)) >= 0) return rc;
  // SIGINT/SIGTERM/SIGHUP from here on: remove the temporary (prepare's probe included)
  // and the lock being held, exit 128 + signal.
  char sig_message[ATTN_TUNE_PATH_MAX + 64];
  snprintf(sig_message, sizeof sig_message, "attnbench tune: interrupted; %s not changed\n", path);
  attn_fileio_catch_signals(sig_message);
  attn_output out;
  char err[ATTN_OUT_PATH_MAX + 512];
  const attn_input_file inputs[] = {{"--config", a.config}};
  if (!attn_output_prepare(&out, path, inputs, a.config ? 1 : 0, err, sizeof err)) {
    fprintf(stderr, "attnbench tune: %s\n", err);
    return ATTNBENCH_EXIT_FAILURE;
  }
  // Before the search: a file there must be one tune may replace (tune/tune_store.h).
  static attn_tune_file file;  // this run's entries; merged into the file's at the end
  if (!attn_tune_read_target(path, &file, false)) return ATTNBENCH_EXIT_FAILURE;
  file.count = 0;
  attn_tune_machine_here(&file.machine);

  static tune_group groups[kMaxGroups];
  size_t ng;
  if ((rc = make_groups(&a, ks, nk, groups, &ng, plan, have_plan)) >= 0) return rc;

  // Each group's default settings (resolve.h, without a tuning file: tune measures what
  // the file would replace), checked before any timing.
  static attn_settings dflts[kMaxGroups];
  for (size_t g = 0; g < ng; g++) {
    attn_setting_fault fault;
    if (attn_resolve(groups[g].kernel, &groups[g].problem, &cli, NULL,
                     ATTN_RESOLVE_NO_TUNE_FILE | ATTN_RESOLVE_NO_ENV_TUNING, &dflts[g], &fault, err,
                     sizeof err) != 0) {
      fprintf(stderr, "attnbench tune: %s\n", err);
      return attn_resolve_exit_code(&fault);
    }
    if (a.x.explain) attn_resolve_print(stdout, groups[g].kernel, &groups[g].problem, &dflts[g]);
  }
  const int threads = dflts[0].exec.threads;  // problem-independent: the same in every group
  char binding[512];
  attn_placement_use_mode(dflts[0].bind);
  attn_placement_bind(threads, binding, sizeof binding);
  fprintf(stderr,
          "attnbench tune: %zu group(s), budget %.3g s, %d thread(s), %d rep(s), %d confirmation "
          "round(s)\n",
          ng, a.budget, threads, a.reps, a.confirm);
  const double start = attn_now_seconds();
  double confirming = 0;  // seconds of confirmation rounds so far: not the budget's
  for (size_t g = 0; g < ng; g++) {
    double share = (a.budget - (attn_now_seconds() - start - confirming)) / (double)(ng - g);
    if (share < 0) share = 0;  // spent: the rule's tiles only
    double confirm_s = 0;
    if ((rc = tune_group_run(&a, groups, g, ng, &dflts[g], share, &file, path, &confirm_s)) >= 0)
      return rc;
    confirming += confirm_s;
  }
  size_t total, kept_other;
  if (!attn_tune_merge_write(&out, path, &file, &total, &kept_other)) return ATTNBENCH_EXIT_FAILURE;
  printf("wrote %s (%zu entries: %zu from this run, %zu kept) in %.1f s\n", path, total, file.count,
         kept_other, attn_now_seconds() - start);
  return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
}

int cmd_tune(int argc, char **argv) {
  attn_bench_plan plan = {0};
  bool have_plan = false;
  const int rc = tune_main(argc, argv, &plan, &have_plan);
  if (have_plan) attn_bench_plan_free(&plan);  // after the last group: its layouts live here
  return rc;
}
