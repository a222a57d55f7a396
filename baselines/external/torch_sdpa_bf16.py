# SPDX-License-Identifier: MIT
"""torch_sdpa_bf16 — torch_sdpa on bfloat16 tensors: PyTorch's CPU SDPA in the precision a
PyTorch user picks for inference on CPUs with low-precision units.

Q, K and V are converted to bfloat16 once, outside timing; it computes on those rounded
values (stored_inputs: the runner writes them beside O and the check's reference uses
them), with its own roundings inside, and returns O in bfloat16. Its output is checked with
attnbench's bound for compute mode bf16 (COMPUTE). Everything else is torch_sdpa.
"""
import torch_sdpa as _base  # baselines/external (attn_baseline.py puts it on the path)

NAME = "torch_sdpa_bf16"
SUMMARY = "PyTorch F.scaled_dot_product_attention (CPU, BF16)"
PACKAGES = _base.PACKAGES
OPTIONS = _base.OPTIONS
COMPUTE = "bf16"  # attnbench's compute mode whose bound its output is checked against
available = _base.available


def stored_inputs(q, k, v):
    """Q, K and V rounded to bfloat16 (nearest, ties to even), as float32 values."""
    import torch
    return tuple(torch.from_numpy(x).to(torch.bfloat16).float().numpy() for x in (q, k, v))


def prepare(problem, inputs, threads):
    return _base.prepare(problem, inputs, threads, dtype="bfloat16")
