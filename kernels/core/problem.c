// SPDX-License-Identifier: MIT
// Problem construction, validation and size arithmetic (see attn.h for the contract).
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "core/attn_internal.h"
#include "core/convert.h"

attn_problem attn_problem_make(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq_q,
                               int64_t seq_kv, int64_t head_dim_qk, int64_t head_dim_v,
                               bool causal) {
  attn_problem p = {.batch = batch, .heads = heads, .kv_heads = kv_heads, .causal = causal};
  p.seq_q = seq_q, p.seq_kv = seq_kv;
  p.head_dim_qk = head_dim_qk, p.head_dim_v = head_dim_v;
  p.scale = head_dim_qk > 0 ? (float)(1.0 / sqrt((double)head_dim_qk)) : 1.0f;
  return p;
}

const char *attn_dtype_name(attn_dtype t) {
  switch (t) {
    case ATTN_DTYPE_F32:
      return "f32";
    case ATTN_DTYPE_F16:
      return "f16";
    case ATTN_DTYPE_BF16:
      return "bf16";
    case ATTN_DTYPE_Q8_0:
      return "q8_0";
  }
  return "?";
}

bool attn_dtype_parse(const char *s, attn_dtype *out) {
  if (!s) return false;
  for (int t = 0; t < ATTN_DTYPE_COUNT; t++) {
    if (strcmp(s, attn_dtype_name((attn_dtype)t)) == 0) {
      if (out) *out = (attn_dtype)t;
      return true;
    }
  }
  return false;
}

const char *attn_compute_name(attn_compute c) {
  switch (c) {
    case ATTN_COMPUTE_F32:
      return "f32";
    case ATTN_COMPUTE_BF16:
      return "bf16";
    case ATTN_COMPUTE_F16:
      return "f16";
    case ATTN_COMPUTE_INT8:
      return "int8";
  }
  return "?";
}

bool attn_compute_parse(const char *s, attn_compute *out) {
  if (!s) return false;
  for (int c = 0; c < ATTN_COMPUTE_COUNT; c++) {
    if (strcmp(s, attn_compute_name((attn_compute)c)) == 0) {
      if (out) *out = (attn_compute)c;
      return true;
    }
  }
  return false;
}

uint32_t attn_compute_cap(attn_compute c) {
  switch (c) {
    case ATTN_COMPUTE_F32:
      return 0;
    case ATTN_COMPUTE_BF16:
      return ATTN_CAP_COMPUTE_BF16;
    case ATTN_COMPUTE_F16:
      return ATTN_CAP_COMPUTE_F16;
    case ATTN_COMPUTE_INT8:
      return ATTN_CAP_COMPUTE_INT8;
  }
  return 0;
}

uint32_t attn_dtype_cap(attn_dtype t) {
  switch (t) {
    case ATTN_DTYPE_F32:
      return 0;
    case ATTN_DTYPE_F16:
      return ATTN_CAP_KV_F16;
    case ATTN_DTYPE_BF16:
      return ATTN_CAP_KV_BF16;
    case ATTN_DTYPE_Q8_0:
      return ATTN_CAP_KV_Q8_0;
  }
  return 0;
}

bool attn_fail(char *err, size_t err_len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && err_len) vsnprintf(err, err_len, fmt, ap);
  va_end(ap);
  return false;
}

bool attn_tensor_fits(int64_t a, int64_t b, int64_t c, int64_t d) {
  const uint64_t limit = (uint64_t)(SIZE_MAX < INT64_MAX ? SIZE_MAX : INT64_MAX) / sizeof(float);
  uint64_t n = 1;
  const int64_t dims[4] = {a, b, c, d};
  for (int i = 0; i < 4; i++) {
    if (dims[i] == 0) return true;  // no element: fits
    if ((uint64_t)dims[i] > limit / n) return false;
    n *= (uint64_t)dims[i];
  }
  return true;
}

// x is subnormal, from its bits: a comparison with 0 or FLT_MIN would read a subnormal as
// 0 when the caller runs with denormals-are-zero, and the checks below must not depend on
// the caller's FP environment.
static bool float_subnormal(float x) {
  uint32_t w;
  memcpy(&w, &x, sizeof w);
  return (w & 0x7F800000u) == 0 && (w & 0x007FFFFFu) != 0;
}

// ── Validation, one field at a time ─────────────────────────────────────────────────
// Each rule of the contract is written once, in the check of its field; a caller that
// fills a problem in steps checks each field where it sets it (attn_problem_check_field),
// and attn_problem_validate checks them all.

static bool check_sizes(const attn_problem *p, char *err, size_t err_len) {
  const struct {
    const char *name;
    int64_t value;
  } sizes[] = {{"batch", p->batch},          {"heads", p->heads},   {"kv_heads", p->kv_heads},
               {"seq_q", p->seq_q},          {"seq_kv", p->seq_kv}, {"head_dim_qk", p->head_dim_qk},
               {"head_dim_v", p->head_dim_v}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    if (sizes[i].value >= 1) continue;
    // A serving batch's seq_q / seq_kv are its longest lengths (attn_problem_set_layout):
    // 0 means no sequence has one, which is what its caller set.
    if (p->layout && sizes[i].value == 0 && (i == 3 || i == 4))
      return attn_fail(err, err_len,
                       i == 3 ? "no sequence of the batch has a query token (every q_len is 0)"
                              : "every sequence's context is empty (every kv_len is 0)");
    return attn_fail(err, err_len, "%s must be >= 1 (got %lld)", sizes[i].name,
                     (long long)sizes[i].value);
  }
  const struct {
    const char *name;
    int64_t a, b, c, d;
  } tensors[] = {{"Q", p->batch, p->heads, p->seq_q, p->head_dim_qk},
                 {"K", p->batch, p->kv_heads, p->seq_kv, p->head_dim_qk},
                 {"V", p->batch, p->kv_heads, p->seq_kv, p->head_dim_v},
                 {"O", p->batch, p->heads, p->seq_q, p->head_dim_v}};
  for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
    if (!attn_tensor_fits(tensors[i].a, tensors[i].b, tensors[i].c, tensors[i].d))
      return attn_fail(err, err_len, "%s tensor %lldx%lldx%lldx%lld overflows size_t bytes",
                       tensors[i].name, (long long)tensors[i].a, (long long)tensors[i].b,
                       (long long)tensors[i].c, (long long)tensors[i].d);
  }
  return true;
}

static bool check_heads(const attn_problem *p, char *err, size_t err_len) {
  if (p->kv_heads < 1)  // the divisor: check_sizes's rule, so that this check stands alone
    return attn_fail(err, err_len, "kv_heads must be >= 1 (got %lld)", (long long)p->kv_heads);
  if (p->heads % p->kv_heads != 0)
    return attn_fail(err, err_len, "heads (%lld) must be a multiple of kv_heads (%lld)",
                     (long long)p->heads, (long long)p->kv_heads);
  return true;
}

static bool check_scale(const attn_problem *p, char *err, size_t err_len) {
  if (!isfinite(p->scale))
    return attn_fail(err, err_len, "scale must be finite (got %g)", p->scale);
  if (float_subnormal(p->scale))
    return attn_fail(
        err, err_len,
        "scale %g is subnormal: kernels flush it to 0 (FTZ/DAZ); give 0 or a scale with "
        "%g <= |scale| <= %g",
        (double)p->scale, (double)FLT_MIN, (double)FLT_MAX);
  return true;
}

static bool check_kv_dtype(const attn_problem *p, char *err, size_t err_len) {
  if ((unsigned)p->kv_dtype >= ATTN_DTYPE_COUNT)
    return attn_fail(err, err_len, "kv_dtype %d is not a K/V element type (f32 f16 bf16 q8_0)",
                     (int)p->kv_dtype);
  if (p->kv_dtype == ATTN_DTYPE_Q8_0 &&
      (p->head_dim_qk % ATTN_Q8_0_BLOCK != 0 || p->head_dim_v % ATTN_Q8_0_BLOCK != 0))
    return attn_fail(err, err_len,
                     "kv_dtype q8_0 needs head_dim_qk and head_dim_v to be multiples of %d (got "
                     "%lld and %lld)",
                     ATTN_Q8_0_BLOCK, (long long)p->head_dim_qk, (long long)p->head_dim_v);
  return true;
}

static bool check_compute(const attn_problem *p, char *err, size_t err_len) {
  if ((unsigned)p->compute >= ATTN_COMPUTE_COUNT)
    return attn_fail(err, err_len, "compute %d is not a compute mode (f32 bf16 f16 int8)",
                     (int)p->compute);
  if (p->compute == ATTN_COMPUTE_INT8 && p->kv_dtype != ATTN_DTYPE_Q8_0)
    return attn_fail(err, err_len,
                     "compute int8 needs kv_dtype q8_0 (integer dot products of Q8_0 Q and K; got "
                     "kv_dtype %s)",
                     attn_dtype_name(p->kv_dtype));
  if (p->compute == ATTN_COMPUTE_INT8 && p->head_dim_qk % ATTN_Q8_0_BLOCK != 0)
    return attn_fail(err, err_len,
                     "compute int8 needs head_dim_qk to be a multiple of %d (got %lld)",
                     ATTN_Q8_0_BLOCK, (long long)p->head_dim_qk);
  return true;
}

// The batch layout (attn.h, "Serving layouts"; core/layout.c): NULL is dense.
static bool check_layout(const attn_problem *p, char *err, size_t err_len) {
  return !p->layout || attn_layout_validate(p, err, err_len);
}

static bool check_align(const attn_problem *p, char *err, size_t err_len) {
  const attn_options *o = p->opts;
  if (o->align != ATTN_ALIGN_BOTTOM_RIGHT && o->align != ATTN_ALIGN_TOP_LEFT &&
      o->align != ATTN_ALIGN_OFFSET)
    return attn_fail(err, err_len,
                     "align must be bottom-right (0), top-left (1) or offset (2) (got %d)",
                     (int)o->align);
  if (o->align == ATTN_ALIGN_OFFSET &&
      (o->diag_offset > ATTN_DIAG_OFFSET_MAX || o->diag_offset < -ATTN_DIAG_OFFSET_MAX))
    return attn_fail(err, err_len, "diag_offset must be in [-2^60, 2^60] (got %lld)",
                     (long long)o->diag_offset);
  return true;
}

static bool check_window(const attn_problem *p, char *err, size_t err_len) {
  const attn_options *o = p->opts;
  if (!o->window) return true;
  if (o->window_left < 0 && o->window_left != ATTN_WINDOW_UNBOUNDED)
    return attn_fail(err, err_len, "window left must be >= 0 or unbounded (got %lld)",
                     (long long)o->window_left);
  if (o->window_right < 0 && o->window_right != ATTN_WINDOW_UNBOUNDED)
    return attn_fail(err, err_len, "window right must be >= 0 or unbounded (got %lld)",
                     (long long)o->window_right);
  return true;
}

// softcap c: kernels compute c·tanh(s·(1/c)) under FTZ/DAZ. A subnormal c reads as 0
// (off) there; c > 2^126 has a subnormal 1/c, which reads as 0 (every score capped to
// 0). Above ATTN_SOFTCAP_MAX a score small enough that s·(1/c) flushes (|s| < c·2^-126)
// would lose more than 2^-62 of itself; within [FLT_MIN, 2^64] c, 1/c and the loss
// are harmless, and kernels and the reference read the same c.
static bool check_softcap(const attn_problem *p, char *err, size_t err_len) {
  const attn_options *o = p->opts;
  if (float_subnormal(o->softcap) ||
      !(o->softcap == 0.0f ||
        (o->softcap >= ATTN_SOFTCAP_MIN && o->softcap <= (float)ATTN_SOFTCAP_MAX)))
    return attn_fail(err, err_len, "softcap must be 0 (none) or in [%g, %g] (got %.9g)",
                     (double)ATTN_SOFTCAP_MIN, (double)ATTN_SOFTCAP_MAX, (double)o->softcap);
  return true;
}

// alibi max_bias: the smallest slope of the rule is 2^-max_bias (head n−1), so up to
// 126 every slope is a normal float32; a subnormal max_bias reads as 0 (off) in
// kernels while the reference derives slopes of 1 from it.
static bool check_alibi(const attn_problem *p, char *err, size_t err_len) {
  const attn_options *o = p->opts;
  if (float_subnormal(o->alibi_max_bias) ||
      !(o->alibi_max_bias == 0.0f || (o->alibi_max_bias >= ATTN_ALIBI_MAX_BIAS_MIN &&
                                      o->alibi_max_bias <= ATTN_ALIBI_MAX_BIAS_MAX)))
    return attn_fail(err, err_len, "alibi max_bias must be 0 (none) or in [%g, %g] (got %.9g)",
                     (double)ATTN_ALIBI_MAX_BIAS_MIN, (double)ATTN_ALIBI_MAX_BIAS_MAX,
                     (double)o->alibi_max_bias);
  if (o->alibi_max_bias > 0.0f && o->alibi_slopes)
    return attn_fail(err, err_len, "give ALiBi either max_bias or explicit slopes, not both");
  return true;
}

static bool check_mask(const attn_problem *p, char *err, size_t err_len) {
  const attn_options *o = p->opts;
  if (o->mask && !attn_tensor_fits(o->mask_per_head ? p->batch : 1, o->mask_per_head ? p->heads : 1,
                                   p->seq_q, p->seq_kv))
    return attn_fail(err, err_len, "mask tensor of %lldx%lld overflows size_t bytes",
                     (long long)p->seq_q, (long long)p->seq_kv);
  return true;
}

// The fields in attn_field order: the name, the check, and whether the field is one of
// p->opts (such a check passes without options).
static const struct {
  const char *name;
  bool (*check)(const attn_problem *p, char *err, size_t err_len);
  bool option;
} kFields[ATTN_FIELD_COUNT] = {
    [ATTN_FIELD_SIZES] = {"sizes", check_sizes, false},
    [ATTN_FIELD_HEADS] = {"heads", check_heads, false},
    [ATTN_FIELD_SCALE] = {"scale", check_scale, false},
    [ATTN_FIELD_KV_DTYPE] = {"kv_dtype", check_kv_dtype, false},
    [ATTN_FIELD_ALIGN] = {"align", check_align, true},
    [ATTN_FIELD_WINDOW] = {"window", check_window, true},
    [ATTN_FIELD_SOFTCAP] = {"softcap", check_softcap, true},
    [ATTN_FIELD_ALIBI] = {"alibi", check_alibi, true},
    [ATTN_FIELD_MASK] = {"mask", check_mask, true},
    [ATTN_FIELD_COMPUTE] = {"compute", check_compute, false},
    [ATTN_FIELD_LAYOUT] = {"layout", check_layout, false},
};

bool attn_problem_check_field(const attn_problem *p, attn_field field, char *err, size_t err_len) {
  if (!p) return attn_fail(err, err_len, "problem is NULL");
  if ((unsigned)field >= ATTN_FIELD_COUNT)
    return attn_fail(err, err_len, "field %d is not an attn_field", (int)field);
  const bool ok = (kFields[field].option && !p->opts) || kFields[field].check(p, err, err_len);
  if (ok && err && err_len) err[0] = '\0';
  return ok;
}

const char *attn_field_name(attn_field field) {
  return (unsigned)field < ATTN_FIELD_COUNT ? kFields[field].name : "?";
}

bool attn_problem_validate(const attn_problem *p, char *err, size_t err_len) {
  for (int f = 0; f < ATTN_FIELD_COUNT; f++)
    if (!attn_problem_check_field(p, (attn_field)f, err, err_len)) return false;
  return true;
}

uint32_t attn_problem_options_used(const attn_problem *p) {
  const attn_options *o = p->opts;
  if (!o) return 0;
  uint32_t used = 0;
  const bool alibi = o->alibi_slopes || o->alibi_max_bias > 0.0f;
  if (o->align == ATTN_ALIGN_TOP_LEFT && p->seq_q != p->seq_kv && (p->causal || o->window || alibi))
    used |= ATTN_CAP_OPT_ALIGN;
  if (o->align == ATTN_ALIGN_OFFSET && o->diag_offset != p->seq_kv - p->seq_q &&
      (p->causal || o->window || alibi))
    used |= ATTN_CAP_OPT_OFFSET;
  if (o->window && (o->window_left >= 0 || o->window_right >= 0)) used |= ATTN_CAP_OPT_WINDOW;
  if (o->softcap > 0.0f) used |= ATTN_CAP_OPT_SOFTCAP;
  if (alibi) used |= ATTN_CAP_OPT_ALIBI;
  if (o->sinks) used |= ATTN_CAP_OPT_SINKS;
  if (o->mask) used |= ATTN_CAP_OPT_MASK;
  if (o->lse) used |= ATTN_CAP_OPT_LSE;
  return used;
}

const char *attn_option_names(uint32_t caps, char *buf, size_t buf_len) {
  static const struct {
    uint32_t bit;
    const char *name;
  } names[] = {{ATTN_CAP_OPT_ALIGN, "align"},     {ATTN_CAP_OPT_WINDOW, "window"},
               {ATTN_CAP_OPT_SOFTCAP, "softcap"}, {ATTN_CAP_OPT_ALIBI, "alibi"},
               {ATTN_CAP_OPT_SINKS, "sinks"},     {ATTN_CAP_OPT_MASK, "mask"},
               {ATTN_CAP_OPT_LSE, "lse"},         {ATTN_CAP_OPT_OFFSET, "offset"}};
  if (!buf || !buf_len) return buf;
  buf[0] = '\0';
  size_t used = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!(caps & names[i].bit)) continue;
    const int w = snprintf(buf + used, buf_len - used, "%s%s", used ? " " : "", names[i].name);
    if (w < 0 || (size_t)w >= buf_len - used) break;
    used += (size_t)w;
  }
  if (!used) snprintf(buf, buf_len, "none");
  return buf;
}

int64_t attn_diag_offset(const attn_problem *p) {
  if (p->opts && p->opts->align == ATTN_ALIGN_TOP_LEFT) return 0;
  if (p->opts && p->opts->align == ATTN_ALIGN_OFFSET) return p->opts->diag_offset;
  return p->seq_kv - p->seq_q;
}

float attn_alibi_slope(const attn_problem *p, int64_t h) {
  const attn_options *o = p->opts;
  if (!o) return 0.0f;
  if (o->alibi_slopes) return o->alibi_slopes[h];
  if (!(o->alibi_max_bias > 0.0f)) return 0.0f;
  int64_t n = 1;
  while (n * 2 <= p->heads) n *= 2;  // n = 2^floor(log2 heads)
  const double mb = (double)o->alibi_max_bias;
  const double e =
      h < n ? mb * (double)(h + 1) / (double)n : mb * (double)(2 * (h - n) + 1) / (2.0 * (double)n);
  return (float)exp2(-e);
}

// Rows of the K/V tensors: batch·kv_heads·seq_kv dense; with a layout (attn.h, "Serving
// layouts") the packed keys or the pool's rows.
static size_t kv_rows(const attn_problem *p) {
  const attn_layout *l = p->layout;
  if (!l) return (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv;
  if (l->kind == ATTN_LAYOUT_PAGED)
    return (size_t)l->num_pages * (size_t)p->kv_heads * (size_t)l->page_size;
  return (size_t)l->cu_seqlens_kv[p->batch] * (size_t)p->kv_heads;
}

size_t attn_q_elems(const attn_problem *p) {
  if (p->layout) return attn_layout_total_q(p) * (size_t)p->heads * (size_t)p->head_dim_qk;
  return (size_t)p->batch * (size_t)p->heads * (size_t)p->seq_q * (size_t)p->head_dim_qk;
}
size_t attn_k_elems(const attn_problem *p) {
  if (p->layout) return kv_rows(p) * (size_t)p->head_dim_qk;
  return (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv * (size_t)p->head_dim_qk;
}
size_t attn_v_elems(const attn_problem *p) {
  if (p->layout) return kv_rows(p) * (size_t)p->head_dim_v;
  return (size_t)p->batch * (size_t)p->kv_heads * (size_t)p->seq_kv * (size_t)p->head_dim_v;
}
size_t attn_o_elems(const attn_problem *p) {
  if (p->layout) return attn_layout_total_q(p) * (size_t)p->heads * (size_t)p->head_dim_v;
  return (size_t)p->batch * (size_t)p->heads * (size_t)p->seq_q * (size_t)p->head_dim_v;
}

// The stored bytes of a K/V tensor of rows × dim elements (saturating).
static size_t kv_bytes(const attn_problem *p, int64_t dim) {
  const size_t rows = kv_rows(p);
  const size_t row = attn_kv_row_bytes(p->kv_dtype, dim);
  return (row != 0 && rows > SIZE_MAX / row) ? SIZE_MAX : rows * row;
}
size_t attn_k_bytes(const attn_problem *p) {
  return kv_bytes(p, p->head_dim_qk);
}
size_t attn_v_bytes(const attn_problem *p) {
  return kv_bytes(p, p->head_dim_v);
}

void attn_row_keys(const attn_problem *p, int64_t i, int64_t *lo, int64_t *hi) {
  if (!p->opts) {  // the plain problem: [0, seq_kv) or the bottom-right causal prefix
    *lo = 0;
    *hi = attn_visible_keys(p, i);
    return;
  }
  // row i sees j iff −left ≤ j − (i + off) ≤ right; causal caps right at 0.
  const int64_t diag = i + attn_diag_offset(p);  // |diag| < 2^62: sizes fit in size_t/4
  int64_t left = ATTN_WINDOW_UNBOUNDED, right = ATTN_WINDOW_UNBOUNDED;
  if (p->opts && p->opts->window) left = p->opts->window_left, right = p->opts->window_right;
  if (p->causal && (right == ATTN_WINDOW_UNBOUNDED || right > 0)) right = 0;
  int64_t a = 0, b = p->seq_kv;
  if (left != ATTN_WINDOW_UNBOUNDED && left < diag) a = diag - left;  // left <= diag: a <= 0
  if (right != ATTN_WINDOW_UNBOUNDED && right < p->seq_kv - diag) b = diag + right + 1;
  if (a > p->seq_kv) a = p->seq_kv;
  if (b < 0) b = 0;
  if (b < a) b = a;
  *lo = a;
  *hi = b;
}

int64_t attn_visible_keys(const attn_problem *p, int64_t i) {
  if (!p->opts) {  // closed form without options: clamp(i + 1 + seq_kv − seq_q, 0, seq_kv)
    if (!p->causal) return p->seq_kv;
    const int64_t n = i + 1 + (p->seq_kv - p->seq_q);
    return n < 0 ? 0 : (n > p->seq_kv ? p->seq_kv : n);
  }
  int64_t lo, hi;
  attn_row_keys(p, i, &lo, &hi);
  return hi - lo;
}

double attn_flops(const attn_problem *p) {
  if (p->layout) {  // the sum over the sequences' dense problems
    double f = 0.0;
    for (int64_t b = 0; b < p->batch; b++) {
      attn_options o;
      const attn_problem s = attn_layout_seq_problem(p, b, &o);
      if (s.seq_q > 0 && s.seq_kv > 0) f += attn_flops(&s);
    }
    return f;
  }
  // Σ_i visible(i) in closed form: rows with a partial view form an arithmetic series.
  double pairs = 0.0;
  if (!p->causal && !(attn_problem_options_used(p) & ATTN_CAP_OPT_WINDOW)) {
    pairs = (double)p->seq_q * (double)p->seq_kv;
  } else {
    for (int64_t i = 0; i < p->seq_q; i++) pairs += (double)attn_visible_keys(p, i);
  }
  return 2.0 * (double)(p->head_dim_qk + p->head_dim_v) * pairs * (double)p->batch *
         (double)p->heads;
}

// ── The input domain (attn.h, "Numerics contract") ──────────────────────────────────

// Flat index → "[b][h][i][d]" of a 4-D tensor with dims (n1, n2, n3) after the first.
static void coords(size_t idx, int64_t n1, int64_t n2, int64_t n3, char *buf, size_t len) {
  const size_t d = idx % (size_t)n3, i = idx / (size_t)n3 % (size_t)n2;
  const size_t h = idx / ((size_t)n3 * (size_t)n2) % (size_t)n1;
  const size_t b = idx / ((size_t)n3 * (size_t)n2 * (size_t)n1);
  snprintf(buf, len, "[%zu][%zu][%zu][%zu]", b, h, i, d);
}

// Element i of a tensor of type t with rows of width elements (the stored value).
static inline float elem(attn_dtype t, const void *x, int64_t width, size_t i) {
  return t == ATTN_DTYPE_F32 ? ((const float *)x)[i] : attn_kv_elem(t, x, width, i);
}

// Index of the first non-finite element of x[0..n) (type t, rows of width), or n.
static size_t first_nonfinite(attn_dtype t, const void *x, int64_t width, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(elem(t, x, width, i))) return i;
  return n;
}

// Index of the first element of x[0..n) with |x| > limit, or n.
static size_t first_above(attn_dtype t, const void *x, int64_t width, size_t n, double limit) {
  for (size_t i = 0; i < n; i++)
    if (fabs((double)elem(t, x, width, i)) > limit) return i;
  return n;
}

// max over the rows of x[rows][width] (type t) of the Euclidean row norm (in double: a
// float32 element squared is at most 2^256, far inside double).
static double max_row_norm(attn_dtype t, const void *x, int64_t rows, int64_t width) {
  double best = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    double ss = 0.0;
    for (int64_t c = 0; c < width; c++) {
      const double e = (double)elem(t, x, width, (size_t)(r * width + c));
      ss += e * e;
    }
    if (ss > best) best = ss;
  }
  return sqrt(best);
}

static int options_check(const attn_problem *p, char *err, size_t err_len);

attn_compute_range attn_compute_range_of(attn_compute c) {
  switch (c) {
    case ATTN_COMPUTE_F16:
      return (attn_compute_range){ATTN_F16_MAX, ATTN_F16_MAX,
                                  "the largest binary16 (compute f16 rounds Q, K and V to "
                                  "binary16)"};
    case ATTN_COMPUTE_BF16:
      return (attn_compute_range){ATTN_BF16_MAX, ATTN_BF16_MAX,
                                  "the largest bfloat16 (compute bf16 rounds Q, K and V to "
                                  "bfloat16)"};
    case ATTN_COMPUTE_INT8:
      return (attn_compute_range){127.0 * ATTN_F16_MAX, INFINITY,
                                  "127 times the largest binary16 (compute int8 quantizes Q per "
                                  "32-element block with the binary16 scale max|q|/127)"};
    default:
      return (attn_compute_range){INFINITY, INFINITY, ""};
  }
}

int attn_inputs_check(const attn_problem *p, const float *q, const void *k, const void *v,
                      char *err, size_t err_len) {
  if (!attn_problem_validate(p, err, err_len)) return ATTN_ERR_INVALID;
  if (!q || !k || !v) {
    attn_fail(err, err_len, "a tensor pointer (q, k or v) is NULL");
    return ATTN_ERR_INVALID;
  }
  return attn_inputs_domain(p, q, k, v, err, err_len);
}

int attn_inputs_domain(const attn_problem *p, const float *q, const void *k, const void *v,
                       char *err, size_t err_len) {
  if (p->layout) {
    const int rc = attn_layout_inputs_check(p, q, k, v, err, err_len);
    return rc != ATTN_OK ? rc : options_check(p, err, err_len);
  }
  // 1. finite elements
  const attn_dtype kt = p->kv_dtype;
  const struct {
    const char *name;
    attn_dtype type;
    const void *x;
    size_t n;
    int64_t n1, n2, n3;
  } t[3] = {{"Q", ATTN_DTYPE_F32, q, attn_q_elems(p), p->heads, p->seq_q, p->head_dim_qk},
            {"K", kt, k, attn_k_elems(p), p->kv_heads, p->seq_kv, p->head_dim_qk},
            {"V", kt, v, attn_v_elems(p), p->kv_heads, p->seq_kv, p->head_dim_v}};
  for (int i = 0; i < 3; i++) {
    const size_t bad = first_nonfinite(t[i].type, t[i].x, t[i].n3, t[i].n);
    if (bad < t[i].n) {
      char at[96];
      coords(bad, t[i].n1, t[i].n2, t[i].n3, at, sizeof at);
      return attn_fail(err, err_len, "input %s%s = %g is not finite (inputs must be finite)",
                       t[i].name, at, (double)elem(t[i].type, t[i].x, t[i].n3, bad)),
             ATTN_ERR_RANGE;
    }
  }
  // 1b. the compute mode's range: every input its rounding keeps finite
  const attn_compute_range cr = attn_compute_range_of(p->compute);
  for (int i = 0; i < 3; i++) {
    const double limit = i ? cr.kv : cr.q;
    if (isinf(limit)) continue;
    const size_t bad = first_above(t[i].type, t[i].x, t[i].n3, t[i].n, limit);
    if (bad < t[i].n) {
      char at[96];
      coords(bad, t[i].n1, t[i].n2, t[i].n3, at, sizeof at);
      return attn_range_fail(err, err_len, "input %s%s = %g exceeds %.9g, %s", t[i].name, at,
                             (double)elem(t[i].type, t[i].x, t[i].n3, bad), limit, cr.why);
    }
  }
  // 2. scores: max(1,|scale|)·max‖q_i‖·max‖k_j‖ per (batch, K/V group)
  const double s = fmax(1.0, fabs((double)p->scale));
  const int64_t group = p->heads / p->kv_heads, dqk = p->head_dim_qk;
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t g = 0; g < p->kv_heads; g++) {
      const void *kh = (const char *)k + ((size_t)b * (size_t)p->kv_heads + (size_t)g) *
                                             (size_t)p->seq_kv * attn_kv_row_bytes(kt, dqk);
      const float *qg =
          q + ((size_t)b * (size_t)p->heads + (size_t)(g * group)) * (size_t)p->seq_q * (size_t)dqk;
      const double kn = max_row_norm(kt, kh, p->seq_kv, dqk);
      const double qn = max_row_norm(ATTN_DTYPE_F32, qg, group * p->seq_q, dqk);
      const double bound = s * qn * kn;
      if (bound > ATTN_SCORE_LIMIT)
        return attn_fail(err, err_len,
                         "scores may overflow float32: max(1,|scale|)*max|q|*max|k| = "
                         "%.3g*%.3g*%.3g = %.3g exceeds the limit %.3g (batch %lld, K/V head "
                         "%lld; Euclidean row norms)",
                         s, qn, kn, bound, ATTN_SCORE_LIMIT, (long long)b, (long long)g),
               ATTN_ERR_RANGE;
      // 2b. a pre-scaled operand (scale·Q, or scale·K) stays finite: with ‖k‖ < 1 the
      // bound above allows |scale|·‖q‖ up to 2^128 and beyond. (|scale| ≤ 1 cannot grow
      // an element.)
      const double sa = fabs((double)p->scale), big = fmax(qn, kn);
      if (sa > 1.0 && sa * big > ATTN_SCORE_LIMIT)
        return attn_fail(err, err_len,
                         "the scaled %s may overflow float32: |scale|*max|%s| = %.3g*%.3g = "
                         "%.3g exceeds the limit %.3g (batch %lld, K/V head %lld; Euclidean "
                         "row norms)",
                         qn >= kn ? "queries" : "keys", qn >= kn ? "q" : "k", sa, big, sa * big,
                         ATTN_SCORE_LIMIT, (long long)b, (long long)g),
               ATTN_ERR_RANGE;
    }
  }
  // 3. the V accumulation: seq_kv·max|v|
  double vmax = 0.0;
  size_t vat = 0;
  for (size_t i = 0; i < t[2].n; i++) {
    const double a = fabs((double)elem(kt, v, p->head_dim_v, i));
    if (a > vmax) vmax = a, vat = i;
  }
  if ((double)p->seq_kv * vmax > ATTN_VALUE_LIMIT) {
    char at[96];
    coords(vat, t[2].n1, t[2].n2, t[2].n3, at, sizeof at);
    return attn_fail(err, err_len,
                     "the V accumulation may overflow float32: seq_kv*max|v| = %lld*%.3g "
                     "(|V%s|) = %.3g exceeds the limit %.3g",
                     (long long)p->seq_kv, vmax, at, (double)p->seq_kv * vmax, ATTN_VALUE_LIMIT),
           ATTN_ERR_RANGE;
  }
  return options_check(p, err, err_len);
}

// 4. the options' arrays (dense and layout problems).
static int options_check(const attn_problem *p, char *err, size_t err_len) {
  const attn_options *o = p->opts;
  if (o) {
    // |j − i − off| < seq_q + seq_kv + |off| ≤ 2·max(seq_q, seq_kv) + |off|
    const double dist = 2.0 * (double)(p->seq_q > p->seq_kv ? p->seq_q : p->seq_kv) +
                        fabs((double)attn_diag_offset(p));
    for (int64_t h = 0; h < p->heads; h++) {
      if (o->alibi_slopes && !(fabs((double)o->alibi_slopes[h]) * dist <= ATTN_SCORE_LIMIT))
        return attn_fail(err, err_len,
                         "ALiBi slope[%lld] = %g is not finite or |slope|*2*max(seq) exceeds "
                         "%.3g",
                         (long long)h, (double)o->alibi_slopes[h], ATTN_SCORE_LIMIT),
               ATTN_ERR_RANGE;
      // a subnormal slope reads as 0 in a kernel (DAZ) and not in the reference
      if (o->alibi_slopes && float_subnormal(o->alibi_slopes[h]))
        return attn_fail(err, err_len,
                         "ALiBi slope[%lld] = %g is subnormal: slopes must be 0 or normal "
                         "float32 (|slope| >= %g)",
                         (long long)h, (double)o->alibi_slopes[h], (double)FLT_MIN),
               ATTN_ERR_RANGE;
      if (o->sinks && !(fabs((double)o->sinks[h]) <= ATTN_SCORE_LIMIT))
        return attn_fail(err, err_len, "sink[%lld] = %g is not finite or exceeds %.3g in magnitude",
                         (long long)h, (double)o->sinks[h], ATTN_SCORE_LIMIT),
               ATTN_ERR_RANGE;
    }
    if (o->mask) {
      const size_t n = attn_mask_elems(p);
      for (size_t i = 0; i < n; i++) {
        const float x = o->mask[i];
        if (x == -INFINITY || fabs((double)x) <= ATTN_SCORE_LIMIT) continue;
        return attn_fail(err, err_len,
                         "mask[%zu] = %g: mask values must be -inf or finite with magnitude "
                         "<= %.3g",
                         i, (double)x, ATTN_SCORE_LIMIT),
               ATTN_ERR_RANGE;
      }
    }
  }
  if (err && err_len) err[0] = '\0';
  return ATTN_OK;
}
