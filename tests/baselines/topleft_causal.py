# SPDX-License-Identifier: MIT
"""topleft_causal — deliberately wrong test baseline: NumPy attention with a TOP-LEFT
causal mask (PyTorch's is_causal), which differs from attnbench's bottom-right mask when
seq_q != seq_kv. The baseline check must reject it on such shapes (tests/baselines)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "numpy_attention", os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_attention.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

NAME = "topleft_causal"
SUMMARY = "NumPy attention with a top-left causal mask (wrong on purpose)"
PACKAGES = ("numpy",)
available = _base.available


def prepare(problem, inputs, threads):
    import numpy as np
    return (lambda c: _base.attention(np, problem, *inputs[c], True)), {
        "version": "numpy " + np.__version__, "top_left": True}
