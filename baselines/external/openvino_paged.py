# SPDX-License-Identifier: MIT
"""openvino_paged — OpenVINO's CPU plugin running its PagedAttention operator (the op
OpenVINO GenAI's continuous-batching pipeline uses), FP32 with an f32 K/V cache, on the
serving batch's own pages.

One small model per point: query [total_q][H·Dqk], the new tokens' key and value
[total_q][KVH·D], the K and V pools [num_pages][KVH][page_size][D] (attnbench's paged
layout is the plugin's cache layout), past_lens (kv_len − q_len per sequence),
subsequence_begins (cu_seqlens_q), block_indices (each sequence's pages, in order) and
block_indices_begins, the scale, max_context_len; every other input of the operator
(sliding window, ALiBi, score aggregation, cache rotation, xattention, sinks, adaptive
RKV, token types) empty or off. The operator is reached through the Python binding
`openvino.op._PagedAttentionExtension` (the plugin needs the node's rt_info
num_k_heads, k_head_size, num_v_heads, v_head_size), compiled for the CPU with the point's
thread count, INFERENCE_PRECISION_HINT f32 and KV_CACHE_PRECISION f32.

The operator appends the new tokens' K/V to the cache before attending; those are the
last q_len keys of each sequence, taken from its pages (so the pools keep their values),
and the write is part of every timed call, as in a server. The plugin also overwrites the
unused slots of a sequence's last V page, which are no input of the problem: it runs on its
own copy of the pools (made once, outside timing). Causal is bottom-right per
sequence (the operator's rule: a sequence's new tokens follow its past_lens keys).

What it cannot express, reported per point: a sequence with more query tokens than keys
(its new tokens are the last keys of their sequence), a ragged batch (the operator reads K/V from a
paged cache only), pages of any size but 32 tokens (the CPU plugin fixes the f32 cache's
block size at 32: other pool shapes are refused when the model is compiled), dense
problems (openvino_sdpa runs those), and attention options (none are passed).
"""
import attn_options  # baselines/external (attn_baseline.py puts it on the path)
import hugepages

NAME = "openvino_paged"
SUMMARY = "OpenVINO CPU plugin: PagedAttention (continuous batching), FP32, f32 cache"
PACKAGES = ("openvino",)
OPTIONS = set()
LAYOUTS = ("paged",)
LAYOUT_NOTE = "its PagedAttention reads K/V from a paged cache only (no ragged K/V)"
BLOCK = 32  # the CPU plugin's block size for an f32 cache


def available():
    return attn_options.importable("openvino", "OpenVINO")


def supports(problem):
    lay = problem.get("layout")
    if not lay:
        return False, "runs serving batches only (openvino_sdpa runs dense problems)"
    if int(lay["page_size"]) != BLOCK:
        return False, ("cannot express pages of %d tokens: the CPU plugin's PagedAttention "
                       "takes pages of exactly %d with an f32 cache" % (lay["page_size"], BLOCK))
    cq, ck = lay["cu_seqlens_q"], lay["cu_seqlens_kv"]
    bad = [b for b in range(problem["batch"]) if cq[b + 1] - cq[b] > ck[b + 1] - ck[b]]
    if bad:
        return False, ("cannot express sequence %d's %d query tokens over %d keys: the "
                       "operator's new tokens are the last keys of their sequence" % (
                           bad[0], cq[bad[0] + 1] - cq[bad[0]], ck[bad[0] + 1] - ck[bad[0]]))
    if not problem["causal"]:
        return False, "cannot express a non-causal batch (new tokens follow their context)"
    return True, ""


def _ints(np, x):
    return np.ascontiguousarray(np.asarray(x, dtype=np.int32).reshape(-1))


def prepare(problem, inputs, threads):
    import numpy as np
    import openvino as ov
    import openvino._pyopenvino.op as ovop
    from openvino import opset13 as ops

    p, lay = problem, problem["layout"]
    n, H, KV, D, Dv = p["batch"], p["heads"], p["kv_heads"], p["head_dim_qk"], p["head_dim_v"]
    cq, ck, table, ps = lay["cu_seqlens_q"], lay["cu_seqlens_kv"], lay["page_table"], BLOCK
    kl = [ck[b + 1] - ck[b] for b in range(n)]
    ql = [cq[b + 1] - cq[b] for b in range(n)]
    # the new tokens: the last q_len keys of each sequence, from its pages
    slots = [(table[b][t // ps], t % ps) for b in range(n) for t in range(kl[b] - ql[b], kl[b])]
    pg = np.array([s[0] for s in slots], dtype=np.int64)
    sl = np.array([s[1] for s in slots], dtype=np.int64)
    f32, i32 = ov.Type.f32, ov.Type.i32
    params, feeds = [], []

    def param(shape, t):
        prm = ops.parameter(list(shape), t)
        params.append(prm)
        return prm.output(0)

    def const(x):
        return ops.constant(x).output(0)

    q0, k0, v0 = inputs[0]
    T = q0.shape[0]
    args = [param((T, H * D), f32), param((T, KV * D), f32), param((T, KV * Dv), f32),
            param(k0.shape, f32), param(v0.shape, f32), param((n,), i32), param((n + 1,), i32),
            param((sum(len(r) for r in table),), i32), param((n + 1,), i32),
            const(np.float32(p["scale"])), const(np.int32(0)), const(np.zeros(0, np.float32)),
            const(np.int32(max(kl))), const(np.zeros(n, np.int32)), const(np.zeros(0, np.int32)),
            const(np.zeros(0, np.int32)), const(np.zeros(0, np.float32)),
            const(np.zeros(0, np.float32)), const(np.int32(0)), const(np.int32(0)),
            const(np.zeros(0, np.float32)), const(np.int32(0)), const(np.zeros(0, np.int32)),
            const(np.zeros(0, np.int32)), const(np.zeros(0, np.int32)),
            const(np.zeros(0, np.int32)), const(np.zeros(0, np.uint8)),
            const(np.zeros(0, np.int32))]
    pa = ovop._PagedAttentionExtension(args)
    rt = pa.get_rt_info()
    rt["num_k_heads"], rt["k_head_size"], rt["num_v_heads"], rt["v_head_size"] = KV, D, KV, Dv
    model = ov.Model([pa.output(0)], params)
    cfg = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32",
           "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
           "NUM_STREAMS": 1}
    compiled = ov.Core().compile_model(model, "CPU", cfg)
    meta = [_ints(np, [kl[b] - ql[b] for b in range(n)]), _ints(np, cq),
            _ints(np, [e for r in table for e in r]),
            _ints(np, np.cumsum([0] + [len(r) for r in table]))]
    reqs = []
    for q, k, v in inputs:  # one request per input copy, its tensors bound once
        knew = np.ascontiguousarray(k[pg, :, sl, :].reshape(T, KV * D))
        vnew = np.ascontiguousarray(v[pg, :, sl, :].reshape(T, KV * Dv))
        # the pools copied: the plugin also writes the unused slots of a sequence's last
        # V page (not inputs of the problem, but of the export's digest)
        arrays = [np.ascontiguousarray(q.reshape(T, H * D)), knew, vnew, hugepages.copy(k), hugepages.copy(v)] + meta
        r = compiled.create_infer_request()
        for i, a in enumerate(arrays):
            r.set_input_tensor(i, ov.Tensor(a, shared_memory=True))
        feeds.append(arrays)
        reqs.append(r)

    def timed(c):
        reqs[c].infer()

    def fn(c):
        timed(c)
        return np.array(reqs[c].get_output_tensor(0).data, dtype=np.float32).reshape(T, H, Dv)

    fn.timed = timed
    fn.feeds = feeds  # kept alive: the requests' tensors share their memory
    return fn, {"version": ov.__version__, "threads": threads, "op": "PagedAttentionExtension",
                "kv_cache": "f32", "block_size": BLOCK}
