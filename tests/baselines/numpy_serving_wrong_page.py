# SPDX-License-Identifier: MIT
"""numpy_serving_wrong_page — deliberately wrong serving anchor: numpy_serving reading the
next page of the pool instead of each sequence's last page (tests/baselines)."""
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "numpy_serving", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  "numpy_serving.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)
_base.WRONG_PAGE = True

NAME = "numpy_serving_wrong_page"
SUMMARY = "numpy_serving reading a wrong page (wrong on purpose)"
PACKAGES, OPTIONS, LAYOUTS = _base.PACKAGES, _base.OPTIONS, _base.LAYOUTS
available, prepare = _base.available, _base.prepare
