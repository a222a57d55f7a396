# SPDX-License-Identifier: MIT
"""ggml_flash_attn — ggml's `ggml_flash_attn_ext` on the CPU backend (through the PyPI
package ggml-python, which builds a recent ggml from source), K/V in F32, precision F32.

ggml's tensors are column-major in its `ne` order, so attnbench's C-order Q
[B][H][Sq][D] is ggml's q with ne = (D, Sq, H, B) and needs no copy of layout; K and V
likewise. The result is permuted (ne = (Dv, H, Sq, B), i.e. [B][Sq][H][Dv] in memory) and
is transposed back outside timing. The causal mask is an F16 additive mask [Sq][Skv]
(0 / -inf) stating attnbench's bottom-right rule. GQA: ggml broadcasts K/V heads the same
way (query head h reads K/V head h // (H // KVH)). Threads: ggml_graph_compute_with_ctx's
n_threads. One graph per input copy, all built before timing.

Options (attn_options.py), as ggml_flash_attn_ext takes them: soft-cap is its
logit_softcap (s <- c*tanh(scale*qk/c), then the mask: attnbench's order); ALiBi is its
max_bias (the same slope rule), and ggml adds slope_h * mask[i][j], so the mask then holds
the distance j - i - off (and -inf outside the row's range) — explicit slopes, or ALiBi
together with an additive mask, cannot be expressed and are skipped; sinks go through
ggml_flash_attn_ext_add_sinks; windows and alignment are the F16 mask (0 / -inf), an
additive mask is added into it (per head: the mask's heads dimension, which ggml
broadcasts). The mask is F16: its values are rounded to F16 (and ALiBi distances are
exact only up to 2048), which the check judges like any other error.
"""
import attn_options  # baselines/external (attn_baseline.py puts it on the path)

NAME = "ggml_flash_attn"
SUMMARY = "ggml ggml_flash_attn_ext (CPU backend, F32 K/V, F32 precision)"
PACKAGES = ("ggml-python",)
OPTIONS = {"align", "window", "softcap", "alibi", "sinks", "mask"}
KV_TYPE = "f32"  # ggml_flash_attn_f16.py / _q8_0.py reuse this file with "f16" / "q8_0"


def available():
    try:
        import ggml  # noqa: F401
    except Exception as e:
        return False, "ggml-python not importable (%s)" % (str(e).splitlines() or ["?"])[0]
    return True, ""


def supports(problem):
    o = attn_options.opts(problem)
    if o.get("alibi_slopes") is not None:
        return False, "does not support explicit ALiBi slopes (ggml takes max_bias)"
    if o.get("alibi_max_bias") and o.get("mask") is not None:
        return False, ("does not support ALiBi with an additive mask (ggml multiplies the "
                       "mask by the slope)")
    if o.get("sinks") is not None:
        import ggml
        if not hasattr(ggml, "ggml_flash_attn_ext_add_sinks"):
            return False, "does not support sinks (this ggml-python lacks " \
                          "ggml_flash_attn_ext_add_sinks)"
    return True, ""


def _mask(np, p):
    """The F16 mask [b][h][Sq][Skv] (b, h = 1 where it does not vary) or None."""
    o = attn_options.opts(p)
    if o.get("alibi_max_bias"):  # ggml: s += slope_h * mask; mask = distance, -inf outside
        d = attn_options.alibi_distance(np, p)
        m = np.where(attn_options.visible(np, p), d, -np.inf)[None, None]
    elif p["causal"] or o.get("window") is not None or o.get("mask") is not None:
        m = attn_options.bias(np, p)
    else:
        return None
    return np.ascontiguousarray(m, dtype=np.float16)


def prepare(problem, inputs, threads, kv_type=None):
    import ctypes

    import ggml
    import numpy as np
    kv_type = kv_type or KV_TYPE
    p = problem
    B, H, KV, Sq, Skv, D, Dv = (p[k] for k in ("batch", "heads", "kv_heads", "seq_q", "seq_kv",
                                                "head_dim_qk", "head_dim_v"))
    gtype = {"f16": ggml.GGML_TYPE_F16, "q8_0": ggml.GGML_TYPE_Q8_0}.get(kv_type, ggml.GGML_TYPE_F32)
    npkv = np.float16 if kv_type == "f16" else np.float32

    def stored(x):  # the K/V bytes as ggml stores them
        return quantize_q8_0(x) if kv_type == "q8_0" else np.ascontiguousarray(x.astype(npkv))
    o = attn_options.opts(p)
    mask_np = _mask(np, p)
    sinks_np = None if o.get("sinks") is None else np.ascontiguousarray(o["sinks"], np.float32)
    graphs = []
    for q, k, v in inputs:
        nbytes = q.nbytes + k.nbytes + v.nbytes  # an upper bound for F16 and Q8_0 K/V
        nbytes += 2 * B * Sq * H * Dv * 4 + (mask_np.nbytes if mask_np is not None else 0)
        nbytes += 4 * H + 1024  # sinks
        # The tensors and the graph only: the compute work buffer is the plan's own (below),
        # sized by ggml itself, not a guess inside this pool.
        mem = nbytes + ggml.ggml_graph_overhead() + 16 * ggml.ggml_tensor_overhead() + (1 << 20)
        ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=mem, mem_buffer=None))
        if not ctx:
            raise MemoryError("ggml_init(%d bytes) failed" % mem)
        tq = ggml.ggml_new_tensor_4d(ctx, ggml.GGML_TYPE_F32, D, Sq, H, B)
        tk = ggml.ggml_new_tensor_4d(ctx, gtype, D, Skv, KV, B)
        tv = ggml.ggml_new_tensor_4d(ctx, gtype, Dv, Skv, KV, B)
        tm = ts = None
        if mask_np is not None:  # C order [b][h][Sq][Skv] is ggml's ne (Skv, Sq, h, b)
            mb, mh = mask_np.shape[:2]
            tm = ggml.ggml_new_tensor_4d(ctx, ggml.GGML_TYPE_F16, Skv, Sq, mh, mb)
        if sinks_np is not None:
            ts = ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_F32, H)
        for t, a in ((tq, q), (tk, stored(k)), (tv, stored(v)), (tm, mask_np),
                     (ts, sinks_np)):
            if t is not None:
                a = np.ascontiguousarray(a)
                assert ggml.ggml_nbytes(t) == a.nbytes
                ctypes.memmove(ggml.ggml_get_data(t), a.ctypes.data, a.nbytes)
        out = ggml.ggml_flash_attn_ext(ctx, tq, tk, tv, tm, float(p["scale"]),
                                       float(o.get("alibi_max_bias") or 0.0),
                                       float(o.get("softcap") or 0.0))
        ggml.ggml_flash_attn_ext_set_prec(out, ggml.GGML_PREC_F32)
        if ts is not None:
            ggml.ggml_flash_attn_ext_add_sinks(out, ts)
        gf = ggml.ggml_new_graph(ctx)
        ggml.ggml_build_forward_expand(gf, out)
        plan = ggml.ggml_graph_plan(gf, threads)
        work = (ctypes.c_ubyte * max(int(plan.work_size), 1))()
        plan.work_data = ctypes.cast(work, ctypes.POINTER(ctypes.c_ubyte))
        graphs.append((ctx, gf, out, plan, work))

    def fn(c):
        ctx, gf, out, plan, work = graphs[c]
        status = ggml.ggml_graph_compute(gf, ctypes.byref(plan))
        if status != 0:
            raise RuntimeError("ggml_graph_compute: status %d" % status)
        return out

    def result(c):
        out = fn(c)
        buf = (ctypes.c_float * (B * Sq * H * Dv)).from_address(ggml.ggml_get_data(out))
        a = np.frombuffer(buf, dtype=np.float32).reshape(B, Sq, H, Dv)
        return np.ascontiguousarray(a.transpose(0, 2, 1, 3))

    info = {"version": _version(), "kv_type": kv_type, "precision": "f32", "threads": threads}
    # result(c) copies the output back for the check; timing calls fn only.
    result.timed = fn
    return result, info


def _version():
    try:
        from importlib.metadata import version
        return "ggml-python " + version("ggml-python")
    except Exception:
        return "unknown"


# ── Q8_0 (ggml's block quantization, quantized by ggml itself) ──────────────────────
# A row of n floats is n/32 blocks of 34 bytes: an F16 scale d = max|x|/127, then 32 int8
# q = round(x/d); the value is d·q. ggml_flash_attn_ext with Q8_0 K converts Q to Q8_0
# too (its dot-product type), so the values it computes on are Q, K and V round-tripped
# through Q8_0 (dequantize_q8_0(quantize_q8_0(x))).
def quantize_q8_0(x):
    import ctypes

    import ggml
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = x.shape[-1]
    if n % 32:
        raise ValueError("Q8_0 needs rows that are a multiple of 32 floats, not %d" % n)
    rows = x.size // n
    nbytes = rows * (n // 32) * 34
    dst = np.empty(nbytes, dtype=np.uint8)
    got = ggml.ggml_quantize_chunk(ggml.GGML_TYPE_Q8_0,
                                   x.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                   ctypes.c_void_p(dst.ctypes.data), 0, rows, n, None)
    if got != nbytes:
        raise RuntimeError("ggml_quantize_chunk wrote %d bytes, expected %d" % (got, nbytes))
    return dst


def dequantize_q8_0(b, shape):
    import numpy as np
    blk = np.asarray(b, dtype=np.uint8).reshape(-1, 34)
    d = blk[:, :2].copy().view(np.float16).astype(np.float32)
    q = blk[:, 2:].copy().view(np.int8).astype(np.float32)
    return (d * q).reshape(shape)
