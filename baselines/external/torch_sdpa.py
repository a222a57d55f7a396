# SPDX-License-Identifier: MIT
"""torch_sdpa — PyTorch `torch.nn.functional.scaled_dot_product_attention` on the CPU, FP32.

attnbench's causal mask is bottom-right aligned (row i sees key j iff j <= i + Skv - Sq);
PyTorch's `is_causal` is top-left aligned. They agree when Sq == Skv, so `is_causal=True`
is passed only then; otherwise an explicit boolean mask [Sq][Skv] states the bottom-right
rule. GQA/MQA use `enable_gqa=True` (query head h reads K/V head h // (H // KVH), as in
attnbench). The SDPA backend PyTorch picks for the point is recorded.

Options (attn_options.py): SDPA has none of its own beyond is_causal, so alignment and
sliding windows become a boolean mask [Sq][Skv], and ALiBi and the additive mask a float
mask (0 / bias / -inf) broadcast over batch and heads — the way a PyTorch user runs them
on the CPU. An explicit mask is what SDPA offers, and it costs: the mask is read for every
score, and a window still visits every key. No soft-cap and no sinks (SDPA has neither):
such points are skipped with a note.

Serving batches (docs/serving.md, LAYOUTS): SDPA has no ragged or paged form (nested
tensors do not reach the CPU's fused kernels with GQA and masks), so it runs as a PyTorch
user runs a server's batch: one SDPA call per sequence, its pages gathered first
(index_select of the page table's rows, then the first kv_len slots: a copy of that
sequence's K/V on every call, timed with it), bottom-right causal per sequence (no mask
for a decode token, which sees its whole context; `is_causal` when q_len == kv_len; else
the explicit mask above), O written into the packed output.

torch_sdpa_bf16 and torch_sdpa_f16 (low_precision below) run it on bfloat16 / float16
tensors.
"""
import attn_options  # baselines/external (attn_baseline.py puts it on the path)

NAME = "torch_sdpa"
SUMMARY = "PyTorch F.scaled_dot_product_attention (CPU, FP32)"
PACKAGES = ("torch",)
OPTIONS = {"align", "window", "alibi", "mask"}
LAYOUTS = ("ragged", "paged")


def available():
    return attn_options.importable("torch", "PyTorch")


def low_precision(compute):
    """The module attributes of torch_sdpa_bf16 / torch_sdpa_f16 (compute "bf16" / "f16"):
    Q, K and V converted to that type once, outside timing; it computes on those rounded
    values (stored_inputs: the runner writes them beside O and the check's reference uses
    them), with its own roundings inside, and returns O in that type, checked with
    attnbench's bound for that compute mode (COMPUTE). Dense problems only (LAYOUTS: the
    serving sweeps' points are float32)."""
    dtype = {"bf16": "bfloat16", "f16": "float16"}[compute]

    def stored_inputs(q, k, v):
        """Q, K and V rounded to the type (nearest, ties to even), as float32 values."""
        import torch
        t = getattr(torch, dtype)
        return tuple(torch.from_numpy(x).to(t).float().numpy() for x in (q, k, v))

    return {"NAME": NAME + "_" + compute,
            "SUMMARY": SUMMARY.replace("FP32", compute.upper()), "PACKAGES": PACKAGES,
            "OPTIONS": OPTIONS, "LAYOUTS": (), "COMPUTE": compute, "available": available,
            "stored_inputs": stored_inputs,
            "prepare": lambda problem, inputs, threads: prepare(problem, inputs, threads, dtype)}


def prepare(problem, inputs, threads, dtype="float32"):
    """Returns (fn, info): fn(i) computes O for input copy i (a numpy float32 array).
    dtype: the tensors' type in the call ("float32", or "bfloat16" / "float16" for the
    low-precision variants; the conversion is done once, outside timing)."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass
    p = problem
    tdt = getattr(torch, dtype)
    tensors = [tuple(torch.from_numpy(a).to(tdt) for a in qkv) for qkv in inputs]
    if attn_options.layout_kind(p):
        fn, kw, mask = _serving(torch, F, p, tensors, tdt)
    else:
        kw, mask = _call_args(torch, p, tdt)

        def fn(c):
            q, k, v = tensors[c]
            with torch.no_grad():
                return F.scaled_dot_product_attention(q, k, v, **kw)

    q, k, v = tensors[0]
    if q.dim() == 3:  # packed by tokens: the first sequence's shapes for the backend query
        q = q[:1].transpose(0, 1).unsqueeze(0)
        k = v = q.new_zeros((1, p["kv_heads"], 1, p["head_dim_qk"]))
    info = {"version": torch.__version__, "threads": torch.get_num_threads(),
            "mask": "none" if mask is None else str(mask.dtype).replace("torch.", ""),
            "interop_threads": torch.get_num_interop_threads(),
            "backend": _backend(torch, q, k, v, mask, kw), "blas": _blas(torch)}
    def out(c):
        return fn(c).float().numpy()

    out.timed = fn  # timed without the conversion of O back to float32
    info["dtype"] = dtype
    return out, info


def _call_args(torch, p, tdt):
    """SDPA's keyword arguments for dense problem p (scale, GQA, the mask), and the mask."""
    import numpy as np
    kw = {"scale": p["scale"]}
    if p["kv_heads"] != p["heads"]:
        kw["enable_gqa"] = True
    mask = None
    used = attn_options.used(p)
    if used & {"alibi", "mask"}:  # additive: ALiBi + mask, -inf outside each row's range
        b = attn_options.bias(np, p)
        mask = torch.from_numpy(np.ascontiguousarray(b, dtype=np.float32)).to(tdt)
        kw["attn_mask"] = mask
    elif used & {"align", "window"}:  # a boolean mask: the row ranges
        mask = torch.from_numpy(attn_options.visible(np, p))
        kw["attn_mask"] = mask
    elif p["causal"]:
        if p["seq_q"] == p["seq_kv"]:
            kw["is_causal"] = True
        else:
            i = torch.arange(p["seq_q"]).unsqueeze(1)
            j = torch.arange(p["seq_kv"]).unsqueeze(0)
            mask = j <= i + (p["seq_kv"] - p["seq_q"])
            kw["attn_mask"] = mask
    return kw, mask


def _serving(torch, F, p, tensors, tdt):
    """fn(c) for a serving batch: per sequence, its Q rows, its K/V (pages gathered), SDPA,
    its O rows of the packed output. Returns (fn, the first sequence's kwargs, its mask)."""
    lay = p["layout"]
    paged = lay["kind"] == "paged"
    cq, ck = lay["cu_seqlens_q"], lay["cu_seqlens_kv"]
    H, KV, D, Dv = p["heads"], p["kv_heads"], p["head_dim_qk"], p["head_dim_v"]
    seqs = []
    for b in range(p["batch"]):
        sp = attn_options.seq_problem(p, b)
        if sp["seq_q"] == 0 or sp["seq_kv"] == 0:  # nothing to compute / rows of zeros
            continue
        decode = sp["seq_q"] == 1 and not attn_options.used(sp)  # sees its whole context
        kw, mask = _call_args(torch, dict(sp, causal=sp["causal"] and not decode), tdt)
        pages = torch.tensor(lay["page_table"][b], dtype=torch.long) if paged else None
        seqs.append((cq[b], sp["seq_q"], ck[b], sp["seq_kv"], pages, kw, mask))

    def kv_of(x, k0, kl, pages, dim):
        if pages is None:  # packed by tokens: [kl][KV][dim] -> [1][KV][kl][dim]
            return x[k0:k0 + kl].transpose(0, 1).unsqueeze(0)
        g = x.index_select(0, pages)  # [n][KV][page][dim]: the gather a paged cache costs
        return g.transpose(0, 1).reshape(KV, -1, dim)[:, :kl].unsqueeze(0)

    def fn(c):
        q, k, v = tensors[c]
        out = q.new_zeros((q.shape[0], H, Dv))
        with torch.no_grad():
            for q0, ql, k0, kl, pages, kw, _ in seqs:
                qb = q[q0:q0 + ql].transpose(0, 1).unsqueeze(0)
                ob = F.scaled_dot_product_attention(qb, kv_of(k, k0, kl, pages, D),
                                                    kv_of(v, k0, kl, pages, Dv), **kw)
                out[q0:q0 + ql] = ob[0].transpose(0, 1)
        return out

    first = seqs[0] if seqs else (0, 0, 0, 0, None, {"scale": p["scale"]}, None)
    return fn, first[5], first[6]


def _backend(torch, q, k, v, mask, kw):
    """The SDPA backend PyTorch chooses for these arguments (a private API: best effort)."""
    try:
        choice = torch._fused_sdp_choice(q, k, v, mask, 0.0, kw.get("is_causal", False),
                                         scale=kw["scale"], enable_gqa=kw.get("enable_gqa", False))
        from torch.nn.attention import SDPBackend
        return SDPBackend(choice).name
    except Exception as e:
        return "unknown (%s)" % type(e).__name__


def _blas(torch):
    for part in torch.__config__.show().replace(",", "\n").splitlines():
        part = part.strip()
        if part.startswith("BLAS_INFO="):
            return part.split("=", 1)[1]
    return "unknown"
