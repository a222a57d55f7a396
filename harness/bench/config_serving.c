// SPDX-License-Identifier: MIT
// Serving sweeps: the keys q_lens, kv_lens, page_size and page_order of a sweep config
// (bench/config.h, docs/serving.md) and the batches they describe (bench/serving.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/config_sweep.h"
#include "bench/serving.h"

// Splits value at commas into items and appends them to items[0..*n): inih calls the
// handler once per line, so a continuation line (an indented line after the key) adds to
// the same list, as for every list key, and lines (NULL: not kept) gets each item's line.
// An item is trimmed and each run of blanks in it becomes one space, its canonical
// spelling ("64\t 32" is "64 32": the lengths are the same, and a point's name shows no
// tab or run of blanks); it is then checked by check (NULL: none), and adds nothing when
// the list already has it (as for the other lists; config_serving_validate merges the
// items that give the same lengths under other spellings). Returns the handler's result.
static int text_list(parse_ctx *c, int line, const char *key, const char *value,
                     char items[][kServingText], int *lines, int *n,
                     bool (*check)(const char *, char *, size_t)) {
  const char *p = value;
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    if (!len) return config_fail(c, line, "%s: empty item in list", key);
    if (len >= kServingText)
      return config_fail(c, line, "%s: an item is longer than %d characters", key,
                         kServingText - 1);
    char item[kServingText];
    size_t w = 0;  // p[0] and p[len - 1] are not blanks: no leading or trailing space
    for (size_t i = 0; i < len; i++)
      if (p[i] != ' ' && p[i] != '\t')
        item[w++] = p[i];
      else if (item[w - 1] != ' ')
        item[w++] = ' ';
    item[w] = '\0';
    char why[256];
    if (check && !check(item, why, sizeof why)) return config_fail(c, line, "%s", why);
    bool dup = false;
    for (int i = 0; i < *n && !dup; i++) dup = strcmp(items[i], item) == 0;
    if (!dup) {
      if (*n == kMaxServing)
        return config_fail(c, line, "%s: more than %d values", key, kMaxServing);
      if (lines) lines[*n] = line;
      memcpy(items[(*n)++], item, w + 1);
    }
    if (!end) return 1;
    p = end + 1;
  }
}

static bool kv_ok(const char *t, char *why, size_t len) {
  int64_t *lens = malloc(ATTN_SERVING_MAX_SEQS * sizeof *lens), n;
  const bool ok = lens && attn_serving_kv_lens(t, lens, ATTN_SERVING_MAX_SEQS, &n, why, len);
  if (!lens) snprintf(why, len, "kv_lens: out of memory");
  free(lens);
  return ok;
}

int config_serving_key(parse_ctx *c, sweep *s, int line, const char *key, const char *value) {
  if (!strcmp(key, "kv_lens"))
    return text_list(c, line, key, value, s->kv_lens, s->kv_line, &s->n_kv_lens, kv_ok);
  if (!strcmp(key, "q_lens"))
    return text_list(c, line, key, value, s->q_lens, s->q_line, &s->n_q_lens, NULL);
  char items[kMaxServing][kServingText];
  int n = 0;  // this line's items (text_list merges duplicates within it)
  if (!strcmp(key, "page_size")) {
    if (!text_list(c, line, key, value, items, NULL, &n, NULL)) return 0;
    for (int i = 0; i < n; i++) {
      char *end;
      const long long v = strtoll(items[i], &end, 10);
      if (*end || end == items[i] || v < 0 || v > ATTN_MAX_PAGE_SIZE)
        return config_fail(c, line, "page_size: '%s' is not 0 (ragged) or a page size 1..%d",
                           items[i], ATTN_MAX_PAGE_SIZE);
      bool dup = false;  // appended to the list so far (continuation lines add to it)
      for (int j = 0; j < s->n_page_sizes && !dup; j++) dup = s->page_sizes[j] == v;
      if (dup) continue;
      if (s->n_page_sizes == kMaxServing)
        return config_fail(c, line, "page_size: more than %d values", kMaxServing);
      s->page_sizes[s->n_page_sizes++] = v;
    }
    return 1;
  }
  if (!strcmp(key, "page_order")) {
    if (!text_list(c, line, key, value, items, NULL, &n, NULL)) return 0;
    for (int i = 0; i < n; i++) {
      attn_page_order o;
      if (!attn_page_order_parse(items[i], &o))
        return config_fail(c, line, "page_order: '%s' is not sequential or shuffled", items[i]);
      bool dup = false;  // two values at most: sequential, shuffled
      for (int j = 0; j < s->n_page_orders && !dup; j++) dup = s->page_orders[j] == (int)o;
      if (!dup) s->page_orders[s->n_page_orders++] = (int)o;
    }
    return 1;
  }
  return -1;
}

// Keeps the items i of items[0..*n) (and their lines) for which keep[i], in their order.
static void keep_items(char items[][kServingText], int *lines, int *n, const bool *keep) {
  int w = 0;
  for (int i = 0; i < *n; i++)
    if (keep[i]) {
      if (w != i) memcpy(items[w], items[i], kServingText), lines[w] = lines[i];
      w++;
    }
  *n = w;
}

// A value given twice counts once, and so does a batch given twice: the kv_lens items that
// give the same lengths ("64 32" and "64 32*1"; "uniform:2:48" and "uniform:2:48:1", 1
// being the default seed) are one item, the first spelling, at its place in the list.
static bool merge_kv(parse_ctx *c, sweep *s, int sec) {
  enum { kCap = ATTN_SERVING_MAX_SEQS };
  int64_t *lens = malloc((size_t)kMaxServing * kCap * sizeof *lens), n[kMaxServing];
  bool keep[kMaxServing];
  char why[256] = "out of memory";
  bool ok = lens != NULL;
  for (int k = 0; ok && k < s->n_kv_lens; k++) {
    int64_t *l = lens + (size_t)k * kCap;
    ok = attn_serving_kv_lens(s->kv_lens[k], l, kCap, &n[k], why, sizeof why);
    keep[k] = true;
    for (int i = 0; ok && keep[k] && i < k; i++)
      keep[k] = n[i] != n[k] || memcmp(lens + (size_t)i * kCap, l, (size_t)n[k] * sizeof *l);
  }
  free(lens);
  if (!ok) return config_fail(c, sec, "[%s]: %s", s->name, why), false;
  keep_items(s->kv_lens, s->kv_line, &s->n_kv_lens, keep);
  return true;
}

// Every q_lens item must fit every kv_lens item's sequence count, and each sequence's
// context: a server's new tokens are the last q_len of its kv_len (kv_len counts them),
// so a chunk longer than its context (rows that see nothing, counted as tokens) is a
// mistake in a benchmark (the API computes it: docs/serving.md, "Zero lengths"); refused
// at the q_lens item's line. Then, as merge_kv, the items that give the same lengths with
// every kv_lens item are one: "decode", "prefill:0:C" and "prefill:N:1" always, "1 1"
// too when every kv_lens item has two sequences (an explicit list fits no other count).
static bool fit_and_merge_q(parse_ctx *c, sweep *s, int sec) {
  bool same[kMaxServing][kMaxServing];  // [i][j], i < j: equal lengths with every kv item
  for (int i = 0; i < kMaxServing; i++)
    for (int j = 0; j < kMaxServing; j++) same[i][j] = true;
  for (int k = 0; k < s->n_kv_lens; k++) {
    int64_t *kv = malloc(ATTN_SERVING_MAX_SEQS * sizeof *kv), *q = NULL, n = 0;
    char why[256] = "out of memory";
    int bad = 0;  // the q_lens item refused
    bool ok =
        kv && attn_serving_kv_lens(s->kv_lens[k], kv, ATTN_SERVING_MAX_SEQS, &n, why, sizeof why);
    if (ok) ok = (q = malloc((size_t)(n * s->n_q_lens) * sizeof *q)) != NULL;
    for (int j = 0; ok && j < s->n_q_lens; j++) {
      int64_t *qj = q + j * n;  // q[j·n .. (j+1)·n): item j's lengths
      ok = attn_serving_q_lens(s->q_lens[j], n, qj, why, sizeof why);
      for (int64_t i = 0; ok && i < n; i++)
        if (qj[i] > kv[i])
          ok = false,
          snprintf(why, sizeof why,
                   "q_lens '%s' with kv_lens '%s': sequence %lld has %lld new tokens "
                   "in a context of %lld (the context holds its new tokens: want "
                   "q_len <= kv_len)",
                   s->q_lens[j], s->kv_lens[k], (long long)i, (long long)qj[i], (long long)kv[i]);
      if (!ok) bad = j;
      for (int i = 0; ok && i < j; i++)
        same[i][j] = same[i][j] && !memcmp(q + i * n, qj, (size_t)n * sizeof *qj);
    }
    free(kv);
    free(q);
    if (!ok) {
      const int l = s->q_line[bad];
      return config_fail(c, l ? l : sec, "[%s]: %s", s->name, why), false;
    }
  }
  bool keep[kMaxServing];
  for (int j = 0; j < s->n_q_lens; j++) {
    keep[j] = true;
    for (int i = 0; i < j && keep[j]; i++) keep[j] = !same[i][j];
  }
  keep_items(s->q_lens, s->q_line, &s->n_q_lens, keep);
  return true;
}

bool config_serving_validate(parse_ctx *c, sweep *s) {
  const int sec = config_line_of(c, s->name, NULL);
  const bool serving = s->n_kv_lens > 0;
  if (!serving) {
    static const char *const keys[] = {"q_lens", "page_size", "page_order"};
    for (int i = 0; i < 3; i++)
      if (config_line_of(c, s->name, keys[i]))
        return config_fail(c, config_line_of(c, s->name, keys[i]),
                           "[%s]: %s needs kv_lens (a serving sweep)", s->name, keys[i]),
               false;
    return true;
  }
  static const char *const dense[] = {"batch", "seq_len", "seq_kv"};
  for (int i = 0; i < 3; i++)
    if (config_line_of(c, s->name, dense[i]))
      return config_fail(c, config_line_of(c, s->name, dense[i]),
                         "[%s]: %s does not apply to a serving sweep (kv_lens and q_lens give "
                         "the sequences)",
                         s->name, dense[i]),
             false;
  for (int i = 0; i < s->opts[kOptMask].n; i++)
    if (s->opts[kOptMask].v[i].mask)
      return config_fail(c, config_line_of(c, s->name, "mask"),
                         "[%s]: mask is not swept in serving sweeps (attnbench check covers "
                         "masks on layouts)",
                         s->name),
             false;
  if (s->n_q_lens == 0) s->q_line[0] = 0, strcpy(s->q_lens[s->n_q_lens++], "decode");
  if (s->n_page_sizes == 0) s->page_sizes[s->n_page_sizes++] = 0;
  if (s->n_page_orders == 0) s->page_orders[s->n_page_orders++] = ATTN_PAGE_SEQUENTIAL;
  // placeholders for the dense lists the expansion walks (one value each)
  s->seq_len.v[0] = 1, s->seq_len.n = 1, s->seq_len.seen = true;
  s->batch.v[0] = 1, s->batch.n = 1;
  return merge_kv(c, s, sec) && fit_and_merge_q(c, s, sec);
}

size_t config_serving_combinations(const sweep *s) {
  if (s->n_kv_lens == 0) return 1;
  return (size_t)s->n_kv_lens * (size_t)s->n_q_lens * (size_t)s->n_page_sizes *
         (size_t)s->n_page_orders;
}

// Combination index's items: kv_lens outermost, then q_lens, page_size, page_order.
static void combination(const sweep *s, size_t index, size_t *ik, size_t *iq, size_t *ip,
                        size_t *io) {
  *io = index % (size_t)s->n_page_orders;
  index /= (size_t)s->n_page_orders;
  *ip = index % (size_t)s->n_page_sizes;
  index /= (size_t)s->n_page_sizes;
  *iq = index % (size_t)s->n_q_lens;
  *ik = index / (size_t)s->n_q_lens;
}

int config_serving_line(const sweep *s, size_t index, bool q) {
  if (s->n_kv_lens == 0) return 0;
  size_t ik, iq, ip, io;
  combination(s, index, &ik, &iq, &ip, &io);
  return q ? s->q_line[iq] : s->kv_line[ik];
}

// FNV-1a of a description, for names of long explicit length lists.
static unsigned long short_hash(const char *t) {
  uint32_t h = 2166136261u;
  for (; *t; t++) h = (h ^ (unsigned char)*t) * 16777619u;
  return (unsigned long)h;
}

// "/kv=TEXT" with spaces as '_', or "/kv#HASH" when long.
static void name_part(char *buf, size_t len, const char *tag, const char *t) {
  if (strlen(t) > 32) {
    snprintf(buf, len, "/%s#%08lx", tag, short_hash(t));
    return;
  }
  const int w = snprintf(buf, len, "/%s=%s", tag, t);
  for (int i = 0; i < w && (size_t)i < len && buf[i]; i++)
    if (buf[i] == ' ') buf[i] = '_';
}

bool config_serving_batch(parse_ctx *c, const sweep *s, size_t index, attn_serving_batch **out,
                          char *suffix, size_t suffix_len) {
  *out = NULL;
  suffix[0] = '\0';
  if (s->n_kv_lens == 0) return true;
  size_t ik, iq, ip, io;
  combination(s, index, &ik, &iq, &ip, &io);
  const int sec = config_line_of(c, s->name, NULL);
  int64_t *kv = malloc(ATTN_SERVING_MAX_SEQS * sizeof *kv), *q = malloc(ATTN_SERVING_MAX_SEQS * 8);
  attn_serving_batch *b = calloc(1, sizeof *b);
  char why[256] = "out of memory";
  int64_t n = 0;
  const attn_page_order order = (attn_page_order)s->page_orders[io];
  bool ok = kv && q && b &&
            attn_serving_kv_lens(s->kv_lens[ik], kv, ATTN_SERVING_MAX_SEQS, &n, why, sizeof why) &&
            attn_serving_q_lens(s->q_lens[iq], n, q, why, sizeof why) &&
            attn_serving_build(q, kv, n, s->page_sizes[ip], order, 1, b, why, sizeof why);
  free(kv);
  free(q);
  if (!ok) {
    free(b);
    return config_fail(c, sec, "[%s]: %s", s->name, why), false;
  }
  char kpart[64], qpart[64];
  name_part(kpart, sizeof kpart, "kv", s->kv_lens[ik]);
  name_part(qpart, sizeof qpart, "q", s->q_lens[iq]);
  if (s->page_sizes[ip])
    snprintf(suffix, suffix_len, "%s%s/page%lld%s", qpart, kpart, (long long)s->page_sizes[ip],
             order == ATTN_PAGE_SHUFFLED ? "s" : "");
  else
    snprintf(suffix, suffix_len, "%s%s/ragged", qpart, kpart);
  *out = b;
  return true;
}
