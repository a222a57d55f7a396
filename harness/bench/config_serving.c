// SPDX-License-Identifier: MIT
// Serving sweeps: the keys q_lens, kv_lens, page_size and page_order of a sweep config
// (bench/config.h, docs/serving.md) and the batches they describe (bench/serving.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/config_sweep.h"
#include "bench/serving.h"

// Splits value at commas into trimmed items and appends them to items[0..*n): inih calls
// the handler once per line, so a continuation line (an indented line after the key) adds
// to the same list, as for every list key. Each item is checked by check (NULL: none); an
// item already in the list adds nothing (as for the other lists). Returns the handler's
// result.
static int text_list(parse_ctx *c, int line, const char *key, const char *value,
                     char items[][kServingText], int *n,
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
    memcpy(item, p, len);
    item[len] = '\0';
    char why[256];
    if (check && !check(item, why, sizeof why)) return config_fail(c, line, "%s", why);
    bool dup = false;
    for (int i = 0; i < *n && !dup; i++) dup = strcmp(items[i], item) == 0;
    if (!dup) {
      if (*n == kMaxServing)
        return config_fail(c, line, "%s: more than %d values", key, kMaxServing);
      memcpy(items[(*n)++], item, len + 1);
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
    return text_list(c, line, key, value, s->kv_lens, &s->n_kv_lens, kv_ok);
  if (!strcmp(key, "q_lens")) return text_list(c, line, key, value, s->q_lens, &s->n_q_lens, NULL);
  char items[kMaxServing][kServingText];
  int n = 0;  // this line's items (text_list merges duplicates within it)
  if (!strcmp(key, "page_size")) {
    if (!text_list(c, line, key, value, items, &n, NULL)) return 0;
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
    if (!text_list(c, line, key, value, items, &n, NULL)) return 0;
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
  if (s->n_q_lens == 0) strcpy(s->q_lens[s->n_q_lens++], "decode");
  if (s->n_page_sizes == 0) s->page_sizes[s->n_page_sizes++] = 0;
  if (s->n_page_orders == 0) s->page_orders[s->n_page_orders++] = ATTN_PAGE_SEQUENTIAL;
  // placeholders for the dense lists the expansion walks (one value each)
  s->seq_len.v[0] = 1, s->seq_len.n = 1, s->seq_len.seen = true;
  s->batch.v[0] = 1, s->batch.n = 1;
  // every q_lens item must fit every kv_lens item's sequence count, and each sequence's
  // context: a server's new tokens are the last q_len of its kv_len (kv_len counts them),
  // so a chunk longer than its context (rows that see nothing, counted as tokens) is a
  // mistake in a benchmark (the API computes it: docs/serving.md, "Zero lengths")
  for (int k = 0; k < s->n_kv_lens; k++) {
    int64_t *kv = malloc(ATTN_SERVING_MAX_SEQS * sizeof *kv), *q = NULL, n = 0;
    char why[256] = "out of memory";
    bool ok =
        kv && attn_serving_kv_lens(s->kv_lens[k], kv, ATTN_SERVING_MAX_SEQS, &n, why, sizeof why);
    if (ok) ok = (q = malloc((size_t)n * sizeof *q)) != NULL;
    for (int j = 0; ok && j < s->n_q_lens; j++) {
      ok = attn_serving_q_lens(s->q_lens[j], n, q, why, sizeof why);
      for (int64_t i = 0; ok && i < n; i++)
        if (q[i] > kv[i])
          ok = false,
          snprintf(why, sizeof why,
                   "q_lens '%s' with kv_lens '%s': sequence %lld has %lld new tokens "
                   "in a context of %lld (the context holds its new tokens: want "
                   "q_len <= kv_len)",
                   s->q_lens[j], s->kv_lens[k], (long long)i, (long long)q[i], (long long)kv[i]);
    }
    free(kv);
    free(q);
    if (!ok) {
      const int l = config_line_of(c, s->name, "q_lens");
      return config_fail(c, l ? l : sec, "[%s]: %s", s->name, why), false;
    }
  }
  return true;
}

size_t config_serving_combinations(const sweep *s) {
  if (s->n_kv_lens == 0) return 1;
  return (size_t)s->n_kv_lens * (size_t)s->n_q_lens * (size_t)s->n_page_sizes *
         (size_t)s->n_page_orders;
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
  const size_t io = index % (size_t)s->n_page_orders;
  index /= (size_t)s->n_page_orders;
  const size_t ip = index % (size_t)s->n_page_sizes;
  index /= (size_t)s->n_page_sizes;
  const size_t iq = index % (size_t)s->n_q_lens;
  const size_t ik = index / (size_t)s->n_q_lens;
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
