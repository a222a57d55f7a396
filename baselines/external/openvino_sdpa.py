# SPDX-License-Identifier: MIT
"""openvino_sdpa — OpenVINO's CPU plugin running the opset-13 `ScaledDotProductAttention`
operator, FP32 (INFERENCE_PRECISION_HINT f32).

One small model per point: Q, K, V parameters of the point's shapes -> SDPA -> O, compiled
for the CPU with the point's thread count (INFERENCE_NUM_THREADS), latency mode, one
stream. OpenVINO's `causal` is top-left aligned (PyTorch's rule); attnbench's mask is
bottom-right. They agree when Sq == Skv, so `causal` is used only then; otherwise a
boolean mask [Sq][Skv] (True = attend) states the bottom-right rule, as do alignment and
windows; ALiBi and the additive mask go in as a float mask (0 / bias / -inf). GQA/MQA:
Q is viewed as [B][KVH][G][Sq][D] and K/V as [B][KVH][1][Skv][D], which the operator
broadcasts (no copy of K/V); O is viewed back. No soft-cap and no sinks (the operator has
neither): such points are skipped with a note.

openvino_sdpa_bf16 runs the same model with INFERENCE_PRECISION_HINT bf16 — the plugin's
default on CPUs with AVX512-BF16 or AMX.
"""
import attn_options  # baselines/external (attn_baseline.py puts it on the path)

NAME = "openvino_sdpa"
SUMMARY = "OpenVINO CPU plugin: opset-13 ScaledDotProductAttention, FP32"
PACKAGES = ("openvino",)
OPTIONS = {"align", "window", "alibi", "mask"}


def available():
    return attn_options.importable("openvino", "OpenVINO")


def _mask(np, p):
    """The mask the point needs, as a numpy array, or None (causal flag or no mask)."""
    used = attn_options.used(p)
    if used & {"alibi", "mask"}:  # additive: ALiBi + mask, -inf outside each row's range
        return np.ascontiguousarray(attn_options.bias(np, p), dtype=np.float32)
    if used & {"align", "window"}:
        return attn_options.visible(np, p)
    if p["causal"] and p["seq_q"] != p["seq_kv"]:
        i = np.arange(p["seq_q"])[:, None]
        j = np.arange(p["seq_kv"])[None, :]
        return j <= i + (p["seq_kv"] - p["seq_q"])
    return None


def prepare(problem, inputs, threads, precision="f32"):
    """Returns (fn, info): fn(i) computes O for input copy i (a numpy float32 array)."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as ops

    p = problem
    B, H, KV, Sq, Skv, D, Dv = (p[k] for k in ("batch", "heads", "kv_heads", "seq_q", "seq_kv",
                                                "head_dim_qk", "head_dim_v"))
    G = H // KV
    qs, ks, vs = (B, KV, G, Sq, D), (B, KV, 1, Skv, D), (B, KV, 1, Skv, Dv)
    q_in = ops.parameter(qs, ov.Type.f32, name="q")
    k_in = ops.parameter(ks, ov.Type.f32, name="k")
    v_in = ops.parameter(vs, ov.Type.f32, name="v")
    mask = _mask(np, p)
    causal = bool(p["causal"]) and mask is None
    scale = ops.constant(np.float32(p["scale"]))
    if mask is None:
        zero = ops.constant(np.zeros((), dtype=np.float32))
        sdpa = ops.scaled_dot_product_attention(q_in, k_in, v_in, zero, scale, causal=causal)
    else:
        # per head (and per batch, or one for every batch, broadcast): the grouped view
        m = mask.reshape(mask.shape[-2:]) if mask.size == Sq * Skv else \
            mask.reshape(mask.size // (H * Sq * Skv), KV, G, Sq, Skv)
        sdpa = ops.scaled_dot_product_attention(q_in, k_in, v_in, ops.constant(m), scale,
                                                causal=False)
    model = ov.Model([sdpa], [q_in, k_in, v_in], "attnbench_sdpa")
    core = ov.Core()
    config = {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads,
              "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    views = [(q.reshape(qs), k.reshape(ks), v.reshape(vs)) for q, k, v in inputs]

    def run(c):
        q, k, v = views[c]
        request.infer({0: q, 1: k, 2: v}, share_inputs=True)
        return request.get_output_tensor(0).data

    def fn(c):
        return np.ascontiguousarray(run(c), dtype=np.float32).reshape(B, H, Sq, Dv)

    fn.timed = run  # the result stays in OpenVINO's buffer while timed
    info = {"version": ov.__version__, "threads": threads,
            "precision": str(compiled.get_property("INFERENCE_PRECISION_HINT")),
            "mask": "none" if mask is None else str(mask.dtype)}
    return fn, info
