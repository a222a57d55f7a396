# SPDX-License-Identifier: MIT
"""torch_sdpa_f16 — torch_sdpa on binary16 (float16) tensors: PyTorch's CPU SDPA in the precision a
PyTorch user picks for inference on CPUs with low-precision units.

Q, K and V are converted to float16 once, outside timing; it computes on those rounded
values (stored_inputs: the runner writes them beside O and the check's reference uses
them), with its own roundings inside, and returns O in float16. Its output is checked with
attnbench's bound for compute mode f16 (COMPUTE). Everything else is torch_sdpa.
"""
import torch_sdpa as _base  # baselines/external (attn_baseline.py puts it on the path)

NAME = "torch_sdpa_f16"
SUMMARY = "PyTorch F.scaled_dot_product_attention (CPU, F16)"
PACKAGES = _base.PACKAGES
OPTIONS = _base.OPTIONS
COMPUTE = "f16"  # attnbench's compute mode whose bound its output is checked against
available = _base.available


def stored_inputs(q, k, v):
    """Q, K and V rounded to float16 (nearest, ties to even), as float32 values."""
    import torch
    return tuple(torch.from_numpy(x).to(torch.float16).float().numpy() for x in (q, k, v))


def prepare(problem, inputs, threads):
    return _base.prepare(problem, inputs, threads, dtype="float16")
