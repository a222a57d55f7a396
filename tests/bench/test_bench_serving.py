#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A serving sweep end to end (docs/serving.md): ragged and paged points (pages in order
and shuffled, f32 and q8_0 K/V, a prefill chunk with decode tokens) are checked, timed
and carry their counters — seqs, paged, tokens/s, kv_bytes equal to the keys' stored
bytes, roofline_bytes (those plus the packed Q and O) and the %roofline they give.

    test_bench_serving.py ATTNBENCH
"""
import json
import os
import subprocess
import sys
import tempfile

BIN = sys.argv[1]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)


CONFIG = """
[serve]
kernels     = naive, blocked
heads       = 4
kv_heads    = 2
head_dim    = 32
causal      = true
kv_lens     = 70 33 1 5, uniform:5:40:3
q_lens      = prefill:1:8
page_size   = 0, 16
page_order  = sequential, shuffled
kv_dtype    = f32, q8_0
threads     = 1
repetitions = 1
min_time    = 0.001
"""

with tempfile.TemporaryDirectory() as d:
    cfg, out = os.path.join(d, "s.ini"), os.path.join(d, "s.json")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    p = subprocess.run([BIN, "bench", "--config", cfg, "--out", out, "--quiet"],
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"bench exits 0 (got {p.returncode}: {p.stderr})")
    runs = [b for b in json.load(open(out))["benchmarks"] if b.get("run_type") != "aggregate"]
    # 2 kernels x 2 kv_lens x (ragged + page16 in 2 orders) x 2 types
    names = {b["name"] for b in runs}
    check(len(names) == 24, f"24 points (got {len(names)})")
    for b in runs:
        n = b["name"]
        check("error_message" not in b, f"{n}: {b.get('error_message')}")
        check(b.get("seqs") in (4, 5) and b.get("tokens/s", 0) > 0, f"{n}: seqs / tokens/s")
        keys = 109 if "kv=70_33_1_5" in n else 200
        row = 2 * (34 if "q8_0" in n else 128)  # K + V row bytes, D 32
        check(b.get("kv_bytes") == keys * 2 * row, f"{n}: kv_bytes {b.get('kv_bytes')}")
        check(b.get("paged") == (1 if "/page16" in n else 0), f"{n}: paged counter")
        # the roofline's bytes: the keys read plus the packed Q and O (8 + 3 or 8 + 4
        # query tokens, 4 heads, D 32 + 32, float32), never the pool's unused slots
        tokens = 8 + (3 if "kv=70_33_1_5" in n else 4)
        check(b.get("roofline_bytes") == b.get("kv_bytes") + tokens * 4 * 64 * 4,
              f"{n}: roofline_bytes {b.get('roofline_bytes')}")
        if b.get("read_bw_GB/s") and b.get("peak_GFLOP/s"):  # t_roof from those bytes
            t = max(b["flop"] / (b["peak_GFLOP/s"] * 1e9),
                    b["roofline_bytes"] / (b["read_bw_GB/s"] * 1e9))
            got = b["%roofline"] * b["real_time"] * 1e-6 / 100  # real_time in us
            check(abs(got - t) <= 1e-3 * t, f"{n}: %roofline {b['%roofline']} (t_roof {t})")

# A window reads only the keys some row can see: decode rows of contexts 70 and 5 with a
# window of 9 keys left of the diagonal read 10 and 5 keys; a 3-token chunk at 70 reads 12.
WINDOW = """
[win]
kernels     = naive
heads       = 2
kv_heads    = 1
head_dim    = 32
causal      = true
window      = 9:0
kv_lens     = 70 5
q_lens      = decode, 3 1
threads     = 1
repetitions = 1
min_time    = 0.001
"""
with tempfile.TemporaryDirectory() as d:
    cfg, out = os.path.join(d, "w.ini"), os.path.join(d, "w.json")
    with open(cfg, "w") as f:
        f.write(WINDOW)
    p = subprocess.run([BIN, "bench", "--config", cfg, "--out", out, "--quiet"],
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"window bench exits 0 (got {p.returncode}: {p.stderr})")
    runs = [b for b in json.load(open(out))["benchmarks"] if b.get("run_type") != "aggregate"]
    want = {"q=decode": 10 + 5, "q=3_1": 12 + 5}
    seen = 0
    for b in runs:
        for q, keys in want.items():
            if "/" + q + "/" in b["name"] + "/":
                seen += 1
                check(b.get("kv_bytes") == keys * 2 * 128,
                      f"{b['name']}: kv_bytes {b.get('kv_bytes')} (want {keys} keys)")
    check(seen >= 2, f"window points found ({seen}): {[b['name'] for b in runs]}")

# A sweep whose chunk is longer than a sequence's context (rows that see nothing, counted
# as tokens) is refused at load, naming the sequence: a server's new tokens are part of
# its context.
with tempfile.TemporaryDirectory() as d:
    cfg = os.path.join(d, "bad.ini")
    with open(cfg, "w") as f:
        f.write(CONFIG.replace("70 33 1 5", "70 33 0 5").replace("prefill:1:8", "prefill:1:80"))
    p = subprocess.run([BIN, "bench", "--config", cfg, "--out", os.path.join(d, "b.json"),
                        "--quiet"], capture_output=True, text=True, timeout=600)
    check(p.returncode == 2 and "sequence 0 has 80 new tokens in a context of 70" in p.stderr
          and "q_len <= kv_len" in p.stderr and not os.path.exists(os.path.join(d, "b.json")),
          f"a chunk longer than its context is refused (exit {p.returncode}: {p.stderr.strip()})")
    with open(cfg, "w") as f:
        f.write(CONFIG.replace("70 33 1 5", "70 33 0 5"))
    p = subprocess.run([BIN, "bench", "--config", cfg, "--dry-run"], capture_output=True,
                       text=True, timeout=600)
    check(p.returncode == 2 and "sequence 2 has 1 new tokens in a context of 0" in p.stderr,
          f"a decode token without a context is refused (exit {p.returncode}: {p.stderr.strip()})")

print("test_bench_serving: " + ("all checks passed" if not failures else f"{failures} failed"))
sys.exit(1 if failures else 0)
