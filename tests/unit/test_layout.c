// SPDX-License-Identifier: MIT
// Serving layouts (attn.h, "Serving layouts"): validation and sizes; a ragged or paged
// problem gives, for every kernel, bitwise the outputs of its sequences run one by one as
// dense problems (tensors scattered here into packed rows and shuffled, shared pages with
// this file's own index arithmetic); and the checker fails a layout-native kernel that
// reads the wrong page, mixes up sequences, aligns the causal diagonal top-left or lays
// the LSE out wrongly, while the same kernel without the bug passes, and a sequence
// without keys whose output is not zero is the failure's worst element. The kernels that read
// the layouts themselves (flash) pass every layout case of the matrix, give bitwise the same
// output on 1, 2 and 3 threads, and fail the checker when handed a wrong page.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"
#include "core/attn_internal.h"
#include "core/convert.h"
#include "test_util.h"

static uint64_t g_rng = 12345;
static float frand(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(g_rng >> 11) * 0x1p-53 * 2.0 - 1.0);
}

// ── validation and sizes ─────────────────────────────────────────────────────────────

static void test_validation(void) {
  const int64_t cq[] = {0, 3, 4, 4}, ck[] = {0, 10, 11, 11};
  const int32_t table[] = {2, 0, 1, 3, 9, 9};  // 3 sequences × 2 entries; 9 is never used
  attn_layout l = {.kind = ATTN_LAYOUT_PAGED,
                   .cu_seqlens_q = cq,
                   .cu_seqlens_kv = ck,
                   .page_size = 8,
                   .num_pages = 4,
                   .pages_per_seq = 2,
                   .page_table = table};
  attn_problem p = attn_problem_make(1, 4, 2, 1, 1, 16, 8, true);
  attn_problem_set_layout(&p, &l, 3);
  char err[256];
  EXPECT(p.batch == 3 && p.seq_q == 3 && p.seq_kv == 10, "set_layout: %lld %lld %lld",
         (long long)p.batch, (long long)p.seq_q, (long long)p.seq_kv);
  // sequence 2 has no query and no key: accepted (documented)
  EXPECT(attn_problem_validate(&p, err, sizeof err), "valid paged problem refused: %s", err);
  EXPECT(attn_q_elems(&p) == 4 * 4 * 16, "q elems %zu", attn_q_elems(&p));
  EXPECT(attn_o_elems(&p) == 4 * 4 * 8, "o elems %zu", attn_o_elems(&p));
  EXPECT(attn_k_elems(&p) == 4 * 2 * 8 * 16, "k elems (the pool) %zu", attn_k_elems(&p));
  EXPECT(attn_v_bytes(&p) == 4 * 2 * 8 * 8 * 4, "v bytes %zu", attn_v_bytes(&p));
  p.kv_dtype = ATTN_DTYPE_F16;
  EXPECT(attn_k_bytes(&p) == 4 * 2 * 8 * 16 * 2, "f16 pool bytes %zu", attn_k_bytes(&p));
  p.kv_dtype = ATTN_DTYPE_F32;
  // the row addressing: key 9 of sequence 0 is slot 1 of page table[1] = 0
  const float *base = (const float *)0 + 1024;
  const float *row = attn_layout_kv_row(&p, base, 0, 1, 9, 16);
  EXPECT(row == base + ((0 * 2 + 1) * 8 + 1) * 16, "paged row address off by %td",
         row - (base + ((0 * 2 + 1) * 8 + 1) * 16));
  EXPECT(attn_layout_q_row(&p, base, 1, 2, 0) == base + (3 * 4 + 2) * 16, "q row address");
  // the keys a call reads (attn_layout_visible_keys): causal bottom-right, all 10 and 1;
  // a window of 2 left: the 3 rows at the end of 10 keys see 5, the decode row 1; sides of
  // any int64 size bound nothing and overflow nothing; no query, no keys read
  {
    attn_options o = {.window = 1, .window_left = 2, .window_right = 0};
    EXPECT(attn_layout_visible_keys(&p, 0) == 10 && attn_layout_visible_keys(&p, 1) == 1 &&
               attn_layout_visible_keys(&p, 2) == 0,
           "visible keys %lld %lld %lld", (long long)attn_layout_visible_keys(&p, 0),
           (long long)attn_layout_visible_keys(&p, 1), (long long)attn_layout_visible_keys(&p, 2));
    p.opts = &o;
    EXPECT(attn_layout_visible_keys(&p, 0) == 5, "window 2: %lld keys",
           (long long)attn_layout_visible_keys(&p, 0));
    p.causal = false, o.window_left = INT64_MAX, o.window_right = INT64_MAX;
    EXPECT(attn_layout_visible_keys(&p, 0) == 10 && attn_layout_visible_keys(&p, 1) == 1,
           "INT64_MAX window sides: %lld keys", (long long)attn_layout_visible_keys(&p, 0));
    o.window_left = 0, o.window_right = INT64_MAX - 1;
    EXPECT(attn_layout_visible_keys(&p, 0) == 3, "right side only: %lld keys (want 7..9)",
           (long long)attn_layout_visible_keys(&p, 0));
    p.opts = NULL, p.causal = true;
  }

  struct {
    const char *what, *needle;
    attn_layout l;
    int64_t seq_q;
  } bad[] = {
      {"a dense kind", "kind", l, 3},
      {"cu_seqlens_q NULL", "cu_seqlens_q is NULL", l, 3},
      {"a page out of the pool", "page_table[0][1] = 4", l, 3},
      {"a short page table", "pages_per_seq", l, 3},
      {"page_size 0", "page_size", l, 3},
      {"seq_q not the largest", "largest", l, 2},
      {"no pages", "num_pages", l, 3},
  };
  bad[0].l.kind = ATTN_LAYOUT_DENSE;
  bad[1].l.cu_seqlens_q = NULL;
  const int32_t table_bad[] = {2, 4, 1, 3, 9, 9};
  bad[2].l.page_table = table_bad;
  bad[3].l.pages_per_seq = 1;
  bad[4].l.page_size = 0;
  bad[6].l.num_pages = 0;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    attn_problem pb = p;
    pb.layout = &bad[i].l;
    pb.seq_q = bad[i].seq_q;
    err[0] = '\0';
    EXPECT(!attn_problem_validate(&pb, err, sizeof err) && strstr(err, bad[i].needle),
           "%s: not refused with '%s' (got '%s')", bad[i].what, bad[i].needle, err);
  }
  const int64_t dec[] = {0, 3, 2, 4};
  attn_layout ld = l;
  ld.cu_seqlens_kv = dec;
  attn_problem pd = p;
  pd.layout = &ld;
  EXPECT(!attn_problem_validate(&pd, err, sizeof err) && strstr(err, "decreases"),
         "decreasing offsets: %s", err);
  // offsets whose difference would overflow int64 (set_layout takes no such difference)
  const int64_t wild[] = {0, 1, INT64_MIN, 4};
  attn_layout lw = l;
  lw.cu_seqlens_kv = wild;
  attn_problem pw = p;
  attn_problem_set_layout(&pw, &lw, 3);
  EXPECT(!attn_problem_validate(&pw, err, sizeof err) && strstr(err, "decreases at sequence 1"),
         "offsets falling to INT64_MIN: %s", err);
  // a page table whose size overflows (its rows' offsets would wrap)
  attn_layout lt = l;
  lt.pages_per_seq = INT64_MAX / 2;
  attn_problem pt = p;
  pt.layout = &lt;
  EXPECT(!attn_problem_validate(&pt, err, sizeof err) && strstr(err, "pages_per_seq"),
         "a page table too large for memory: %s", err);
  // no query token at all
  const int64_t zq[] = {0, 0, 0, 0};
  attn_layout lz = l;
  lz.cu_seqlens_q = zq;
  attn_problem pz = p;
  attn_problem_set_layout(&pz, &lz, 3);
  EXPECT(!attn_problem_validate(&pz, err, sizeof err) &&
             strstr(err, "no sequence of the batch has a query token"),
         "a batch without queries: %s", err);
  // no key at all
  const int64_t zkv[] = {0, 0, 0, 0};
  lz = l;
  lz.cu_seqlens_kv = zkv;
  pz = p;
  attn_problem_set_layout(&pz, &lz, 3);
  EXPECT(!attn_problem_validate(&pz, err, sizeof err) &&
             strstr(err, "every sequence's context is empty"),
         "a batch without keys: %s", err);
}

// ── the gather path: bitwise the dense sequences, for every kernel ──────────────────

#define NSEQ 4
static const int64_t kQ[NSEQ] = {5, 1, 0, 1}, kKV[NSEQ] = {21, 9, 4, 0};

typedef struct layout_case {
  attn_problem p;  // the layout problem
  attn_layout l;
  attn_options opts;
  int64_t cq[NSEQ + 1], ckv[NSEQ + 1];
  int32_t table[NSEQ * 8];
  float *q, *k32, *v32, *mask, *lse;
  void *k, *v;  // as stored (kv_dtype)
} layout_case;

// Builds Q packed by tokens and K/V ragged or in a shuffled pool of pages of 4, where
// sequence 1 shares its first two pages with sequence 0 (and so their first 8 keys).
static void build(layout_case *c, attn_layout_kind kind, attn_dtype t, bool options) {
  memset(c, 0, sizeof *c);
  const int64_t H = 4, G = 2, D = 32, ps = 4, per = 8;
  for (int b = 0; b < NSEQ; b++)
    c->cq[b + 1] = c->cq[b] + kQ[b], c->ckv[b + 1] = c->ckv[b] + kKV[b];
  c->l = (attn_layout){.kind = kind, .cu_seqlens_q = c->cq, .cu_seqlens_kv = c->ckv};
  int64_t pages = 0;
  if (kind == ATTN_LAYOUT_PAGED) {
    // logical pages in order, sequence 1 reusing sequence 0's first two, then a reversal
    // with a stride so that no sequence's pages are consecutive
    for (int b = 0; b < NSEQ; b++)
      for (int64_t i = 0; i < (kKV[b] + ps - 1) / ps; i++)
        c->table[b * per + i] = (b == 1 && i < 2) ? c->table[i] : (int32_t)pages++;
    pages += 2;  // spare pages
    for (int i = 0; i < NSEQ * per; i++) c->table[i] = (int32_t)((c->table[i] * 5 + 3) % pages);
    c->l.page_size = ps, c->l.num_pages = pages, c->l.pages_per_seq = per;
    c->l.page_table = c->table;
  }
  c->p = attn_problem_make(1, H, G, 1, 1, D, D, true);
  c->p.kv_dtype = t;
  attn_problem_set_layout(&c->p, &c->l, NSEQ);
  const size_t nq = attn_q_elems(&c->p), nk = attn_k_elems(&c->p);
  c->q = malloc(nq * sizeof(float));
  c->k32 = malloc(nk * sizeof(float));
  c->v32 = malloc(nk * sizeof(float));
  for (size_t i = 0; i < nq; i++) c->q[i] = frand();
  for (size_t i = 0; i < nk; i++) c->k32[i] = frand(), c->v32[i] = frand();
  c->k = malloc(attn_k_bytes(&c->p));
  c->v = malloc(attn_v_bytes(&c->p));
  attn_quantize_rows(t, c->k32, nk / (size_t)D, D, c->k);
  attn_quantize_rows(t, c->v32, nk / (size_t)D, D, c->v);
  if (options) {
    c->opts = (attn_options){.window = true, .window_left = 6, .window_right = 0, .softcap = 9.0f};
    c->p.opts = &c->opts;
    size_t nm = 0;  // the sequences' [q_len][kv_len] blocks one after the other
    for (int b = 0; b < NSEQ; b++) nm += (size_t)(kQ[b] * kKV[b]);
    c->mask = malloc(nm * sizeof(float));
    for (size_t i = 0; i < nm; i++) c->mask[i] = i % 11 == 4 ? -INFINITY : frand();
    c->opts.mask = c->mask;
    c->lse = malloc(attn_layout_total_q(&c->p) * (size_t)H * sizeof(float));
    c->opts.lse = c->lse;
  }
}

static void release(layout_case *c) {
  free(c->q), free(c->k32), free(c->v32), free(c->k), free(c->v), free(c->mask), free(c->lse);
}

// Key t of K/V head g of sequence b as stored: this file's arithmetic (attn.h's formulas).
static const char *stored_row(const layout_case *c, const void *x, int64_t b, int64_t g,
                              int64_t t) {
  const size_t row = attn_kv_row_bytes(c->p.kv_dtype, c->p.head_dim_qk);
  const int64_t G = c->p.kv_heads;
  int64_t r;
  if (c->l.kind == ATTN_LAYOUT_PAGED)
    r = ((int64_t)c->table[b * 8 + t / 4] * G + g) * 4 + t % 4;
  else
    r = (c->ckv[b] + t) * G + g;
  return (const char *)x + (size_t)r * row;
}

// Kernel kn on the layout problem against kn on each sequence as a dense problem (kernels
// that get the layout gathered: the same calls, so the same bits).
static void compare_with_dense(const attn_kernel *kn, layout_case *c) {
  const attn_problem *p = &c->p;
  const int64_t H = p->heads, G = p->kv_heads, D = p->head_dim_qk;
  const size_t total = attn_layout_total_q(p);
  float *o = malloc(attn_o_elems(p) * sizeof(float));
  char err[256];
  const attn_exec ex = {.threads = 2};
  int rc = attn_kernel_call(kn, p, &ex, c->q, c->k, c->v, o, err, sizeof err);
  EXPECT(rc == ATTN_OK, "%s on the layout: %s", kn->name, err);
  const size_t row = attn_kv_row_bytes(p->kv_dtype, D);
  for (int64_t b = 0; b < NSEQ && rc == ATTN_OK; b++) {
    const int64_t nq = kQ[b], nk = kKV[b];
    if (nq == 0) continue;
    float *od = malloc((size_t)(H * nq * D) * sizeof(float)),
          *qd = malloc((size_t)(H * nq * D) * 4);
    float *lsed = malloc((size_t)(H * nq) * sizeof(float));
    char *kd = malloc((size_t)(G * (nk ? nk : 1)) * row),
         *vd = malloc((size_t)(G * (nk ? nk : 1)) * row);
    if (nk == 0) {  // no keys: zeros, LSE −inf
      for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < nq; i++) {
          for (int64_t d = 0; d < D; d++)
            EXPECT(o[((c->cq[b] + i) * H + h) * D + d] == 0.0f, "%s: seq %lld without keys",
                   kn->name, (long long)b);
          if (c->lse)
            EXPECT(c->lse[(size_t)h * total + (size_t)(c->cq[b] + i)] == -INFINITY, "%s: lse",
                   kn->name);
        }
    } else {
      for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < nq; i++)
          memcpy(qd + (h * nq + i) * D, c->q + ((c->cq[b] + i) * H + h) * D, (size_t)D * 4);
      for (int64_t g = 0; g < G; g++)
        for (int64_t t = 0; t < nk; t++) {
          memcpy(kd + (size_t)(g * nk + t) * row, stored_row(c, c->k, b, g, t), row);
          memcpy(vd + (size_t)(g * nk + t) * row, stored_row(c, c->v, b, g, t), row);
        }
      attn_options od_opts;
      attn_problem sp = attn_problem_make(1, H, G, nq, nk, D, D, true);
      sp.kv_dtype = p->kv_dtype;
      if (p->opts) {
        od_opts = *p->opts;
        size_t off = 0;
        for (int64_t c2 = 0; c2 < b; c2++) off += (size_t)(kQ[c2] * kKV[c2]);
        od_opts.mask = c->mask + off;
        od_opts.lse = lsed;
        sp.opts = &od_opts;
      }
      rc = attn_kernel_call(kn, &sp, &ex, qd, kd, vd, od, err, sizeof err);
      EXPECT(rc == ATTN_OK, "%s on sequence %lld: %s", kn->name, (long long)b, err);
      size_t diff = 0;
      for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < nq; i++) {
          diff +=
              memcmp(o + ((c->cq[b] + i) * H + h) * D, od + (h * nq + i) * D, (size_t)D * 4) != 0;
          if (c->lse)
            diff += memcmp(&c->lse[(size_t)h * total + (size_t)(c->cq[b] + i)], &lsed[h * nq + i],
                           4) != 0;
        }
      EXPECT(diff == 0, "%s %s: sequence %lld differs from its dense run in %zu rows", kn->name,
             attn_dtype_name(p->kv_dtype), (long long)b, diff);
    }
    free(od), free(qd), free(lsed), free(kd), free(vd);
  }
  free(o);
}

static void test_gather_equivalence(void) {
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *kn = attn_kernel_at(i);
    if (!attn_kernel_available(kn, NULL, 0)) continue;
    for (int kind = ATTN_LAYOUT_RAGGED; kind <= ATTN_LAYOUT_PAGED; kind++)
      for (int t = 0; t < ATTN_DTYPE_COUNT; t++) {
        layout_case c;
        build(&c, (attn_layout_kind)kind, (attn_dtype)t, t % 2 == 1);
        if (attn_layout_gathered(kn, &c.p)) compare_with_dense(kn, &c);
        release(&c);
      }
  }
}

// ── the checker fails layout bugs ───────────────────────────────────────────────────

typedef enum {
  LBUG_NONE,
  LBUG_WRONG_PAGE,       // reads the next entry of the page table for the last page
  LBUG_MIXED_SEQUENCES,  // reads sequence b's keys from sequence b+1's rows (same length cut)
  LBUG_TOP_LEFT,         // causal diagonal top-left in each sequence, not bottom-right
  LBUG_LSE_TOKEN_MAJOR,  // writes LSE as [total_q][heads]
  LBUG_COUNT
} layout_bug;
static const char *const kLayoutBugNames[LBUG_COUNT] = {
    "none", "wrong page", "mixed-up sequences", "top-left causal diagonal", "LSE token-major"};
static layout_bug g_lbug;

// Key t of head g of sequence b, with the bugs (PAGED or RAGGED).
static const void *buggy_row(const attn_problem *p, const void *x, int64_t b, int64_t g, int64_t t,
                             int64_t dim) {
  const attn_layout *l = p->layout;
  if (g_lbug == LBUG_MIXED_SEQUENCES && b + 1 < p->batch && attn_layout_kv_len(p, b + 1) > t)
    b = b + 1;
  if (g_lbug == LBUG_WRONG_PAGE && l->kind == ATTN_LAYOUT_PAGED) {
    const int64_t n = (attn_layout_kv_len(p, b) + l->page_size - 1) / l->page_size;
    if (n > 1 && t / l->page_size == n - 1) t -= l->page_size;  // the previous page's slot
  }
  return attn_layout_kv_row(p, x, b, g, t, dim);
}

// A layout-native kernel: gathers each sequence itself and runs the naive kernel on it.
static int layout_kernel_run(const attn_problem *p, const attn_exec *exec, const float *q,
                             const void *k, const void *v, float *o, void *ws) {
  (void)exec, (void)ws;
  const attn_kernel *naive = attn_kernel_find("naive");
  const int64_t H = p->heads, G = p->kv_heads, dqk = p->head_dim_qk, dv = p->head_dim_v;
  const size_t total = attn_layout_total_q(p);
  float *lse = p->opts ? p->opts->lse : NULL;
  const size_t kr = attn_kv_row_bytes(p->kv_dtype, dqk), vr = attn_kv_row_bytes(p->kv_dtype, dv);
  for (int64_t b = 0; b < p->batch; b++) {
    const int64_t nq = attn_layout_q_len(p, b), nk = attn_layout_kv_len(p, b);
    if (nq == 0) continue;
    float *qd = malloc((size_t)(H * nq * dqk) * 4), *od = malloc((size_t)(H * nq * dv) * 4);
    float *ld = malloc((size_t)(H * nq) * 4);
    char *kd = malloc((size_t)(G * (nk ? nk : 1)) * kr),
         *vd = malloc((size_t)(G * (nk ? nk : 1)) * vr);
    attn_options so;
    attn_problem sp = attn_layout_seq_problem(p, b, &so);
    if (p->opts) so.lse = lse ? ld : NULL;
    if (g_lbug == LBUG_TOP_LEFT && nk > 0) {  // offset 0, not kv_len − q_len
      so = p->opts ? so : (attn_options){0};
      so.align = ATTN_ALIGN_TOP_LEFT;
      sp.opts = &so;
    }
    int rc = ATTN_OK;
    if (nk == 0) {
      memset(od, 0, (size_t)(H * nq * dv) * 4);
      for (int64_t i = 0; i < H * nq; i++) ld[i] = -INFINITY;
    } else {
      for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < nq; i++)
          memcpy(qd + (h * nq + i) * dqk, attn_layout_q_row(p, q, b, h, i), (size_t)dqk * 4);
      for (int64_t g = 0; g < G; g++)
        for (int64_t t = 0; t < nk; t++) {
          memcpy(kd + (size_t)(g * nk + t) * kr, buggy_row(p, k, b, g, t, dqk), kr);
          memcpy(vd + (size_t)(g * nk + t) * vr, buggy_row(p, v, b, g, t, dv), vr);
        }
      rc = attn_kernel_call(naive, &sp, NULL, qd, kd, vd, od, NULL, 0);
    }
    for (int64_t h = 0; h < H && rc == ATTN_OK; h++)
      for (int64_t i = 0; i < nq; i++) {
        memcpy(attn_layout_o_row(p, o, b, h, i), od + (h * nq + i) * dv, (size_t)dv * 4);
        const size_t tok = (size_t)(p->layout->cu_seqlens_q[b] + i);
        if (lse)
          lse[g_lbug == LBUG_LSE_TOKEN_MAJOR ? tok * (size_t)H + (size_t)h
                                             : (size_t)h * total + tok] = ld[h * nq + i];
      }
    free(qd), free(od), free(ld), free(kd), free(vd);
    if (rc != ATTN_OK) return rc;
  }
  return ATTN_OK;
}

static const attn_kernel kLayoutKernel = {
    .name = "test_layout_native",
    .summary = "test: a layout-native kernel with injectable bugs",
    .caps = ATTN_CAP_ALL_SHAPES | ATTN_CAP_OPT_ALL | ATTN_CAP_KV_ALL | ATTN_CAP_LAYOUT_ALL,
    .run = layout_kernel_run,
};

static void test_checker_catches(void) {
  const size_t n = attn_check_matrix(false, NULL, 0);
  attn_check_case *cases = malloc(n * sizeof *cases);
  attn_check_matrix(false, cases, n);
  for (int bug = 0; bug < LBUG_COUNT; bug++) {
    g_lbug = (layout_bug)bug;
    size_t layout_cases = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
      if (cases[i].layout.kind == ATTN_LAYOUT_DENSE) continue;
      layout_cases++;
      char err[256], name[512];
      attn_check_case_describe(&cases[i], name, sizeof name);
      attn_check_prepared *pc = attn_check_prepare(&cases[i], err, sizeof err);
      EXPECT(pc != NULL, "%s: prepare failed: %s", name, err);
      if (!pc) continue;
      attn_check_result r;
      attn_check_kernel(&kLayoutKernel, pc, NULL, &r);
      if (bug == LBUG_NONE)
        EXPECT(r.verdict == ATTN_CHECK_PASS, "correct layout kernel on %s: %s %s", name,
               attn_check_verdict_name(r.verdict), r.message);
      failed += r.verdict == ATTN_CHECK_FAIL;
      attn_check_prepared_free(pc);
    }
    EXPECT(layout_cases >= 8, "the matrix has only %zu layout cases", layout_cases);
    if (bug != LBUG_NONE)
      EXPECT(failed > 0, "bug '%s' passed every layout case", kLayoutBugNames[bug]);
    printf("layout bug %-22s fails %zu of %zu layout cases\n", kLayoutBugNames[bug], failed,
           layout_cases);
  }
  free(cases);
}

// ── kernels that read the layouts themselves ───────────────────────────────────────

// Every layout case of the matrix passes the checker for every layout-native kernel.
static void test_native_kernels_pass(void) {
  const size_t n = attn_check_matrix(false, NULL, 0);
  attn_check_case *cases = malloc(n * sizeof *cases);
  attn_check_matrix(false, cases, n);
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *kn = attn_kernel_at(i);
    if (!(kn->caps & ATTN_CAP_LAYOUT_ALL) || !attn_kernel_available(kn, NULL, 0)) continue;
    for (int threads = 1; threads <= 2; threads++) {
      const attn_exec ex = {.threads = threads};
      for (size_t c = 0; c < n; c++) {
        if (cases[c].layout.kind == ATTN_LAYOUT_DENSE) continue;
        char err[256], name[512];
        attn_check_case_describe(&cases[c], name, sizeof name);
        attn_check_prepared *pc = attn_check_prepare(&cases[c], err, sizeof err);
        if (!pc) continue;  // test_checker_catches reports it
        attn_check_result r;
        attn_check_kernel(kn, pc, &ex, &r);
        EXPECT(r.verdict == ATTN_CHECK_PASS, "%s (%d threads) on %s: %s %s", kn->name, threads,
               name, attn_check_verdict_name(r.verdict), r.message);
        attn_check_prepared_free(pc);
      }
    }
  }
  free(cases);
}

// A long-tailed paged decode batch (one long context, which the work list cuts into chunks,
// a prefill chunk, shuffled pages, a prefix shared by two sequences, a sequence without
// keys): bitwise the same output and LSE on 1, 2 and 3 threads, f32 and q8_0 K/V, and the
// int8 mode on q8_0.
static void test_native_determinism(void) {
  enum { S = 6, PS = 16, PER = 160 };
  static const int64_t ql[S] = {1, 1, 40, 1, 1, 1}, kl[S] = {2500, 7, 300, 0, 64, 1000};
  int64_t cq[S + 1] = {0}, ck[S + 1] = {0};
  static int32_t table[S * PER];
  int32_t pages = 0;
  for (int b = 0; b < S; b++) {
    cq[b + 1] = cq[b] + ql[b], ck[b + 1] = ck[b] + kl[b];
    for (int64_t i = 0; i < (kl[b] + PS - 1) / PS; i++)  // sequence 5 shares 0's first 3 pages
      table[b * PER + i] = (b == 5 && i < 3) ? table[i] : pages++;
  }
  for (int i = 0; i < S * PER; i++) table[i] = (int32_t)(((int64_t)table[i] * 37 + 11) % pages);
  const attn_layout l = {.kind = ATTN_LAYOUT_PAGED,
                         .cu_seqlens_q = cq,
                         .cu_seqlens_kv = ck,
                         .page_size = PS,
                         .num_pages = pages,
                         .pages_per_seq = PER,
                         .page_table = table};
  for (int ti = 0; ti < 3; ti++) {  // f32, q8_0, and q8_0 in the int8 mode (without LSE:
    // the VNNI kernels read layouts in that mode natively, options they leave to the fallback)
    const attn_dtype t = ti ? ATTN_DTYPE_Q8_0 : ATTN_DTYPE_F32;
    attn_problem p = attn_problem_make(1, 8, 2, 1, 1, 64, 64, true);
    p.kv_dtype = t;
    p.compute = ti == 2 ? ATTN_COMPUTE_INT8 : ATTN_COMPUTE_F32;
    attn_problem_set_layout(&p, &l, S);
    const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), no = attn_o_elems(&p);
    const size_t nl = attn_layout_total_q(&p) * (size_t)p.heads;
    float *q = malloc(nq * 4), *k32 = malloc(nk * 4), *v32 = malloc(nk * 4);
    void *k = malloc(attn_k_bytes(&p)), *v = malloc(attn_v_bytes(&p));
    float *o[3], *lse[3];
    for (size_t i = 0; i < nq; i++) q[i] = frand();
    for (size_t i = 0; i < nk; i++) k32[i] = frand(), v32[i] = frand();
    attn_quantize_rows(t, k32, nk / 64, 64, k);
    attn_quantize_rows(t, v32, nk / 64, 64, v);
    for (size_t i = 0; i < attn_kernel_count(); i++) {
      const attn_kernel *kn = attn_kernel_at(i);
      if (!(kn->caps & ATTN_CAP_LAYOUT_PAGED) || !attn_kernel_available(kn, NULL, 0)) continue;
      for (int th = 0; th < 3; th++) {
        o[th] = malloc(no * 4), lse[th] = calloc(nl, 4);
        attn_options opts = {.lse = lse[th]};
        p.opts = ti == 2 ? NULL : &opts;
        const attn_exec ex = {.threads = th + 1};
        char err[256];
        EXPECT(attn_kernel_call(kn, &p, &ex, q, k, v, o[th], err, sizeof err) == ATTN_OK, "%s: %s",
               kn->name, err);
        p.opts = NULL;
      }
      for (int th = 1; th < 3; th++)
        EXPECT(!memcmp(o[0], o[th], no * 4) && !memcmp(lse[0], lse[th], nl * 4),
               "%s %s %s: %d threads differ from 1 thread", kn->name, attn_dtype_name(t),
               attn_compute_name(p.compute), th + 1);
      for (int th = 0; th < 3; th++) free(o[th]), free(lse[th]);
    }
    free(q), free(k32), free(v32), free(k), free(v);
  }
}

// Ragged decode runs several K/V heads per work item, keys outer and heads inner, in runs
// of whole decode blocks (flash_body.h, "Heads together"): each head must still compute
// exactly its one-head answer. With kv_split = 1 (no chunks either way) every sequence of
// a ragged decode batch gives bitwise the output and LSE of the same sequence run alone
// as a dense problem (one head per task, one run over all keys) — GQA with 2 query heads
// per K/V head and MHA, f32 and q8_0, lengths off and on the block and run boundaries. (2
// rows stay below every ISA's rows-in-lanes path, which a dense problem with as many rows
// as a vector has lanes — 4 on NEON — takes instead of the fused pass.) The int8 mode on
// q8_0 (the VNNI kernels group heads the same way; no LSE there, an option they lack) too.
static void test_native_heads_together(void) {
  enum { S = 3, D = 64 };
  static const int64_t kl[S] = {1000, 77, 2049};
  for (int shape = 0; shape < 2; shape++)
    for (int ti = 0; ti < 3; ti++) {
      const int64_t H = 8, KVH = shape ? 8 : 4;
      const attn_dtype t = ti ? ATTN_DTYPE_Q8_0 : ATTN_DTYPE_F32;
      const attn_compute mode = ti == 2 ? ATTN_COMPUTE_INT8 : ATTN_COMPUTE_F32;
      int64_t cq[S + 1] = {0}, ck[S + 1] = {0};
      for (int b = 0; b < S; b++) cq[b + 1] = cq[b] + 1, ck[b + 1] = ck[b] + kl[b];
      const attn_layout l = {.kind = ATTN_LAYOUT_RAGGED, .cu_seqlens_q = cq, .cu_seqlens_kv = ck};
      attn_problem p = attn_problem_make(1, H, KVH, 1, 1, D, D, true);
      p.kv_dtype = t;
      p.compute = mode;
      attn_problem_set_layout(&p, &l, S);
      const size_t nq = attn_q_elems(&p), nk = attn_k_elems(&p), no = attn_o_elems(&p);
      const size_t rb = attn_kv_row_bytes(t, D);
      float *q = malloc(nq * 4), *k32 = malloc(nk * 4), *v32 = malloc(nk * 4);
      char *k = malloc(attn_k_bytes(&p)), *v = malloc(attn_v_bytes(&p));
      for (size_t i = 0; i < nq; i++) q[i] = frand();
      for (size_t i = 0; i < nk; i++) k32[i] = frand(), v32[i] = frand();
      attn_quantize_rows(t, k32, nk / D, D, k);  // rows [token][kv head] as stored
      attn_quantize_rows(t, v32, nk / D, D, v);
      float *o = malloc(no * 4), *lse = malloc((size_t)S * (size_t)H * 4);
      float *od = malloc((size_t)H * D * 4), lsed[8];
      char *kd = malloc((size_t)KVH * 2049 * rb), *vd = malloc((size_t)KVH * 2049 * rb);
      const attn_exec ex = {.threads = 2, .kv_split = 1};
      for (size_t i = 0; i < attn_kernel_count(); i++) {
        const attn_kernel *kn = attn_kernel_at(i);
        if (!(kn->caps & ATTN_CAP_LAYOUT_RAGGED) || !(kn->caps & ATTN_CAP_KV_SPLIT) ||
            !attn_kernel_available(kn, NULL, 0) || !attn_kernel_native(kn, &p))
          continue;
        attn_options opts = {.lse = lse};
        p.opts = ti == 2 ? NULL : &opts;
        char err[256];
        EXPECT(attn_kernel_call(kn, &p, &ex, q, k, v, o, err, sizeof err) == ATTN_OK, "%s: %s",
               kn->name, err);
        p.opts = NULL;
        int diff = 0;
        for (int b = 0; b < S; b++) {  // sequence b alone, K/V as [kv head][key] rows
          for (int64_t g = 0; g < KVH; g++)
            for (int64_t j = 0; j < kl[b]; j++) {
              const size_t src = ((size_t)(ck[b] + j) * (size_t)KVH + (size_t)g) * rb;
              memcpy(kd + ((size_t)g * (size_t)kl[b] + (size_t)j) * rb, k + src, rb);
              memcpy(vd + ((size_t)g * (size_t)kl[b] + (size_t)j) * rb, v + src, rb);
            }
          attn_problem d = attn_problem_make(1, H, KVH, 1, kl[b], D, D, true);
          d.kv_dtype = t;
          d.compute = mode;
          attn_options dopts = {.lse = lsed};
          d.opts = ti == 2 ? NULL : &dopts;
          EXPECT(attn_kernel_call(kn, &d, &ex, q + (size_t)b * H * D, kd, vd, od, err,
                                  sizeof err) == ATTN_OK,
                 "%s dense: %s", kn->name, err);
          diff += memcmp(od, o + (size_t)b * H * D, (size_t)H * D * 4) != 0;
          for (int64_t h = 0; h < H && ti < 2; h++)
            diff += memcmp(&lsed[h], &lse[h * S + b], 4) != 0;
        }
        EXPECT(diff == 0, "%s H%lld KV%lld %s %s: %d ragged rows differ from the dense sequences",
               kn->name, (long long)H, (long long)KVH, attn_dtype_name(t), attn_compute_name(mode),
               diff);
      }
      free(q), free(k32), free(v32), free(k), free(v), free(o), free(lse), free(od), free(kd),
          free(vd);
    }
}

// The native path with a deliberately wrong page lookup: the layout kernel under test
// (g_inner) gets a page table whose last entry of every sequence is the one before it —
// the checker fails it, and passes the same kernel with the right table.
static const attn_kernel *g_inner;
static bool g_wrong_page;

static size_t wrapped_workspace(const attn_problem *p, const attn_exec *exec) {
  return attn_kernel_workspace(g_inner, p, exec);
}

static int wrapped_run(const attn_problem *p, const attn_exec *exec, const float *q, const void *k,
                       const void *v, float *o, void *ws) {
  attn_layout l = *p->layout;
  attn_problem pw = *p;
  int32_t *table = NULL;
  if (g_wrong_page && l.kind == ATTN_LAYOUT_PAGED) {
    const size_t n = (size_t)p->batch * (size_t)l.pages_per_seq;
    table = malloc(n * sizeof *table);
    memcpy(table, l.page_table, n * sizeof *table);
    for (int64_t b = 0; b < p->batch; b++) {
      const int64_t used = (attn_layout_kv_len(p, b) + l.page_size - 1) / l.page_size;
      if (used > 1) table[b * l.pages_per_seq + used - 1] = table[b * l.pages_per_seq + used - 2];
    }
    l.page_table = table;
    pw.layout = &l;
  }
  const int rc = g_inner->run(&pw, exec, q, k, v, o, ws);
  free(table);
  return rc;
}

static void test_native_wrong_page_fails(void) {
  const size_t n = attn_check_matrix(false, NULL, 0);
  attn_check_case *cases = malloc(n * sizeof *cases);
  attn_check_matrix(false, cases, n);
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    g_inner = attn_kernel_at(i);
    if (!(g_inner->caps & ATTN_CAP_LAYOUT_PAGED) || !attn_kernel_available(g_inner, NULL, 0))
      continue;
    attn_kernel wrapped = *g_inner;
    wrapped.name = "test_wrapped_native";
    wrapped.required_isa = 0;
    wrapped.workspace = wrapped_workspace;
    wrapped.run = wrapped_run;
    wrapped.regtile_count = 0, wrapped.regtiles = NULL;
    for (int bug = 0; bug < 2; bug++) {
      g_wrong_page = bug;
      size_t paged = 0, failed = 0;
      for (size_t c = 0; c < n; c++) {
        if (cases[c].layout.kind != ATTN_LAYOUT_PAGED) continue;
        attn_check_prepared *pc = attn_check_prepare(&cases[c], NULL, 0);
        if (!pc) continue;
        attn_check_result r;
        attn_check_kernel(&wrapped, pc, NULL, &r);
        paged++;
        failed += r.verdict == ATTN_CHECK_FAIL;
        attn_check_prepared_free(pc);
      }
      if (bug)
        EXPECT(failed > 0, "%s reading a wrong page passed every paged case", g_inner->name);
      else
        EXPECT(failed == 0, "%s through the wrapper failed %zu paged cases", g_inner->name, failed);
      printf("%s %s page lookup fails %zu of %zu paged cases\n", g_inner->name,
             bug ? "wrong" : "right", failed, paged);
    }
  }
  free(cases);
}

// ── a sequence without keys: its bad outputs are the statistics' worst ──────────────

static size_t g_poked;  // the flat index of O the poking kernel set to 1 (SIZE_MAX: none)

// The reference kernel on the whole batch (attn_kernel_run gathers it), then 1.0 at the
// first output of the first sequence that has query tokens but no keys (O packed
// [token][head][dv]).
static size_t poke_empty_workspace(const attn_problem *p, const attn_exec *exec) {
  return attn_kernel_workspace(attn_kernel_find("reference"), p, exec);
}

static int poke_empty_run(const attn_problem *p, const attn_exec *exec, const float *q,
                          const void *k, const void *v, float *o, void *ws) {
  const int rc = attn_kernel_run(attn_kernel_find("reference"), p, exec, q, k, v, o, ws, NULL);
  g_poked = SIZE_MAX;
  for (int64_t b = 0; b < p->batch && rc == ATTN_OK; b++)
    if (attn_layout_q_len(p, b) > 0 && attn_layout_kv_len(p, b) == 0) {
      g_poked = (size_t)(p->layout->cu_seqlens_q[b] * p->heads * p->head_dim_v);
      o[g_poked] = 1.0f;
      break;
    }
  return rc;
}

static void test_empty_sequence_statistics(void) {
  const size_t n = attn_check_matrix(false, NULL, 0);
  attn_check_case *cases = malloc(n * sizeof *cases);
  attn_check_matrix(false, cases, n);
  attn_kernel poke = *attn_kernel_find("reference");
  poke.name = "test_poke_empty", poke.run = poke_empty_run, poke.workspace = poke_empty_workspace;
  poke.caps |= ATTN_CAP_LAYOUT_ALL;
  size_t tried = 0;
  for (size_t c = 0; c < n; c++) {
    const attn_check_layout *l = &cases[c].layout;
    bool empty = false;
    for (int b = 0; b < l->seqs; b++) empty |= l->q_lens[b] > 0 && l->kv_lens[b] == 0;
    if (l->kind == ATTN_LAYOUT_DENSE || !empty) continue;
    char name[ATTN_CHECK_DESC_MAX];
    attn_check_case_describe(&cases[c], name, sizeof name);
    attn_check_prepared *pc = attn_check_prepare(&cases[c], NULL, 0);
    if (!pc) continue;
    attn_check_result r;
    attn_check_kernel(&poke, pc, NULL, &r);
    tried++;
    EXPECT(r.verdict == ATTN_CHECK_FAIL && r.max_abs_err == 1.0 && isinf(r.worst_ratio) &&
               r.worst_index == g_poked,
           "%s: a 1 in a sequence without keys: %s, max abs err %g, err/tol %g at %zu (poked %zu)",
           name, attn_check_verdict_name(r.verdict), r.max_abs_err, r.worst_ratio, r.worst_index,
           g_poked);
    attn_check_prepared_free(pc);
  }
  EXPECT(tried > 0, "the matrix has no layout case with a sequence without keys");
  free(cases);
}

int main(void) {
  test_validation();
  test_empty_sequence_statistics();
  test_gather_equivalence();
  test_checker_catches();
  test_native_kernels_pass();
  test_native_determinism();
  test_native_heads_together();
  test_native_wrong_page_fails();
  return test_finish("test_layout");
}
