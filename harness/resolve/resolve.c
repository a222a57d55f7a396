// SPDX-License-Identifier: MIT
// The harness's settings layers and the resolver call (see resolve.h).
#include "resolve/resolve.h"

#include <stdlib.h>
#include <string.h>

#include "machine/topology.h"
#include "tune/tunefile.h"

static const char *process_getenv(const char *name) {
  return getenv(name);
}

int attn_resolve_env(attn_setting_layer *env, char *err, size_t err_len) {
  static struct {
    int state;  // 0 = not read yet, 1 = read, −1 = a value is malformed (err says which)
    attn_setting_layer layer;
    char err[192];
  } g;
  if (g.state == 0) {
    attn_setting_layer_clear(&g.layer);
    g.state = attn_settings_env(&g.layer, process_getenv, g.err, sizeof g.err) == 0 ? 1 : -1;
  }
  if (g.state < 0) {
    if (err && err_len) snprintf(err, err_len, "%s", g.err);
    return -1;
  }
  if (env) *env = g.layer;
  return 0;
}

bool attn_resolve_env_bad(const char *command) {
  char err[256];
  if (attn_resolve_env(NULL, err, sizeof err) == 0) return false;
  fprintf(stderr, "attnbench %s: %s\n", command, err);
  return true;
}

void attn_resolve_tune_layer(const attn_kernel *k, const attn_problem *p, attn_setting_layer *l) {
  attn_setting_layer_clear(l);
  int tq, tkv, kv = 0;
  char rt[32] = "", cls[32], what[ATTN_SETTING_WHAT];
  if (!k || !attn_tune_lookup(k, p, &tq, &tkv)) return;
  attn_tune_class(p, cls, sizeof cls);
  snprintf(what, sizeof what, "[%s %s]", k->name, cls);
  attn_setting_layer_set(l, ATTN_SETTING_TILE_Q, tq, what);
  attn_setting_layer_set(l, ATTN_SETTING_TILE_KV, tkv, what);
  if (attn_tune_lookup_variant(k, p, rt, sizeof rt, &kv)) {
    char rt_what[2 * ATTN_SETTING_WHAT];
    snprintf(rt_what, sizeof rt_what, "the tuning file's regtile %s", what);
    if (rt[0]) attn_setting_layer_regtile(l, rt, rt_what);
    if (kv > 0) attn_setting_layer_set(l, ATTN_SETTING_KV_SPLIT, kv, what);
  }
}

void attn_resolve_machine_layer(const attn_problem *p, attn_setting_layer *l) {
  attn_setting_layer_clear(l);
  const attn_topology *t = attn_topology_get();
  if (!t->ok) return;
  attn_settings_machine(l, p, (size_t)t->l1d_bytes, (size_t)t->l2_bytes,
                        t->set_cores > 0 ? t->set_cores : 0, t->set_cores > 0);
}

int attn_resolve(const attn_kernel *k, const attn_problem *p, const attn_setting_layer *cli,
                 const attn_setting_layer *config, unsigned flags, attn_settings *s,
                 attn_setting_fault *fault, char *err, size_t err_len) {
  static attn_setting_layers ls;  // large-ish; the harness resolves from one thread
  attn_setting_layers_clear(&ls);
  if (cli) ls.layer[ATTN_SOURCE_CLI] = *cli;
  if (config) ls.layer[ATTN_SOURCE_CONFIG] = *config;
  if (attn_resolve_env(&ls.layer[ATTN_SOURCE_ENV], err, err_len) != 0) {
    if (fault) *fault = (attn_setting_fault){ATTN_SETTING_COUNT, ATTN_SOURCE_ENV};
    return -1;
  }
  if (flags & ATTN_RESOLVE_NO_ENV_TUNING) {
    attn_setting_layer *env = &ls.layer[ATTN_SOURCE_ENV];
    static const attn_setting kTuned[] = {ATTN_SETTING_TILE_Q, ATTN_SETTING_TILE_KV,
                                          ATTN_SETTING_REGTILE, ATTN_SETTING_KV_SPLIT};
    for (size_t i = 0; i < sizeof kTuned / sizeof kTuned[0]; i++)
      env->value[kTuned[i]] = ATTN_SETTING_UNSET, env->what[kTuned[i]][0] = '\0';
    env->regtile[0] = '\0';
  }
  if (!(flags & ATTN_RESOLVE_NO_TUNE_FILE))
    attn_resolve_tune_layer(k, p, &ls.layer[ATTN_SOURCE_TUNE_FILE]);
  attn_resolve_machine_layer(p, &ls.layer[ATTN_SOURCE_MACHINE]);
  return attn_settings_resolve(k, p, &ls, s, fault, err, err_len);
}

int attn_resolve_default_threads(void) {
  const attn_problem any = attn_problem_make(1, 1, 1, 1, 1, 1, 1, false);  // not consulted
  attn_settings s;
  char err[256];
  // On failure (the thread cap) exec.threads still holds the value: the caller refuses it.
  (void)attn_resolve(NULL, &any, NULL, NULL, ATTN_RESOLVE_NO_TUNE_FILE, &s, NULL, err, sizeof err);
  return s.exec.threads;
}

int attn_resolve_exit_code(const attn_setting_fault *f) {
  const bool user = f->source == ATTN_SOURCE_CLI || f->source == ATTN_SOURCE_CONFIG ||
                    f->source == ATTN_SOURCE_ENV;
  return (f->field == ATTN_SETTING_REGTILE && user) || f->field == ATTN_SETTING_COUNT ? 2 : 1;
}

void attn_resolve_print(FILE *out, const attn_kernel *k, const attn_problem *p,
                        const attn_settings *s) {
  char text[1024];
  attn_settings_explain(s, k, text, sizeof text);
  fprintf(out, "settings of %s on B=%lld H=%lld KVH=%lld Sq=%lld Skv=%lld Dqk=%lld Dv=%lld%s:\n%s",
          k ? k->name : "(no kernel)", (long long)p->batch, (long long)p->heads,
          (long long)p->kv_heads, (long long)p->seq_q, (long long)p->seq_kv,
          (long long)p->head_dim_qk, (long long)p->head_dim_v, p->causal ? " causal" : "", text);
}
