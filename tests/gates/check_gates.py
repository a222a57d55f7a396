#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""CI gates that cannot pass vacuously: `attnbench check` fails when a
--kernel cannot run on this CPU (unless --allow-skips, which reports its pairs as
skipped) and when nothing was checked; --junit / --json write one record per (kernel,
case) with skips as skips, failures and inconclusive pairs with their message, suite =
kernel; the report files are validated like every output (not an input, not each other).
Usage: check_gates.py PATH/TO/attnbench"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import numpy as np  # noqa: E402

import clitest  # noqa: E402
from clitest import check, run  # noqa: E402

clitest.init()
MASK0 = {"ATTNBENCH_ISA_MASK": "0"}
LAST = re.compile(r"(\d+) passed, (\d+) failed, (\d+) inconclusive, (\d+) skipped, (\d+) fallback")


def last_line(out):
    """(passed, failed, inconclusive, skipped) of the closing line (fallback_of: F)."""
    lines = out.rstrip("\n").splitlines()
    m = LAST.fullmatch(lines[-1]) if lines else None
    return tuple(int(g) for g in m.groups()[:4]) if m else None


def fallback_of(out):
    lines = out.rstrip("\n").splitlines()
    m = LAST.fullmatch(lines[-1]) if lines else None
    return int(m[5]) if m else None


def check_run(*args, env=None):
    rc, out, err = run("check", "--quick", "--no-progress", *args, env=env)
    return rc, last_line(out), out, err


def junit(path):
    """Parses a JUnit file (xml.etree): {suite: [(case name, kind, message)]}, and checks
    that every count attribute equals its children."""
    root = ET.parse(path).getroot()
    check(root.tag == "testsuites", f"{path}: root is <testsuites> (got {root.tag})")
    suites, totals = {}, {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for s in root.findall("testsuite"):
        cases = []
        for tc in s.findall("testcase"):
            check(tc.get("classname") == s.get("name"), f"{path}: testcase classname is the suite")
            kids = [c for c in tc if c.tag in ("failure", "error", "skipped")]
            check(len(kids) <= 1, f"{path}: at most one verdict element per testcase")
            kind = kids[0].tag if kids else "pass"
            msg = kids[0].get("message") if kids else None
            check(kind == "pass" or msg, f"{path}: a {kind} has a message")
            cases.append((tc.get("name"), kind, msg))
        counts = {"tests": len(cases), "failures": sum(k == "failure" for _, k, _ in cases),
                  "errors": sum(k == "error" for _, k, _ in cases),
                  "skipped": sum(k == "skipped" for _, k, _ in cases)}
        for a, n in counts.items():
            check(int(s.get(a)) == n, f"{path}: suite {s.get('name')} {a}={s.get(a)} counts {n}")
            totals[a] += n
        check(s.get("name") not in suites, f"{path}: suite {s.get('name')} appears once")
        suites[s.get("name")] = cases
    for a, n in totals.items():
        check(int(root.get(a)) == n, f"{path}: testsuites {a}={root.get(a)} counts {n}")
    return suites


kernels = clitest.list_kernels(env=MASK0)
needs_isa = [n for n, ok, _ in kernels if not ok]
available = [n for n, ok, _ in clitest.list_kernels() if ok]
rc, out, _ = run("check", "--quick", "--list-cases")
case_names = out.splitlines()
n_cases = len(case_names)
check(rc == 0 and n_cases > 0, f"the quick matrix has cases ({n_cases})")
if not needs_isa:
    print("SKIPPED: every kernel runs with ATTNBENCH_ISA_MASK=0 (no SIMD kernel in this build)")
    sys.exit(77)
x = needs_isa[0]

with clitest.tempdir() as d:
    def path(n):
        return os.path.join(d, n)

    # ── a named kernel that cannot run here ─────────────────────────────────────────────
    rc, tot, out, err = check_run("--kernel", x, "--junit", path("never.xml"), env=MASK0)
    check(rc == 1 and f"kernel '{x}' cannot run on this CPU" in err and "--allow-skips" in err,
          f"--kernel {x} with its ISA masked off fails, naming the way out ({rc}: {err.strip()})")
    check(not os.path.exists(path("never.xml")), "no report when the command refuses up front")
    rc, tot, out, err = check_run("--kernel", "naive", "--kernel", x, env=MASK0)
    check(rc == 1 and "cannot run on this CPU" in err and "passed" not in out,
          f"one unavailable --kernel among available ones still fails, before any work ({rc})")
    # --allow-skips with nothing else: all pairs skipped, nothing checked: still exit 1.
    rc, tot, out, err = check_run("--kernel", x, "--allow-skips", "--junit", path("skips.xml"),
                                  "--json", path("skips.json"), env=MASK0)
    check(rc == 1 and tot == (0, 0, 0, n_cases) and "nothing was checked" in err,
          f"only skipped pairs: 'nothing was checked', exit 1 ({rc}, {tot}: {err.strip()})")
    s = junit(path("skips.xml"))
    check(list(s) == [x] and len(s[x]) == n_cases and all(k == "skipped" for _, k, _ in s[x])
          and all("unavailable on this CPU" in m for _, _, m in s[x]),
          f"JUnit of a skipped kernel: suite '{x}', every case <skipped/> with the reason")
    j = json.load(open(path("skips.json")))
    check(j["format"] == "attnbench-check-1" and j["passed"] == 0 and j["skipped"] == n_cases
          and all(r["verdict"] == "skipped" and r["kernel"] == x for r in j["results"]),
          "JSON of a skipped kernel: every result skipped")
    # Skips beside a kernel that runs: exit 0, each counted as what it is.
    rc, tot, out, err = check_run("--kernel", "naive", "--kernel", x, "--allow-skips",
                                  "--junit", path("mixed.xml"), "--json", path("mixed.json"),
                                  env=MASK0)
    check(rc == 0 and tot == (n_cases, 0, 0, n_cases),
          f"--allow-skips: naive passes, {x} skipped, exit 0 ({rc}, {tot})")
    s = junit(path("mixed.xml"))
    order = [n for n, _, _ in kernels if n in ("naive", x)]
    check(list(s) == order, f"one suite per kernel, named after it, in registry order ({list(s)})")
    check(all(k == "pass" for _, k, _ in s["naive"]) and all(k == "skipped" for _, k, _ in s[x]),
          "naive's cases pass, the masked kernel's are skipped (never passed)")
    names = [n for n, _, _ in s["naive"]]
    check(names == case_names and len(set(names)) == n_cases,
          "one testcase per case, named by its description, in matrix order")
    j = json.load(open(path("mixed.json")))
    check((j["passed"], j["failed"], j["inconclusive"], j["skipped"]) == tot,
          f"JSON totals equal the closing line ({tot})")
    check(len(j["results"]) == 2 * n_cases and
          sorted({(r["kernel"], r["verdict"]) for r in j["results"]}) == sorted({("naive", "pass"), (x, "skipped")}),
          "JSON: one result per (kernel, case) with its verdict")
    check([k["name"] for k in j["kernels"]] == order, "JSON: per-kernel counts in registry order")
    check(all(isinstance(r["max_abs_err"], float) or isinstance(r["max_abs_err"], int)
              for r in j["results"] if r["verdict"] == "pass")
          and all(r["max_abs_err"] is None for r in j["results"] if r["verdict"] == "skipped"),
          "JSON: errors measured for passes, null for skips")

    # ── without --kernel: unavailable kernels are skipped, not an error ─────────────────
    rc, tot, out, err = check_run("--filter", "Sq1 ", env=MASK0)
    n_sq1 = len(run("check", "--quick", "--list-cases", "--filter", "Sq1 ")[1].splitlines())
    # the rest pass: on their own code, or on the shared fallback for options they do not claim
    check(rc == 0 and tot is not None and tot[3] == len(needs_isa) * n_sq1
          and tot[0] + fallback_of(out) == (len(kernels) - len(needs_isa)) * n_sq1,
          f"default selection: the masked kernels' pairs are skipped, the rest pass ({rc}, {tot})")

    # ── failures and inconclusive pairs carry their message ─────────────────────────────
    rc, tot, out, err = check_run("--kernel", "blocked", "--junit", path("fail.xml"),
                                  "--json", path("fail.json"),
                                  env={"ATTNBENCH_MEMORY_LIMIT": "256K"})
    s = junit(path("fail.xml"))
    fails = [c for c in s.get("blocked", []) if c[1] == "failure"]
    check(rc == 1 and tot is not None and tot[1] > 0 and len(fails) == tot[1]
          and all("refused" in m for _, _, m in fails)
          and sum(k == "pass" for _, k, _ in s["blocked"]) == tot[0],
          f"refused pairs are <failure>s with the reason, the rest pass ({rc}, {tot})")
    j = json.load(open(path("fail.json")))
    check(sum(r["verdict"] == "fail" for r in j["results"]) == tot[1]
          and all(r["message"] and "refused" in r["message"] for r in j["results"] if r["verdict"] == "fail"),
          "JSON: failures with their message")

    rng = np.random.default_rng(3)
    big = np.where(rng.standard_normal((1, 2, 4, 8)) > 0, 3e38, -3e38).astype(np.float32)
    np.save(path("q.npy"), big)
    np.save(path("k.npy"), big[:, :, :3].copy())
    np.save(path("v.npy"), rng.standard_normal((1, 2, 3, 8), dtype=np.float32))
    np.save(path("o.npy"), np.zeros((1, 2, 4, 8), dtype=np.float32))
    io = ["--q", path("q.npy"), "--k", path("k.npy"), "--v", path("v.npy"), "--o", path("o.npy")]
    rc, so, se = run("check", *io, "--junit", path("o.xml"), "--json", path("o.json"))
    s = junit(path("o.xml"))
    check(rc == 1 and last_line(so) == (0, 0, 1, 0) and list(s) == ["output"]
          and len(s["output"]) == 1 and s["output"][0][1] == "error"
          and s["output"][0][0] == path("o.npy") and "domain" in s["output"][0][2],
          f"--o inconclusive: one <error> testcase with the reason ({rc}: {so} {s})")
    j = json.load(open(path("o.json")))
    check(j["inconclusive"] == 1 and j["results"][0]["verdict"] == "inconclusive",
          "--o JSON: inconclusive")

    # ── report paths are outputs: not an input, not each other, replaceable ─────────────
    before = open(path("q.npy"), "rb").read()
    rc, so, se = run("check", *io, "--junit", path("q.npy"))
    check(rc == 1 and "same file as the Q input" in se and open(path("q.npy"), "rb").read() == before,
          f"--junit naming an input is refused, the input untouched ({rc}: {se.strip()})")
    rc, so, se = run("check", *io, "--json", path("o.npy"))
    check(rc == 1 and "same file" in se, f"--json naming --o is refused ({rc}: {se.strip()})")
    rc, tot, out, err = check_run("--kernel", "naive", "--junit", path("r.out"), "--json", path("r.out"))
    check(rc == 1 and "same file" in err and not os.path.exists(path("r.out")),
          f"--junit and --json naming one (new) file are refused ({rc}: {err.strip()})")
    os.symlink(path("mixed.xml"), path("link.xml"))
    rc, tot, out, err = check_run("--kernel", "naive", "--junit", path("mixed.xml"), "--json", path("link.xml"))
    check(rc == 1 and "same file" in err, f"... also through a symlink to an existing file ({rc})")
    os.mkdir(path("adir"))
    rc, tot, out, err = check_run("--kernel", "naive", "--junit", path("adir"))
    check(rc == 1 and "directory" in err and "passed" not in out,
          f"--junit naming a directory is refused before any work ({rc}: {err.strip()})")
    rc, out, err = run("check", "--quick", "--list-cases", "--junit", path("l.xml"))
    check(rc == 2 and "do not apply" in err, f"--list-cases with --junit is a usage error ({rc})")
    leftovers = [n for n in os.listdir(d) if ".tmp." in n]
    check(not leftovers, f"no temporaries left behind ({leftovers})")

clitest.finish("check_gates")
