#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel plug-ins through the CLI (docs/plugins.md).

    test_plugins.py ATTNBENCH PLUGIN_DIR

PLUGIN_DIR holds example_plugin.so (examples/example_kernel.c: kernel example__scalar)
and the bad_<what>.so of tests/plugins/bad_plugin.c. Checks that the good plug-in's
kernel is listed (marked, with its file), checked, run and benchmarked like a built-in,
by --plugin (both spellings) and ATTNBENCH_PLUGINS, for every command; and that every bad
plug-in, a missing file and a file that is not a shared object are refused with a message
naming the file and the problem, exit 1, and no crash.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

EXE, DIR = sys.argv[1], sys.argv[2]
GOOD = os.path.join(DIR, "example_plugin.so")
KERNEL = "example__scalar"
failures = []


def run(*args, env=None):
    e = dict(os.environ)
    e.pop("ATTNBENCH_PLUGINS", None)
    e.update(env or {})
    p = subprocess.run([EXE, *args], capture_output=True, text=True, env=e, timeout=120)
    if p.returncode < 0 or "Sanitizer" in p.stderr:
        failures.append(f"{args}: crashed (rc {p.returncode}): {p.stderr[-500:]}")
    return p


def expect(cond, what):
    if not cond:
        failures.append(what)


# ── the good plug-in ────────────────────────────────────────────────────────────────
builtin = json.loads(run("list", "--json").stdout)
expect(all(k["plugin"] is None for k in builtin), "built-ins must have plugin: null")
expect(KERNEL not in [k["name"] for k in builtin], "plug-in kernel listed without --plugin")

for how, args, env in [("--plugin PATH", ["--plugin", GOOD], None),
                       ("--plugin=PATH", [f"--plugin={GOOD}"], None),
                       ("ATTNBENCH_PLUGINS", [], {"ATTNBENCH_PLUGINS": f"::{GOOD}:"})]:
    p = run("list", "--json", *args, env=env)
    expect(p.returncode == 0, f"{how}: list --json rc {p.returncode}: {p.stderr}")
    ks = json.loads(p.stdout) if p.returncode == 0 else []
    names = [k["name"] for k in ks]
    expect(names[:len(builtin)] == [k["name"] for k in builtin],
           f"{how}: built-ins must come first, unchanged: {names}")
    mine = [k for k in ks if k["name"] == KERNEL]
    expect(len(mine) == 1 and mine[0]["plugin"] == os.path.realpath(GOOD) and mine[0]["available"],
           f"{how}: {KERNEL} not listed once as a plug-in from {GOOD}: {mine}")
    # --plugin may also come before the command's other options or after them
    p = run("list", *args, "--available", env=env)
    line = [l for l in p.stdout.splitlines() if l.startswith(KERNEL + " ")]
    expect(p.returncode == 0 and len(line) == 1 and
           line[0].endswith(f"[plug-in: {os.path.realpath(GOOD)}]"),
           f"{how}: text list line for {KERNEL}: {line} {p.stderr}")

# check: the plug-in kernel is checked over the (quick) matrix and passes; counts > 0
p = run("check", "--quick", "--plugin", GOOD, "--kernel", KERNEL, "--no-progress")
summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
expect(p.returncode == 0 and " 0 failed" in summary and not summary.startswith("0 passed"),
       f"check --plugin: rc {p.returncode}: {p.stdout[-400:]} {p.stderr}")
# the kernel is named on the command line but not loaded: an unknown kernel, not a pass
p = run("check", "--quick", "--kernel", KERNEL)
expect(p.returncode != 0 and KERNEL in p.stderr, f"check of an unloaded plug-in kernel: rc {p.returncode}")

# run: same output as the reference within the check tolerance (--check), on .npy files
with tempfile.TemporaryDirectory() as tmp:
    rng = np.random.default_rng(3)
    shapes = {"q": (1, 4, 7, 16), "k": (1, 2, 11, 16), "v": (1, 2, 11, 8)}
    arr = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    for n, a in arr.items():
        np.save(os.path.join(tmp, n + ".npy"), a)
    out = os.path.join(tmp, "o.npy")
    files = [f"--{n}={os.path.join(tmp, n + '.npy')}" for n in "qkv"]
    p = run("run", "--plugin", GOOD, "--kernel", KERNEL, *files, "--out", out, "--causal", "--check",
            "--quiet")
    expect(p.returncode == 0, f"run --plugin: rc {p.returncode}: {p.stderr}")
    if p.returncode == 0:
        q, k, v = (arr[n].astype(np.float64) for n in "qkv")
        k, v = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(16)
        sq, skv = 7, 11
        mask = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
        s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        ref = (w / w.sum(-1, keepdims=True)) @ v
        got = np.load(out)
        expect(got.shape == ref.shape and np.max(np.abs(got - ref)) < 1e-4,
               f"run --plugin output differs from float64 attention by {np.max(np.abs(got - ref))}")

    # bench: the plug-in kernel is pre-checked, timed and in the results file
    ini = os.path.join(tmp, "tiny.ini")
    with open(ini, "w") as f:
        f.write("[tiny]\nkernels = reference\nbatch = 1\nheads = 2\nkv_heads = 1\nhead_dim = 16\n"
                "seq_len = 32\ncausal = true\nthreads = 1\nrepetitions = 2\nmin_time = 0.01\n")
    res = os.path.join(tmp, "r.json")
    p = run("bench", "--config", ini, "--kernel", KERNEL, "--out", res, "--quiet", "--no-probe",
            env={"ATTNBENCH_PLUGINS": GOOD})
    expect(p.returncode == 0, f"bench with ATTNBENCH_PLUGINS: rc {p.returncode}: {p.stderr}")
    if p.returncode == 0:
        doc = json.load(open(res))
        expect(doc["context"].get("plugins") == f"{KERNEL}={os.path.realpath(GOOD)}",
               f"results context 'plugins': {doc['context'].get('plugins')!r}")
        runs = [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]
        expect(len(runs) == 2 and all(b["name"].startswith(KERNEL + "/") and b["real_time"] > 0
                                      and "error_occurred" not in b for b in runs),
               f"bench results for {KERNEL}: {runs}")

# info accepts it too (the option is global)
p = run("info", "--no-peak", "--plugin", GOOD)
expect(p.returncode == 0, f"info --plugin: rc {p.returncode}: {p.stderr}")
# the help of every command documents it
for cmd in ["list", "check", "run", "bench", "info"]:
    expect("--plugin PATH" in run(cmd, "--help").stdout, f"{cmd} --help lacks --plugin")

# ── bad plug-ins: refused, exit 1, a message naming the file and the problem ─────────
with tempfile.TemporaryDirectory() as tmp:
    notso = os.path.join(tmp, "notso.so")
    with open(notso, "w") as f:
        f.write("this is not an ELF file\n")
    cases = [
        (os.path.join(tmp, "missing.so"), "no such file"),
        (notso, "cannot load it as a shared object"),
        (tmp, "not a regular file"),
    ] + [(os.path.join(DIR, f"bad_{w}.so"), msg) for w, msg in [
        ("noentry", "no entry point attn_plugin_v1"),
        ("abi", "ABI version 5, this attnbench needs 4"),
        ("recsize", "kernel record size"),
        ("nullplugin", "the entry point returned NULL"),
        ("nullname", "NULL name"),
        ("nullrec", "kernel record 1 is NULL"),
        ("dup", "kernel name 'bad_first' appears twice"),
        ("shadow", "kernel 'naive' shadows the built-in"),
        ("norun", "run (the entry point) is NULL"),
        ("caps", "caps 0x40000000 has unknown bits"),
        # code that runs while loading: the command ends, the plug-in named
        ("entrysegv", "was killed by SIGSEGV while being loaded"),
        ("ctorsegv", "was killed by SIGSEGV while being loaded"),
        # a load that never returns: ended after --case-timeout, the plug-in named
        ("entryhang", "did not return within 1 s"),
        ("ctorhang", "did not return within 1 s"),
    ]]
    for path, msg in cases:
        for args, env in [(["--plugin", path], None), ([], {"ATTNBENCH_PLUGINS": path})]:
            hang = path.endswith("hang.so")
            cmd = ["check", "--quick", "--case-timeout", "1"] if hang else ["list"]
            p = run(*cmd, *args, env=env)
            lines = p.stderr.strip().splitlines()
            expect(p.returncode == 1 and len(lines) == 1 and msg in lines[0] and path in lines[0]
                   and p.stdout == "",
                   f"bad plug-in {path} ({'env' if env else 'option'}): rc {p.returncode}, "
                   f"stderr {p.stderr!r}, want one line with {msg!r}")
    # a bad plug-in after a good one: refused, and the command does not run
    p = run("check", "--quick", "--plugin", GOOD, "--plugin", os.path.join(DIR, "bad_dup.so"))
    expect(p.returncode == 1 and "appears twice" in p.stderr and "passed" not in p.stdout,
           f"good + bad plug-in: rc {p.returncode} {p.stderr}")
    # the same plug-in twice: its names are already registered
    p = run("list", "--plugin", GOOD, "--plugin", GOOD)
    expect(p.returncode == 1 and "already registered by plug-in" in p.stderr,
           f"plug-in loaded twice: rc {p.returncode} {p.stderr}")
    # --plugin without a value is a bad command line
    for args in (["list", "--plugin"], ["check", "--plugin="]):
        p = run(*args)
        expect(p.returncode == 2 and "--plugin needs a value" in p.stderr, f"{args}: rc {p.returncode}")
    # after all that, built-ins still work (nothing else broke)
    p = run("check", "--quick", "--kernel", "naive", "--no-progress")
    expect(p.returncode == 0, f"built-in check after bad plug-ins: {p.returncode}")

# ── a loaded plug-in is an input of every command: no output may replace it ────────────
with tempfile.TemporaryDirectory() as d:
    lib = os.path.join(d, "mine.so")
    with open(GOOD, "rb") as f, open(lib, "wb") as g:
        g.write(f.read())
    before = open(lib, "rb").read()
    qkv = []
    for n, shape in (("q", (1, 2, 4, 8)), ("k", (1, 2, 6, 8)), ("v", (1, 2, 6, 8))):
        qkv.append(os.path.join(d, n + ".npy"))
        np.save(qkv[-1], np.ones(shape, np.float32))
    cfg = os.path.join(d, "one.ini")
    with open(cfg, "w") as f:
        f.write("[t]\nkernels = naive\nheads = 2\nhead_dim = 8\nseq_len = 8\nthreads = 1\n"
                "repetitions = 1\nmin_time = 0.001\n")
    for cmd in (["run", "--kernel", "naive", "--q", qkv[0], "--k", qkv[1], "--v", qkv[2],
                 "--out", lib],
                ["bench", "--config", cfg, "--out", lib, "--no-probe"],
                ["check", "--quick", "--kernel", "naive", "--json", lib]):
        for how, args, env in [("--plugin", ["--plugin", lib], None),
                               ("ATTNBENCH_PLUGINS", [], {"ATTNBENCH_PLUGINS": lib})]:
            p = run(*cmd, *args, env=env)
            expect(p.returncode != 0 and "is the same file as the plug-in library" in p.stderr
                   and open(lib, "rb").read() == before,
                   f"{cmd[0]} ({how}) with its output on the loaded plug-in: rc {p.returncode} "
                   f"{p.stderr.strip()[-300:]}")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "plugins_cli: all checks passed")
sys.exit(1 if failures else 0)
