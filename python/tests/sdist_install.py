# SPDX-License-Identifier: MIT
"""CTest python_sdist: the package as a user gets it. Builds the sdist
(python/tools/make_sdist.py), unpacks nothing from the clone into the build: pip builds a
wheel from the sdist alone (scikit-build-core, with build isolation, from PyPI) in a
fresh venv, installs the wheel and runs the module's tests with that venv's Python from
outside the source tree.

    sdist_install.py --source REPO --work DIR

Checks: the sdist holds the C sources (vendor/kernels/attn.h) and py.typed; the build
output is visible on the terminal of a plain `pip wheel` (no -v; run on a pseudo-terminal:
the CMake configure message and compile lines, build_backend/attnbench_build.py); the wheel
is a py3-none-<platform> wheel; the installed package is the one imported, has py.typed,
and passes tests/test_module.py, test_attention.py, test_benchmark.py and test_layouts.py.
Exit 77 (skipped) when PyPI is unreachable or venv/pip is missing (python3-venv); with
ATTNBENCH_CI_REQUIRE_PYPI=1 (.ci/run --require-pypi) an unreachable PyPI fails (exit 1)."""

import argparse
import glob
import os
import pty
import shutil
import subprocess
import sys
import tarfile

SKIP = 77
OFFLINE = ("NewConnectionError", "Temporary failure in name resolution", "Network is unreachable",
           "No matching distribution found", "Could not find a version",
           "ConnectTimeoutError", "ProxyError", "Max retries exceeded")


def venv(path):
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", path],
                       capture_output=True, text=True)
    py = os.path.join(path, "bin", "python")
    if r.returncode != 0 or subprocess.run([py, "-m", "pip", "--version"],
                                           capture_output=True).returncode != 0:
        return None, f"cannot make a venv with pip ({r.stderr.strip()[-300:]}); install python3-venv"
    return py, ""


def failed(text, what):
    """A failed step: skip when PyPI was unreachable (fail with ATTNBENCH_CI_REQUIRE_PYPI=1),
    else fail, printing the tail of its output."""
    if any(s in text for s in OFFLINE):
        print(text[-1500:])
        if os.environ.get("ATTNBENCH_CI_REQUIRE_PYPI") == "1":
            print(f"FAIL: PyPI is unreachable ({what} needs it; ATTNBENCH_CI_REQUIRE_PYPI=1)")
            sys.exit(1)
        print(f"SKIP: PyPI is unreachable ({what} needs it)")
        sys.exit(SKIP)
    print(text[-6000:])
    print(f"FAIL: {what}")
    sys.exit(1)


def run(cmd, env, what, **kw):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        failed(r.stdout + r.stderr, what)
    return r


def run_on_terminal(cmd, env, what, cwd):
    """cmd on a pseudo-terminal (its controlling terminal and fds 0-2), as a user at a
    shell runs it: returns what the terminal showed. Failures as run() (failed())."""
    print("+ (on a terminal)", " ".join(cmd), flush=True)
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.execvpe(cmd[0], cmd, env)
        finally:
            os._exit(127)
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        failed(text, what)
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    src, work = os.path.abspath(a.source), os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_DEFAULT_TIMEOUT="30")
    for var in ("ATTNBENCH_PY_LIBRARY", "PYTHONPATH", "ATTNBENCH_SOURCE_DIR"):
        env.pop(var, None)
    # 1. the sdist, built by scikit-build-core in a build venv
    tools, why = venv(os.path.join(work, "tools"))
    if not tools:
        print(f"SKIP: {why}")
        return SKIP
    run([tools, "-m", "pip", "install", "scikit-build-core"], env, "installing scikit-build-core")
    out = run([tools, os.path.join(src, "python", "tools", "make_sdist.py"), "--out",
               os.path.join(work, "dist")], env, "make_sdist.py").stdout.strip().splitlines()[-1]
    with tarfile.open(out) as t:
        names = set(t.getnames())
    top = os.path.basename(out)[:-len(".tar.gz")]
    for need in ("pyproject.toml", "vendor/kernels/attn.h", "vendor/kernels/attn_registry.def",
                 "vendor/harness/machine/peak/peak.c", "native/attnbench_py.c",
                 "attnbench/py.typed", "PKG-INFO"):
        if f"{top}/{need}" not in names:
            print(f"FAIL: the sdist lacks {need}")
            return 1
    print(f"sdist: {out} ({len(names)} files, self-contained)")
    # 2. a wheel from the sdist alone, in a fresh venv, build output on the terminal (no -v)
    py, why = venv(os.path.join(work, "venv"))
    if not py:
        print(f"SKIP: {why}")
        return SKIP
    wheels = os.path.join(work, "wheels")
    log = run_on_terminal([py, "-m", "pip", "wheel", "--no-deps", "-w", wheels, out], env,
                          "pip wheel from the sdist", cwd=work)
    # the configure message, a kernel's compile line (from vendor/), the library's link line
    for line in ("attnbench: building the kernels from", "/vendor/kernels/flash/",
                 "-o libattnbench_py.so"):
        if line not in log:
            print(log[-4000:])
            print(f"FAIL: the build output lacks {line!r}")
            return 1
    built = glob.glob(os.path.join(wheels, "attnbench-*.whl"))
    if len(built) != 1 or "-py3-none-" not in os.path.basename(built[0]):
        print(f"FAIL: expected one py3-none-<platform> wheel, got {built}")
        return 1
    print(f"wheel: {os.path.basename(built[0])}")
    # 3. install the wheel and test what was installed
    run([py, "-m", "pip", "install", "--no-deps", "--no-index", built[0]], env,
        "installing the wheel")
    r = subprocess.run([py, "-c", "import attnbench, os; p = os.path.dirname(attnbench.__file__); "
                        "print(p); print(os.path.exists(os.path.join(p, 'py.typed')))"],
                       cwd=work, env=env, capture_output=True, text=True)
    lines = r.stdout.split()
    if r.returncode != 0 or not lines or not lines[0].startswith(os.path.join(work, "venv")) \
            or lines[-1] != "True":
        print(r.stdout, r.stderr)
        print("FAIL: the installed package is not the one imported, or lacks py.typed")
        return 1
    print(f"installed: {lines[0]}")
    rc = 0
    for test in ("test_module.py", "test_attention.py", "test_benchmark.py", "test_layouts.py"):
        rc |= subprocess.run([py, os.path.join(src, "python", "tests", test)], cwd=work,
                             env=env).returncode
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
