# SPDX-License-Identifier: MIT
"""ggml_flash_attn_f16 — ggml's `ggml_flash_attn_ext` with the K/V cache stored in F16 (as
llama.cpp stores it by default), precision F32: half the K/V bytes of ggml_flash_attn.

A separately named baseline because it computes on different K/V: the stored values are
K and V rounded to F16, so its output is checked against the float64 reference of those
rounded values — and Q rounded to F16 as well, which ggml's CPU path does for the dot
products (stored_inputs; the runner writes them beside O for the check). That checks
ggml's own arithmetic as tightly as every kernel's; what remains is its F16 accumulation
of the weighted V sum, which the check can catch on long rows. Everything else is ggml_flash_attn.
"""
import ggml_flash_attn as _base  # baselines/external (attn_baseline.py puts it on the path)

NAME = "ggml_flash_attn_f16"
SUMMARY = "ggml ggml_flash_attn_ext (CPU backend, F16 K/V cache, F32 precision)"
PACKAGES = _base.PACKAGES
KV_STORAGE = "float16"  # a numpy dtype name
OPTIONS = _base.OPTIONS
available = _base.available
supports = _base.supports


def stored_inputs(q, k, v):
    """ggml's CPU path converts Q to F16 too (the dot-product type of F16 K)."""
    import numpy as np
    return tuple(x.astype(np.float16).astype(np.float32) for x in (q, k, v))


def prepare(problem, inputs, threads):
    return _base.prepare(problem, inputs, threads, kv_type="f16")
