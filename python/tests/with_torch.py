# SPDX-License-Identifier: MIT
"""CTest python_torch: test_attention.py and test_layouts.py --require-torch with a Python
that has torch — the baselines' environment (docs/baselines.md: $ATTNBENCH_BASELINES_VENV,
else the source tree's .venv-baselines, made by scripts/setup-baselines --only torch).
Exit 77 (skipped), saying why, when there is none or its torch does not import.

    with_torch.py SOURCE_DIR"""

import os
import subprocess
import sys

SKIP = 77


def main():
    src = os.path.abspath(sys.argv[1])
    venv = os.environ.get("ATTNBENCH_BASELINES_VENV") or os.path.join(src, ".venv-baselines")
    py = os.path.join(venv, "bin", "python")
    if not os.access(py, os.X_OK):
        print(f"SKIP: no Python at {py} (scripts/setup-baselines --only torch makes it)")
        return SKIP
    r = subprocess.run([py, "-c", "import numpy, torch; print(torch.__version__)"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"SKIP: {py} cannot import torch and numpy: {r.stderr.strip().splitlines()[-1:]}")
        return SKIP
    print(f"torch {r.stdout.strip()} from {py}")
    rc = 0
    for name in ("test_attention.py", "test_layouts.py"):
        test = os.path.join(src, "python", "tests", name)
        r = subprocess.run([py, test, "--require-torch"]).returncode
        rc = r if rc in (0, SKIP) and r != 0 else rc
    return rc


if __name__ == "__main__":
    sys.exit(main())
