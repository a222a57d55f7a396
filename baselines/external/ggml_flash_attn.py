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

Serving batches (LAYOUTS; docs/serving.md): as llama.cpp runs a batch — every sequence's
K/V in one cache tensor [cells][KVH][D], one ggml_flash_attn_ext call over all query
tokens, and a KQ mask [tokens][cells] that is 0 only where a token's own sequence has a
key in its range (bottom-right causal per sequence, window) and -inf elsewhere. Ragged
K/V are the cache as they are; paged pools are relaid once into it (cell page ·
page_size + slot), so each sequence's keys stay where its pages put them. F32 K/V only
(the _f16 / _q8_0 variants run dense problems); ALiBi and an additive mask are refused.

Memory: the ggml context's pool and the compute work buffer are hugepages.empty()
buffers (2 MiB-aligned, advised for huge pages), as the harness allocates the kernels'.
"""
import attn_options  # baselines/external (attn_baseline.py puts it on the path)
import hugepages

NAME = "ggml_flash_attn"
SUMMARY = "ggml ggml_flash_attn_ext (CPU backend, F32 K/V, F32 precision)"
PACKAGES = ("ggml-python",)
OPTIONS = {"align", "window", "softcap", "alibi", "sinks", "mask"}
KV_TYPE = "f32"  # ggml_flash_attn_f16.py / _q8_0.py reuse this file with "f16" / "q8_0"
LAYOUTS = ("ragged", "paged")  # F32 K/V only: the _f16 / _q8_0 variants are dense-only


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
    if attn_options.layout_kind(problem) and (o.get("alibi_max_bias") or
                                              o.get("mask") is not None):
        return False, ("cannot express ALiBi or an additive mask in a serving batch (its "
                       "per-sequence KQ mask holds 0 / -inf only)")
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


def _context(ggml, nbytes):
    """A ggml context whose pool (tensors and graph) is a buffer on huge pages
    (hugepages.py), as the harness allocates the kernels' inputs. Returns (ctx, buffer):
    the buffer must outlive the context."""
    import ctypes
    buf = hugepages.empty(nbytes, "uint8")
    ctx = ggml.ggml_init(ggml.ggml_init_params(mem_size=nbytes,
                                               mem_buffer=ctypes.c_void_p(buf.ctypes.data)))
    if not ctx:
        raise MemoryError("ggml_init(%d bytes) failed" % nbytes)
    return ctx, buf


def _put(ggml, t, a):
    """Copies array a (its bytes as ggml stores them) into tensor t's data."""
    import ctypes

    import numpy as np
    a = np.ascontiguousarray(a)
    if ggml.ggml_nbytes(t) != a.nbytes:
        raise RuntimeError("tensor of %d bytes, array of %d" % (ggml.ggml_nbytes(t), a.nbytes))
    ctypes.memmove(ggml.ggml_get_data(t), a.ctypes.data, a.nbytes)


def _attend(ggml, ctx, q, k, v, mask, p, threads, sinks=None):
    """ggml_flash_attn_ext(q, k, v, mask) at F32 precision with the problem's scale,
    ALiBi max_bias and soft-cap (and sinks), its graph and its plan (the compute work
    buffer ggml sizes itself). Returns (graph, out, plan, work)."""
    import ctypes
    o = attn_options.opts(p)
    out = ggml.ggml_flash_attn_ext(ctx, q, k, v, mask, float(p["scale"]),
                                   float(o.get("alibi_max_bias") or 0.0),
                                   float(o.get("softcap") or 0.0))
    ggml.ggml_flash_attn_ext_set_prec(out, ggml.GGML_PREC_F32)
    if sinks is not None:
        ggml.ggml_flash_attn_ext_add_sinks(out, sinks)
    gf = ggml.ggml_new_graph(ctx)
    ggml.ggml_build_forward_expand(gf, out)
    plan = ggml.ggml_graph_plan(gf, threads)
    work = hugepages.empty(max(int(plan.work_size), 1), "uint8")
    plan.work_data = ctypes.cast(ctypes.c_void_p(work.ctypes.data),
                                 ctypes.POINTER(ctypes.c_ubyte))
    return gf, out, plan, work


def _runner(ggml, graphs, shape, order):
    """fn(c) computing input copy c's graph; its result(c) copies O back (outside timing;
    result.timed = fn). shape: the output as ggml writes it, order: the transpose to O."""
    import ctypes

    import numpy as np

    def fn(c):
        g = graphs[c]
        status = ggml.ggml_graph_compute(g[0], ctypes.byref(g[2]))
        if status != 0:
            raise RuntimeError("ggml_graph_compute: status %d" % status)
        return g[1]

    def result(c):
        out = fn(c)
        n = int(np.prod(shape))
        buf = (ctypes.c_float * n).from_address(ggml.ggml_get_data(out))
        a = np.frombuffer(buf, dtype=np.float32).reshape(shape)
        return np.ascontiguousarray(a.transpose(order))

    result.timed = fn
    return result


def prepare(problem, inputs, threads, kv_type=None):
    import ggml
    import numpy as np
    kv_type = kv_type or KV_TYPE
    p = problem
    if attn_options.layout_kind(p):
        return _prepare_serving(ggml, np, p, inputs, threads)
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
        # The tensors and the graph only: the compute work buffer is the plan's own (_attend),
        # sized by ggml itself, not a guess inside this pool.
        mem = nbytes + ggml.ggml_graph_overhead() + 16 * ggml.ggml_tensor_overhead() + (1 << 20)
        ctx, buf = _context(ggml, mem)
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
                _put(ggml, t, a)
        gf, out, plan, work = _attend(ggml, ctx, tq, tk, tv, tm, p, threads, ts)
        graphs.append((gf, out, plan, work, ctx, buf))
    info = {"version": _version(), "kv_type": kv_type, "precision": "f32", "threads": threads}
    # [B][Sq][H][Dv] as ggml writes it, transposed back outside timing
    return _runner(ggml, graphs, (B, Sq, H, Dv), (0, 2, 1, 3)), info


# ── serving batches: llama.cpp's per-sequence masks over one cache ──────────────────
def _cells(p):
    """The cache cell of every key: [(first query row, q_len, [cell of key t])] per
    sequence, and the number of cells. Ragged: cell = the key's row of packed K/V; paged:
    cell = page · page_size + slot (the pools relaid as [cells][KVH][D], _cache)."""
    lay = p["layout"]
    cq, ck = lay["cu_seqlens_q"], lay["cu_seqlens_kv"]
    paged = lay["kind"] == "paged"
    ps = int(lay["page_size"]) if paged else 0
    seqs = []
    for b in range(p["batch"]):
        kl = ck[b + 1] - ck[b]
        cells = [lay["page_table"][b][t // ps] * ps + t % ps if paged else ck[b] + t
                 for t in range(kl)]
        seqs.append((cq[b], cq[b + 1] - cq[b], cells))
    return seqs, (int(lay["num_pages"]) * ps if paged else ck[-1])


def _serving_mask(np, p, seqs, n_cells):
    """The KQ mask [total_q][n_cells] in F16: 0 where a query token sees a cell, -inf
    elsewhere — each token only its own sequence's keys, in the range attn_options gives
    the sequence as a dense problem (bottom-right causal, window), as llama.cpp builds
    its KQ mask from the cells' sequence ids and positions."""
    T = p["layout"]["cu_seqlens_q"][-1]
    m = np.full((T, n_cells), -np.inf, dtype=np.float16)
    for b, (q0, ql, cells) in enumerate(seqs):
        if ql == 0 or not cells:
            continue
        vis = attn_options.visible(np, attn_options.seq_problem(p, b))  # [ql][kl]
        rows = m[q0:q0 + ql]
        sub = rows[:, cells]
        sub[vis] = 0.0
        rows[:, cells] = sub
    return m


def _prepare_serving(ggml, np, p, inputs, threads):
    """One ggml_flash_attn_ext over the whole batch (docs/baselines.md): Q [total_q][H][D]
    viewed as ne (D, total_q, H), the cache [cells][KVH][D] viewed as ne (D, cells, KVH)
    (llama.cpp's K/V cache views), the mask of _serving_mask; O comes out [total_q][H][Dv],
    the packed output as it is."""
    H, KV, D, Dv = p["heads"], p["kv_heads"], p["head_dim_qk"], p["head_dim_v"]
    seqs, N = _cells(p)
    T = p["layout"]["cu_seqlens_q"][-1]
    mask = _serving_mask(np, p, seqs, N)
    o = attn_options.opts(p)
    sinks_np = None if o.get("sinks") is None else np.ascontiguousarray(o["sinks"], np.float32)
    graphs = []
    for q, k, v in inputs:
        kc, vc = _cache(k), _cache(v)
        nbytes = q.nbytes + kc.nbytes + vc.nbytes + mask.nbytes + T * H * Dv * 4 + 4 * H
        mem = nbytes + ggml.ggml_graph_overhead() + 16 * ggml.ggml_tensor_overhead() + (1 << 20)
        ctx, buf = _context(ggml, mem)
        tq = ggml.ggml_new_tensor_3d(ctx, ggml.GGML_TYPE_F32, D, H, T)
        tk = ggml.ggml_new_tensor_3d(ctx, ggml.GGML_TYPE_F32, D, KV, N)
        tv = ggml.ggml_new_tensor_3d(ctx, ggml.GGML_TYPE_F32, Dv, KV, N)
        tm = ggml.ggml_new_tensor_2d(ctx, ggml.GGML_TYPE_F16, N, T)
        ts = None if sinks_np is None else ggml.ggml_new_tensor_1d(ctx, ggml.GGML_TYPE_F32, H)
        for t, a in ((tq, q), (tk, kc), (tv, vc), (tm, mask), (ts, sinks_np)):
            if t is not None:
                _put(ggml, t, a)
        del kc, vc
        views = [ggml.ggml_permute(ctx, t, 0, 2, 1, 3) for t in (tq, tk, tv)]
        gf, out, plan, work = _attend(ggml, ctx, *views, tm, p, threads, ts)
        graphs.append((gf, out, plan, work, ctx, buf))
    info = {"version": _version(), "kv_type": "f32", "precision": "f32", "threads": threads,
            "op": "flash_attn_ext, one call, per-sequence KQ mask", "cache_cells": N}
    return _runner(ggml, graphs, (T, H, Dv), (0, 1, 2)), info


def _cache(x):
    """K or V as llama.cpp's cache [cells][KVH][D]: packed K/V as they are; the pools
    [num_pages][KVH][page_size][D] relaid once (outside timing) so that cell
    page · page_size + slot holds that slot — every sequence's keys stay where its pages
    put them in the cache."""
    if x.ndim == 3:
        return x
    n, kvh, ps, d = x.shape
    return hugepages.copy(x.transpose(0, 2, 1, 3)).reshape(n * ps, kvh, d)


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
