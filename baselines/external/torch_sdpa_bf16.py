# SPDX-License-Identifier: MIT
"""torch_sdpa_bf16 — torch_sdpa on bfloat16 tensors: PyTorch's CPU SDPA in the precision a
PyTorch user picks for inference on CPUs with low-precision units (torch_sdpa.low_precision
describes it; everything else is torch_sdpa).
"""
import torch_sdpa as _base  # baselines/external (attn_baseline.py puts it on the path)

globals().update(_base.low_precision("bf16"))
