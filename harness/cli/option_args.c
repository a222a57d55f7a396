// SPDX-License-Identifier: MIT
// option_args.c — see option_args.h.
#include "cli/option_args.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cli_args.h"
#include "machine/placement.h"
#include "plugins/isolate.h"  // ATTN_ISOLATE_DEFAULT_TIMEOUT, ATTN_ISOLATE_MAX_TIMEOUT
#include "resolve/resolve.h"
#include "tune/tunefile.h"

int exec_args_setup(const char *cmd, const exec_args *a) {
  if (attn_resolve_env_bad(cmd)) return ATTNBENCH_EXIT_USAGE;  // ATTNBENCH_TILE_* etc.
  if (attn_placement_bind_bad(cmd, a->bind)) return ATTNBENCH_EXIT_USAGE;
  const int rc = attn_tune_setup(cmd, a->tune_file);  // a bad tuning file: exit 1
  return rc ? rc : -1;
}

void exec_args_layer(const exec_args *a, attn_setting_layer *cli) {
  attn_setting_layer_clear(cli);
  if (a->threads > 0) attn_setting_layer_set(cli, ATTN_SETTING_THREADS, a->threads, "--threads");
  if (a->tile_q > 0) attn_setting_layer_set(cli, ATTN_SETTING_TILE_Q, a->tile_q, "--tile-q");
  if (a->tile_kv > 0) attn_setting_layer_set(cli, ATTN_SETTING_TILE_KV, a->tile_kv, "--tile-kv");
  if (a->regtile) attn_setting_layer_regtile(cli, a->regtile, "--regtile");
  if (a->kv_split_given)
    attn_setting_layer_set(cli, ATTN_SETTING_KV_SPLIT, a->kv_split, "--kv-split");
  if (a->bind)  // checked up front (exec_args_setup)
    attn_setting_layer_set(cli, ATTN_SETTING_BIND,
                           strcmp(a->bind, "none") ? ATTN_BIND_CORES : ATTN_BIND_NONE, "--bind");
}

// "L,R" with each side a whole number in 0..INT64_MAX or "inf" (unbounded).
static bool parse_window(const char *text, int64_t *left, int64_t *right) {
  const char *comma = strchr(text, ',');
  if (!comma || strchr(comma + 1, ',')) return false;
  int64_t *side[2] = {left, right};
  const char *part[2] = {text, comma + 1};
  const size_t len[2] = {(size_t)(comma - text), strlen(comma + 1)};
  for (int i = 0; i < 2; i++) {
    if (len[i] == 3 && strncmp(part[i], "inf", 3) == 0) {
      *side[i] = ATTN_WINDOW_UNBOUNDED;
      continue;
    }
    if (len[i] == 0) return false;
    int64_t x = 0;  // up to INT64_MAX, the largest side attn.h takes
    for (size_t c = 0; c < len[i]; c++) {
      if (part[i][c] < '0' || part[i][c] > '9') return false;
      const int digit = part[i][c] - '0';
      if (x > (INT64_MAX - digit) / 10) return false;
      x = x * 10 + digit;
    }
    *side[i] = x;
  }
  return true;
}

// The options' values that come from the command line itself (the arrays come from
// files: option_args_load); the window's syntax is checked first (option_args_validate).
static attn_options scalar_options(const option_args *a) {
  attn_options o = {0};
  if (a->window) {
    o.window = true;
    parse_window(a->window, &o.window_left, &o.window_right);
  }
  if (a->align && strcmp(a->align, "top-left") == 0) o.align = ATTN_ALIGN_TOP_LEFT;
  if (a->softcap_given) o.softcap = (float)a->softcap;
  if (a->alibi_given) o.alibi_max_bias = (float)a->alibi;
  return o;
}

size_t option_args_inputs(const option_args *a, const exec_args *x, attn_input_file *in, size_t n,
                          size_t cap) {
  const attn_input_file files[] = {{"ALiBi slopes input (--alibi-slopes)", a->slopes_path},
                                   {"sinks input (--sinks)", a->sinks_path},
                                   {"mask input (--mask)", a->mask_path},
                                   {"tuning file", x ? attn_tune_read_path() : NULL}};
  for (size_t i = 0; i < sizeof files / sizeof files[0] && n < cap; i++)
    if (files[i].path) in[n++] = files[i];
  return n;
}

int option_args_validate(const char *cmd, const option_args *a) {
  int64_t l, r;
  if (a->window && !parse_window(a->window, &l, &r)) {
    fprintf(stderr,
            "attnbench %s: --window '%s': want L,R with each a whole number in 0..2^63-1 or "
            "'inf'\n",
            cmd, a->window);
    return ATTNBENCH_EXIT_USAGE;
  }
  if (a->align && strcmp(a->align, "top-left") && strcmp(a->align, "bottom-right")) {
    fprintf(stderr, "attnbench %s: --align '%s': want top-left or bottom-right\n", cmd, a->align);
    return ATTNBENCH_EXIT_USAGE;
  }
  // The window and the alignment are valid as parsed; softcap and max_bias are checked by
  // the problem's own rules (attn_problem_check_field) on the float32 value the kernels
  // get, and a value given must not be 0 ("off"): 1e-50 > 0 as typed rounds to 0.
  const attn_options o = scalar_options(a);
  const attn_problem probe = {.opts = &o};  // the option fields read no size
  if (a->softcap_given &&
      (o.softcap == 0.0f || !attn_problem_check_field(&probe, ATTN_FIELD_SOFTCAP, NULL, 0))) {
    fprintf(stderr,
            "attnbench %s: --softcap %g: want C in [%g, %g] as float32 (smaller values flush "
            "to 0 in kernels)\n",
            cmd, a->softcap, (double)ATTN_SOFTCAP_MIN, (double)ATTN_SOFTCAP_MAX);
    return ATTNBENCH_EXIT_USAGE;
  }
  if (a->alibi_given &&
      (o.alibi_max_bias == 0.0f || !attn_problem_check_field(&probe, ATTN_FIELD_ALIBI, NULL, 0))) {
    fprintf(stderr,
            "attnbench %s: --alibi %g: want MAX_BIAS in [%g, %g] as float32 (smaller values "
            "flush to 0 in kernels; above %g the slopes 2^-max_bias... do)\n",
            cmd, a->alibi, (double)ATTN_ALIBI_MAX_BIAS_MIN, (double)ATTN_ALIBI_MAX_BIAS_MAX,
            (double)ATTN_ALIBI_MAX_BIAS_MAX);
    return ATTNBENCH_EXIT_USAGE;
  }
  if (a->alibi_given && a->slopes_path) {  // two options for one field
    fprintf(stderr, "attnbench %s: give --alibi or --alibi-slopes, not both\n", cmd);
    return ATTNBENCH_EXIT_USAGE;
  }
  return -1;
}

// An option array from .npy: float32 of exactly the shape given (ndim dims).
static bool load_array(const char *cmd, const char *flag, const char *path, int ndim,
                       const int64_t *shape, const char *layout, npy_array *a) {
  char err[600];
  if (!npy_read_f32(path, a, err, sizeof err)) {
    fprintf(stderr, "attnbench %s: %s: %s\n", cmd, flag, err);
    return false;
  }
  bool ok = a->ndim == ndim;
  for (int i = 0; ok && i < ndim; i++) ok = a->shape[i] == shape[i];
  if (ok) return true;
  char got[128], want[128];
  fprintf(stderr, "attnbench %s: %s %s has shape %s; want %s %s\n", cmd, flag, path,
          npy_shape_string(a->ndim, a->shape, got, sizeof got),
          npy_shape_string(ndim, shape, want, sizeof want), layout);
  npy_free(a);
  return false;
}

bool option_args_load(const char *cmd, const option_args *a, const attn_problem *p, attn_options *o,
                      npy_array *slopes, npy_array *sinks, npy_array *mask) {
  *o = scalar_options(a);  // checked by option_args_validate
  const int64_t heads[1] = {p->heads};
  if (a->slopes_path) {
    if (!load_array(cmd, "--alibi-slopes", a->slopes_path, 1, heads, "[heads]", slopes))
      return false;
    o->alibi_slopes = slopes->data;
  }
  if (a->sinks_path) {
    if (!load_array(cmd, "--sinks", a->sinks_path, 1, heads, "[heads]", sinks)) return false;
    o->sinks = sinks->data;
  }
  if (a->mask_path) {
    char err[600];
    if (!npy_read_f32(a->mask_path, mask, err, sizeof err)) {
      fprintf(stderr, "attnbench %s: --mask: %s\n", cmd, err);
      return false;
    }
    const int64_t m2[2] = {p->seq_q, p->seq_kv}, m4[4] = {p->batch, p->heads, p->seq_q, p->seq_kv};
    const bool two = mask->ndim == 2 && mask->shape[0] == m2[0] && mask->shape[1] == m2[1];
    bool four = mask->ndim == 4;
    for (int i = 0; four && i < 4; i++) four = mask->shape[i] == m4[i];
    if (!two && !four) {
      char got[128], w2[128], w4[128];
      fprintf(stderr,
              "attnbench %s: --mask %s has shape %s; want %s [seq_q][seq_kv] or %s "
              "[batch][heads][seq_q][seq_kv]\n",
              cmd, a->mask_path, npy_shape_string(mask->ndim, mask->shape, got, sizeof got),
              npy_shape_string(2, m2, w2, sizeof w2), npy_shape_string(4, m4, w4, sizeof w4));
      return false;
    }
    o->mask = mask->data;
    o->mask_per_head = four;
    attn_problem with_mask = *p;
    with_mask.opts = o;
    if (!attn_problem_check_field(&with_mask, ATTN_FIELD_MASK, err, sizeof err)) {
      fprintf(stderr, "attnbench %s: --mask %s: %s\n", cmd, a->mask_path, err);
      return false;
    }
  }
  return true;
}

bool scale_arg_apply(const char *cmd, double scale, attn_problem *p) {
  p->scale = (float)scale;
  char err[256];
  if (attn_problem_check_field(p, ATTN_FIELD_SCALE, err, sizeof err)) return true;
  fprintf(stderr, "attnbench %s: --scale %g: %s\n", cmd, scale, err);
  return false;
}

bool compute_arg_apply(const char *cmd, attn_compute mode, attn_problem *p) {
  p->compute = mode;
  char err[256];
  if (attn_problem_check_field(p, ATTN_FIELD_COMPUTE, err, sizeof err)) return true;
  fprintf(stderr, "attnbench %s: --compute %s: %s\n", cmd, attn_compute_name(mode), err);
  return false;
}

#define ATTN_STRINGIFY_(x) #x
#define ATTN_STRINGIFY(x) ATTN_STRINGIFY_(x)  // "1e6": the limit as written in isolate.h

bool attn_case_timeout_settle(const char *command, double *seconds, bool given) {
  if (!given) *seconds = ATTN_ISOLATE_DEFAULT_TIMEOUT;
  if (*seconds > 0.0 && *seconds <= ATTN_ISOLATE_MAX_TIMEOUT) return true;
  fprintf(stderr,
          "attnbench %s: --case-timeout %g: expected seconds in (0, " ATTN_STRINGIFY(
              ATTN_ISOLATE_MAX_TIMEOUT) "]\n",
          command, *seconds);
  return false;
}

bool attn_kv_dtype_arg(const char *cmd, const char *s, attn_dtype *out) {
  if (attn_dtype_parse(s, out)) return true;
  fprintf(stderr, "attnbench %s: --kv-dtype '%s': want f32, f16, bf16 or q8_0\n", cmd, s ? s : "");
  return false;
}

bool attn_compute_arg(const char *cmd, const char *s, attn_compute *out) {
  if (attn_compute_parse(s, out)) return true;
  fprintf(stderr, "attnbench %s: --compute '%s': want f32, bf16, f16 or int8\n", cmd, s ? s : "");
  return false;
}
