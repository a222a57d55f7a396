# SPDX-License-Identifier: MIT
"""ort_attention — ONNX Runtime (CPU execution provider), FP32.

Two graphs per point, and the faster one is timed (its name is recorded in `op`):
  * the standard ONNX `Attention` operator (opset 23) on 4-D inputs [B][H][S][D], which
    takes GQA/MQA directly (kv_num_heads divides q_num_heads);
  * `com.microsoft.MultiHeadAttention` on [B][S][H·D] inputs, for MHA shapes only
    (kv_heads == heads); the transposes into that layout are done once, outside timing.
ONNX's `is_causal` is top-left aligned; attnbench's mask is bottom-right. They agree when
Sq == Skv, so the causal flag is used only then; otherwise `Attention` gets an explicit
boolean mask [Sq][Skv] (True = attend) and `MultiHeadAttention` an additive bias
(0 / -inf). Threads: intra_op_num_threads = the point's threads, inter_op 1, sequential.

Options (attn_options.py): `Attention` has a `softcap` attribute (applied after scaling,
before the mask: attnbench's order) and takes alignment, windows, ALiBi and the additive
mask as a float attn_mask (0 / bias / -inf, broadcast over batch and heads); `MultiHead-
Attention` the same through attention_bias, without soft-cap. For points with a window,
a soft-cap or sinks, `com.microsoft.GroupQueryAttention` is a third candidate: its own
local_window_size (a causal window's left side + 1), softcap and head_sink (ALiBi and mask
through attention_bias), bottom-right causal through its past K/V; sinks only there, so a
point with sinks it cannot take (top-left, Sq > Skv, Dv != Dqk, a two-sided window) is
skipped with a note.
"""
import time

import attn_options  # baselines/external (attn_baseline.py puts it on the path)
import hugepages

NAME = "ort_attention"
SUMMARY = "ONNX Runtime CPU: ONNX Attention (opset 23) or com.microsoft.MultiHeadAttention"
PACKAGES = ("onnxruntime", "onnx")
OPTIONS = {"align", "window", "softcap", "alibi", "mask", "sinks"}


def available():
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except Exception as e:
        return False, "onnxruntime/onnx not importable (%s)" % (str(e).splitlines() or ["?"])[0]
    return True, ""


def _session(model, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _contrib_session(graph, threads):
    """A session for a graph using com.microsoft contrib operators (opset 23 + contrib 1,
    IR version at most 10)."""
    from onnx import helper
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = min(model.ir_version, 10)
    return _session(model, threads)


def _to3(np, a):
    """[B][N][S][D] -> [B][S][N·D], contiguous (the contrib operators' 3-D layout)."""
    return hugepages.copy(a.transpose(0, 2, 1, 3).reshape(a.shape[0], a.shape[2], -1))


def _bottom_right_mask(np, sq, skv):
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    return j <= i + (skv - sq)


def _onnx_attention(np, p, inputs, threads):
    import onnx
    from onnx import TensorProto, helper
    B, H, KV, Sq, Skv, D, Dv = (p[k] for k in ("batch", "heads", "kv_heads", "seq_q", "seq_kv",
                                                "head_dim_qk", "head_dim_v"))
    used = attn_options.used(p)
    dense = bool(used & {"align", "window", "alibi", "mask"})  # a float mask states them
    square_causal = p["causal"] and Sq == Skv and not dense
    names = ["Q", "K", "V"]
    graph_inputs = [helper.make_tensor_value_info("Q", TensorProto.FLOAT, [B, H, Sq, D]),
                    helper.make_tensor_value_info("K", TensorProto.FLOAT, [B, KV, Skv, D]),
                    helper.make_tensor_value_info("V", TensorProto.FLOAT, [B, KV, Skv, Dv])]
    extra = {}
    if dense:
        m = np.ascontiguousarray(attn_options.bias(np, p), dtype=np.float32)
        names.append("M")
        graph_inputs.append(helper.make_tensor_value_info("M", TensorProto.FLOAT, list(m.shape)))
        extra["M"] = m
    elif p["causal"] and not square_causal:
        names.append("M")
        graph_inputs.append(helper.make_tensor_value_info("M", TensorProto.BOOL, [Sq, Skv]))
        extra["M"] = _bottom_right_mask(np, Sq, Skv)
    attrs = {}
    if "softcap" in used:
        attrs["softcap"] = float(attn_options.opts(p)["softcap"])
    node = helper.make_node("Attention", names, ["Y"], is_causal=int(square_causal),
                            scale=float(p["scale"]), **attrs)
    graph = helper.make_graph([node], "attn", graph_inputs,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT,
                                                             [B, H, Sq, Dv])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = min(model.ir_version, 10)
    onnx.checker.check_model(model)
    sess = _session(model, threads)
    feeds = [dict({"Q": q, "K": k, "V": v}, **extra) for q, k, v in inputs]
    return (lambda c: sess.run(None, feeds[c])[0]), "Attention-23"


def _ms_mha(np, p, inputs, threads):
    from onnx import TensorProto, helper
    B, H, Sq, Skv, D, Dv = (p[k] for k in ("batch", "heads", "seq_q", "seq_kv", "head_dim_qk",
                                           "head_dim_v"))
    used = attn_options.used(p)
    if "softcap" in used:
        raise ValueError("MultiHeadAttention has no soft-cap")
    dense = bool(used & {"align", "window", "alibi", "mask"})
    square_causal = p["causal"] and Sq == Skv and not dense
    names = ["Q", "K", "V"]
    graph_inputs = [helper.make_tensor_value_info("Q", TensorProto.FLOAT, [B, Sq, H * D]),
                    helper.make_tensor_value_info("K", TensorProto.FLOAT, [B, Skv, H * D]),
                    helper.make_tensor_value_info("V", TensorProto.FLOAT, [B, Skv, H * Dv])]
    extra = {}
    if dense:
        m = np.ascontiguousarray(attn_options.bias(np, p), dtype=np.float32)
        names += ["", "", "Bias"]  # bias, key_padding_mask, attention_bias
        graph_inputs.append(helper.make_tensor_value_info("Bias", TensorProto.FLOAT,
                                                          list(m.shape)))
        extra["Bias"] = m
    elif p["causal"] and not square_causal:
        names += ["", "", "Bias"]  # bias, key_padding_mask, attention_bias
        graph_inputs.append(helper.make_tensor_value_info("Bias", TensorProto.FLOAT,
                                                          [1, 1, Sq, Skv]))
        m = _bottom_right_mask(np, Sq, Skv)
        extra["Bias"] = np.where(m, 0.0, -np.inf).astype(np.float32)[None, None]
    attrs = {"num_heads": H, "scale": float(p["scale"])}
    if square_causal:
        attrs["unidirectional"] = 1
    node = helper.make_node("MultiHeadAttention", names, ["Y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "mha", graph_inputs,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT,
                                                             [B, Sq, H * Dv])])
    sess = _contrib_session(graph, threads)
    feeds = [dict({"Q": _to3(np, q), "K": _to3(np, k), "V": _to3(np, v)}, **extra)
             for q, k, v in inputs]

    def fn(c):
        y = sess.run(None, feeds[c])[0]
        return y.reshape(B, Sq, H, Dv).transpose(0, 2, 1, 3)

    return fn, "com.microsoft.MultiHeadAttention"


def _gqa_ok(p):
    """Whether com.microsoft.GroupQueryAttention computes p: bottom-right causal (or not
    causal), Sq <= Skv (the first Skv - Sq keys are its past), Dv == Dqk, a window only to
    the left of a causal diagonal. Returns (ok, why)."""
    o = attn_options.opts(p)
    left, right = attn_options.window(p)
    if p["head_dim_v"] != p["head_dim_qk"]:
        return False, "GroupQueryAttention needs head_dim_v == head_dim_qk"
    if p["seq_q"] > p["seq_kv"]:
        return False, "GroupQueryAttention needs seq_q <= seq_kv"
    if p["batch"] > 1 and 1 < p["seq_q"] < p["seq_kv"]:  # ORT refuses it at run time
        return False, "GroupQueryAttention needs batch 1 when 1 < seq_q < seq_kv (a past)"
    if "align" in attn_options.used(p):
        return False, "GroupQueryAttention is bottom-right aligned"
    if o.get("window") is not None and not (p["causal"] and right == 0):
        return False, "GroupQueryAttention's local window is causal, left side only"
    return True, ""


def _gqa(np, p, inputs, threads):
    """com.microsoft.GroupQueryAttention: [B][S][H·D] query, the last Sq keys as new K/V and
    the first Skv - Sq as past_key/past_value (BNSH), seqlens_k = Skv - 1, so query row i
    is at absolute position Skv - Sq + i (bottom-right). local_window_size = the window's
    left side + 1 (it counts the diagonal key: keys j > i + off - size), softcap and head_sink natively, ALiBi and the
    mask as attention_bias. ORT copies past into present on every call (no IO binding):
    that copy is part of its time, as for a user running it this way."""
    from onnx import TensorProto, helper
    ok, why = _gqa_ok(p)
    if not ok:
        raise ValueError(why)
    B, H, KV, Sq, Skv, D = (p[k] for k in ("batch", "heads", "kv_heads", "seq_q", "seq_kv",
                                           "head_dim_qk"))
    o = attn_options.opts(p)
    P = Skv - Sq
    F, I32 = TensorProto.FLOAT, TensorProto.INT32
    vi = helper.make_tensor_value_info
    names = ["Q", "K", "V", "PK" if P else "", "PV" if P else "", "SL", "TL"]
    graph_inputs = [vi("Q", F, [B, Sq, H * D]), vi("K", F, [B, Sq, KV * D]),
                    vi("V", F, [B, Sq, KV * D])]
    if P:
        graph_inputs += [vi("PK", F, [B, KV, P, D]), vi("PV", F, [B, KV, P, D])]
    graph_inputs += [vi("SL", I32, [B]), vi("TL", I32, [])]
    extra = {"SL": np.full(B, Skv - 1, dtype=np.int32), "TL": np.array(Skv, dtype=np.int32)}
    b = attn_options.bias(np, p, with_range=False)
    sinks = o.get("sinks")
    if b is not None or sinks is not None:
        names += ["", "", ""]  # cos_cache, sin_cache, position_ids
        names.append("AB" if b is not None else "")
        if b is not None:
            extra["AB"] = np.ascontiguousarray(b, dtype=np.float32)
            graph_inputs.append(vi("AB", F, list(extra["AB"].shape)))
        if sinks is not None:
            names.append("HS")
            extra["HS"] = np.ascontiguousarray(sinks, dtype=np.float32)
            graph_inputs.append(vi("HS", F, [H]))
    while names and names[-1] == "":
        names.pop()
    left, _ = attn_options.window(p)
    attrs = {"num_heads": H, "kv_num_heads": KV, "scale": float(p["scale"]),
             # ORT's window counts the query's own key: keys j > i + off - size (measured)
             "local_window_size": -1 if left is None else int(left) + 1}
    if o.get("softcap"):
        attrs["softcap"] = float(o["softcap"])
    if not p["causal"]:
        attrs["causal"] = 0
    node = helper.make_node("GroupQueryAttention", names, ["Y", "PKo", "PVo"],
                            domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "gqa", graph_inputs,
                              [vi("Y", F, [B, Sq, H * D]), vi("PKo", F, [B, KV, Skv, D]),
                               vi("PVo", F, [B, KV, Skv, D])])
    sess = _contrib_session(graph, threads)
    feeds = []
    for q, k, v in inputs:
        f = dict({"Q": _to3(np, q), "K": _to3(np, k[:, :, P:]), "V": _to3(np, v[:, :, P:])},
                 **extra)
        if P:
            f["PK"] = hugepages.copy(k[:, :, :P])
            f["PV"] = hugepages.copy(v[:, :, :P])
        feeds.append(f)

    def fn(c):
        y = sess.run(["Y"], feeds[c])[0]
        return y.reshape(B, Sq, H, D).transpose(0, 2, 1, 3)

    return fn, "com.microsoft.GroupQueryAttention"


def supports(problem):
    if attn_options.opts(problem).get("sinks") is not None:  # GroupQueryAttention only
        ok, why = _gqa_ok(problem)
        if not ok:
            return False, "does not support sinks here (%s)" % why
    return True, ""


def prepare(problem, inputs, threads):
    import numpy as np
    import onnxruntime as ort
    used = attn_options.used(problem)
    builders = [] if "sinks" in used else [_onnx_attention]
    if problem["kv_heads"] == problem["heads"] and not used & {"softcap", "sinks"}:
        builders.append(_ms_mha)
    if used & {"window", "softcap", "sinks"} and _gqa_ok(problem)[0]:
        builders.append(_gqa)  # ONNX Runtime's own window, soft-cap and sinks
    candidates, errors = [], []
    for build in builders:
        try:
            candidates.append(build(np, problem, inputs, threads))
        except Exception as e:  # an op this ORT build lacks: try the other one
            errors.append("%s: %s" % (build.__name__, str(e).splitlines()[0] if str(e) else e))
    best, best_t, ran = None, None, []
    for fn, op in candidates:  # the faster op per point: one warm-up, best of three calls
        try:
            fn(0)
        except Exception as e:  # an op that refuses this shape at run time: the others
            errors.append("%s: %s" % (op, str(e).splitlines()[0] if str(e) else e))
            continue
        ran.append(op)
        t = min(_timed(fn) for _ in range(3))
        if best_t is None or t < best_t:
            best, best_t = (fn, op), t
    if best is None:
        raise RuntimeError("no ONNX Runtime attention op ran: " + "; ".join(errors))
    fn, op = best
    info = {"version": ort.__version__, "op": op, "intra_op_threads": threads,
            "inter_op_threads": 1, "candidates": ran}
    if errors:
        info["unavailable_ops"] = errors
    return (lambda c: np.ascontiguousarray(fn(c), dtype=np.float32)), info


def _timed(fn):
    t0 = time.perf_counter()
    fn(0)
    return time.perf_counter() - t0
