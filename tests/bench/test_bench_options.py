#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Attention options in `attnbench bench` configs, end to end (run by CTest):

  test_bench_options.py options ATTNBENCH SCRIPTS   a tiny sweep over every option key with
      every available kernel: names unique, every point checked and timed, its option
      counters match its name, `fallback` is 1 exactly for the kernels that lack one of
      the point's options natively (`list --json` native_options), summary.py /
      compare.py / plot.py keep option points apart
  test_bench_options.py check ATTNBENCH             `check --config` on the same sweep: one case
      per option combination, every kernel passes every option; bad uses exit 2
  test_bench_options.py llm ATTNBENCH CONFIGS       configs/llm.ini and configs/variants.ini
      plan the models' options (dry run, check --config --list-cases), and GPT-OSS's
      window + sinks case passes `check --config` on naive and blocked
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


BASE = """kernels = all
heads = 4
kv_heads = 2
head_dim = 16
seq_len = 8
seq_kv = 12
causal = true
threads = 1
"""
# One sweep per option alone, one with all of them, one without any.
SWEEPS = [
    ("plain", ""),
    ("align", "align = top-left\n"),
    ("window", "window = 3:0, inf:2\n"),
    ("softcap", "softcap = 5\n"),
    ("alibi", "alibi = 8\n"),
    ("sinks", "sinks = on\n"),
    ("mask", "mask = random\n"),
    ("lse", "lse = true\n"),
    ("all", "align = top-left\nwindow = 3:1\nsoftcap = 5\nalibi = 8\nsinks = on\nmask = random\n"
            "lse = true\n"),
]
N_COMBOS = 10  # window has two values


def options_config():
    return "".join("[%s]\n%s%s\n" % (name, BASE, extra) for name, extra in SWEEPS)


def expected_from_name(name):
    """The option counters a point name implies (bench/config.h attn_bench_opts_name)."""
    tail = name.split("/T1", 1)[1]
    want = {"align": 0, "window_left": -1, "window_right": -1, "softcap": 0, "alibi": 0,
            "sinks": 0, "mask": 0, "lse": 0}
    used = set()
    for tok in filter(None, tail.split("/")):
        if tok == "top-left":
            want["align"] = 1
            used.add("align")  # causal with seq_q != seq_kv: alignment matters
        elif tok.startswith("win"):
            left, right = tok[3:].split(":")
            want["window_left"] = -1 if left == "inf" else int(left)
            want["window_right"] = -1 if right == "inf" else int(right)
            used.add("window")
        elif tok.startswith("softcap"):
            want["softcap"] = float(tok[7:])
            used.add("softcap")
        elif tok.startswith("alibi"):
            want["alibi"] = float(tok[5:])
            used.add("alibi")
        elif tok in ("sinks", "mask", "lse"):
            want[tok] = 1
            used.add(tok)
        else:
            raise ValueError("unexpected name part %r in %s" % (tok, name))
    return want, used


def options(binary, sdir):
    r = subprocess.run([binary, "list", "--available", "--json"], capture_output=True, text=True)
    kernels = {k["name"]: set(k.get("native_options", [])) for k in json.loads(r.stdout)}
    kernels.pop("reference", None)  # "all" is every available kernel but the reference
    check(len(kernels) >= 3, "list --json names the kernels (%s)" % sorted(kernels))
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "opts.ini")
        with open(cfg, "w") as f:
            f.write(options_config())
        r = subprocess.run([binary, "bench", "--config", cfg, "--dry-run"], capture_output=True, text=True)
        check(r.returncode == 0, "the option config is accepted (%s)" % r.stderr.strip())
        names = [ln.split()[0] for ln in r.stdout.splitlines()[:-1]]
        check(len(names) == N_COMBOS * len(kernels) and len(set(names)) == len(names),
              "%d unique points (%d kernels x %d option combinations), got %d (%d unique)"
              % (N_COMBOS * len(kernels), len(kernels), N_COMBOS, len(names), len(set(names))))
        for want in ("/T1/top-left", "/T1/win3:0", "/T1/wininf:2", "/T1/softcap5", "/T1/alibi8",
                     "/T1/sinks", "/T1/mask", "/T1/lse",
                     "/T1/top-left/win3:1/softcap5/alibi8/sinks/mask/lse"):
            check(any(n.endswith(want) for n in names), "a point named ...%s" % want)

        out = os.path.join(d, "opts.json")
        r = subprocess.run([binary, "bench", "--config", cfg, "--out", out, "--no-probe", "--quiet",
                            "--benchmark_min_time=0.001", "--benchmark_repetitions=1"],
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, "every option point passes its check and runs (%d: %s)"
              % (r.returncode, r.stderr.strip()[-2000:]))
        with open(out) as f:
            doc = json.load(f)
        ctx = doc.get("context", {})
        check(ctx.get("attention_options") == "top-left window softcap alibi sinks mask lse",
              "the context names the options used (%s)" % ctx.get("attention_options"))
        check("2*N(0,1) per query head, seed" in ctx.get("sink_logits", ""),
              "the context says how the sinks are generated (%s)" % ctx.get("sink_logits"))
        runs = [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
        got = {b.get("run_name", b["name"]): b for b in runs}
        check(sorted(got) == sorted(names), "the results file has every planned point")
        n_fallback = 0
        for name, b in got.items():
            check(not b.get("error_occurred"), "%s: no error (%s)" % (name, b.get("error_message")))
            want, used = expected_from_name(name)
            for k, v in want.items():
                check(k in b and float(b[k]) == float(v),
                      "%s: counter %s = %s (got %s)" % (name, k, v, b.get(k)))
            kernel = b.get("label", name.split("/")[0])
            fb = 1 if used - kernels.get(kernel, set()) else 0
            n_fallback += fb
            check(b.get("fallback") == fb, "%s: fallback %d (got %s; native %s, used %s)"
                  % (name, fb, b.get("fallback"), sorted(kernels.get(kernel, ())), sorted(used)))
            check(b.get("GFLOP/s", 0) > 0, "%s: timed" % name)
        check("-inf with probability 1/8" in ctx.get("mask_values", ""),
              "the context says how the mask is generated (%s)" % ctx.get("mask_values"))
        check(n_fallback > 0 or all(len(v) == 7 for v in kernels.values()),
              "some kernel runs the options on the fallback (or every kernel is native)")
        # window flop: visible pairs only, fewer than the plain causal point's
        flop = {n: got[n]["flop"] for n in got if n.startswith("blocked/")}
        plain = [v for n, v in flop.items() if n.endswith("/T1")]
        win = [v for n, v in flop.items() if n.endswith("/T1/win3:0")]
        check(plain and win and win[0] < plain[0], "flop counts the window's visible pairs (%s < %s)"
              % (win, plain))

        # The scripts keep points that differ only in an option apart.
        r = subprocess.run([sys.executable, os.path.join(sdir, "summary.py"), out],
                           capture_output=True, text=True)
        check(r.returncode == 0, "summary.py runs on option points (%s)" % r.stderr.strip())
        rows = [ln for ln in r.stdout.splitlines() if ln.startswith("B1 H4 KV2 Sq8 Skv12 D16")]
        check(len(rows) == N_COMBOS, "summary.py: one row per option combination (%d rows: %s)"
              % (len(rows), rows))
        for label in ("causal top-left ", "win3:0", "wininf:2", "softcap5", "alibi8", " sinks",
                      " mask", " lse", "top-left win3:1 softcap5 alibi8 sinks mask lse"):
            check(any(label in ln for ln in rows), "summary.py shows '%s'" % label)
        costs = [ln for ln in r.stdout.splitlines() if ln.startswith("  ") and " time " in ln]
        check(len(costs) == (N_COMBOS - 1) * len(kernels),
              "summary.py: one 'options vs none' line per option point (%d)" % len(costs))
        check(all(re.search(r"time \d+\.\d{3}x  GFLOP/s \d+\.\d{3}x", ln) for ln in costs),
              "the option cost lines give both ratios")
        fb_rows = [ln for ln in rows if "(fallback)" in ln]
        check(all(any(t in ln for t in ("win", "softcap", "alibi", "sinks", "mask", "lse", "top-left"))
                  for ln in fb_rows), "(fallback) only on option rows")
        csv_path = os.path.join(d, "c.csv")
        r = subprocess.run([sys.executable, os.path.join(sdir, "compare.py"), out, out, "--csv", csv_path],
                           capture_output=True, text=True)
        check(r.returncode == 0, "compare.py runs (%s)" % r.stderr.strip())
        with open(csv_path) as f:
            rowsc = list(csv.DictReader(f))
        check(rowsc and "options" in rowsc[0] and "fallback" in rowsc[0], "the CSV has options and fallback")
        check(any(row["options"] == "top-left win3:1 softcap5 alibi8 sinks mask lse" for row in rowsc),
              "the CSV names the combined options")
        for row in rowsc:
            want, used = expected_from_name(row["name"])
            fb = 1 if used - kernels.get(row["kernel"], set()) else 0
            check(int(row["fallback"]) == fb, "CSV %s: fallback %s" % (row["name"], row["fallback"]))
        r = subprocess.run([sys.executable, os.path.join(sdir, "plot.py"), out, "--out-dir", d],
                           capture_output=True, text=True)
        check(r.returncode == 0, "plot.py runs on option points (%s)" % r.stderr.strip())
        check(any(f.endswith(".png") for f in os.listdir(d)), "plot.py wrote PNGs")


def check_config(binary):
    r = subprocess.run([binary, "list", "--available", "--json"], capture_output=True, text=True)
    n_kernels = len(json.loads(r.stdout))  # the reference too: check runs every kernel
    # ... that this CPU runs; the others (AVX-512 on an AVX2-only CPU) are skipped, each case
    r = subprocess.run([binary, "list", "--json"], capture_output=True, text=True)
    n_absent = len(json.loads(r.stdout)) - n_kernels
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "opts.ini")
        with open(cfg, "w") as f:
            f.write(options_config())
        r = subprocess.run([binary, "check", "--config", cfg, "--list-cases"], capture_output=True,
                           text=True)
        cases = r.stdout.splitlines()
        check(r.returncode == 0 and len(cases) == N_COMBOS,
              "check --config lists one case per option combination (%d: %s)" % (len(cases), cases))
        for want in (" align=top-left", " window=3,0", " window=inf,2", " softcap=5", " alibi=8",
                     " sinks", " mask", " lse",
                     " window=3,1 align=top-left softcap=5 alibi=8 sinks mask lse"):
            check(any(c.endswith(want) for c in cases), "a case ending in '%s'" % want)
        check(all(c.startswith("B1 H4 KV2 Sq8 Skv12 Dqk16 Dv16 causal normal") for c in cases),
              "the cases have the config's shape")
        r = subprocess.run([binary, "check", "--config", cfg, "--no-progress"], capture_output=True,
                           text=True, timeout=300)
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        # a pair of a kernel that does not claim an option passes on the shared fallback
        m = re.fullmatch(r"(\d+) passed, 0 failed, 0 inconclusive, (\d+) skipped, (\d+) fallback", last)
        want = (N_COMBOS * n_kernels, N_COMBOS * n_absent)
        check(r.returncode == 0 and m is not None
              and (int(m[1]) + int(m[3]), int(m[2])) == want,
              "every kernel passes every option, itself or on the fallback: '%s' (want %d passed + "
              "fallback, %d skipped; %s)" % (last, want[0], want[1], r.stderr.strip()))
        # a bad config is the bench's error (FILE:LINE, exit 2); --quick and --o do not apply
        bad = os.path.join(d, "bad.ini")
        with open(bad, "w") as f:
            f.write("[s]\n" + BASE + "window = -3:0\n")
        r = subprocess.run([binary, "check", "--config", bad], capture_output=True, text=True)
        check(r.returncode == 2 and r.stderr.startswith(bad + ":10: window: left side -3"),
              "check --config with a bad window: exit 2, FILE:LINE (%d: %s)" % (r.returncode, r.stderr.strip()))
        for extra in (["--quick"], ["--o", "o.npy"]):
            r = subprocess.run([binary, "check", "--config", cfg] + extra, capture_output=True, text=True)
            check(r.returncode == 2 and "do" in r.stderr and "not apply" in r.stderr,
                  "check --config %s: exit 2 (%d: %s)" % (extra[0], r.returncode, r.stderr.strip()))


def llm(binary, configdir):
    path = os.path.join(configdir, "llm.ini")
    r = subprocess.run([binary, "bench", "--config", path, "--dry-run"], capture_output=True, text=True)
    check(r.returncode == 0, "llm.ini is accepted (%s)" % r.stderr.strip())
    names = [ln.split()[0] for ln in r.stdout.splitlines()[:-1]]
    # (what, regex over the names): each model with its options
    models = [
        ("Mistral-7B, window 4096", r"/B1/H32/KV8/Sq8192/Skv8192/D128/causal/T\d+/win4095:0$"),
        ("Gemma-2-9B, softcap 50 + window 4096",
         r"/B1/H16/KV8/Sq8192/Skv8192/D256/causal/T\d+/win4095:0/softcap50$"),
        ("Gemma-2-9B global layers, softcap 50", r"/B1/H16/KV8/Sq\d+/Skv\d+/D256/causal/T\d+/softcap50$"),
        ("GPT-OSS-20B, sinks + window 128", r"/B1/H64/KV8/Sq\d+/Skv\d+/D64/causal/T\d+/win127:0/sinks$"),
        ("GPT-OSS-20B full layers, sinks", r"/B1/H64/KV8/Sq\d+/Skv\d+/D64/causal/T\d+/sinks$"),
        ("Llama-3-8B", r"/B1/H32/KV8/Sq8192/Skv8192/D128/causal/T\d+$"),
        ("DeepSeek MLA decode (128 heads)", r"/B1/H128/KV1/Sq1/Skv\d+/D576/Dv512/causal/T\d+/cold$"),
        ("DeepSeek MLA decode (16 heads)", r"/B1/H16/KV1/Sq1/Skv\d+/D576/Dv512/causal/T\d+/cold$"),
    ]
    for what, rx in models:
        check(any(re.search(rx, n) for n in names), "llm.ini plans %s (%s)" % (what, rx))
    # the models' option cases at the bench's check size; one of them (GPT-OSS's sliding
    # layers: window 128 and sinks, checked at 256) run by naive and blocked
    r = subprocess.run([binary, "check", "--config", path, "--list-cases"], capture_output=True, text=True)
    cases = r.stdout.splitlines()
    for want in ("H32 KV8 Sq256 Skv256 Dqk128 Dv128 causal normal window=4095,0",
                 "H16 KV8 Sq256 Skv256 Dqk256 Dv256 causal normal window=4095,0 softcap=50",
                 "H64 KV8 Sq256 Skv256 Dqk64 Dv64 causal normal window=127,0 sinks",
                 "H128 KV1 Sq1 Skv4096 Dqk576 Dv512 causal normal"):
        check(any(c.endswith(want) for c in cases), "check --config llm.ini has the case '%s'" % want)
    r = subprocess.run([binary, "check", "--config", path, "--kernel", "naive", "--kernel", "blocked",
                        "--filter", "Dqk64 Dv64 causal normal window=127,0 sinks", "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    check(r.returncode == 0 and last == "2 passed, 0 failed, 0 inconclusive, 0 skipped, 0 fallback",
          "GPT-OSS's window + sinks case passes on naive and blocked ('%s'; %s)" % (last, r.stderr.strip()))
    # variants.ini: the options' speed figures
    path = os.path.join(configdir, "variants.ini")
    r = subprocess.run([binary, "bench", "--config", path, "--dry-run"], capture_output=True, text=True)
    check(r.returncode == 0, "variants.ini is accepted (%s)" % r.stderr.strip())
    names = [ln.split()[0] for ln in r.stdout.splitlines()[:-1]]
    for what, rx in [("full causal at 8192", r"/H8/KV8/Sq8192/Skv8192/D128/causal/T2$"),
                     ("window 1024 at 8192", r"/H8/KV8/Sq8192/Skv8192/D128/causal/T2/win1023:0$"),
                     ("D64 plain", r"/H8/KV8/Sq2048/Skv2048/D64/causal/T2$"),
                     ("softcap 50", r"/D64/causal/T2/softcap50$"), ("alibi 8", r"/D64/causal/T2/alibi8$"),
                     ("sinks", r"/D64/causal/T2/sinks$"), ("lse", r"/D64/causal/T2/lse$")]:
        check(any(re.search(rx, n) for n in names), "variants.ini plans %s" % what)


def main():
    {"options": options, "check": check_config, "llm": llm}[sys.argv[1]](*sys.argv[2:])
    if FAILED:
        print("%d checks failed" % len(FAILED))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
