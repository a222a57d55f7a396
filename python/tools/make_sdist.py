# SPDX-License-Identifier: MIT
"""Builds the attnbench Python sdist: a copy of python/ plus, in vendor/, the C sources
the native library needs (kernels/, harness/machine/peak/, harness/machine/cpu_ident.*,
LICENSE), so that the sdist builds on its own. Needs scikit-build-core (PyPI):

    python3 python/tools/make_sdist.py --out DIR        # prints the sdist's path

native/CMakeLists.txt prefers vendor/ when it exists and otherwise reads the clone."""

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYDIR)
# What vendor/ holds, relative to the repository: folders copied whole, then single files.
VENDOR_DIRS = ("kernels", "harness/machine/peak")
VENDOR_FILES = ("harness/machine/cpu_ident.c", "harness/machine/cpu_ident.h", "LICENSE")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist", "vendor", "*.egg-info")


def stage(dest):
    """Lays out the sdist's tree in dest (python/ at the top, sources in vendor/)."""
    shutil.copytree(PYDIR, dest, ignore=IGNORE)
    for d in VENDOR_DIRS:
        shutil.copytree(os.path.join(REPO, d), os.path.join(dest, "vendor", d), ignore=IGNORE)
    for f in VENDOR_FILES:
        src = os.path.join(REPO, f)
        if os.path.exists(src):
            os.makedirs(os.path.dirname(os.path.join(dest, "vendor", f)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, "vendor", f))
    if os.path.exists(os.path.join(REPO, "LICENSE")):
        shutil.copy2(os.path.join(REPO, "LICENSE"), os.path.join(dest, "LICENSE"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the .tar.gz")
    a = ap.parse_args()
    try:
        from scikit_build_core.build import build_sdist
    except ImportError:
        print("make_sdist: needs scikit-build-core (pip install scikit-build-core)",
              file=sys.stderr)
        return 2
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="attnbench-sdist-") as tmp:
        tree = os.path.join(tmp, "attnbench")
        stage(tree)
        cwd = os.getcwd()
        os.chdir(tree)  # the build backend works on the current folder
        try:
            name = build_sdist(out)
        finally:
            os.chdir(cwd)
    print(os.path.join(out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
