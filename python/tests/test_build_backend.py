# SPDX-License-Identifier: MIT
"""CTest python_build_backend: python/build_backend/attnbench_build.py sends the build's
output to the user's terminal instead of pip's capture, and back to pip when the build
fails, without a build (scikit-build-core is replaced by a stand-in whose build_wheel
prints from Python and from a child process, as CMake does, and fails on request).

Each case plays pip: a process on a pseudo-terminal (its controlling terminal and fds
0-2) runs the hook in a child the way pip does (standard input a closed pipe, standard
output and error captured into a file):
  • pip on a terminal: the output reaches the terminal, not the capture;
  • the same, the build failing: the terminal and then the capture get it;
  • ATTNBENCH_BUILD_TTY=0, or pip's own output not a terminal (pip install … > log):
    the capture gets it, the terminal does not (pip's behaviour: shown with -v)."""

import os
import pty
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BACKEND = os.path.join(os.path.dirname(HERE), "build_backend")
MARK_PY, MARK_CHILD = "py-line-of-the-build", "child-line-of-the-build"
failures = []

# The hook process: a stand-in scikit_build_core, then the backend's build_wheel. Exit 3
# when the build raised.
HOOK = f"""
import os, sys, types
pkg, build = types.ModuleType("scikit_build_core"), types.ModuleType("scikit_build_core.build")
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    print({MARK_PY!r}, flush=True)
    os.system("echo {MARK_CHILD}")
    if os.environ.get("STAND_IN_FAIL") == "1":
        raise RuntimeError("the build failed")
    return "attnbench-0-py3-none-any.whl"
build.build_wheel = build.build_editable = build_wheel
build.build_sdist = lambda *a, **k: "attnbench-0.tar.gz"
build.__all__ = ["build_sdist"]
pkg.build = build
sys.modules["scikit_build_core"], sys.modules["scikit_build_core.build"] = pkg, build
sys.path.insert(0, {BACKEND!r})
import attnbench_build
try:
    attnbench_build.build_wheel("/nonexistent")
except RuntimeError:
    sys.exit(3)
"""


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


def run_case(env_extra, pip_on_terminal=True):
    """(terminal text, capture text, hook exit code) of one build_wheel call."""
    capture = tempfile.NamedTemporaryFile(delete=False)
    capture.close()
    pid, master = pty.fork()
    if pid == 0:  # "pip": on the terminal, or with its standard output sent elsewhere
        code = 9
        try:
            if not pip_on_terminal:
                os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            with open(capture.name, "wb") as cap:
                code = subprocess.run([sys.executable, "-c", HOOK], stdin=subprocess.PIPE,
                                      stdout=cap, stderr=subprocess.STDOUT,
                                      env=dict(os.environ, **env_extra)).returncode
        finally:
            os._exit(code)
    terminal = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's last user exited
            break
        if not chunk:
            break
        terminal += chunk
    _, status = os.waitpid(pid, 0)
    with open(capture.name, errors="replace") as f:
        captured = f.read()
    os.unlink(capture.name)
    return terminal.decode(errors="replace"), captured, os.waitstatus_to_exitcode(status)


def main():
    term, cap, rc = run_case({})
    check(rc == 0, f"on a terminal: exit {rc} ({term!r})")
    for mark in (MARK_PY, MARK_CHILD):
        check(mark in term, f"on a terminal: {mark} not on the terminal ({term!r})")
        check(mark not in cap, f"on a terminal: {mark} also in pip's capture")

    term, cap, rc = run_case({"STAND_IN_FAIL": "1"})
    check(rc == 3, f"failing build: exit {rc}, expected the build's exception ({term!r})")
    for mark in (MARK_PY, MARK_CHILD):
        check(mark in term, f"failing build: {mark} not on the terminal")
        check(mark in cap, f"failing build: {mark} not handed to pip's capture ({cap!r})")

    for what, env, tty in (("ATTNBENCH_BUILD_TTY=0", {"ATTNBENCH_BUILD_TTY": "0"}, True),
                           ("pip's output not a terminal", {}, False)):
        term, cap, rc = run_case(env, pip_on_terminal=tty)
        check(rc == 0, f"{what}: exit {rc} ({term!r})")
        for mark in (MARK_PY, MARK_CHILD):
            check(mark in cap, f"{what}: {mark} not in pip's capture ({cap!r})")
            check(mark not in term, f"{what}: {mark} on the terminal")

    print("build backend:", "FAIL" if failures else "terminal, failure hand-back and opt-outs ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
