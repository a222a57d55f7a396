// SPDX-License-Identifier: MIT
// The interface contract: validation messages, sizes, visible-key counts (bottom-right
// causal alignment), FLOP counts, registry lookups and the checked call path.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attn.h"
#include "test_util.h"

static bool rejects(attn_problem p, const char *needle) {
  char err[256];
  const bool ok = attn_problem_validate(&p, err, sizeof err);
  if (ok) return false;
  if (!strstr(err, needle)) {
    fprintf(stderr, "message '%s' lacks '%s'\n", err, needle);
    return false;
  }
  return true;
}

int main(void) {
  const attn_problem good = attn_problem_make(2, 8, 2, 5, 9, 16, 32, true);
  char err[256];
  EXPECT(attn_problem_validate(&good, err, sizeof err), "valid problem rejected: %s", err);
  EXPECT(fabsf(good.scale - 0.25f) < 1e-7f, "default scale %g", good.scale);

  attn_problem p = good;
  p.batch = 0;
  EXPECT(rejects(p, "batch"), "batch 0 accepted");
  p = good, p.heads = -3;
  EXPECT(rejects(p, "heads"), "negative heads accepted");
  p = good, p.kv_heads = 3;
  EXPECT(rejects(p, "multiple of kv_heads"), "heads %% kv_heads != 0 accepted");
  p = good, p.seq_kv = 0;
  EXPECT(rejects(p, "seq_kv"), "seq_kv 0 accepted");
  p = good, p.head_dim_v = 0;
  EXPECT(rejects(p, "head_dim_v"), "head_dim_v 0 accepted");
  p = good, p.scale = NAN;
  EXPECT(rejects(p, "scale"), "NaN scale accepted");
  p = good, p.scale = INFINITY;
  EXPECT(rejects(p, "scale"), "infinite scale accepted");
  p = good, p.seq_q = INT64_MAX / 2;
  EXPECT(rejects(p, "overflows"), "overflowing Q accepted");
  p = good, p.seq_kv = (int64_t)1 << 40, p.head_dim_qk = (int64_t)1 << 30;
  EXPECT(rejects(p, "overflows"), "overflowing K accepted");
  EXPECT(!attn_problem_validate(NULL, err, sizeof err), "NULL problem accepted");

  // one field at a time: a problem wrong in exactly one field fails that field's check
  // alone, with the message attn_problem_validate gives
  {
    attn_options opt = {0};
    attn_problem base = good;
    base.opts = &opt;
    static float slopes[8];
    static const float mask_data[1] = {0};
    struct {
      attn_field field;
      const char *needle;
      attn_problem p;
      attn_options o;
    } one[] = {
        {ATTN_FIELD_SIZES, "seq_q", base, opt},
        {ATTN_FIELD_HEADS, "multiple of kv_heads", base, opt},
        {ATTN_FIELD_SCALE, "subnormal", base, opt},
        {ATTN_FIELD_KV_DTYPE, "multiples of 32", base, opt},
        {ATTN_FIELD_ALIGN, "align", base, opt},
        {ATTN_FIELD_WINDOW, "window left", base, opt},
        {ATTN_FIELD_SOFTCAP, "softcap", base, opt},
        {ATTN_FIELD_ALIBI, "not both", base, opt},
        {ATTN_FIELD_MASK, "mask tensor", base, opt},
        {ATTN_FIELD_COMPUTE, "compute", base, opt},
        {ATTN_FIELD_LAYOUT, "layout", base, opt},
    };
    one[0].p.seq_q = 0;
    one[1].p.kv_heads = 3;
    one[2].p.scale = 1e-40f;
    one[3].p.kv_dtype = ATTN_DTYPE_Q8_0;  // head dims 16 and 32
    one[4].o.align = (attn_align)7;
    one[5].o.window = true, one[5].o.window_left = -2;
    one[6].o.softcap = 1e30f;
    one[7].o.alibi_max_bias = 8.0f, one[7].o.alibi_slopes = slopes;
    one[8].p.seq_q = (int64_t)1 << 40, one[8].p.seq_kv = (int64_t)1 << 40;
    one[8].o.mask = mask_data;
    one[9].p.compute = (attn_compute)7;
    static const attn_layout bad_layout = {.kind = (attn_layout_kind)9};
    one[10].p.layout = &bad_layout;
    EXPECT(sizeof one / sizeof one[0] == ATTN_FIELD_COUNT, "one case per field");
    for (size_t c = 0; c < sizeof one / sizeof one[0]; c++) {
      one[c].p.opts = &one[c].o;
      EXPECT(!attn_problem_validate(&one[c].p, err, sizeof err) && strstr(err, one[c].needle),
             "field %s: validate says '%s'", attn_field_name(one[c].field), err);
      for (int f = 0; f < ATTN_FIELD_COUNT; f++) {
        if (f == (int)one[c].field) {
          err[0] = '\0';
          EXPECT(!attn_problem_check_field(&one[c].p, (attn_field)f, err, sizeof err) &&
                     strstr(err, one[c].needle),
                 "field %s: its own check passes or says '%s'", attn_field_name((attn_field)f),
                 err);
        } else {
          EXPECT(attn_problem_check_field(&one[c].p, (attn_field)f, err, sizeof err),
                 "a %s error fails the %s check: %s", attn_field_name(one[c].field),
                 attn_field_name((attn_field)f), err);
        }
      }
    }
    EXPECT(attn_problem_check_field(&base, ATTN_FIELD_KV_DTYPE, err, sizeof err) && !err[0],
           "a passing check clears err");
    attn_problem plain = good;  // options fields pass without options
    for (int f = ATTN_FIELD_ALIGN; f < ATTN_FIELD_COUNT; f++)
      EXPECT(attn_problem_check_field(&plain, (attn_field)f, err, sizeof err),
             "%s without options: %s", attn_field_name((attn_field)f), err);
    EXPECT(!attn_problem_check_field(NULL, ATTN_FIELD_SCALE, err, sizeof err), "NULL problem");
    EXPECT(!attn_problem_check_field(&good, (attn_field)ATTN_FIELD_COUNT, err, sizeof err) &&
               strstr(err, "not an attn_field"),
           "a field beyond the enum: '%s'", err);
    EXPECT(strcmp(attn_field_name(ATTN_FIELD_KV_DTYPE), "kv_dtype") == 0 &&
               strcmp(attn_field_name((attn_field)ATTN_FIELD_COUNT), "?") == 0,
           "field names");
    attn_problem zero_kv = good;  // the heads check alone does not divide by 0
    zero_kv.kv_heads = 0;
    EXPECT(!attn_problem_check_field(&zero_kv, ATTN_FIELD_HEADS, err, sizeof err) &&
               strstr(err, "kv_heads must be >= 1"),
           "kv_heads 0 in the heads check: '%s'", err);
  }

  // sizes
  EXPECT(attn_q_elems(&good) == 2u * 8 * 5 * 16, "q elems %zu", attn_q_elems(&good));
  EXPECT(attn_k_elems(&good) == 2u * 2 * 9 * 16, "k elems %zu", attn_k_elems(&good));
  EXPECT(attn_v_elems(&good) == 2u * 2 * 9 * 32, "v elems %zu", attn_v_elems(&good));
  EXPECT(attn_o_elems(&good) == 2u * 8 * 5 * 32, "o elems %zu", attn_o_elems(&good));

  // bottom-right causal alignment: row i sees j <= i + (seq_kv - seq_q)
  attn_problem c = attn_problem_make(1, 1, 1, 5, 9, 4, 4, true);
  for (int64_t i = 0; i < 5; i++)
    EXPECT(attn_visible_keys(&c, i) == i + 5, "Sq5 Skv9 row %lld sees %lld", (long long)i,
           (long long)attn_visible_keys(&c, i));
  c = attn_problem_make(1, 1, 1, 6, 3, 4, 4, true);  // seq_q > seq_kv: first rows see nothing
  const int64_t want[6] = {0, 0, 0, 1, 2, 3};
  for (int64_t i = 0; i < 6; i++)
    EXPECT(attn_visible_keys(&c, i) == want[i], "Sq6 Skv3 row %lld", (long long)i);
  c = attn_problem_make(1, 1, 1, 1, 100, 4, 4, true);  // decode sees every key
  EXPECT(attn_visible_keys(&c, 0) == 100, "decode row sees %lld",
         (long long)attn_visible_keys(&c, 0));
  c.causal = false;
  EXPECT(attn_visible_keys(&c, 0) == 100, "non-causal");

  // FLOPs: 4·B·H·Sq·Skv·D without a mask, visible pairs only with it
  attn_problem f = attn_problem_make(1, 8, 8, 2048, 2048, 64, 64, false);
  EXPECT(attn_flops(&f) == 4.0 * 8 * 2048 * 2048 * 64, "flops %g", attn_flops(&f));
  f.causal = true;
  EXPECT(attn_flops(&f) == 4.0 * 8 * 64 * (2048.0 * 2049.0 / 2), "causal flops %g", attn_flops(&f));

  // registry
  EXPECT(attn_kernel_count() >= 3, "registry has %zu kernels", attn_kernel_count());
  const char *required[] = {"reference", "naive", "blocked"};
  for (size_t i = 0; i < 3; i++) {
    const attn_kernel *k = attn_kernel_find(required[i]);
    EXPECT(k != NULL, "kernel %s not registered", required[i]);
    if (k) EXPECT(attn_kernel_available(k, NULL, 0), "portable kernel %s unavailable", k->name);
  }
  EXPECT(attn_kernel_find("no-such-kernel") == NULL, "unknown name found");
  EXPECT(attn_kernel_at(attn_kernel_count()) == NULL, "out-of-range index");
  for (size_t i = 0; i < attn_kernel_count(); i++) {
    const attn_kernel *k = attn_kernel_at(i);
    EXPECT(k->name && k->summary && k->run, "kernel %zu incomplete", i);
    EXPECT(attn_kernel_find(k->name) == k, "duplicate kernel name %s", k->name);
  }

  // the checked call path refuses bad input with a message instead of crashing
  float x[4] = {0};
  const attn_kernel *naive = attn_kernel_find("naive");
  attn_problem tiny = attn_problem_make(1, 1, 1, 1, 1, 1, 1, false);
  EXPECT(attn_kernel_call(naive, &tiny, NULL, x, x, x, NULL, err, sizeof err) == ATTN_ERR_INVALID &&
             strstr(err, "NULL"),
         "NULL output accepted: %s", err);
  tiny.kv_heads = 0;
  EXPECT(
      attn_kernel_call(naive, &tiny, NULL, x, x, x, x + 2, err, sizeof err) == ATTN_ERR_INVALID &&
          strstr(err, "kv_heads"),
      "invalid problem accepted: %s", err);
  tiny.kv_heads = 1;
  EXPECT(attn_kernel_call(naive, &tiny, NULL, x, x + 1, x + 2, x + 3, err, sizeof err) == ATTN_OK,
         "tiny call failed: %s", err);
  EXPECT(x[3] == x[2], "single key: output = v (%g vs %g)", x[3], x[2]);

  // ISA names and masking
  char names[64];
  EXPECT(strcmp(attn_isa_names(0, names, sizeof names), "none") == 0, "isa names of 0");
  EXPECT(strcmp(attn_isa_names(ATTN_ISA_AVX2 | ATTN_ISA_AVX512F, names, sizeof names),
                "avx2 avx512f") == 0,
         "isa names: %s", names);
  return test_finish("test_problem");
}
