# SPDX-License-Identifier: MIT
"""softcap_ignored — deliberately wrong test baseline: it declares soft-capping (OPTIONS)
but computes without it, as a framework that silently drops an option would. The check of
a soft-capped point must reject it (tests/baselines, `options`)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "numpy_attention", os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_attention.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

NAME = "softcap_ignored"
SUMMARY = "NumPy attention that ignores the soft-cap (wrong on purpose)"
PACKAGES = ("numpy",)
OPTIONS = _base.OPTIONS
available = _base.available


def prepare(problem, inputs, threads):
    import numpy as np
    return (lambda c: _base.attention(np, problem, *inputs[c], False, ignore=("softcap",))), {
        "version": "numpy " + np.__version__}
