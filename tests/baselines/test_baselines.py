#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""External baselines end to end: a tiny sweep (GQA, causal, seq_q != seq_kv, so that top-
and bottom-right causal masks differ), then scripts/bench-baselines adds a baseline:

  test_baselines.py ATTNBENCH pipeline   NumPy test baselines (no framework needed): the
                                         right one is checked, timed and merged into the
                                         file; the top-left-causal one is rejected by the
                                         check and recorded as an error, exit 1.
  test_baselines.py ATTNBENCH inputs     the baselines run on the points' own inputs:
                                         `bench --export-inputs` writes exactly what was
                                         timed (digest of the files, recomputed here ==
                                         the index's == every kernel point's
                                         inputs_digest counter), each baseline entry
                                         carries that digest; a corrupted export is refused.
  test_baselines.py ATTNBENCH one-command  `bench --baselines FILE.py`: kernels and the
                                         baseline in one results file, same digests; a
                                         missing baseline environment fails before the
                                         sweep with a note naming scripts/setup-baselines.
  test_baselines.py ATTNBENCH options    options reach a baseline and the check: NumPy
                                         with each option passes `check --o` with the
                                         option, fails it without; a baseline that drops
                                         soft-capping is rejected (runner + check, and
                                         through bench-baselines as an error entry); a
                                         baseline without the option is skipped, noted.
  test_baselines.py ATTNBENCH NAME       a real baseline (ort_attention, torch_sdpa,
                                         ggml_flash_attn) from .venv-baselines: checked,
                                         timed, present in the file, summary ratio printed.
                                         Skipped (exit 77) when it is not installed.
  test_baselines.py ATTNBENCH options:NAME  that real baseline on each option: checked
                                         with the option (pass) or skipped as unsupported,
                                         as its OPTIONS say. Skipped (77) when not installed.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(ROOT, "baselines", "external", "attn_baseline.py")
PY = "/usr/bin/python3"
SKIP = 77
# ggml's F16 K/V path for short query blocks computes in F16 precision (relative error
# ~1e-3 on this test's Sq 8 shape): checked honestly, it may be rejected.
MAY_FAIL_CHECK = {"ggml_flash_attn_f16"}
CONFIG = """[cross]
kernels = naive
batch = 1
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


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    print("$ %s\n  exit %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def sweep(attnbench, d, extra=(), config=CONFIG, env=None):
    cfg = os.path.join(d, "tiny.ini")
    with open(cfg, "w") as f:
        f.write(config)
    out = os.path.join(d, "r.json")
    r = run([attnbench, "bench", "--config", cfg, "--out", out] + list(extra), env=env)
    assert r.returncode == 0, "the kernel sweep failed"
    return out


def entries(path, label):
    with open(path) as f:
        return [b for b in json.load(f)["benchmarks"] if b.get("label") == label]


def bench_baselines(attnbench, results, baseline, python):
    return run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "bench-baselines"), results,
                "--baselines", baseline, "--python", python, "--attnbench", attnbench,
                "--min-time", "0.001"])


def pipeline(attnbench):
    with tempfile.TemporaryDirectory() as d:
        res = sweep(attnbench, d)
        r = bench_baselines(attnbench, res, os.path.join(HERE, "numpy_attention.py"),
                            "/usr/bin/python3")
        assert r.returncode == 0, "a correct baseline must pass and be timed"
        es = entries(res, "numpy_attention")
        it = [e for e in es if e.get("run_type") == "iteration"]
        assert len(it) == 2, "one entry per repetition expected, got %d" % len(it)
        for e in es:
            assert not e.get("error_occurred"), e
            assert e["baseline"] == 1 and e["GFLOP/s"] > 0 and e["Sq"] == 8 and e["Skv"] == 24
        assert entries(res, "naive"), "the kernels' entries must survive"
        # A baseline file's KV_STORAGE pairs it with the kernel points of that K/V type,
        # as a built-in's does: on a sweep of f32 and f16 K/V it runs on the f16 point only.
        d2 = os.path.join(d, "f16")
        os.mkdir(d2)
        res2 = sweep(attnbench, d2, config=CONFIG + "kv_dtype = f32, f16\n")
        r2 = bench_baselines(attnbench, res2, os.path.join(HERE, "numpy_f16_storage.py"),
                             "/usr/bin/python3")
        f16 = [e for e in entries(res2, "numpy_f16_storage") if e.get("run_type") == "iteration"]
        assert r2.returncode == 0 and f16 and all(e.get("kv_dtype") == 1 for e in f16), \
            (r2.returncode, r2.stderr, [(e["name"], e.get("kv_dtype")) for e in f16])
        # A sweep with a register-tile variant (how a kernel runs, not the problem; the
        # export's portable kernel has none), bench-baselines on its results alone: the
        # inputs are exported without it, and the baseline runs beside the variant's point.
        if "flash__avx2" in run([attnbench, "list", "--available"]).stdout:
            d3 = os.path.join(d, "split")
            os.mkdir(d3)
            res3 = sweep(attnbench, d3, config=CONFIG.replace("kernels = naive",
                                                              "kernels = flash__avx2")
                         + "regtile = 4x24/4x24\n")
            r3 = bench_baselines(attnbench, res3, os.path.join(HERE, "numpy_attention.py"),
                                 "/usr/bin/python3")
            sp = [e["name"] for e in entries(res3, "numpy_attention")
                  if e.get("run_type") == "iteration"]
            assert r3.returncode == 0 and sp and all(n.endswith("/rt1") for n in sp), \
                (r3.returncode, r3.stderr, sp)
        slow = "running: its output is checked at full size"
        assert slow not in r.stderr, "a tiny point gets no slow-check line: " + r.stderr
        s = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "summary.py"), res])
        assert s.returncode == 0 and "best external" in s.stdout and "numpy_attention" in s.stdout
        assert "over the best external baseline" in s.stdout
        assert not any("%adj_bw" in e for e in es), "no adjacent probe on a cache-sized point"

        # A kernel point measured against bench's adjacent bandwidth probe (%adj_bw, as
        # bench gives memory-bound points; injected here, the point is tiny): the
        # baseline is probed right before and after its timed calls by the same probe
        # (`attnbench info --bandwidth-probe-server`), and summary.py shows both %adj and
        # their ratio.
        p = run([attnbench, "info", "--bandwidth-probe-server", "1"], input="x\nx\n")
        out = p.stdout.split()
        assert p.returncode == 0 and out[0] == "ready" and len(out) == 3 and \
            all(float(x) > 0 for x in out[1:]), (p.returncode, p.stdout, p.stderr)
        p = run([attnbench, "info", "--bandwidth-probe-server", "0"])
        assert p.returncode == 2, "0 threads is a usage error"
        with open(res) as f:
            doc = json.load(f)
        for e in doc["benchmarks"]:
            if e.get("label") == "naive":
                e["%adj_bw"] = 50.0
        with open(res, "w") as f:
            json.dump(doc, f)
        r = bench_baselines(attnbench, res, os.path.join(HERE, "numpy_attention.py"),
                            "/usr/bin/python3")
        assert r.returncode == 0 and "adjacent bw" in r.stderr, r.stderr
        es = entries(res, "numpy_attention")
        for e in es:
            before, after = e["adj_bw_before_GB/s"], e["adj_bw_after_GB/s"]
            assert before > 0 and after > 0 and e["adj_bw_GB/s"] == max(before, after), e
            want = 100.0 * e["GB/s"] / max(before, after)
            assert abs(e["%adj_bw"] - want) <= 1e-9 * want, (e["%adj_bw"], want)
        s = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "summary.py"), res])
        assert s.returncode == 0 and "ratio@bw" in s.stdout, s.stdout

        r = bench_baselines(attnbench, res, os.path.join(HERE, "topleft_causal.py"),
                            "/usr/bin/python3")
        assert r.returncode == 1, "a baseline computing another problem must fail the run"
        es = entries(res, "topleft_causal")
        assert es and all(e.get("error_occurred") for e in es), es
        assert "check failed" in es[0]["error_message"], es[0]["error_message"]
        assert not [e for e in es if e.get("run_type") == "aggregate"], "it must not be timed"
        assert entries(res, "numpy_attention"), "earlier baselines must survive"

        # The line before a point whose full-size check takes long: every point with the
        # threshold at 0 GFLOP; a malformed threshold is an error before any work.
        os.environ["ATTNBENCH_SLOW_CHECK_GFLOP"] = "0"
        try:
            r = bench_baselines(attnbench, res, os.path.join(HERE, "numpy_attention.py"),
                                "/usr/bin/python3")
            assert r.returncode == 0 and slow in r.stderr, r.stderr
            os.environ["ATTNBENCH_SLOW_CHECK_GFLOP"] = "lots"
            r = bench_baselines(attnbench, res, os.path.join(HERE, "numpy_attention.py"),
                                "/usr/bin/python3")
            assert r.returncode != 0 and "ATTNBENCH_SLOW_CHECK_GFLOP" in r.stderr, r.stderr
        finally:
            del os.environ["ATTNBENCH_SLOW_CHECK_GFLOP"]
    print("baseline pipeline: correct baseline timed, top-left causal baseline rejected, "
          "slow-check line at its threshold")
    return 0


def time_failed(attnbench):
    """--time-failed: a baseline failing its check is timed too, marked check_failed = 1,
    the run still fails, and the summary keeps it out of the ratios."""
    with tempfile.TemporaryDirectory() as d:
        res = sweep(attnbench, d)
        r = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "bench-baselines"), res,
                 "--baselines", os.path.join(HERE, "topleft_causal.py"), "--python",
                 "/usr/bin/python3", "--attnbench", attnbench, "--min-time", "0.001",
                 "--time-failed"])
        assert r.returncode == 1, "a failed check must still fail the run"
        es = entries(res, "topleft_causal")
        it = [e for e in es if e.get("run_type") == "iteration"]
        assert it and all(e.get("check_failed") == 1 and "check failed" in e["check_verdict"]
                          and not e.get("error_occurred") for e in it), es
        s = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "summary.py"), res])
        assert s.returncode == 0 and "failed its check, timed with --time-failed" in s.stdout
        assert "over the best external baseline" not in s.stdout, "it must not enter a ratio"
    print("--time-failed: the failing baseline is timed, marked and kept out of the ratios")
    return 0


def venv_python(name):
    """The baseline environment's Python if NAME is installed there, else None (printed)."""
    venv = os.environ.get("ATTNBENCH_BASELINES_VENV")  # the one name; the older one after
    py = (os.path.join(venv, "bin", "python") if venv else
          os.environ.get("ATTNBENCH_BASELINES_PYTHON", os.path.join(ROOT, ".venv-baselines", "bin", "python")))
    if not os.path.exists(py):
        print("SKIPPED: %s: no baseline environment at %s (scripts/setup-baselines)" % (name, py))
        return None
    r = run([py, RUNNER, "list"])
    line = [ln for ln in r.stdout.splitlines() if ln.startswith(name + " ")]
    if not line or "not installed" in line[0]:
        print("SKIPPED: %s is not installed in %s (scripts/setup-baselines)" % (name, py))
        return None
    return py


def real(attnbench, name):
    py = venv_python(name)
    if not py:
        return SKIP
    with tempfile.TemporaryDirectory() as d:
        # Q8_0 blocks are 32 values along the head dimension.
        # The f16 / q8_0 baselines run on the kernels' points of their K/V type.
        config = CONFIG
        if name.endswith("q8_0"):
            config = CONFIG.replace("head_dim = 16", "head_dim = 64") + "kv_dtype = q8_0\n"
        elif name.endswith("f16"):
            config = CONFIG + "kv_dtype = f16\n"
        res = sweep(attnbench, d, config=config)
        r = bench_baselines(attnbench, res, name, py)
        if name in MAY_FAIL_CHECK:
            # Its decode/short-query path loses precision (docs/baselines.md): what must
            # hold is honesty — a failed check is an error entry and nothing is timed.
            es = entries(res, name)
            assert es, "no entry for %s" % name
            if r.returncode != 0:
                assert all(e.get("error_occurred") and "check failed" in e["error_message"]
                           for e in es), es
                print("%s: rejected by the check, not timed: %s" % (name, es[0]["error_message"]))
                return 0
        assert r.returncode == 0, "%s must pass the check and be timed" % name
        es = entries(res, name)
        assert es and not any(e.get("error_occurred") for e in es), es
        info = json.loads([e for e in es if "baseline_info" in e][0]["baseline_info"])
        assert info.get("version"), info
        s = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "summary.py"), res])
        assert s.returncode == 0 and name in s.stdout and "ratio" in s.stdout
    print("%s: checked against the reference, timed, in the results file" % name)
    return 0


# ── the points' own inputs ──────────────────────────────────────────────────────────
# Two shapes, a cold point among them, so that the export has several sets and copies.
CONFIG2 = CONFIG + """
[mha]
kernels = naive, blocked
batch = 2
heads = 2
head_dim = 8
seq_len = 5
causal = false
threads = 1
repetitions = 1
min_time = 0.001
cold_inputs = true
"""


CONFIG_MASK = """[masked]
kernels = naive
batch = 1
heads = 2
head_dim = 8
seq_len = 6
seq_kv = 9
causal = false
threads = 1
repetitions = 1
min_time = 0.001
mask = random
"""


def digest(*arrays):
    """The digest of bench/inputs.h, written here independently of attn_baseline.py: the
    wrapping sum of w_t * ((2t + 1) * 0x9E3779B1) mod 2^32, in Python integers, over the
    bits of the float32 arrays' elements, then (a list of ints) the scalar words."""
    import numpy as np
    words = []
    for a in arrays:
        if isinstance(a, list):
            words += a
        else:
            words += np.ascontiguousarray(a, np.float32).reshape(-1).view(np.uint32).tolist()
    total = 0
    for t, w in enumerate(words):
        total = (total + w * (((2 * t + 1) * 0x9E3779B1) & 0xFFFFFFFF)) & 0xFFFFFFFF
    return total


def set_digest(exp, s):
    """The digest of an exported input set from its files and index entry: Q, K, V, the
    option arrays, then the scalar block of bench/inputs.h (sizes, causal, scale, options)."""
    import numpy as np
    p, o = s["problem"], s.get("options") or {}
    arrays = [np.load(os.path.join(exp, s[t])) for t in ("q", "k", "v")]
    arrays += [np.load(os.path.join(exp, o[key])) for key in ("alibi_slopes", "sinks", "mask")
               if o.get(key)]
    f32 = lambda x: int(np.array([x], np.float32).view(np.uint32)[0])  # noqa: E731
    w = []
    for key in ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v"):
        w += [p[key] & 0xFFFFFFFF, (p[key] >> 32) & 0xFFFFFFFF]
    win = bool(o.get("window"))
    w += [int(p["causal"]), f32(p["scale"]), int(o.get("align") == "top-left"), int(win)]
    for key in ("window_left", "window_right"):
        x = (o[key] if win else 0) & 0xFFFFFFFFFFFFFFFF
        w += [x & 0xFFFFFFFF, x >> 32]
    mask = np.load(os.path.join(exp, o["mask"])) if o.get("mask") else None
    w += [f32(o.get("softcap", 0)), f32(o.get("alibi_max_bias", 0)), int(bool(o.get("alibi_slopes"))),
          int(bool(o.get("sinks"))), int(mask is not None), int(mask is not None and mask.ndim == 4),
          int(bool(o.get("lse")))]
    return digest(*arrays, w)


def kernel_digests(res):
    """{point name: inputs_digest} of the kernels' iteration entries."""
    with open(res) as f:
        bs = json.load(f)["benchmarks"]
    out = {}
    for b in bs:
        if b.get("baseline") or b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        assert "inputs_digest" in b, "a kernel point without inputs_digest: %s" % b["name"]
        out[b["run_name"]] = int(b["inputs_digest"])
    return out


def inputs(attnbench):
    import numpy as np
    with tempfile.TemporaryDirectory() as d:
        exp = os.path.join(d, "inputs")
        res = sweep(attnbench, d, ["--export-inputs", exp], CONFIG2)
        with open(os.path.join(exp, "index.json")) as f:
            ix = json.load(f)
        kd = kernel_digests(res)
        assert len(kd) >= 3, kd
        assert set(kd) <= set(ix["points"]), (sorted(kd), sorted(ix["points"]))
        sets = set()
        for name, want in kd.items():
            s = ix["inputs"][ix["points"][name]["inputs"]]
            q, k, v = (np.load(os.path.join(exp, s[t])) for t in ("q", "k", "v"))
            p = s["problem"]
            assert q.shape == (p["batch"], p["heads"], p["seq_q"], p["head_dim_qk"]), q.shape
            assert k.shape == (p["batch"], p["kv_heads"], p["seq_kv"], p["head_dim_qk"])
            got = set_digest(exp, s)
            assert got == s["digest"] == want, (name, got, s["digest"], want)
            assert digest(q, k, v) != want, "the digest must cover more than Q, K and V"
            sets.add(ix["points"][name]["inputs"])
        assert len(sets) == 2, "one input set per shape expected: %s" % sets
        cold = [n for n in ix["points"] if n.endswith("/cold")]
        assert cold and all(ix["points"][n]["input_copies"] >= 1 for n in cold), cold
        # Same seed, same shape, same values: a second export is identical (a function
        # of the problem only), and the export of --dry-run alone matches too.
        exp2 = os.path.join(d, "again")
        r = run([attnbench, "bench", "--config", os.path.join(d, "tiny.ini"), "--dry-run",
                 "--export-inputs", exp2])
        assert r.returncode == 0
        with open(os.path.join(exp2, "index.json")) as f:
            ix2 = json.load(f)
        assert {k: v["digest"] for k, v in ix2["inputs"].items()} == \
            {k: v["digest"] for k, v in ix["inputs"].items()}

        # The baselines run on the export: each entry carries the kernels' digest.
        r = run([PY, os.path.join(ROOT, "scripts", "bench-baselines"), res, "--baselines",
                 os.path.join(HERE, "numpy_attention.py"), "--python", PY, "--attnbench",
                 attnbench, "--min-time", "0.001", "--inputs", exp])
        assert r.returncode == 0, "the baseline must pass on the exported inputs"
        es = [e for e in entries(res, "numpy_attention") if e.get("run_type") == "iteration"]
        assert es, "no baseline entries"
        shapes = {}
        for e in es:
            same = [n for n in kd if n.split("/", 1)[1] == e["run_name"].split("/", 1)[1]]
            assert same, e["run_name"]
            assert int(e["inputs_digest"]) == kd[same[0]], (e["run_name"], e["inputs_digest"])
            shapes[e["Sq"]] = True
        assert len(shapes) == 2, shapes
        # Without --inputs the script exports from the recorded config: same digests.
        r = bench_baselines(attnbench, res, os.path.join(HERE, "numpy_attention.py"), PY)
        assert r.returncode == 0
        for e in entries(res, "numpy_attention"):
            if e.get("run_type") == "iteration":
                assert int(e["inputs_digest"]) in kd.values(), e

        # A corrupted export (one element of one Q) is refused, never timed.
        s0 = ix["inputs"]["in0"]
        q = np.load(os.path.join(exp, s0["q"]))
        q.reshape(-1)[3] += 1.0
        np.save(os.path.join(exp, s0["q"]), q)
        r = run([PY, os.path.join(ROOT, "scripts", "bench-baselines"), res, "--baselines",
                 os.path.join(HERE, "numpy_attention.py"), "--python", PY, "--attnbench",
                 attnbench, "--min-time", "0.001", "--inputs", exp])
        assert r.returncode == 1, "other inputs than the kernels' must fail the run"
        bad = [e for e in entries(res, "numpy_attention") if e.get("error_occurred")]
        assert bad and "other inputs" in bad[0]["error_message"], bad

    # With an option array: the digest covers it. The baseline runs on the export (same
    # digest as the kernels); with the mask file replaced (one entry) the run is refused.
    with tempfile.TemporaryDirectory() as d:
        exp = os.path.join(d, "inputs")
        res = sweep(attnbench, d, ["--export-inputs", exp], CONFIG_MASK)
        with open(os.path.join(exp, "index.json")) as f:
            ix = json.load(f)
        kd = kernel_digests(res)
        masked = [s for s in ix["inputs"].values() if (s.get("options") or {}).get("mask")]
        assert masked, "the sweep has a mask point"
        for name, want in kd.items():
            s = ix["inputs"][ix["points"][name]["inputs"]]
            assert set_digest(exp, s) == s["digest"] == want, (name, s["digest"], want)
        r = run([PY, os.path.join(ROOT, "scripts", "bench-baselines"), res, "--baselines",
                 os.path.join(HERE, "numpy_attention.py"), "--python", PY, "--attnbench",
                 attnbench, "--min-time", "0.001", "--inputs", exp])
        assert r.returncode == 0, "the baseline must pass on the exported inputs with a mask"
        es = [e for e in entries(res, "numpy_attention") if e.get("run_type") == "iteration"]
        assert es and {int(e["inputs_digest"]) for e in es} <= set(kd.values()), (es, kd)
        mpath = os.path.join(exp, masked[0]["options"]["mask"])
        m = np.load(mpath)
        flat = m.reshape(-1)
        i = int(np.flatnonzero(np.isfinite(flat))[0])
        flat[i] += 1.0
        np.save(mpath, m)
        assert set_digest(exp, masked[0]) != masked[0]["digest"], "mask replaced, same digest"
        r = run([PY, os.path.join(ROOT, "scripts", "bench-baselines"), res, "--baselines",
                 os.path.join(HERE, "numpy_attention.py"), "--python", PY, "--attnbench",
                 attnbench, "--min-time", "0.001", "--inputs", exp])
        assert r.returncode == 1, "a replaced mask must fail the run"
        bad = [e for e in entries(res, "numpy_attention") if e.get("error_occurred")]
        assert bad and "other inputs" in bad[0]["error_message"], bad
    print("inputs: export == timed inputs (digests of Q, K, V, option arrays and values), "
          "baselines ran on them, corruption of Q or of the mask refused")
    return 0


def one_command(attnbench):
    with tempfile.TemporaryDirectory() as d:
        tmp = os.path.join(d, "tmp")
        os.mkdir(tmp)
        env = dict(os.environ, ATTNBENCH_BASELINES_PYTHON=PY, TMPDIR=tmp,
                   ATTNBENCH_BENCH_BASELINES=os.path.join(ROOT, "scripts", "bench-baselines"))
        # The environment is named by ATTNBENCH_BASELINES_PYTHON here; the caller's
        # ATTNBENCH_BASELINES_VENV would take precedence over it (docs/baselines.md).
        env.pop("ATTNBENCH_BASELINES_VENV", None)
        res = sweep(attnbench, d, ["--baselines", os.path.join(HERE, "numpy_attention.py")],
                    env=env)
        kd = kernel_digests(res)
        es = [e for e in entries(res, "numpy_attention") if e.get("run_type") == "iteration"]
        assert es and not any(e.get("error_occurred") for e in es), es
        assert {int(e["inputs_digest"]) for e in es} <= set(kd.values()), (es, kd)
        assert entries(res, "naive"), "the kernels' entries must be there"
        # The baselines run on every CPU the test may use, not on the core the sweep pinned.
        info = json.loads([e for e in entries(res, "numpy_attention")
                           if "baseline_info" in e][0]["baseline_info"])
        assert info["cpus"] == len(os.sched_getaffinity(0)), (info, os.sched_getaffinity(0))
        assert not os.listdir(tmp), "the temporary export must be removed: %s" % os.listdir(tmp)
        # The same through the script found next to the source tree (no environment hint).
        del env["ATTNBENCH_BENCH_BASELINES"]
        out2 = os.path.join(d, "r2.json")
        r = run([attnbench, "bench", "--config", os.path.join(d, "tiny.ini"), "--out", out2,
                 "--baselines", os.path.join(HERE, "numpy_attention.py")], env=env)
        assert r.returncode == 0 and entries(out2, "numpy_attention"), "script not found?"
        # A missing environment: exit 1 before the sweep, a note naming the setup script.
        env["ATTNBENCH_BASELINES_PYTHON"] = os.path.join(d, "no-venv", "bin", "python")
        out3 = os.path.join(d, "r3.json")
        r = run([attnbench, "bench", "--config", os.path.join(d, "tiny.ini"), "--out", out3,
                 "--baselines", "torch_sdpa"], env=env)
        assert r.returncode == 1, r.returncode
        assert "scripts/setup-baselines" in r.stderr and not os.path.exists(out3), r.stderr
        # 'all' without an environment: the kernels run, a note says how to add baselines.
        r = run([attnbench, "bench", "--config", os.path.join(d, "tiny.ini"), "--out", out3,
                 "--baselines", "all"], env=env)
        assert r.returncode == 0 and "scripts/setup-baselines" in r.stderr, r.stderr
        assert entries(out3, "naive") and not [b for b in json.load(open(out3))["benchmarks"]
                                               if b.get("baseline")]
        r = run([attnbench, "bench", "--config", os.path.join(d, "tiny.ini"), "--baselines",
                 "all", "--dry-run"], env=env)
        assert r.returncode == 2 and "--dry-run" in r.stderr
    print("one command: kernels and baseline in one file; missing environment noted")
    return 0


# ── options ─────────────────────────────────────────────────────────────────────────
# Each option alone on a GQA cross shape (Sq 8 < Skv 24, so the alignments differ), as the
# flags of `attnbench run`/`check` and of the runner. Arrays are written by make_arrays.
OPTION_CASES = [
    ("window", ["--window", "5,0"], True),
    ("window-two-sided", ["--window", "3,2"], False),
    ("align", ["--align", "top-left"], True),
    ("softcap", ["--softcap", "0.5"], False),
    ("alibi", ["--alibi", "8"], True),
    ("alibi-slopes", ["--alibi-slopes", "SLOPES"], True),
    ("sinks", ["--sinks", "SINKS"], True),
    ("mask", ["--mask", "MASK"], False),
    ("mask-per-head", ["--mask", "MASK4"], True),
    ("combined", ["--window", "6,0", "--softcap", "1.5", "--alibi", "4", "--sinks", "SINKS"],
     True),
]


def make_arrays(d, scale_q=3.0, empty_row=True, batch=1):
    """Q/K/V (Q scaled up so that soft-capping at 0.5 changes the scores a lot) and the
    option arrays, with F16-exact mask values (multiples of 1/4, -inf)."""
    import numpy as np
    rng = np.random.default_rng(7)
    B, H, KV, Sq, Skv, D = batch, 4, 2, 8, 24, 16
    arrs = {"q": rng.standard_normal((B, H, Sq, D), dtype=np.float32) * scale_q,
            "k": rng.standard_normal((B, KV, Skv, D), dtype=np.float32),
            "v": rng.standard_normal((B, KV, Skv, D), dtype=np.float32),
            "SLOPES": np.array([0.5, -0.25, 0.125, 1.0], dtype=np.float32),
            "SINKS": rng.standard_normal(H).astype(np.float32) * 2}
    m = np.round(rng.standard_normal((Sq, Skv)) * 8) / 4
    m[rng.random((Sq, Skv)) < 0.15] = -np.inf
    arrs["MASK"] = m.astype(np.float32)
    m4 = np.round(rng.standard_normal((B, H, Sq, Skv)) * 8) / 4
    if empty_row:
        m4[:, :, 2, :] = -np.inf  # a row that sees nothing
    arrs["MASK4"] = m4.astype(np.float32)
    paths = {}
    for k, a in arrs.items():
        paths[k] = os.path.join(d, k + ".npy")
        np.save(paths[k], a)
    return paths


def resolve(flags, paths):
    return [paths.get(f, f) for f in flags]


def runner(py, baseline, paths, flags, out, causal):
    cmd = [py, RUNNER, "run", "--baseline", baseline, "--q", paths["q"], "--k", paths["k"],
           "--v", paths["v"], "--out", out, "--min-time", "0", "--threads", "1"]
    return run(cmd + (["--causal"] if causal else []) + resolve(flags, paths))


def check(attnbench, paths, out, flags, causal):
    cmd = [attnbench, "check", "--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--o", out]
    return run(cmd + (["--causal"] if causal else []) + resolve(flags, paths))


def options(attnbench):
    npb = os.path.join(HERE, "numpy_attention.py")
    with tempfile.TemporaryDirectory() as d:
        paths = make_arrays(d)
        for name, flags, causal in OPTION_CASES:
            out = os.path.join(d, name + ".o.npy")
            r = runner(PY, npb, paths, flags, out, causal)
            assert r.returncode == 0, "%s: the NumPy baseline must run" % name
            r = check(attnbench, paths, out, flags, causal)
            assert r.returncode == 0 and "check: pass" in r.stdout, "%s: must pass" % name
            # The option matters: the same output checked as a problem without it fails.
            r = check(attnbench, paths, out, [], causal)
            assert r.returncode == 1 and "check: FAIL" in r.stdout, \
                "%s: the check without the option must reject this output" % name
            # And a kernel computing with the option agrees (run's flags are check's).
            ko = os.path.join(d, name + ".kernel.npy")
            r = run([attnbench, "run", "--kernel", "blocked", "--q", paths["q"], "--k", paths["k"],
                     "--v", paths["v"], "--out", ko, "--check"] + (["--causal"] if causal else [])
                    + resolve(flags, paths))
            assert r.returncode == 0, "%s: blocked with the option" % name
        # LSE: check --o --lse checks the LSE that run wrote; a wrong one fails.
        import numpy as np
        o, lse = os.path.join(d, "l.o.npy"), os.path.join(d, "l.lse.npy")
        r = run([attnbench, "run", "--kernel", "blocked", "--q", paths["q"], "--k", paths["k"],
                 "--v", paths["v"], "--out", o, "--lse", lse, "--causal", "--sinks", paths["SINKS"]])
        assert r.returncode == 0
        r = check(attnbench, paths, o, ["--lse", lse, "--sinks", "SINKS"], True)
        assert r.returncode == 0 and "check: pass" in r.stdout
        bad = np.load(lse)
        bad[0, 1, 3] += 1e-3
        np.save(lse, bad)
        r = check(attnbench, paths, o, ["--lse", lse, "--sinks", "SINKS"], True)
        assert r.returncode == 1 and "check: FAIL" in r.stdout, "a wrong LSE must fail"
        # Bad option values are command-line errors (exit 2) with the flag named.
        for flags, word in ((["--window", "3"], "--window"), (["--softcap", "-1"], "--softcap"),
                            (["--align", "left"], "--align")):
            r = check(attnbench, paths, o, flags, True)
            assert r.returncode == 2 and word in r.stderr, (flags, r.stderr)
        r = run([attnbench, "check", "--quick", "--softcap", "5"])
        assert r.returncode == 2 and "only with --o" in r.stderr

        # A baseline that drops soft-capping: the check rejects it.
        out = os.path.join(d, "dropped.o.npy")
        r = runner(PY, os.path.join(HERE, "softcap_ignored.py"), paths, ["--softcap", "0.5"], out,
                   False)
        assert r.returncode == 0
        r = check(attnbench, paths, out, ["--softcap", "0.5"], False)
        assert r.returncode == 1 and "check: FAIL" in r.stdout, "the dropped soft-cap must fail"
        # A baseline without the option is not run (exit 4, the option named).
        r = runner(PY, os.path.join(HERE, "topleft_causal.py"), paths, ["--softcap", "0.5"], out,
                   False)
        assert r.returncode == 4 and "softcap" in r.stderr, r.stderr

        # Through bench-baselines: the point's options come from the export's index (a
        # sweep with them: the digest covers the option values, so an index edited to add
        # options would read as another problem than the kernels').
        exp = os.path.join(d, "inputs")
        res = sweep(attnbench, d, ["--export-inputs", exp],
                    CONFIG + "window = 4:0\nsoftcap = 0.25\n")
        with open(os.path.join(exp, "index.json")) as f:
            ix = json.load(f)
        for s in ix["inputs"].values():
            o = s.get("options") or {}
            assert o.get("window") and o.get("window_left") == 4 and o.get("softcap") == 0.25, s
        bb = [PY, os.path.join(ROOT, "scripts", "bench-baselines"), res, "--python", PY,
              "--attnbench", attnbench, "--min-time", "0.001", "--inputs", exp, "--baselines"]
        r = run(bb + [npb])
        assert r.returncode == 0, "NumPy with window and soft-cap must pass"
        assert entries(res, "numpy_attention") and not any(
            e.get("error_occurred") for e in entries(res, "numpy_attention"))
        r = run(bb + [os.path.join(HERE, "softcap_ignored.py")])
        assert r.returncode == 1, "the baseline that drops the soft-cap must fail the run"
        es = entries(res, "softcap_ignored")
        assert es and all(e.get("error_occurred") and "check failed" in e["error_message"]
                          for e in es), es
        r = run(bb + [os.path.join(HERE, "topleft_causal.py")])
        assert r.returncode == 0 and "skipped" in r.stderr, "unsupported: a note, not an error"
        with open(res) as f:
            doc = json.load(f)
        assert not entries(res, "topleft_causal")
        skips = json.loads(doc["context"]["baselines_skipped"])
        assert skips and all("softcap" in s["reason"] for s in skips), skips
    print("options: reach the baseline and the check; a dropped soft-cap is caught")
    return 0


def interrupt(attnbench):
    """Ctrl-C during the baselines: bench-baselines records the points timed, puts back the
    earlier entries of the points it did not reach, says so in the context and exits 130
    without a traceback; `bench --baselines` (the whole process group interrupted) exits
    130 and leaves no exported inputs behind. SIGTERM to `bench --baselines` alone is
    passed on to the script as Ctrl-C: the script records what it has before bench exits
    143, and no inputs are left behind."""
    import signal
    slow = os.path.join(HERE, "numpy_slow_second.py")
    cfg = CONFIG.replace("seq_len = 8\nseq_kv = 24\n", "seq_len = 8, 16, 24\n")

    def interrupted(cmd, env, group, sig=signal.SIGINT):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, start_new_session=group)
        err = []
        for line in p.stderr:  # the first point is logged once timed
            err.append(line)
            if line.startswith("[1/3]"):
                break
        time.sleep(1.0)
        if group:
            os.killpg(p.pid, sig)
        else:
            p.send_signal(sig)
        out, rest = p.communicate(timeout=60)
        return p.returncode, "".join(err) + rest

    with tempfile.TemporaryDirectory() as d:
        res = sweep(attnbench, d, config=cfg)
        r = bench_baselines(attnbench, res, slow, "/usr/bin/python3")
        def points(path):  # the distinct points of the baseline's iteration entries
            return {e["run_name"] for e in entries(path, "numpy_slow_second")
                    if e.get("run_type") == "iteration" and not e.get("error_occurred")}
        assert r.returncode == 0 and len(points(res)) == 3, r.stderr
        env = dict(os.environ, ATTNBENCH_TEST_SLOW="1")
        rc, err = interrupted(["/usr/bin/python3", os.path.join(ROOT, "scripts", "bench-baselines"),
                               res, "--baselines", slow, "--python", "/usr/bin/python3",
                               "--attnbench", attnbench, "--min-time", "0.001"], env, False)
        with open(res) as f:
            doc = json.load(f)
        assert rc == 130 and "Traceback" not in err, (rc, err)
        assert len(points(res)) == 3, points(res)
        assert "after 1 of 3" in doc["context"].get("baselines_interrupted", ""), doc["context"]

        tmp = os.path.join(d, "tmp")
        os.mkdir(tmp)
        cfg_path = os.path.join(d, "one.ini")
        with open(cfg_path, "w") as f:
            f.write(cfg)
        out = os.path.join(d, "one.json")
        benv = dict(env, TMPDIR=tmp, ATTNBENCH_BASELINES_PYTHON=PY,
                    ATTNBENCH_BENCH_BASELINES=os.path.join(ROOT, "scripts", "bench-baselines"))
        benv.pop("ATTNBENCH_BASELINES_VENV", None)
        rc, err = interrupted([attnbench, "bench", "--config", cfg_path, "--out", out,
                               "--baselines", slow], benv, True)
        assert rc == 130 and "Traceback" not in err, (rc, err)
        assert os.listdir(tmp) == [], "exported inputs left behind: %s" % os.listdir(tmp)
        assert len(points(out)) == 1, (points(out), err)

        # SIGTERM to bench alone (a job runner's stop): the script must not go on without
        # its inputs; it ends as on Ctrl-C and has written its context when bench exits.
        rc, err = interrupted([attnbench, "bench", "--config", cfg_path, "--out", out,
                               "--baselines", slow], benv, False, signal.SIGTERM)
        with open(out) as f:
            doc = json.load(f)
        assert rc == 128 + signal.SIGTERM and "Traceback" not in err, (rc, err)
        assert "SIGTERM while the baselines ran" in err, err
        assert "after 1 of 3" in doc["context"].get("baselines_interrupted", ""), doc["context"]
        assert os.listdir(tmp) == [], "exported inputs left behind: %s" % os.listdir(tmp)
    print("interrupt: points kept, earlier entries back, exit 130, no inputs left; "
          "SIGTERM passed on to the script")
    return 0


def section_min_time(attnbench):
    """Each point's baselines are timed with the point's own section's min_time (its
    min_time counter), not the largest of the config's sections."""
    cfg = CONFIG + CONFIG.replace("[cross]", "[long]").replace("seq_len = 8", "seq_len = 16") \
        .replace("min_time = 0.001", "min_time = 0.2")
    with tempfile.TemporaryDirectory() as d:
        res = sweep(attnbench, d, config=cfg)
        r = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "bench-baselines"), res,
                 "--baselines", os.path.join(HERE, "numpy_attention.py"),
                 "--python", "/usr/bin/python3", "--attnbench", attnbench])
        assert r.returncode == 0, r.stderr
        its = {}
        for label in ("naive", "numpy_attention"):
            for e in entries(res, label):
                if e.get("run_type") == "iteration":
                    its.setdefault((label, int(e["Sq"])), []).append(e)
        for label in ("naive", "numpy_attention"):
            mt = {sq: {e.get("min_time") for e in its[(label, sq)]} for sq in (8, 16)}
            assert mt == {8: {0.001}, 16: {0.2}}, (label, mt)
        short = max(e["iterations"] for e in its[("numpy_attention", 8)])
        long_ = min(e["iterations"] for e in its[("numpy_attention", 16)])
        assert 10 * short < long_, (short, long_)  # the calls counted, as min_time asks
    print("section_min_time: each point's baselines ran with its section's min_time")
    return 0


def real_options(attnbench, name):
    """A real baseline on each option case: pass with the option, or skipped (exit 4)."""
    py = venv_python(name)
    if not py:
        return SKIP
    r = run([py, RUNNER, "list"])
    line = [ln for ln in r.stdout.splitlines() if ln.startswith(name + " ")][0]
    supported = set(line.split("options: ")[1].split(",")) if "options: " in line else set()
    passed, skipped = [], []
    with tempfile.TemporaryDirectory() as d:
        # No row without keys here: PyTorch gives NaN there (docs/baselines.md). Batch 2:
        # an op's batch rules (ORT's GroupQueryAttention with a past, a bias broadcast over
        # the batch) are part of what a baseline must get right or decline.
        paths = make_arrays(d, scale_q=1.0, empty_row=False, batch=2)
        for case, flags, causal in OPTION_CASES:
            out = os.path.join(d, case + ".o.npy")
            r = runner(py, name, paths, flags, out, causal)
            if r.returncode == 4:
                skipped.append(case)
                continue
            assert r.returncode == 0, "%s %s: the baseline failed" % (name, case)
            r = check(attnbench, paths, out, flags, causal)
            assert r.returncode == 0 and "check: pass" in r.stdout, \
                "%s %s: its output must pass the check with the option" % (name, case)
            passed.append(case)
    assert passed, "%s ran no option case (options: %s)" % (name, supported)
    print("%s options: passed %s; skipped (unsupported) %s" % (name, passed, skipped))
    return 0


if __name__ == "__main__":
    attnbench, what = sys.argv[1], sys.argv[2]
    tests = {"pipeline": pipeline, "inputs": inputs, "one-command": one_command,
             "options": options, "time-failed": time_failed, "interrupt": interrupt,
             "section-min-time": section_min_time}
    if what in tests:
        sys.exit(tests[what](attnbench))
    if what.startswith("options:"):
        sys.exit(real_options(attnbench, what.split(":", 1)[1]))
    sys.exit(real(attnbench, what))
