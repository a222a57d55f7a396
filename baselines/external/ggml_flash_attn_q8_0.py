# SPDX-License-Identifier: MIT
"""ggml_flash_attn_q8_0 — ggml's `ggml_flash_attn_ext` with the K/V cache in Q8_0 (llama.cpp's
`-ctk q8_0 -ctv q8_0`), precision F32: 34 bytes per 32 K/V elements.

Q8_0 is ggml's block quantization (ggml_flash_attn.quantize_q8_0: per 32 values an F16
scale max|x|/127 and 32 int8), done by ggml itself. With Q8_0 K, ggml's CPU path also
quantizes Q to Q8_0 for the dot products, so the problem it computes is Q, K and V
round-tripped through Q8_0: stored_inputs returns exactly those values and the output is
checked against the float64 reference computed from them — ggml's own arithmetic is then
checked as tightly as every kernel's (a 64-wide test shape: 2e-7 against that reference,
2e-3 against the one with float32 Q). Needs head_dim_qk and head_dim_v multiples of 32.
"""
import ggml_flash_attn as _base  # baselines/external (attn_baseline.py puts it on the path)

NAME = "ggml_flash_attn_q8_0"
SUMMARY = "ggml ggml_flash_attn_ext (CPU backend, Q8_0 K/V cache and Q, F32 precision)"
PACKAGES = _base.PACKAGES
KV_STORAGE = "q8_0"
OPTIONS = getattr(_base, "OPTIONS", ())
available = _base.available


def supports(problem):
    if problem["head_dim_qk"] % 32 or problem["head_dim_v"] % 32:
        return False, "needs head dims that are multiples of 32 (Q8_0 blocks)"
    base = getattr(_base, "supports", None)
    return base(problem) if base else (True, "")


def stored_inputs(q, k, v):
    rt = lambda x: _base.dequantize_q8_0(_base.quantize_q8_0(x), x.shape)  # noqa: E731
    return rt(q), rt(k), rt(v)


def prepare(problem, inputs, threads):
    return _base.prepare(problem, inputs, threads, kv_type="q8_0")
