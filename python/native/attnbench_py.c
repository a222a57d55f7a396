// SPDX-License-Identifier: MIT
// attnbench_py.c — the flat C interface the Python module (python/attnbench) loads with
// ctypes. It takes plain integers, floats and pointers only, so the Python side never
// depends on the layout of attn_problem / attn_exec / attn_check_result: a field added to
// those structs (kernels/attn.h) changes this file, not the Python code.
//
// Problem arguments, everywhere below: dims = {batch, heads, kv_heads, seq_q, seq_kv,
// head_dim_qk, head_dim_v}; has_scale == 0 means the default scale 1/sqrt(head_dim_qk).
// Status codes: the kernels' ATTN_OK / ATTN_ERR_INVALID / ATTN_ERR_NOMEM / ATTN_ERR_RANGE
// (any other positive value is a kernel's own code), and the ATTNPY_* codes below.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn.h"
#include "check/check.h"

#define ATTNPY_EXPORT __attribute__((visibility("default")))

enum {
  ATTNPY_ABI = 1,                // bumped when a signature below changes
  ATTNPY_ERR_UNKNOWN = -1,       // no kernel of that name
  ATTNPY_ERR_UNAVAILABLE = -2,   // the CPU lacks an ISA the kernel needs
  ATTNPY_ERR_INVALID_EXEC = -3,  // threads / tiles outside their limits
};

ATTNPY_EXPORT int attnpy_abi(void) {
  return ATTNPY_ABI;
}

ATTNPY_EXPORT size_t attnpy_kernel_count(void) {
  return attn_kernel_count();
}

// Record i: name, summary, required ISA names, capability bits, availability (why when not).
ATTNPY_EXPORT int attnpy_kernel_info(size_t i, const char **name, const char **summary, char *isa,
                                     size_t isa_len, uint32_t *caps, int *available, char *why,
                                     size_t why_len) {
  const attn_kernel *k = attn_kernel_at(i);
  if (!k) return ATTNPY_ERR_UNKNOWN;
  *name = k->name, *summary = k->summary ? k->summary : "";
  attn_isa_names(k->required_isa, isa, isa_len);
  *caps = k->caps;
  if (why_len) why[0] = '\0';
  *available = attn_kernel_available(k, why, why_len);
  return ATTN_OK;
}

static int problem_of(const int64_t *dims, int causal, int has_scale, double scale, attn_problem *p,
                      char *err, size_t err_len) {
  *p =
      attn_problem_make(dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], causal != 0);
  if (has_scale) p->scale = (float)scale;
  if (has_scale && isfinite(scale) && !isfinite(p->scale)) {
    snprintf(err, err_len, "scale %g does not fit in float32", scale);
    return ATTN_ERR_INVALID;
  }
  return attn_problem_validate(p, err, err_len) ? ATTN_OK : ATTN_ERR_INVALID;
}

static int kernel_of(const char *name, const attn_kernel **k, char *err, size_t err_len) {
  *k = attn_kernel_find(name);
  if (!*k) {
    snprintf(err, err_len, "unknown kernel '%s' (attnbench.kernels() lists them)", name);
    return ATTNPY_ERR_UNKNOWN;
  }
  char why[96];
  if (!attn_kernel_available(*k, why, sizeof why)) {
    snprintf(err, err_len, "kernel %s is unavailable on this CPU: %s", name, why);
    return ATTNPY_ERR_UNAVAILABLE;
  }
  return ATTN_OK;
}

static int exec_of(int threads, int tile_q, int tile_kv, attn_exec *e, char *err, size_t err_len) {
  *e = (attn_exec){.threads = threads, .tile_q = tile_q, .tile_kv = tile_kv};
  return attn_exec_check(e, err, err_len) == ATTN_OK ? ATTN_OK : ATTNPY_ERR_INVALID_EXEC;
}

// Validates the problem alone (the Python side checks shapes against it first).
ATTNPY_EXPORT int attnpy_problem_check(const int64_t *dims, int causal, int has_scale, double scale,
                                       char *err, size_t err_len) {
  attn_problem p;
  return problem_of(dims, causal, has_scale, scale, &p, err, err_len);
}

// Runs kernel `name` through attn_kernel_call (problem, exec, ISA and input domain checked).
ATTNPY_EXPORT int attnpy_run(const char *name, const int64_t *dims, int causal, int has_scale,
                             double scale, int threads, int tile_q, int tile_kv, const float *q,
                             const float *k, const float *v, float *o, char *err, size_t err_len) {
  if (err_len) err[0] = '\0';
  const attn_kernel *kern;
  attn_problem p;
  attn_exec e;
  int rc = kernel_of(name, &kern, err, err_len);
  if (rc == ATTN_OK) rc = problem_of(dims, causal, has_scale, scale, &p, err, err_len);
  if (rc == ATTN_OK) rc = exec_of(threads, tile_q, tile_kv, &e, err, err_len);
  if (rc == ATTN_OK) rc = attn_kernel_call(kern, &p, &e, q, k, v, o, err, err_len);
  return rc;
}

// The checker's verdict (kernels/check/check.h). With name != NULL: runs that kernel on
// q, k, v and compares; with name == NULL: compares the caller's output o. stats gets
// {max_abs_err, max_rel_err, worst_ratio, worst_index}; *verdict an attn_check_verdict;
// message the checker's reason (empty on pass). ref, if not NULL, gets the reference O.
// With name == NULL and o == NULL nothing is compared (*verdict = -1): the reference only.
ATTNPY_EXPORT int attnpy_check(const char *name, const int64_t *dims, int causal, int has_scale,
                               double scale, int threads, int tile_q, int tile_kv, const float *q,
                               const float *k, const float *v, const float *o, float *ref,
                               int *verdict, double *stats, char *message, size_t message_len) {
  if (message_len) message[0] = '\0';
  const attn_kernel *kern = NULL;
  attn_problem p;
  attn_exec e;
  int rc = name ? kernel_of(name, &kern, message, message_len) : ATTN_OK;
  if (rc == ATTN_OK) rc = problem_of(dims, causal, has_scale, scale, &p, message, message_len);
  if (rc == ATTN_OK) rc = exec_of(threads, tile_q, tile_kv, &e, message, message_len);
  if (rc != ATTN_OK) return rc;
  attn_check_prepared *pc = attn_check_prepare_inputs(&p, q, k, v, message, message_len);
  if (!pc) return ATTN_ERR_NOMEM;
  attn_check_result r = {.verdict = (attn_check_verdict)-1};
  if (kern)
    attn_check_kernel(kern, pc, &e, &r);
  else if (o)
    attn_check_output(pc, o, &r);
  if (ref) memcpy(ref, attn_check_reference_output(pc), attn_o_elems(&p) * sizeof(float));
  attn_check_prepared_free(pc);
  *verdict = (int)r.verdict;
  stats[0] = r.max_abs_err, stats[1] = r.max_rel_err, stats[2] = r.worst_ratio;
  stats[3] = (double)r.worst_index;
  snprintf(message, message_len, "%s", r.message);
  return ATTN_OK;
}
