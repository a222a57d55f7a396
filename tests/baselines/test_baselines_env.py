#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The baselines' environment and what a run says about its baselines (no framework
needed: the environment is a directory whose bin/python is Debian's python3, the
baseline the NumPy test baseline):

  test_baselines_env.py ATTNBENCH one-name   ATTNBENCH_BASELINES_VENV (and bench
                                             --baselines-venv) work for bench and
                                             bench-baselines; the older
                                             ATTNBENCH_BASELINES_PYTHON still does
  test_baselines_env.py ATTNBENCH ran-skipped  the end of the run says which baselines
                                             ran and which did not and why; summary.py too;
                                             --require-baselines makes a skip an error;
                                             a named baseline that cannot run fails
  test_baselines_env.py - pypi-offline       scripts/setup-baselines --if-reachable with an
                                             unreachable index: said, exit 0, nothing
                                             created; ATTNBENCH_CI_REQUIRE_PYPI=1: exit 1
  test_baselines_env.py - ggml-build-tools   scripts/setup-baselines --only ggml without cmake
                                             on PATH: one line naming it, exit 1, no venv
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(ROOT, "scripts", "bench-baselines")
NUMPY_BL = os.path.join(HERE, "numpy_attention.py")
FAILED = []
CONFIG = """[cross]
kernels = naive
heads = 4
kv_heads = 2
head_dim = 16
seq_len = 8
seq_kv = 24
causal = true
threads = 1
repetitions = 2
min_time = 0.001
"""


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def clean_env(**kw):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ATTNBENCH_BASELINES_VENV", "ATTNBENCH_BASELINES_PYTHON")}
    env["ATTNBENCH_BENCH_BASELINES"] = SCRIPT
    env.update(kw)
    return env


def fake_venv(d):
    """A directory shaped like a virtual environment whose python is Debian's python3."""
    v = os.path.join(d, "venv")
    os.makedirs(os.path.join(v, "bin"))
    os.symlink("/usr/bin/python3", os.path.join(v, "bin", "python"))
    return v


def bench(attnbench, d, out, extra, env):
    cfg = os.path.join(d, "tiny.ini")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    return subprocess.run([attnbench, "bench", "--config", cfg, "--out", out, "--no-probe"] + extra,
                          capture_output=True, text=True, env=env, timeout=300)


def baseline_entries(path, label):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        doc = json.load(f)
    return [b for b in doc["benchmarks"] if b.get("label") == label and b.get("baseline")]


def one_name(attnbench):
    with tempfile.TemporaryDirectory() as d:
        venv = fake_venv(d)
        for tag, extra, env in (
                ("ATTNBENCH_BASELINES_VENV", [], clean_env(ATTNBENCH_BASELINES_VENV=venv)),
                ("--baselines-venv", ["--baselines-venv", venv], clean_env()),
                ("ATTNBENCH_BASELINES_PYTHON (older name)", [],
                 clean_env(ATTNBENCH_BASELINES_PYTHON=os.path.join(venv, "bin", "python")))):
            out = os.path.join(d, "r.json")
            r = bench(attnbench, d, out, ["--baselines", NUMPY_BL] + extra, env)
            check(r.returncode == 0 and baseline_entries(out, "numpy_attention"),
                  "%s: bench runs the baseline in that environment (exit %d: %s)"
                  % (tag, r.returncode, r.stderr[-400:]))
            os.remove(out) if os.path.exists(out) else None
        # the same name, pointing nowhere: bench fails before the sweep and names the path
        nowhere = os.path.join(d, "no-venv")
        out = os.path.join(d, "r2.json")
        r = bench(attnbench, d, out, ["--baselines", NUMPY_BL], clean_env(ATTNBENCH_BASELINES_VENV=nowhere))
        check(r.returncode == 1 and nowhere in r.stderr and not os.path.exists(out),
              "ATTNBENCH_BASELINES_VENV without a Python: exit 1 before the sweep, naming it (%s)"
              % r.stderr[-300:])
        # bench-baselines: --venv and --python together is a usage error
        r = subprocess.run(["/usr/bin/python3", SCRIPT, "--preflight", "--venv", venv, "--python",
                            "/usr/bin/python3"], capture_output=True, text=True)
        check(r.returncode == 2 and "not both" in r.stderr, "--venv with --python: exit 2 (%s)" % r.stderr)


def ran_skipped(attnbench):
    with tempfile.TemporaryDirectory() as d:
        venv = fake_venv(d)  # Debian's python3: NumPy, no framework
        env = clean_env(ATTNBENCH_BASELINES_VENV=venv)
        out = os.path.join(d, "r.json")
        r = bench(attnbench, d, out, ["--baselines", NUMPY_BL], env)
        last = [ln for ln in r.stderr.splitlines() if ln.startswith("baselines: ran")]
        check(r.returncode == 0 and last and "numpy_attention (1 point timed)" in last[0]
              and last[0].endswith("not run: none"), "the run ends saying what ran (%s)" % last)
        with open(out) as f:
            ctx = json.load(f)["context"]
        check(json.loads(ctx.get("baselines_run", "{}")).get("numpy_attention", {}).get("points") == 1,
              "context baselines_run records it (%s)" % ctx.get("baselines_run"))
        s = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "summary.py"), out],
                           capture_output=True, text=True)
        check("external baselines run: numpy_attention (1 points)" in s.stdout,
              "summary.py names the baselines that ran (%s)" % s.stdout[-300:])
        # 'all' with no framework installed: the kernels run (exit 0) and the end says none ran
        out2 = os.path.join(d, "r2.json")
        r = bench(attnbench, d, out2, ["--baselines", "all"], env)
        notes = [ln for ln in r.stderr.splitlines() if "is not installed" in ln]
        check(r.returncode == 0 and os.path.exists(out2), "'all', none installed: the kernels run, exit 0 (%d)"
              % r.returncode)
        check(len(notes) >= 3 and any("torch_sdpa" in n for n in notes),
              "'all': each missing framework is named with why (%s)" % notes)
        check(r.stderr.rstrip().splitlines()[-1].startswith("baselines: none ran"),
              "'all': the last line says no baseline ran (%s)" % r.stderr.splitlines()[-1:])
        # --require-baselines: a skip is an error, before the sweep
        out3 = os.path.join(d, "r3.json")
        r = bench(attnbench, d, out3, ["--baselines", "all", "--require-baselines"], env)
        check(r.returncode == 1 and not os.path.exists(out3) and "require" in r.stderr,
              "--require-baselines with a framework missing: exit 1 before the sweep (%s)" % r.stderr[-300:])
        # a named baseline that cannot run fails the command
        r = bench(attnbench, d, out3, ["--baselines", "torch_sdpa"], env)
        check(r.returncode == 1 and not os.path.exists(out3),
              "a named baseline that is not installed: exit 1 (%d)" % r.returncode)
        r = bench(attnbench, d, out3, ["--require-baselines"], env)
        check(r.returncode == 2, "--require-baselines without --baselines: exit 2 (%d)" % r.returncode)
        # bench-baselines on its own, 'all' + --require on the finished file: exit 1, summary
        r = subprocess.run(["/usr/bin/python3", SCRIPT, out, "--require", "--attnbench", attnbench],
                           capture_output=True, text=True, env=env, timeout=300)
        last = [ln for ln in r.stderr.splitlines() if ln.startswith("baselines: ran")]
        check(r.returncode == 1 and last and "torch_sdpa (not installed" in last[0],
              "bench-baselines --require: exit 1, the summary names what did not run (%s)" % last)


def pypi_offline(_):
    setup = os.path.join(ROOT, "scripts", "setup-baselines")
    with tempfile.TemporaryDirectory() as d:
        venv = os.path.join(d, "venv")
        # port 9 (discard) on the loopback: refused at once, no network involved
        env = dict(os.environ, PIP_INDEX_URL="http://127.0.0.1:9/simple/")
        env.pop("ATTNBENCH_CI_REQUIRE_PYPI", None)
        r = subprocess.run([setup, "--only", "ort", "--venv", venv, "--if-reachable"], capture_output=True,
                           text=True, env=env, timeout=120)
        check(r.returncode == 0 and "not reachable" in r.stderr and not os.path.exists(venv),
              "unreachable index: said, exit 0, nothing installed (%d: %s)" % (r.returncode, r.stderr))
        env["ATTNBENCH_CI_REQUIRE_PYPI"] = "1"
        r = subprocess.run([setup, "--only", "ort", "--venv", venv, "--if-reachable"], capture_output=True,
                           text=True, env=env, timeout=120)
        check(r.returncode == 1 and "ATTNBENCH_CI_REQUIRE_PYPI" in r.stderr and not os.path.exists(venv),
              "unreachable index with ATTNBENCH_CI_REQUIRE_PYPI=1: exit 1 (%d: %s)" % (r.returncode, r.stderr))


def ggml_build_tools(_):
    """setup-baselines --only ggml compiles ggml: without cmake (or a compiler) on PATH it
    stops before creating the environment, naming what is missing and how to get it."""
    setup = os.path.join(ROOT, "scripts", "setup-baselines")
    with tempfile.TemporaryDirectory() as d:
        venv, tools = os.path.join(d, "venv"), os.path.join(d, "bin")
        os.mkdir(tools)
        for t in ("bash", "awk", "dirname", "cc", "c++"):  # everything but cmake
            path = shutil.which(t)
            if path:
                os.symlink(path, os.path.join(tools, t))
        env = dict(os.environ, PATH=tools, ATTNBENCH_SKIP_SETUP="1")
        r = subprocess.run(["bash", setup, "--only", "ggml", "--venv", venv], capture_output=True,
                           text=True, env=env, timeout=120)
        check(r.returncode == 1 and "'cmake' not found" in r.stderr and "build-essential" in r.stderr
              and not os.path.exists(venv),
              "no cmake: one line naming it, exit 1, nothing created (%d: %s)" % (r.returncode, r.stderr))
        check(len(r.stderr.strip().splitlines()) == 1, "one line (%s)" % r.stderr)


def main():
    attnbench, mode = sys.argv[1], sys.argv[2]
    {"one-name": one_name, "ran-skipped": ran_skipped, "pypi-offline": pypi_offline,
     "ggml-build-tools": ggml_build_tools}[mode](attnbench)
    if FAILED:
        print("%d checks failed" % len(FAILED))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
