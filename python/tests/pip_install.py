# SPDX-License-Identifier: MIT
"""CTest: pip-install the Python module from the source tree into a fresh venv, offline,
then run tests/test_module.py with that venv's Python (from outside the source tree, so
the installed package is what gets imported).

    pip_install.py --source REPO --work DIR

The venv sees the system's site-packages (numpy, setuptools, wheel: Debian's
python3-numpy, python3-setuptools, python3-wheel); pip runs with --no-index and
--no-build-isolation, so nothing is downloaded. Exit 77 (skipped) only when venv or pip
is unavailable (Debian: python3-venv)."""

import argparse
import os
import shutil
import subprocess
import sys

SKIP = 77


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    src, work = os.path.abspath(a.source), os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    venv = os.path.join(work, "venv")
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                       capture_output=True, text=True)
    py = os.path.join(venv, "bin", "python")
    if r.returncode != 0 or subprocess.run([py, "-m", "pip", "--version"],
                                           capture_output=True).returncode != 0:
        print(f"SKIP: cannot make a venv with pip ({r.stderr.strip()[-300:]}); "
              f"install python3-venv")
        return SKIP
    # A copy of python/ (pip builds in the project folder): the source tree stays clean.
    pkg = os.path.join(work, "python")
    shutil.copytree(os.path.join(src, "python"), pkg,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    env = dict(os.environ, ATTNBENCH_SOURCE_DIR=src, PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("ATTNBENCH_PY_LIBRARY", None)
    r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", pkg],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-4000:], r.stderr[-4000:])
        print("FAIL: pip install of python/ failed")
        return 1
    out = subprocess.run([py, "-c", "import attnbench, sys; print(attnbench.__file__)"],
                         cwd=work, env=env, capture_output=True, text=True)
    where = out.stdout.strip()
    if out.returncode != 0 or not where.startswith(venv):
        print(out.stdout, out.stderr)
        print(f"FAIL: the installed module is not the one imported ({where!r})")
        return 1
    print(f"installed: {where}")
    test = os.path.join(src, "python", "tests", "test_module.py")
    rc = subprocess.run([py, test], cwd=work, env=env).returncode
    # Again with every SIMD ISA hidden: the unavailable kernels' errors.
    masked = subprocess.run([py, test], cwd=work, env=dict(env, ATTNBENCH_ISA_MASK="0"))
    return rc or masked.returncode


if __name__ == "__main__":
    sys.exit(main())
