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
"""
import attn_options  # baselines/external (attn_baseline.py puts it on the path)

NAME = "torch_sdpa"
SUMMARY = "PyTorch F.scaled_dot_product_attention (CPU, FP32)"
PACKAGES = ("torch",)
OPTIONS = {"align", "window", "alibi", "mask"}


def available():
    try:
        import torch  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        return False, "PyTorch is not importable (%s)" % (str(e).splitlines() or ["?"])[0]
    return True, ""


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
    kw = {"scale": p["scale"]}
    if p["kv_heads"] != p["heads"]:
        kw["enable_gqa"] = True
    mask = None
    import numpy as np
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

    def fn(c):
        q, k, v = tensors[c]
        with torch.no_grad():
            return F.scaled_dot_product_attention(q, k, v, **kw)

    q, k, v = tensors[0]
    info = {"version": torch.__version__, "threads": torch.get_num_threads(),
            "mask": "none" if mask is None else str(mask.dtype).replace("torch.", ""),
            "interop_threads": torch.get_num_interop_threads(),
            "backend": _backend(torch, q, k, v, mask, kw), "blas": _blas(torch)}
    def out(c):
        return fn(c).float().numpy()

    out.timed = fn  # timed without the conversion of O back to float32
    info["dtype"] = dtype
    return out, info


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
