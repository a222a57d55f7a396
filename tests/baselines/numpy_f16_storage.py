# SPDX-License-Identifier: MIT
"""numpy_f16_storage — a test baseline file that stores K/V as float16 (KV_STORAGE): NumPy
attention on the rounded K/V. A baseline file's K/V type decides which kernel points it
runs beside, as a built-in's does: the f16 points only (tests/baselines)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "numpy_attention", os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_attention.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

NAME = "numpy_f16_storage"
SUMMARY = "NumPy attention on float16-stored K/V (test baseline)"
PACKAGES = ("numpy",)
KV_STORAGE = "float16"
available = _base.available


def prepare(problem, inputs, threads):
    import numpy as np

    def rounded(k):
        return k.astype(np.float16).astype(np.float32)
    return (lambda c: _base.attention(np, problem, inputs[c][0], rounded(inputs[c][1]),
                                      rounded(inputs[c][2]), False)), {
        "version": "numpy " + np.__version__}
