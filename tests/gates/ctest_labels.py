#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""CTest hygiene for CI gates:
  1. every registered test carries at least one label, all from the documented set
     (README "Tests and CI"), and each suite label selects tests (`ctest -N -L`);
  2. a test that skips (exit 77 under SKIP_RETURN_CODE) is a skip in CTest's JUnit
     (status="notrun", <skipped/>), never a pass — shown with the real test_simd_kernels
     (and kernels_isa_avx512f) command under ATTNBENCH_ISA_MASK=0;
  3. scripts/ctest-nonempty fails a run that selects no test or whose tests all skipped,
     and passes ctest's verdict through otherwise.
Usage: ctest_labels.py CTEST BUILD_DIR CTEST_NONEMPTY [--harness]"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

KNOWN = {"unit", "kernels", "simd", "parallel", "cli", "bench", "baselines", "gates", "ci",
         "exhaustive", "fuzz", "python", "plugins", "install", "docs", "mpi"}
REQUIRED = ["unit", "kernels", "simd", "parallel", "ci"]
REQUIRED_HARNESS = ["cli", "bench", "baselines", "gates"]

ctest, build, nonempty = sys.argv[1:4]
harness = "--harness" in sys.argv[4:]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)
    return cond


def sh(cmd, env=None, cwd=None):
    full = dict(os.environ)
    full.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=full, cwd=cwd,
                       stdin=subprocess.DEVNULL, timeout=600)
    return p.returncode, p.stdout, p.stderr


def props(t):
    return {p["name"]: p["value"] for p in t.get("properties", [])}


# ── 1. labels ───────────────────────────────────────────────────────────────────────
rc, out, err = sh([ctest, "--test-dir", build, "--show-only=json-v1"])
check(rc == 0, f"ctest --show-only=json-v1 ({rc}: {err})")
tests = json.loads(out)["tests"] if rc == 0 else []
check(len(tests) > 0, "the build registers tests")
by_label = {}
for t in tests:
    labels = props(t).get("LABELS") or []
    check(labels, f"test {t['name']} has a label (set it in its folder's CMakeLists.txt; see tests/CMakeLists.txt)")
    unknown = sorted(set(labels) - KNOWN)
    check(not unknown, f"test {t['name']}: labels {unknown} are not documented suite labels {sorted(KNOWN)}")
    for lb in labels:
        by_label.setdefault(lb, []).append(t["name"])
for lb in REQUIRED + (REQUIRED_HARNESS if harness else []):
    rc, out, _ = sh([ctest, "--test-dir", build, "-N", "-L", f"^{lb}$"])
    m = re.search(r"Total Tests: (\d+)", out)
    n = int(m.group(1)) if m else -1
    check(n > 0 and n == len(by_label.get(lb, [])),
          f"ctest -L {lb} selects its {len(by_label.get(lb, []))} tests (got {n})")


# ── 2. skips are skips in CTest's JUnit ───────────────────────────────────────────────
def cmake_arg(s):
    return "[==[" + s + "]==]"


def run_copy(t, env):
    """Runs test t's command and skip code in a scratch CTest directory (so the build's
    Testing/ logs stay untouched) with env; returns (rc, the JUnit testcase element)."""
    with tempfile.TemporaryDirectory(prefix="ctest-labels-") as d:
        p = props(t)
        lines = ["add_test(%s %s)" % (cmake_arg(t["name"]), " ".join(map(cmake_arg, t["command"])))]
        setp = ["ENVIRONMENT", cmake_arg(";".join("%s=%s" % kv for kv in env.items()))]
        if "SKIP_RETURN_CODE" in p:
            setp += ["SKIP_RETURN_CODE", str(p["SKIP_RETURN_CODE"])]
        if "WORKING_DIRECTORY" in p:
            setp += ["WORKING_DIRECTORY", cmake_arg(p["WORKING_DIRECTORY"])]
        lines.append("set_tests_properties(%s PROPERTIES %s)" % (cmake_arg(t["name"]), " ".join(setp)))
        with open(os.path.join(d, "CTestTestfile.cmake"), "w") as f:
            f.write("\n".join(lines) + "\n")
        rc, out, err = sh([ctest, "--test-dir", d, "--output-junit", "j.xml"])
        root = ET.parse(os.path.join(d, "j.xml")).getroot()
        cases = list(root.iter("testcase"))
        return rc, (cases[0] if len(cases) == 1 else None), root


named = {t["name"]: t for t in tests}
for name in ("test_simd_kernels", "kernels_isa_avx512f"):
    if name not in named:
        check(name != "test_simd_kernels", f"{name} is registered")
        continue
    rc, tc, root = run_copy(named[name], {"ATTNBENCH_ISA_MASK": "0"})
    check(tc is not None and tc.get("status") == "notrun" and tc.find("skipped") is not None
          and tc.find("failure") is None and root.get("skipped") == "1",
          f"{name} under ATTNBENCH_ISA_MASK=0 is a skip in CTest's JUnit "
          f"({tc.attrib if tc is not None else None}, suite skipped={root.get('skipped')})")

# The JUnit suite is named after the build (DartConfiguration.tcl), not "(empty)".
rc, out, _ = sh([ctest, "--test-dir", build, "-N"])
dart = os.path.join(build, "DartConfiguration.tcl")
check(os.path.exists(dart) and re.search(r"^BuildName: \S", open(dart).read(), re.M),
      "the build directory names its CTest build (BuildName, the JUnit suite name)")

# ── 3. scripts/ctest-nonempty ───────────────────────────────────────────────────────
with tempfile.TemporaryDirectory(prefix="ctest-nonempty-") as d:
    py = sys.executable
    with open(os.path.join(d, "CTestTestfile.cmake"), "w") as f:
        f.write(f"add_test(passes {cmake_arg(py)} -c pass)\n"
                "set_tests_properties(passes PROPERTIES LABELS good)\n"
                f"add_test(skips {cmake_arg(py)} -c [[import sys; sys.exit(77)]])\n"
                "set_tests_properties(skips PROPERTIES LABELS skip SKIP_RETURN_CODE 77)\n"
                f"add_test(fails {cmake_arg(py)} -c [[import sys; sys.exit(3)]])\n"
                "set_tests_properties(fails PROPERTIES LABELS bad)\n")

    def wrap(*args):
        return sh([nonempty, "--test-dir", d, *args])

    rc, out, err = sh([ctest, "--test-dir", d, "-L", "no-such-label"])
    plain = rc
    rc, out, err = wrap("-L", "no-such-label")
    check(rc != 0 and "no test was selected" in err,
          f"ctest-nonempty -L no-such-label fails (plain ctest exits {plain}; wrapper {rc}: {err.strip()})")
    rc, out, err = wrap("-R", "^nothing-matches$")
    check(rc != 0 and "no test was selected" in err, f"... and so does a -R matching nothing ({rc})")
    rc, out, err = wrap("-L", "^good$")
    check(rc == 0 and "ctest-nonempty: 1 ran (1 passed, 0 failed), 0 skipped" in out,
          f"one passing test: exit 0 ({rc}: {out.strip()[-200:]})")
    rc, out, err = wrap("-L", "^skip$", "--output-junit", "mine.xml")
    check(rc == 1 and "all 1 selected tests were skipped" in err,
          f"only skipped tests: exit 1 ({rc}: {err.strip()})")
    tc = ET.parse(os.path.join(d, "mine.xml")).getroot().find("testcase")
    check(tc is not None and tc.get("status") == "notrun" and tc.find("skipped") is not None,
          "the caller's --output-junit (relative to --test-dir) is kept, the skip in it")
    rc, out, err = wrap("-L", "^(good|skip)$")
    check(rc == 0 and "1 ran (1 passed, 0 failed), 1 skipped" in out,
          f"a pass beside a skip: exit 0, both counted ({rc}: {out.strip()[-200:]})")
    rc, out, err = wrap("-L", "^(good|bad)$")
    check(rc != 0 and "1 ran" not in out and "2 ran (1 passed, 1 failed)" in out,
          f"a failure: ctest's non-zero exit ({rc})")

if failures:
    print(f"ctest_labels: {failures} check(s) failed", file=sys.stderr)
    sys.exit(1)
print(f"ctest_labels: all checks passed ({len(tests)} tests, labels {sorted(by_label)})")
