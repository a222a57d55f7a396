// SPDX-License-Identifier: MIT
// serving.c — see serving.h.
#include "bench/serving.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/inputs.h"  // the seeded generator

static const int64_t kMaxLen = INT64_C(1) << 30;

static bool fail(char *err, size_t err_len, const char *fmt, const char *text) {
  if (err && err_len) snprintf(err, err_len, fmt, text);
  return false;
}

// A whole number in [lo, kMaxLen] from s up to *end.
static bool whole(const char *s, char **end, int64_t lo, int64_t *out) {
  if (*s < '0' || *s > '9') return false;
  errno = 0;
  const long long v = strtoll(s, end, 10);
  if (errno || v < lo || v > kMaxLen) return false;
  *out = v;
  return true;
}

// "L L N*L ..." into lens (cap), *n of them.
static bool explicit_lens(const char *text, int64_t *lens, int64_t cap, int64_t *n, int64_t lo) {
  *n = 0;
  const char *s = text;
  for (;;) {
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return *n > 0;
    char *end;
    int64_t a, b = 1;
    if (!whole(s, &end, lo, &a)) return false;
    if (*end == '*') {  // LEN*COUNT: LEN, COUNT times
      if (!whole(end + 1, &end, 1, &b)) return false;
    }
    if (*end && *end != ' ' && *end != '\t') return false;
    if (b > cap - *n) return false;
    for (int64_t i = 0; i < b; i++) lens[(*n)++] = a;
    s = end;
  }
}

// Lengths with total seqs·mean from weights w (each >= 1; the remainder spread from the
// first sequence on).
static void scale_to_total(const double *w, int64_t seqs, int64_t mean, int64_t *lens) {
  double sum = 0;
  for (int64_t i = 0; i < seqs; i++) sum += w[i];
  const int64_t total = seqs * mean;
  int64_t got = 0;
  for (int64_t i = 0; i < seqs; i++) {
    int64_t l = (int64_t)floor(w[i] / sum * (double)total);
    if (l < 1) l = 1;
    lens[i] = l, got += l;
  }
  for (int64_t i = 0; got < total; i = (i + 1) % seqs) lens[i]++, got++;
  while (got > total) {  // the floor of 1 overshot: take from the longest
    int64_t m = 0;
    for (int64_t i = 1; i < seqs; i++)
      if (lens[i] > lens[m]) m = i;
    lens[m]--, got--;
  }
}

bool attn_serving_kv_lens(const char *text, int64_t *lens, int64_t cap, int64_t *n, char *err,
                          size_t err_len) {
  const char *colon = strchr(text, ':');
  if (!colon) {
    if (explicit_lens(text, lens, cap, n, 0)) return true;
    return fail(err, err_len,
                "kv_lens '%s': want lengths (e.g. '4096 300 1*8' — LEN*COUNT repeats, each "
                "0..2^30, at most 4096 "
                "sequences) or DIST:SEQS:MEAN[:SEED] with DIST fixed, uniform or longtail",
                text);
  }
  char dist[16] = "";
  int64_t seqs = 0, mean = 0;
  unsigned long long seed = 1;
  const size_t dl = (size_t)(colon - text);
  if (dl < sizeof dist) memcpy(dist, text, dl);
  const bool known =
      !strcmp(dist, "fixed") || !strcmp(dist, "uniform") || !strcmp(dist, "longtail");
  // SEQS:MEAN[:SEED], whole numbers and nothing else (no sign, suffix or fraction)
  char *end = NULL;
  bool ok = known && whole(colon + 1, &end, 1, &seqs) && *end == ':' &&
            whole(end + 1, &end, 1, &mean) && seqs <= cap;
  if (ok && *end == ':') {
    const char *sd = end + 1;
    errno = 0;
    seed = strtoull(sd, &end, 10);
    ok = *sd >= '0' && *sd <= '9' && !errno;
  }
  if (!ok || *end)
    return fail(err, err_len,
                "kv_lens '%s': want DIST:SEQS:MEAN[:SEED] with DIST fixed, uniform or longtail, "
                "1 <= SEQS <= 4096, 1 <= MEAN <= 2^30, whole numbers",
                text);
  double *w = malloc((size_t)seqs * sizeof *w);
  if (!w) return fail(err, err_len, "kv_lens '%s': out of memory", text);
  uint64_t st = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 17;
  for (int64_t i = 0; i < seqs; i++) {
    if (dist[0] == 'f')
      w[i] = 1.0;
    else if (dist[0] == 'u')
      w[i] = 0.25 + 1.5 * attn_rand_uniform(&st);
    else
      w[i] = exp(1.25 * attn_rand_normal(&st, ATTN_NORMAL_U1_NONZERO));
  }
  scale_to_total(w, seqs, mean, lens);
  free(w);
  for (int64_t i = 0; i < seqs; i++)
    if (lens[i] > kMaxLen)
      return fail(err, err_len,
                  "kv_lens '%s': a generated length exceeds 2^30 (the cap of every length); "
                  "lower MEAN",
                  text);
  *n = seqs;
  return true;
}

bool attn_serving_q_lens(const char *text, int64_t n, int64_t *lens, char *err, size_t err_len) {
  if (!strcmp(text, "decode")) {
    for (int64_t i = 0; i < n; i++) lens[i] = 1;
    return true;
  }
  if (!strncmp(text, "prefill:", 8)) {
    // N and C whole numbers and nothing else (no sign, blank, suffix or fraction, as in
    // kv_lens): "prefill:+1:2" or "prefill: 1: 2" would be the same batch under another name
    char *end = NULL;
    int64_t np = 0, chunk = 0;
    if (!whole(text + 8, &end, 0, &np) || *end != ':' || !whole(end + 1, &end, 1, &chunk) || *end ||
        np > n)
      return fail(err, err_len,
                  "q_lens '%s': want prefill:N:C with N at most the sequences and 1 <= C <= 2^30, "
                  "whole numbers",
                  text);
    for (int64_t i = 0; i < n; i++) lens[i] = i < np ? chunk : 1;
    return true;
  }
  int64_t got = 0;
  if (explicit_lens(text, lens, n, &got, 0) && got == n) return true;
  if (err && err_len)
    snprintf(err, err_len,
             "q_lens '%s': want decode, prefill:N:C or %lld lengths (one per sequence)", text,
             (long long)n);
  return false;
}

void attn_serving_free(attn_serving_batch *b) {
  free(b->cu_q);
  free(b->cu_kv);
  free(b->page_table);
  memset(b, 0, sizeof *b);
}

bool attn_serving_build(const int64_t *q_lens, const int64_t *kv_lens, int64_t n, int64_t page_size,
                        attn_page_order order, uint64_t seed, attn_serving_batch *out, char *err,
                        size_t err_len) {
  memset(out, 0, sizeof *out);
  if (n < 1 || n > ATTN_SERVING_MAX_SEQS || page_size < 0 || page_size > ATTN_MAX_PAGE_SIZE) {
    if (err && err_len)
      snprintf(err, err_len, "serving batch: %lld sequences, page_size %lld (want 1..%d, 0..%d)",
               (long long)n, (long long)page_size, ATTN_SERVING_MAX_SEQS, ATTN_MAX_PAGE_SIZE);
    return false;
  }
  out->seqs = n;
  out->cu_q = calloc((size_t)n + 1, sizeof(int64_t));
  out->cu_kv = calloc((size_t)n + 1, sizeof(int64_t));
  if (!out->cu_q || !out->cu_kv) goto nomem;
  int64_t per = 1, pages = 0;
  for (int64_t b = 0; b < n; b++) {
    out->cu_q[b + 1] = out->cu_q[b] + q_lens[b];
    out->cu_kv[b + 1] = out->cu_kv[b] + kv_lens[b];
    if (page_size) {
      const int64_t need = (kv_lens[b] + page_size - 1) / page_size;
      if (need > per) per = need;
      pages += need;
    }
  }
  out->layout = (attn_layout){.kind = page_size ? ATTN_LAYOUT_PAGED : ATTN_LAYOUT_RAGGED,
                              .cu_seqlens_q = out->cu_q,
                              .cu_seqlens_kv = out->cu_kv};
  if (!page_size) return true;
  if (pages > INT32_MAX) {
    if (err && err_len) snprintf(err, err_len, "serving batch: %lld pages", (long long)pages);
    attn_serving_free(out);
    return false;
  }
  if (pages < 1) pages = 1;
  out->page_table = calloc((size_t)(n * per), sizeof(int32_t));
  int32_t *perm = malloc((size_t)pages * sizeof *perm);
  if (!out->page_table || !perm) {
    free(perm);
    goto nomem;
  }
  for (int64_t i = 0; i < pages; i++) perm[i] = (int32_t)i;
  if (order == ATTN_PAGE_SHUFFLED) {  // Fisher–Yates from the seed
    uint64_t st = seed * 0xD1B54A32D192ED03ull + 7;
    for (int64_t i = pages - 1; i > 0; i--) {
      const int64_t j = (int64_t)(attn_rand_u64(&st) % (uint64_t)(i + 1));
      const int32_t t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
  }
  int64_t next = 0;
  for (int64_t b = 0; b < n; b++)
    for (int64_t i = 0; i < (kv_lens[b] + page_size - 1) / page_size; i++)
      out->page_table[b * per + i] = perm[next++];
  free(perm);
  out->layout.page_size = page_size;
  out->layout.num_pages = pages;
  out->layout.pages_per_seq = per;
  out->layout.page_table = out->page_table;
  return true;
nomem:
  attn_serving_free(out);
  if (err && err_len) snprintf(err, err_len, "serving batch: out of memory");
  return false;
}

const char *attn_page_order_name(attn_page_order o) {
  return o == ATTN_PAGE_SHUFFLED ? "shuffled" : "sequential";
}

bool attn_page_order_parse(const char *s, attn_page_order *out) {
  if (!strcmp(s, "sequential")) return *out = ATTN_PAGE_SEQUENTIAL, true;
  if (!strcmp(s, "shuffled")) return *out = ATTN_PAGE_SHUFFLED, true;
  return false;
}

uint64_t attn_serving_kv_bytes(const attn_problem *p) {
  const uint64_t row = (uint64_t)attn_kv_row_bytes(p->kv_dtype, p->head_dim_qk) +
                       (uint64_t)attn_kv_row_bytes(p->kv_dtype, p->head_dim_v);
  uint64_t keys = 0;
  for (int64_t b = 0; b < p->batch; b++) keys += (uint64_t)attn_layout_visible_keys(p, b);
  return keys * (uint64_t)p->kv_heads * row;
}

uint64_t attn_serving_tokens(const attn_problem *p) {
  return (uint64_t)attn_layout_total_q(p);
}
