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
"""
import time

NAME = "ort_attention"
SUMMARY = "ONNX Runtime CPU: ONNX Attention (opset 23) or com.microsoft.MultiHeadAttention"
PACKAGES = ("onnxruntime", "onnx")


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


def _bottom_right_mask(np, sq, skv):
    i = np.arange(sq)[:, None]
    j = np.arange(skv)[None, :]
    return j <= i + (skv - sq)


def _onnx_attention(np, p, inputs, threads):
    import onnx
    from onnx import TensorProto, helper
    B, H, KV, Sq, Skv, D, Dv = (p[k] for k in ("batch", "heads", "kv_heads", "seq_q", "seq_kv",
                                                "head_dim_qk", "head_dim_v"))
    square_causal = p["causal"] and Sq == Skv
    names = ["Q", "K", "V"]
    graph_inputs = [helper.make_tensor_value_info("Q", TensorProto.FLOAT, [B, H, Sq, D]),
                    helper.make_tensor_value_info("K", TensorProto.FLOAT, [B, KV, Skv, D]),
                    helper.make_tensor_value_info("V", TensorProto.FLOAT, [B, KV, Skv, Dv])]
    extra = {}
    if p["causal"] and not square_causal:
        names.append("M")
        graph_inputs.append(helper.make_tensor_value_info("M", TensorProto.BOOL, [Sq, Skv]))
        extra["M"] = _bottom_right_mask(np, Sq, Skv)
    node = helper.make_node("Attention", names, ["Y"], is_causal=int(square_causal),
                            scale=float(p["scale"]))
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
    square_causal = p["causal"] and Sq == Skv
    names = ["Q", "K", "V"]
    graph_inputs = [helper.make_tensor_value_info("Q", TensorProto.FLOAT, [B, Sq, H * D]),
                    helper.make_tensor_value_info("K", TensorProto.FLOAT, [B, Skv, H * D]),
                    helper.make_tensor_value_info("V", TensorProto.FLOAT, [B, Skv, H * Dv])]
    extra = {}
    if p["causal"] and not square_causal:
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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = min(model.ir_version, 10)
    sess = _session(model, threads)

    def to3(a):  # [B][H][S][D] -> [B][S][H·D]
        return np.ascontiguousarray(a.transpose(0, 2, 1, 3).reshape(a.shape[0], a.shape[2], -1))

    feeds = [dict({"Q": to3(q), "K": to3(k), "V": to3(v)}, **extra) for q, k, v in inputs]

    def fn(c):
        y = sess.run(None, feeds[c])[0]
        return y.reshape(B, Sq, H, Dv).transpose(0, 2, 1, 3)

    return fn, "com.microsoft.MultiHeadAttention"


def prepare(problem, inputs, threads):
    import numpy as np
    import onnxruntime as ort
    builders = [_onnx_attention]
    if problem["kv_heads"] == problem["heads"]:
        builders.append(_ms_mha)
    candidates, errors = [], []
    for build in builders:
        try:
            candidates.append(build(np, problem, inputs, threads))
        except Exception as e:  # an op this ORT build lacks: try the other one
            errors.append("%s: %s" % (build.__name__, str(e).splitlines()[0] if str(e) else e))
    if not candidates:
        raise RuntimeError("no ONNX Runtime attention op ran: " + "; ".join(errors))
    best, best_t = None, None
    for fn, op in candidates:  # the faster op per point: one warm-up, best of three calls
        fn(0)
        t = min(_timed(fn) for _ in range(3))
        if best_t is None or t < best_t:
            best, best_t = (fn, op), t
    fn, op = best
    info = {"version": ort.__version__, "op": op, "intra_op_threads": threads,
            "inter_op_threads": 1, "candidates": [c[1] for c in candidates]}
    if errors:
        info["unavailable_ops"] = errors
    return (lambda c: np.ascontiguousarray(fn(c), dtype=np.float32)), info


def _timed(fn):
    t0 = time.perf_counter()
    fn(0)
    return time.perf_counter() - t0
