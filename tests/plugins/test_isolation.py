#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel isolation and the honest gate (docs/reliability.md), with the misbehaving
plug-ins of tests/plugins/misbehaving_plugin.c.

    test_isolation.py ATTNBENCH PLUGIN_DIR

For each plug-in that exits, aborts, segfaults, hangs or leaks FP state, `check` must
fail the (kernel, case) pairs it broke with a verdict naming the kernel, the case and
what happened — in the text, the summary line, JUnit and JSON — report every other
pair (naive's among them), and exit 1. A wrong plug-in that claims no option gets no
credit for the option cases the shared fallback ran. `bench` and `run` must not exit 0
(nor leave bench's lock) when a plug-in ends the process. `check --isolate=none` ends a
hang after --case-timeout with the kernel and the case named, and a hung worker does not
outlive a `check` that is killed.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np

# Under AddressSanitizer its own SIGSEGV/SIGBUS/SIGFPE/SIGILL handlers would report and
# exit(1) first; the kernels' signals must reach the worker's wait status (a no-op
# outside sanitizer builds).
os.environ["ASAN_OPTIONS"] = ":".join(
    x for x in (os.environ.get("ASAN_OPTIONS", ""),
                "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0") if x)

EXE, DIR = sys.argv[1], sys.argv[2]
LAST = re.compile(r"(\d+) passed, (\d+) failed, (\d+) inconclusive, (\d+) skipped, (\d+) fallback")
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run(*args, timeout=300):
    """attnbench with args; a command still running after timeout seconds is killed and
    comes back with returncode None."""
    e = dict(os.environ)
    e.pop("ATTNBENCH_PLUGINS", None)
    try:
        return subprocess.run([EXE, *args], capture_output=True, text=True, env=e, timeout=timeout)
    except subprocess.TimeoutExpired as x:
        return subprocess.CompletedProcess(x.cmd, None, x.stdout or "", x.stderr or "")


def children(pid):
    """The live (not zombie) processes whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(d))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def plugin(what):
    return os.path.join(DIR, f"mis_{what}.so")


# The 7x7 cases and others around them (a short list keeps the hang's timeouts cheap).
FILTER = ("--filter", "Skv7 ")


def check_run(what, *extra, flt=FILTER):
    """check --quick of naive and mis_<what>, with reports; returns (rc, text, totals,
    junit {(suite, case): kind}, json)."""
    with tempfile.TemporaryDirectory() as tmp:
        junit, js = os.path.join(tmp, "j.xml"), os.path.join(tmp, "j.json")
        p = run("check", "--plugin", plugin(what), "--quick", "--no-progress", "--kernel", "naive",
                "--kernel", f"mis_{what}", "--junit", junit, "--json", js, *flt, *extra)
        lines = p.stdout.rstrip("\n").splitlines()
        m = LAST.fullmatch(lines[-1]) if lines else None
        tot = tuple(int(x) for x in m.groups()) if m else None
        cases = {}
        try:
            for ts in ET.parse(junit).getroot():
                for tc in ts:
                    kids = [c.tag for c in tc]
                    cases[(ts.get("name"), tc.get("name"))] = (kids[0] if kids else "pass",
                                                               [c.get("message") for c in tc])
            doc = json.load(open(js))
        except (OSError, ET.ParseError, ValueError) as e:
            expect(False, f"mis_{what}: reports not written or unreadable: {e}")
            cases, doc = {}, {"results": []}
        return p, tot, cases, doc


listed = run("check", "--quick", "--list-cases", *FILTER).stdout.splitlines()
n_quick = len(listed)
seven = [c for c in listed if " Sq7 Skv7 " in c]
expect(len(seven) >= 1, "the quick matrix has 7x7 cases")

# ── a crash, an abort, exit(0), a hang: named failures on the 7x7 cases only ────────
named = {
    "exit0": "called exit(0)",
    "abort": "killed by SIGABRT",
    "segv": "killed by SIGSEGV",
    "hang": "timed out after 5 s",
}
for what, phrase in named.items():
    extra = ("--case-timeout", "5") if what == "hang" else ()
    p, tot, junit, doc = check_run(what, *extra)
    k = f"mis_{what}"
    bad = [l for l in p.stdout.splitlines() if l.startswith(f"FAIL {k} ")]
    expect(p.returncode == 1, f"{k}: exit code {p.returncode}, want 1")
    expect(len(bad) == len(seven) and all(phrase in l and " Sq7 Skv7 " in l for l in bad),
           f"{k}: one named failure per 7x7 case with '{phrase}': {bad}")
    expect(tot is not None and tot[1] == len(seven) and tot[0] >= n_quick,
           f"{k}: summary counts the {len(seven)} failures and naive's passes: {tot}")
    expect(all(junit.get(("naive", c), ("?",))[0] == "pass" for c in seven) and
           sum(v[0] == "pass" for (s, _), v in junit.items() if s == "naive") == n_quick,
           f"{k}: naive's results are all in the JUnit report")
    fails = [(c, v) for (s, c), v in junit.items() if s == k and v[0] == "failure"]
    expect(sorted(c for c, _ in fails) == sorted(seven) and all(phrase in v[1][0] for _, v in fails),
           f"{k}: JUnit failures name what happened: {fails}")
    jf = [r for r in doc["results"] if r["kernel"] == k and r["verdict"] == "fail"]
    expect(len(jf) == len(seven) and all(phrase in r["message"] and r["code"] is None for r in jf),
           f"{k}: JSON failures name what happened: {jf}")
    expect(sum(r["kernel"] == "naive" and r["verdict"] == "pass" for r in doc["results"]) == n_quick,
           f"{k}: naive's results are all in the JSON report")
    # the plug-in's other cases ran after the crash (a new worker): passes or fallback
    ran = [r for r in doc["results"] if r["kernel"] == k and r["verdict"] in ("pass", "fallback")]
    expect(len(ran) == n_quick - len(seven), f"{k}: its other {n_quick - len(seven)} cases ran")

# without isolation the process ends with the plug-in, but never with exit 0 and silence
p = run("check", "--plugin", plugin("exit0"), "--quick", "--no-progress", "--kernel", "naive",
        "--kernel", "mis_exit0", *FILTER, "--isolate=none")
expect(p.returncode == 1 and "kernel mis_exit0, case B1" in p.stderr and "called exit(0)" in p.stderr,
       f"--isolate=none with mis_exit0: rc {p.returncode}, stderr {p.stderr[-300:]!r}")
# nor with a hang: --case-timeout still bounds the case (the in-process watch)
p = run("check", "--plugin", plugin("hang"), "--quick", "--no-progress", "--kernel", "mis_hang",
        *FILTER, "--isolate=none", "--case-timeout", "2", timeout=60)
expect(p.returncode == 1 and "kernel mis_hang, case B1" in p.stderr
       and "did not return within 2 s" in p.stderr,
       f"--isolate=none with mis_hang: rc {p.returncode}, stderr {p.stderr[-300:]!r}")

# a check killed while its worker hangs takes the worker with it
if sys.platform.startswith("linux"):
    e = dict(os.environ)
    e.pop("ATTNBENCH_PLUGINS", None)
    chk = subprocess.Popen([EXE, "check", "--plugin", plugin("hang"), "--quick", "--no-progress",
                            "--kernel", "mis_hang", *FILTER, "--case-timeout", "100"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e)
    workers = []
    for _ in range(100):  # up to 10 s for the worker to reach the 7x7 case
        time.sleep(0.1)
        workers = children(chk.pid)
        if workers:
            break
    time.sleep(1)  # the worker spins in the hanging case by now
    workers = children(chk.pid) or workers
    chk.send_signal(signal.SIGTERM)
    chk.wait(timeout=30)
    deadline = time.monotonic() + 5
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [w for w in workers if alive(w)]
    for w in left:  # never leave a spinning process behind
        os.kill(w, signal.SIGKILL)
    expect(workers and not left,
           f"a killed check leaves no worker running (workers {workers}, still alive {left})")

# ── FP leaks: named failures, and a built-in after the plug-in is unharmed ──────────
for what, phrase in (("fptrap", "unmasked exceptions 0x1d"), ("upward", "rounding up")):
    for iso in ("plugins", "none"):
        p = run("check", "--plugin", plugin(what), "--quick", "--no-progress", "--kernel",
                f"mis_{what}", "--kernel", "naive", "--kernel", "blocked", f"--isolate={iso}",
                *FILTER)
        lines = p.stdout.splitlines()
        m = LAST.fullmatch(lines[-1]) if lines else None
        bad = [l for l in lines if l.startswith(f"FAIL mis_{what} ")]
        expect(p.returncode == 1 and m is not None and p.returncode >= 0,
               f"mis_{what} --isolate={iso}: rc {p.returncode}, {lines[-1:]}, {p.stderr[-300:]}")
        expect(bad and all("left the FP environment changed" in l and phrase in l for l in bad),
               f"mis_{what} --isolate={iso}: FP leak named ({bad[:1]})")
        expect(m is not None and int(m[1]) == 2 * n_quick and int(m[2]) == len(bad),
               f"mis_{what} --isolate={iso}: naive and blocked pass every case after the leaks "
               f"({lines[-1:]})")

# ── the honest gate: a wrong plug-in claiming no option ─────────────────────────────
n_all = len(run("check", "--quick", "--list-cases").stdout.splitlines())
p, tot, junit, doc = check_run("wrong", flt=())
opt_cases = {c for (s, c), v in junit.items() if s == "mis_wrong" and v[0] == "skipped"}
expect(p.returncode == 1 and tot is not None and tot[4] == len(opt_cases) > 0,
       f"mis_wrong: fallback pairs counted apart ({tot}, {len(opt_cases)} skipped in JUnit)")
expect(all(junit[("mis_wrong", c)][1] == ["ran the shared fallback, not this kernel's code"]
           for c in opt_cases), "mis_wrong: JUnit gives the fallback reason")
jw = [r for r in doc["results"] if r["kernel"] == "mis_wrong"]
expect(all((r["verdict"] == "fallback") == (r["code"] == "fallback") for r in jw if r["verdict"] == "fallback")
       and doc["fallback"] == len(opt_cases)
       and [k for k in doc["kernels"] if k["name"] == "mis_wrong"][0]["fallback"] == len(opt_cases),
       "mis_wrong: JSON fallback verdicts, code and counts")
expect(all(r["code"] == "kernel" for r in jw if r["verdict"] in ("pass", "fail")),
       "mis_wrong: its own code's pairs say code 'kernel'")
passes = [r for r in jw if r["verdict"] == "pass"]
expect(all(" Skv1 " in r["case"] for r in passes),
       f"mis_wrong: only cases where uniform weights are right pass: {[r['case'] for r in passes]}")
row = [l for l in p.stdout.splitlines() if l.startswith("mis_wrong ")]
expect(row and row[0].split()[5] == str(len(opt_cases)), f"mis_wrong: table's fallback column {row}")
# --native-only: only what it claims
p = run("check", "--plugin", plugin("wrong"), "--quick", "--no-progress", "--kernel", "mis_wrong",
        "--native-only")
m = LAST.fullmatch(p.stdout.splitlines()[-1]) if p.stdout else None
expect(p.returncode == 1 and m is not None and int(m[5]) == 0
       and int(m[1]) + int(m[2]) == n_all - len(opt_cases) and "--native-only left out" in p.stderr,
       f"--native-only: the fallback pairs are left out ({p.stdout.splitlines()[-1:]}, {p.stderr[-200:]})")

# ── bench and run with a plug-in that ends the process ──────────────────────────────
with tempfile.TemporaryDirectory() as tmp:
    ini = os.path.join(tmp, "seven.ini")
    with open(ini, "w") as f:
        f.write("[seven]\nkernels = naive\nbatch = 1\nheads = 2\nkv_heads = 2\nhead_dim = 16\n"
                "seq_len = 7\ncausal = false\nthreads = 1\nrepetitions = 1\nmin_time = 0.01\n")
    # what the in-process guard says (isolate.h): no worker, the command itself ends
    # (a workspace() query is the kernel's code too: guarded and watched as its calls)
    inproc = {"exit0": "called exit(0)", "segv": "killed by SIGSEGV",
              "hang": "did not return within 2 s", "wssegv": "killed by SIGSEGV",
              "wshang": "did not return within 2 s"}
    for what in ("exit0", "segv", "hang", "wssegv", "wshang"):
        res = os.path.join(tmp, f"r_{what}.json")
        # a hang: --case-timeout 2 ends it (the in-process watch), the default would be 60 s
        limit = ["--case-timeout", "2"] if what.endswith("hang") else []
        p = run("bench", "--plugin", plugin(what), "--config", ini, "--kernel", "naive",
                "--kernel", f"mis_{what}", "--out", res, "--quiet", "--no-probe", *limit,
                timeout=60)
        left = [n for n in os.listdir(tmp) if n.startswith(f"r_{what}.json")]
        expect(p.returncode == 1 and f"mis_{what}" in p.stderr and inproc[what] in p.stderr,
               f"bench with mis_{what}: rc {p.returncode}, stderr {p.stderr[-400:]!r}")
        expect(not any(n.endswith(".lock") for n in left), f"bench with mis_{what} left {left}")
        rng = np.random.default_rng(7)
        qkv = []
        for name in "qkv":
            qkv += [f"--{name}", os.path.join(tmp, f"{name}.npy")]
            np.save(qkv[-1], rng.standard_normal((1, 2, 7, 16), dtype=np.float32))
        out = os.path.join(tmp, f"o_{what}.npy")
        p = run("run", "--plugin", plugin(what), "--kernel", f"mis_{what}", *qkv, "--out", out,
                *limit, timeout=60)
        expect(p.returncode == 1 and inproc[what] in p.stderr and not os.path.exists(out),
               f"run with mis_{what}: rc {p.returncode}, output {os.path.exists(out)}, "
               f"stderr {p.stderr[-300:]!r}")

    # A NaN LSE from finite inputs is refused as a non-finite O is: nothing written.
    out, lse = os.path.join(tmp, "o_nanlse.npy"), os.path.join(tmp, "l_nanlse.npy")
    p = run("run", "--plugin", plugin("nanlse"), "--kernel", "mis_nanlse", *qkv, "--out", out,
            "--lse", lse, timeout=60)
    expect(p.returncode == 1 and "mis_nanlse produced an LSE of nan" in p.stderr
           and not os.path.exists(out) and not os.path.exists(lse),
           f"run with mis_nanlse: rc {p.returncode}, stderr {p.stderr[-300:]!r}")
    p = run("run", "--plugin", plugin("nanlse"), "--kernel", "mis_nanlse", *qkv, "--out", out,
            "--lse", lse, "--allow-nonfinite", timeout=60)
    expect(p.returncode == 0 and os.path.exists(lse) and np.isnan(np.load(lse)).all(),
           f"run with mis_nanlse --allow-nonfinite writes it: rc {p.returncode}")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "plugins_isolation: all checks passed")
sys.exit(1 if failures else 0)
