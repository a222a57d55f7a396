#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""docs/results.md is what scripts/render-results makes of results/*.json:
  1. the committed page equals a fresh rendering (render-results --check exits 0);
  2. the check can fail: a page with one figure changed is reported stale (exit 1, a
     message naming the command that fixes it);
  3. rendering is deterministic: two renderings to temporary files are byte-identical;
  4. a results directory with a malformed file gives a one-line error and exit 1, and
     leaves no page behind;
  5. rows of the bf16 compute mode are scored against the unit that ran them: bf16-dot (or
     amx-bf16) for a kernel on a BF16 unit, never FMA; FMA for a kernel that runs the mode
     on its float32 FMAs (rounded inputs: a CPU without the unit), never bf16-dot.
Usage: results_page.py SOURCE_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile

src = sys.argv[1]
render = os.path.join(src, "scripts", "render-results")
page = os.path.join(src, "docs", "results.md")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args):
    p = subprocess.run([sys.executable, render] + list(args), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    return p.returncode, p.stdout, p.stderr


rc, _, err = run("--check", page)
check(rc == 0, "docs/results.md is current (run scripts/render-results): %s" % err.strip()[-400:])

with tempfile.TemporaryDirectory(prefix="results-page-") as d:
    with open(page, encoding="utf-8") as f:
        text = f.read()
    # A point is scored against the unit that runs it. Roofline tables: "| shape | T | limit |
    # `k1` | `k2` ... |"; a row's limit lists the units of its kernels with a figure, in the
    # kernels' order (bandwidth where the bytes outlast that unit's time). Kernels on a BF16
    # unit (`*bf16` in the name) give bf16-dot or amx-bf16, never FMA; the others run the bf16
    # mode on their FMAs (rounded inputs) and give FMA, never a BF16 unit.
    unit_rows, emulated_rows, bad = 0, 0, []
    kernels = None
    for ln in text.splitlines():
        cells = [c.strip() for c in ln.split("|")[1:-1]]
        if cells[:3] == ["shape", "T", "limit"]:
            kernels = [c.strip("`") for c in cells[3:]]
            continue
        if not ln.startswith("| B") or "compute:bf16 |" not in ln or kernels is None or \
                len(cells) != 3 + len(kernels):
            continue
        ran = [k for k, v in zip(kernels, cells[3:]) if v]
        limits = set(cells[2].split(" / "))
        if any("bf16" in k for k in ran):
            unit_rows += 1
            if not (limits <= {"bf16-dot", "amx-bf16", "bandwidth"} and
                    limits & {"bf16-dot", "amx-bf16"}):
                bad.append(ln)
        else:
            emulated_rows += 1
            if not limits <= {"FMA", "bandwidth"}:
                bad.append(ln)
    check(unit_rows and not bad,
          "compute:bf16 rows are limited by the unit that ran them (%d on a BF16 unit, %d "
          "emulated): %s" % (unit_rows, emulated_rows, bad[:2] if bad else "no row on a BF16 unit"))
    i = text.find("| 2 | FMA |")
    check(i > 0, "the page has a 2-thread FMA-bound row to alter")
    stale = os.path.join(d, "stale.md")
    with open(stale, "w", encoding="utf-8") as f:
        f.write(text[:i] + "| 2 | bandwidth |" + text[i + len("| 2 | FMA |"):])
    rc, _, err = run("--check", stale)
    check(rc == 1 and "is stale: run scripts/render-results" in err,
          "an altered page is reported stale (rc %d: %s)" % (rc, err.strip()[-200:]))

    a, b = os.path.join(d, "a.md"), os.path.join(d, "b.md")
    check(run("--out", a)[0] == 0 and run("--out", b)[0] == 0, "two renderings succeed")
    with open(a, "rb") as fa, open(b, "rb") as fb:
        check(fa.read() == fb.read(), "two renderings are byte-identical")

    bad = os.path.join(d, "results")
    os.mkdir(bad)
    shutil.copy(os.path.join(src, "results", "anchors-amd-epyc-zen3-2c.json"), bad)
    with open(os.path.join(bad, "reference-amd-epyc-zen3-2c.json"), "w") as f:
        f.write('{"context": {}, "benchmarks": [')
    out = os.path.join(d, "bad.md")
    rc, _, err = run("--results", bad, "--out", out)
    check(rc == 1 and err.startswith("render-results: ") and err.count("\n") == 1
          and "reference-amd-epyc-zen3-2c.json" in err,
          "a malformed results file: one line naming it, exit 1 (rc %d: %r)" % (rc, err))
    check(not os.path.exists(out), "no page written from a malformed results directory")

sys.exit(1 if failures else 0)
