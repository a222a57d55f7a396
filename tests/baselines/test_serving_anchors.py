#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Serving anchors end to end (docs/serving.md, docs/baselines.md): a tiny serving sweep
(GQA, causal, a prefill chunk, decode tokens, a sequence without queries and one whose
q_len exceeds nothing, ragged and paged with shuffled pages), then:

  test_serving_anchors.py ATTNBENCH export   `bench --export-inputs` writes serving points:
                                             Q packed [total_q][H][D], K/V packed or the
                                             pools, the layout manifest; the digest Python
                                             recomputes from the files and the manifest
                                             equals the index's and every kernel point's
                                             inputs_digest; another page table is another
                                             digest.
  test_serving_anchors.py ATTNBENCH anchors  NumPy test anchors through bench-baselines: the
                                             right one passes the per-sequence check and is
                                             timed (tokens/s, KV_GB/s); one reading a wrong
                                             page fails it (error entry, exit 1); a dense-only
                                             baseline is reported as unable to express the
                                             batch (context baselines_skipped), not absent.
  test_serving_anchors.py ATTNBENCH reports  scripts/plot-serving and scripts/render-results on
                                             a small serving file with anchors: a PNG, one
                                             table row per batch with tokens/s, the anchor
                                             ratio and the anchor that could not run with
                                             its reason; the page is deterministic; a file
                                             without a decode sweep gets no plot and a reason.
  test_serving_anchors.py ATTNBENCH NAME     a real anchor (torch_sdpa, openvino_paged,
                                             ggml_flash_attn) from the baselines' environment on
                                             the same sweep: checked and timed where it can
                                             express the point, skipped with its reason where
                                             not; ggml's with a mask that does not separate the
                                             sequences fails the check. 77 when not installed.
"""
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import tempfile
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "baselines", "external"))
import attn_baseline  # noqa: E402

SKIP = 77
CONFIG = """[serve]
kernels = naive
heads = 4
kv_heads = 2
head_dim = 16
causal = true
kv_lens = 40 70 9 33
q_lens = 3 1 0 33
page_size = 0, 32
page_order = shuffled
threads = 1
repetitions = 2
min_time = 0.001
"""


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    print("$ %s\n  exit %d\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def sweep(attnbench, d):
    cfg = os.path.join(d, "serve.ini")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    out, inp = os.path.join(d, "r.json"), os.path.join(d, "inputs")
    r = run([attnbench, "bench", "--config", cfg, "--out", out, "--no-probe",
             "--export-inputs", inp])
    assert r.returncode == 0, "the serving sweep failed"
    return out, inp


def bench_baselines(attnbench, results, inputs, baselines, python):
    return run([python, os.path.join(ROOT, "scripts", "bench-baselines"), results,
                "--baselines", baselines, "--python", python, "--attnbench", attnbench,
                "--min-time", "0.001"] + (["--inputs", inputs] if inputs else []))


def export(attnbench):
    import numpy as np
    # Top-left alignment counts for a serving batch when any sequence's q_len differs from
    # its kv_len, though the batch's largest lengths agree (a baseline without it declines).
    import attn_options
    lay = {"kind": "paged", "cu_seqlens_q": [0, 1, 65], "cu_seqlens_kv": [0, 40, 104]}
    prob = {"batch": 2, "seq_q": 64, "seq_kv": 64, "causal": True, "layout": lay,
            "options": {"align": "top-left"}}
    assert "align" in attn_options.used(prob), attn_options.used(prob)
    lay_same = dict(lay, cu_seqlens_kv=[0, 1, 65])
    assert "align" not in attn_options.used(dict(prob, layout=lay_same))
    with tempfile.TemporaryDirectory() as d:
        res, inp = sweep(attnbench, d)
        with open(os.path.join(inp, "index.json")) as f:
            ix = json.load(f)
        sets = {s["layout"]["kind"]: s for s in ix["inputs"].values()}
        assert set(sets) == {"ragged", "paged"}, sets.keys()
        kernel = {b["name"]: int(b["inputs_digest"]) for b in json.load(open(res))["benchmarks"]
                  if b.get("run_type") == "iteration"}
        for name, ref in ix["points"].items():
            assert kernel[name] == ix["inputs"][ref["inputs"]]["digest"], name
        for kind, s in sets.items():
            q, k, v = (np.load(os.path.join(inp, s[t])) for t in "qkv")
            lay = s["layout"]
            assert lay["cu_seqlens_q"] == [0, 3, 4, 4, 37], lay
            assert lay["cu_seqlens_kv"] == [0, 40, 110, 119, 152], lay
            assert q.shape == (37, 4, 16), q.shape
            if kind == "paged":
                assert [len(r) for r in lay["page_table"]] == [2, 3, 1, 2], lay["page_table"]
                assert k.shape == (8, 2, 32, 16) and v.shape == k.shape, k.shape
                used = sorted(e for r in lay["page_table"] for e in r)
                assert used == list(range(8)), "every page used once: %s" % used
                assert lay["page_table"] != [[0, 1], [2, 3, 4], [5], [6, 7]], "not shuffled"
            else:
                assert k.shape == (152, 2, 16), k.shape
            p = attn_baseline.problem_from_layout(q, k, v, s["problem"]["causal"],
                                                  s["problem"]["scale"], lay)
            p["options"] = {}
            got = attn_baseline.problem_digest(p, q, k, v)
            assert got == s["digest"], (kind, got, s["digest"])
            if kind == "paged":  # another page table: another problem, another digest
                t = [list(r) for r in lay["page_table"]]
                t[0][0], t[1][0] = t[1][0], t[0][0]
                p2 = dict(p, layout=dict(lay, page_table=t))
                assert attn_baseline.problem_digest(p2, q, k, v) != s["digest"]
            else:  # other lengths with the same total: another digest
                p2 = dict(p, layout=dict(lay, cu_seqlens_kv=[0, 41, 110, 119, 152]))
                assert attn_baseline.problem_digest(p2, q, k, v) != s["digest"]
    print("export: ok")
    return 0


def anchors(attnbench):
    with tempfile.TemporaryDirectory() as d:
        res, inp = sweep(attnbench, d)
        good, wrong = (os.path.join(HERE, f) for f in ("numpy_serving.py",
                                                       "numpy_serving_wrong_page.py"))
        dense = os.path.join(HERE, "numpy_attention.py")
        r = bench_baselines(attnbench, res, inp, good, "/usr/bin/python3")
        assert r.returncode == 0, "the right serving anchor failed"
        doc = json.load(open(res))
        ents = [b for b in doc["benchmarks"] if b.get("label") == "numpy_serving" and
                b.get("run_type") == "iteration"]
        names = {e["name"].rsplit("/", 1)[-1] for e in ents}
        assert names == {"ragged", "page32s"}, names
        for e in ents:
            assert not e.get("error_occurred") and e["tokens/s"] > 0 and e["KV_GB/s"] > 0, e
            assert e["seqs"] == 4 and e["kv_bytes"] > 0, e
        r = bench_baselines(attnbench, res, inp, wrong, "/usr/bin/python3")
        assert r.returncode == 1, "a wrong page must fail the check"
        doc = json.load(open(res))
        bad = [b for b in doc["benchmarks"] if b.get("label") == "numpy_serving_wrong_page"]
        paged = [b for b in bad if b["name"].endswith("page32s")]
        assert paged and all(b.get("error_occurred") for b in paged), paged
        assert "check failed" in paged[0]["error_message"] and "sequence" in \
            paged[0]["error_message"], paged[0]["error_message"]
        ragged = [b for b in bad if b["name"].endswith("ragged")]
        assert ragged and not ragged[0].get("error_occurred"), "ragged has no pages to misread"
        r = bench_baselines(attnbench, res, inp, dense, "/usr/bin/python3")
        assert r.returncode == 0, "a baseline that cannot express a point is not an error"
        doc = json.load(open(res))
        skipped = json.loads(doc["context"]["baselines_skipped"])
        why = {s["point"].rsplit("/", 1)[-1]: s["reason"] for s in skipped
               if s["baseline"] == "numpy_attention"}
        assert "cannot express a ragged serving batch" in why["ragged"], why
        assert "cannot express a paged serving batch" in why["page32s"], why
        assert "numpy_attention" in r.stderr and "cannot express" in r.stderr
        # Another anchor run again: numpy_attention's reasons and record stay in the file.
        # The kernel points are given the adjacent probe's counters (as bench gives a
        # memory-bound point; these are tiny), so the anchor is probed too, and its
        # %adj_bw counts the bytes the roofline counts (K/V its rows see, packed Q and O).
        for b in doc["benchmarks"]:
            if not b.get("baseline") and b.get("seqs"):
                b["%adj_bw"] = 50.0
        with open(res, "w") as f:
            json.dump(doc, f)
        r = bench_baselines(attnbench, res, inp, good, "/usr/bin/python3")
        assert r.returncode == 0, "the right serving anchor failed on its second run"
        doc = json.load(open(res))
        skipped = json.loads(doc["context"]["baselines_skipped"])
        assert {s["point"].rsplit("/", 1)[-1] for s in skipped
                if s["baseline"] == "numpy_attention"} == {"ragged", "page32s"}, skipped
        assert "numpy_attention" in json.loads(doc["context"]["baselines_not_run"]) or \
            "numpy_attention" in json.loads(doc["context"]["baselines_run"]), doc["context"]
        ents = [b for b in doc["benchmarks"] if b.get("label") == "numpy_serving" and
                b.get("run_type") == "iteration"]
        assert ents and all("%adj_bw" in e for e in ents), ents[:1]
        for e in ents:
            want = 100.0 * e["roofline_bytes"] / (e["real_time"] * 1e-6) / 1e9 / e["adj_bw_GB/s"]
            assert abs(e["%adj_bw"] - want) <= 1e-9 * want, (e["%adj_bw"], want)
            assert e["roofline_bytes"] < e["bytes"], "the pool holds more than a call reads"
    print("anchors: ok")
    return 0


REPORT_CONFIG = """[ctx]
kernels = naive
heads = 4
kv_heads = 2
head_dim = 16
causal = true
kv_lens = fixed:2:64, fixed:2:128
page_size = 32
page_order = shuffled
threads = 1
min_time = 0.001

[batch]
kernels = naive
heads = 4
kv_heads = 2
head_dim = 16
causal = true
kv_lens = fixed:1:128, fixed:4:128
page_size = 32
page_order = shuffled
threads = 1
min_time = 0.001
"""


def reports(attnbench):
    """scripts/plot-serving and scripts/render-results on a small serving results file."""
    py = "/usr/bin/python3"
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "r.ini")
        with open(cfg, "w") as f:
            f.write(REPORT_CONFIG)
        res_dir = os.path.join(d, "results")
        os.mkdir(res_dir)
        res = os.path.join(res_dir, "serving-testcpu.json")
        r = run([attnbench, "bench", "--config", cfg, "--out", res])
        assert r.returncode == 0
        r = bench_baselines(attnbench, res, None, ",".join(
            os.path.join(HERE, f) for f in ("numpy_serving.py", "numpy_attention.py")), py)
        assert r.returncode == 0, "the anchors failed"
        r = run([py, os.path.join(ROOT, "scripts", "plot-serving"), res])
        png = os.path.join(res_dir, "serving-testcpu-serving.png")
        assert r.returncode == 0 and r.stdout.strip() == png, "plot-serving failed"
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
        md = os.path.join(d, "results.md")
        outs = []
        for _ in range(2):  # the page depends on the files only
            r = run([py, os.path.join(ROOT, "scripts", "render-results"), "--results", res_dir,
                     "--out", md])
            assert r.returncode == 0, "render-results failed"
            outs.append(open(md).read())
        assert outs[0] == outs[1], "render-results is not deterministic"
        page = outs[0]
        rows = [ln for ln in page.splitlines() if ln.startswith("| `B")]
        assert len(rows) == 4, rows  # contexts 64 and 128 at batch 2; batch 1 and 4 at 128
        for ln in rows:
            assert "tok/s" in ln and "(`numpy_serving`)" in ln and "not run [1]" in ln, ln
            # each % names the roofline term that binds it (bw, or the compute unit)
            assert re.search(r"tok/s · [0-9.]+% (bw|FMA) \|", ln), ln
        assert "[1] numpy_attention cannot express a paged serving batch" in page, page
        assert "serving-testcpu-serving" in page, "the plot is not linked"
        # plot-serving draws no point that failed its check, even one timed anyway
        # (--time-failed marks it check_failed).
        loader = importlib.machinery.SourceFileLoader(
            "plot_serving", os.path.join(ROOT, "scripts", "plot-serving"))
        ps = types.ModuleType(loader.name)
        ps.__file__ = loader.path
        loader.exec_module(ps)
        _, pts = ps.attnresults.load(res)
        anchor = [p for p in pts.values() if p.get("baseline")]
        assert anchor and set(anchor) <= set(ps.decode_points(pts.values())), "anchors drawn"
        # The same largest lengths ragged and paged are two shapes (summary.py, plot.py and
        # compare.py group points by shape), and the label says which.
        lay = {}
        for tail in ("ragged", "page32", "page32s"):
            q = ps.attnresults.Point("k/B2/H4/KV2/Sq1/Skv64/D16/causal/T1/q=decode/kv=fixed:2:64/"
                                     + tail + "/cold")
            q.counters = dict(anchor[0].counters)
            lay[tail] = q
        assert len({q.shape for q in lay.values()}) == 3, "layouts merged into one shape"
        assert lay["page32s"].shape_label().endswith(" q=decode/kv=fixed:2:64/page32s cold")
        # % of the adjacent probe: a serving point's roofline bytes per second over the
        # probe, whatever the stored counter says (files written while it counted the pool)
        q = lay["page32s"]
        q.median_s = 0.5
        q.counters.update({"roofline_bytes": 4e9, "adj_bw_GB/s": 20.0, "%adj_bw": 999.0})
        assert abs(q.adj_bw_pct - 40.0) < 1e-9, q.adj_bw_pct
        del q.counters["%adj_bw"]  # no probe timed next to it: no figure
        assert q.adj_bw_pct is None, q.adj_bw_pct
        anchor[0].counters["check_failed"] = 1
        assert anchor[0] not in ps.decode_points(pts.values()), "a failed check is drawn"
        # A kernel whose check failed on a batch (bench's entry: an error, none of the
        # serving counters, which come after the check) keeps its row, as "error".
        doc = json.load(open(res))
        first = next(b["name"] for b in doc["benchmarks"] if not b.get("baseline"))
        doc["benchmarks"] = [b for b in doc["benchmarks"]
                             if b.get("run_name", b["name"]) != first] + [
            {"name": first, "run_name": first, "run_type": "iteration", "error_occurred": True,
             "error_message": "check failed: max |err|/tol 3.1", "iterations": 0,
             "real_time": 0, "cpu_time": 0, "time_unit": "ns"}]
        with open(res, "w") as f:
            json.dump(doc, f)
        r = run([py, os.path.join(ROOT, "scripts", "render-results"), "--results", res_dir,
                 "--out", md])
        assert r.returncode == 0, "render-results failed on a failed kernel point"
        key = first[len("naive/"):].replace("/T1", "", 1)
        row = [ln for ln in open(md).read().splitlines() if ln.startswith("| `%s` |" % key)]
        assert len(row) == 1 and "| error |" in row[0], (key, row)
        # a serving file without a uniform decode sweep: no plot, one line why
        with open(os.path.join(d, "m.ini"), "w") as f:
            f.write(REPORT_CONFIG.split("[batch]")[0].replace(
                "fixed:2:64, fixed:2:128", "40 70").replace("page_order = shuffled",
                                                           "q_lens = 3 1"))
        mixed = os.path.join(d, "mixed.json")
        assert run([attnbench, "bench", "--config", os.path.join(d, "m.ini"), "--out",
                    mixed]).returncode == 0
        r = run([py, os.path.join(ROOT, "scripts", "plot-serving"), mixed])
        assert r.returncode == 1 and "no uniform decode sweep" in r.stderr, r.stderr
    print("reports: ok")
    return 0


def real(attnbench, name):
    venv = os.environ.get("ATTNBENCH_BASELINES_VENV") or os.path.join(ROOT, ".venv-baselines")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        print("SKIPPED: no baseline environment at %s (scripts/setup-baselines)" % venv)
        return SKIP
    r = run([py, os.path.join(ROOT, "baselines", "external", "attn_baseline.py"), "list"])
    line = [ln for ln in r.stdout.splitlines() if ln.startswith(name + " ")]
    if not line or "not installed" in line[0]:
        print("SKIPPED: %s is not installed in %s" % (name, venv))
        return SKIP
    with tempfile.TemporaryDirectory() as d:
        res, inp = sweep(attnbench, d)
        r = bench_baselines(attnbench, res, inp, name, py)
        assert r.returncode == 0, "%s failed on the serving sweep" % name
        doc = json.load(open(res))
        timed = {b["name"].rsplit("/", 1)[-1] for b in doc["benchmarks"]
                 if b.get("label") == name and not b.get("error_occurred") and
                 b.get("run_type") == "iteration"}
        skipped = {s["point"].rsplit("/", 1)[-1]: s["reason"] for s in
                   json.loads(doc["context"].get("baselines_skipped", "[]"))
                   if s["baseline"] == name}
        print("%s: timed %s; skipped %s" % (name, sorted(timed), skipped))
        assert timed | set(skipped) == {"ragged", "page32s"}, (timed, skipped)
        if name == "torch_sdpa":
            assert timed == {"ragged", "page32s"}
        if name == "openvino_paged":  # sequence 2 has no query, 3 is a whole prefill
            assert "page32s" in timed and "cannot express a ragged" in skipped["ragged"]
        if name == "ggml_flash_attn":  # one call over one cache, per-sequence KQ mask
            assert timed == {"ragged", "page32s"}
            info = [json.loads(b["baseline_info"]) for b in doc["benchmarks"]
                    if b.get("label") == name and b.get("run_type") == "iteration"]
            assert all(i["cache_cells"] in (152, 8 * 32) for i in info), info
            # the same cache with one mask for every token: the sequences' keys mixed
            wrong = os.path.join(HERE, "ggml_serving_one_mask.py")
            r = bench_baselines(attnbench, res, inp, wrong, py)
            assert r.returncode == 1, "a mask that mixes the sequences must fail the check"
            bad = [b for b in json.load(open(res))["benchmarks"]
                   if b.get("label") == "ggml_serving_one_mask"]
            assert len(bad) == 2 and all(b.get("error_occurred") and "check failed" in
                                         b["error_message"] for b in bad), bad
    return 0


if __name__ == "__main__":
    attnbench, what = sys.argv[1], sys.argv[2]
    sys.exit({"export": export, "anchors": anchors, "reports": reports}.get(what, lambda a: real(a, what))(attnbench))
