# SPDX-License-Identifier: MIT
"""Shared helpers for the attnbench CLI tests (run by CTest with /usr/bin/python3).

Each test script takes the path of the attnbench binary as its only argument, records
failures with check() and exits 1 if any check failed (0 otherwise, 77 = skipped).
"""
import os
import subprocess
import sys
import tempfile

BIN = None
_failures = 0


def init():
    global BIN
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} PATH/TO/attnbench", file=sys.stderr)
        sys.exit(2)
    BIN = os.path.abspath(sys.argv[1])
    if not os.access(BIN, os.X_OK):
        print(f"{BIN}: not an executable (build attnbench first)", file=sys.stderr)
        sys.exit(1)
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("numpy is missing: install python3-numpy (Debian) for /usr/bin/python3", file=sys.stderr)
        sys.exit(1)


def run(*args, env=None, cwd=None):
    """Runs attnbench with args; returns (exit code, stdout, stderr)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, env=full_env,
                       cwd=cwd, stdin=subprocess.DEVNULL, timeout=600)
    return p.returncode, p.stdout, p.stderr


def with_overrides(base, extra):
    """The argument list of base ({option: value}, in order) with extra's OPTION VALUE pairs:
    an option already in base takes the new value in place, others are appended."""
    args, flags = dict(base), []
    for i in range(0, len(extra), 2):
        if extra[i] in args:
            args[extra[i]] = extra[i + 1]
        else:
            flags += extra[i:i + 2]
    return [x for kv in args.items() for x in kv] + flags


def check(cond, what):
    global _failures
    if not cond:
        _failures += 1
        print(f"FAIL: {what}", file=sys.stderr)
    return cond


def finish(name):
    if _failures:
        print(f"{name}: {_failures} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print(f"{name}: all checks passed")
    sys.exit(0)


def list_kernels(env=None):
    """[(name, available, rest_of_line)] parsed from `attnbench list` (name first, then
    'available' or 'unavailable (needs …)')."""
    rc, out, err = run("list", env=env)
    check(rc == 0, f"attnbench list exits 0 (got {rc}: {err})")
    kernels = []
    for line in out.splitlines():
        fields = line.split()
        if not fields:
            continue
        check(fields[1] in ("available", "unavailable"), f"list line has availability second: {line!r}")
        kernels.append((fields[0], fields[1] == "available", line))
    return kernels


def tempdir():
    return tempfile.TemporaryDirectory(prefix="attnbench-cli-")
