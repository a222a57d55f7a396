# SPDX-License-Identifier: MIT
"""numpy_slow_second — numpy_attention that, when ATTNBENCH_TEST_SLOW is set, takes a
minute to prepare its problem of seq_q 16: a test baseline to interrupt mid-run
(tests/baselines: Ctrl-C keeps what was timed and the earlier entries of the rest)."""
import importlib.util
import os
import time

_spec = importlib.util.spec_from_file_location(
    "numpy_attention", os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_attention.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

NAME = "numpy_slow_second"
SUMMARY = "NumPy attention, slow on seq_q 16 when ATTNBENCH_TEST_SLOW is set (test baseline)"
PACKAGES = ("numpy",)
available = _base.available


def prepare(problem, inputs, threads):
    if os.environ.get("ATTNBENCH_TEST_SLOW") and problem["seq_q"] == 16:
        time.sleep(60)
    return _base.prepare(problem, inputs, threads)
