# SPDX-License-Identifier: MIT
"""`attnbench tune` and tuning files (harness/tunefile.h, docs/tuning.md), end to end on a
tiny config with a small budget:

  * tune writes the file at the default location (XDG_CONFIG_HOME) and at --tune-file,
    with a [machine] section and one section per (kernel, shape class), progress on stderr;
  * bench uses a matching default file, says so, records it in the results context and
    runs each point with the file's tiles (tile_q / tile_kv / tuned counters); --tune-file
    none and ATTNBENCH_TILE_* (higher precedence) do not use them;
  * check with the file passes (tuned tiles are valid tiles);
  * a malformed file fails with FILE:LINE (exit 1), a foreign one (vendor/model edited)
    is ignored with a note, a missing --tune-file / ATTNBENCH_TUNE_FILE is an error;
  * --budget too small for the grid still times the built-in rule and says the share
    was spent.
"""
import json
import os
import re

import clitest
from clitest import check, run

TINY = """[prefill]
kernels = blocked
heads = 2
head_dim = 64
seq_len = 256
[decode]
kernels = blocked
heads = 4
kv_heads = 2
head_dim = 128
seq_len = 1
seq_kv = 512
"""


def sections(text):
    """{section name: {key: value}} of an INI text (enough for tuning files)."""
    out, cur = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("["):
            cur = line[1:line.index("]")]
            out[cur] = {}
        else:
            k, v = (s.strip() for s in line.split("=", 1))
            out[cur][k] = v
    return out


def main():
    clitest.init()
    kernels = [n for n, ok, _ in clitest.list_kernels() if ok and n.startswith("flash__")]
    if not kernels:
        print("no flash kernel runs here")
        return 77
    kernel = kernels[-1]  # the widest ISA this CPU runs
    with clitest.tempdir() as d:
        cfg = os.path.join(d, "tiny.ini")
        with open(cfg, "w") as f:
            f.write(TINY)
        env = {"XDG_CONFIG_HOME": os.path.join(d, "xdg"), "ATTNBENCH_TUNE_FILE": ""}
        os.mkdir(env["XDG_CONFIG_HOME"])

        # 1. tune writes the default file.
        rc, out, err = run("tune", "--config", cfg, "--kernel", kernel, "--budget", "2",
                           "--threads", "2", env=env)
        check(rc == 0, f"tune exits 0 (got {rc}: {err})")
        m = re.search(r"wrote (\S+) \((\d+) entries\)", out)
        check(m is not None, f"tune says what it wrote: {out!r}")
        if not m:
            return clitest.finish("tune_file")
        path = m.group(1)
        check(path.startswith(env["XDG_CONFIG_HOME"] + "/attnbench/tuning-"),
              f"default location under XDG_CONFIG_HOME/attnbench: {path}")
        check(re.search(rf"\[1/2 1/\d+\] {kernel} \S+ \S+ \(.*\) tile_q \d+ tile_kv \d+: [\d.]+ ms "
                        r"\[built-in rule\]", err) is not None,
              f"a progress line per candidate, the rule first: {err!r}")
        with open(path) as f:
            text = f.read()
        sec = sections(text)
        mach = sec.get("machine", {})
        check(set(mach) == {"vendor", "family", "model", "stepping", "isa", "build"},
              f"[machine] has the identity keys: {mach}")
        check(f"{kernel} prefill d64" in sec and f"{kernel} decode d128" in sec,
              f"one section per shape class: {list(sec)}")
        pre = sec.get(f"{kernel} prefill d64", {"tile_q": "0", "tile_kv": "0"})
        dec = sec.get(f"{kernel} decode d128", {"tile_q": "0", "tile_kv": "0"})
        check(all(int(e[k]) > 0 for e in (pre, dec) for k in ("tile_q", "tile_kv")),
              f"positive tiles: {pre} {dec}")

        # 2. bench uses the default file: says so, context and counters. To see the
        # file's tiles (not a coincidence with the rule), write distinctive ones.
        text2 = text.replace(f"[{kernel} prefill d64]\ntile_q = {pre['tile_q']}\ntile_kv = {pre['tile_kv']}",
                             f"[{kernel} prefill d64]\ntile_q = 40\ntile_kv = 72")
        check(text2 != text, "the prefill section was found to edit")
        with open(path, "w") as f:
            f.write(text2)
        res = os.path.join(d, "r.json")

        def bench(*extra, env2=None):
            e = dict(env)
            e.update(env2 or {})
            rc, out, err = run("bench", "--config", cfg, "--kernel", kernel, "--out", res,
                               "--no-probe", "--quiet", "--benchmark_min_time=0.001", *extra,
                               env=e)
            doc = None
            if rc == 0:
                with open(res) as f:
                    doc = json.load(f)
            return rc, err, doc

        rc, err, doc = bench()
        check(rc == 0, f"bench with the tuning file exits 0 (got {rc}: {err})")
        check(f"using tuning file {path}" in err, f"bench says which tuning file: {err!r}")
        if doc:
            ctx = doc["context"].get("tuning", "")
            check(ctx.startswith(path + ":") and f"{kernel} prefill d64 tile_q 40 tile_kv 72" in ctx,
                  f"context records the file and its values: {ctx!r}")
            pts = {b["run_name"].split("/")[4]: b for b in doc["benchmarks"] if "Sq" in b}
            p, q = pts.get("Sq256"), pts.get("Sq1")
            check(p is not None and (p["tile_q"], p["tile_kv"], p["tuned"]) == (40, 72, 1),
                  f"prefill point ran with the file's tiles: {p}")
            check(q is not None and (q["tile_q"], q["tile_kv"], q["tuned"]) ==
                  (int(dec["tile_q"]), int(dec["tile_kv"]), 1),
                  f"decode point ran with the file's tiles: {q}")

        # run uses it too (the tiles line names them).
        import numpy as np
        rng = np.random.default_rng(0)
        for n in "qkv":
            np.save(os.path.join(d, n + ".npy"), rng.standard_normal((1, 2, 32, 64), dtype=np.float32))
        rc, out, err = run("run", "--kernel", kernel, *(x for n in "qkv" for x in (f"--{n}", os.path.join(d, n + ".npy"))),
                           "--out", os.path.join(d, "o.npy"), env=env)
        check(rc == 0 and "tiles: tile_q 40, tile_kv 72" in out and f"using tuning file {path}" in err,
              f"run uses the file's tiles (got {rc}: {out!r} {err!r})")

        # Precedence: ATTNBENCH_TILE_* beats the file; --tune-file none is the rule.
        rc, err, doc = bench(env2={"ATTNBENCH_TILE_Q": "24", "ATTNBENCH_TILE_KV": "48"})
        if check(rc == 0 and doc, f"bench with ATTNBENCH_TILE_* (got {rc}: {err})"):
            p = [b for b in doc["benchmarks"] if b["run_name"].split("/")[4] == "Sq256"][0]
            check((p["tile_q"], p["tile_kv"], p["tuned"]) == (24, 48, 0), f"env wins: {p}")
        rc, err, doc = bench("--tune-file", "none")
        if check(rc == 0 and doc, f"bench --tune-file none (got {rc}: {err})"):
            check("tuning file" not in err, f"no tuning file named: {err!r}")
            check(doc["context"].get("tuning") == "built-in", f"context built-in: {doc['context'].get('tuning')}")
            p = [b for b in doc["benchmarks"] if b["run_name"].split("/")[4] == "Sq256"][0]
            check(p["tuned"] == 0 and (p["tile_q"], p["tile_kv"]) != (40, 72), f"rule tiles: {p}")

        # 3. check with the tuned file passes (the tiles are valid).
        with open(path, "w") as f:
            f.write(text)
        rc, out, err = run("check", "--quick", "--kernel", kernel, env=env)
        check(rc == 0 and " 0 failed, 0 inconclusive" in out,
              f"check with the tuned tiles passes (got {rc}: {out[-300:]} {err})")
        check("using tuning file" in err, f"check says it uses the file: {err!r}")

        # 4. malformed: FILE:LINE, exit 1, for run/check/bench alike.
        lines = text.splitlines()
        n = next(i for i, l in enumerate(lines) if l.startswith("tile_kv")) + 1
        bad = os.path.join(d, "bad.ini")
        with open(bad, "w") as f:
            f.write("\n".join(l if i + 1 != n else "tile_kv = 12x" for i, l in enumerate(lines)) + "\n")
        for cmd in (("check", "--quick", "--kernel", "blocked"),
                    ("bench", "--config", cfg, "--dry-run")):
            rc, out, err = run(*cmd, "--tune-file", bad, env=env)
            check(rc == 1 and f"{bad}:{n}: " in err and "tile_kv = '12x'" in err,
                  f"{cmd[0]}: malformed file is exit 1 with FILE:LINE (got {rc}: {err!r})")
        with open(bad, "w") as f:
            f.write(text.replace("[machine]", "[machine]\ncolour = blue", 1))
        rc, out, err = run("check", "--quick", "--kernel", "blocked", env={**env, "ATTNBENCH_TUNE_FILE": bad})
        check(rc == 1 and f"{bad}:3: " in err and "unknown key 'colour'" in err,
              f"ATTNBENCH_TUNE_FILE malformed: FILE:LINE (got {rc}: {err!r})")

        with open(bad, "w") as f:
            f.write(text.replace("\ntile_kv", "\n  tile_kv", 1))
        rc, out, err = run("bench", "--config", cfg, "--dry-run", "--tune-file", bad, env=env)
        check(rc == 1 and f"{bad}:{n}: indented line" in err,
              f"an indented (continuation) line is an error at its line (got {rc}: {err!r})")

        # 5. foreign (vendor or model edited; the default location too): ignored, a note.
        for key, val in (("vendor", "AuthenticAMD"), ("model", "1")):
            with open(path, "w") as f:
                f.write(re.sub(rf"^{key} = .*$", f"{key} = {val}", text, count=1, flags=re.M))
            rc, err, doc = bench()
            check(rc == 0, f"bench with a foreign file ({key}) runs (got {rc}: {err})")
            check(re.search(rf"note: ignoring tuning file {re.escape(path)}: written for {key} {val}", err)
                  is not None, f"foreign {key}: a note says why: {err!r}")
            if doc:
                check(doc["context"].get("tuning") == "built-in", "foreign file: context built-in")
                check(all(b["tuned"] == 0 for b in doc["benchmarks"] if "tuned" in b),
                      "foreign file: no point tuned")

        # 6. a missing named file is an error; a missing default is not.
        missing = os.path.join(d, "nope.ini")
        for how in (("--tune-file", missing), ()):
            e = env if how else {**env, "ATTNBENCH_TUNE_FILE": missing}
            rc, out, err = run("check", "--quick", "--kernel", "blocked", *how, env=e)
            check(rc == 1 and missing in err and "No such file" in err,
                  f"missing named tuning file {how or 'ATTNBENCH_TUNE_FILE'}: exit 1 (got {rc}: {err!r})")
        os.remove(path)
        rc, out, err = run("check", "--quick", "--kernel", "blocked", env=env)
        check(rc == 0 and "tuning" not in err, f"no default file: silent built-in (got {rc}: {err!r})")

        # 7. --tune-file on tune, and a budget smaller than one candidate.
        other = os.path.join(d, "other.ini")
        rc, out, err = run("tune", "--config", cfg, "--kernel", kernel, "--budget", "0.001",
                           "--tune-file", other, env=env)
        check(rc == 0 and os.path.exists(other), f"tune --tune-file writes there (got {rc}: {err})")
        check(re.search(r"budget share [\d.e-]+ s spent after 1 of \d+ candidates", err) is not None,
              f"a spent budget stops the search after the rule: {err!r}")
        check(not os.path.exists(path), "tune --tune-file leaves the default location alone")
        # A second tune into a matching file keeps the other kernel's entries.
        tiled = kernel.replace("flash__", "tiled__")
        rc, out, err = run("tune", "--config", cfg, "--kernel", tiled, "--budget", "0.5",
                           "--tune-file", other, env=env)
        with open(other) as f:
            both = sections(f.read())
        check(rc == 0 and f"{kernel} prefill d64" in both and f"{tiled} prefill d64" in both,
              f"tune keeps a matching file's other entries (got {rc}: {list(both)} {err})")
        # A foreign file at the target is replaced, with a note, not merged.
        with open(other, "w") as f:
            f.write(re.sub(r"^model = .*$", "model = 1", text, count=1, flags=re.M))
        rc, out, err = run("tune", "--config", cfg, "--kernel", tiled, "--budget", "0.5",
                           "--tune-file", other, env=env)
        with open(other) as f:
            only = sections(f.read())
        check(rc == 0 and "not keeping its entries: written for model 1" in err
              and sorted(only) == sorted(["machine", f"{tiled} prefill d64", f"{tiled} decode d128"]),
              f"a foreign target is replaced (got {rc}: {list(only)} {err})")
        rc, out, err = run("tune", "--kernel", "blocked", env=env)
        check(rc == 2 and "no tiles to tune" in err, f"tune --kernel blocked: exit 2 (got {rc}: {err})")
    return clitest.finish("tune_file")


if __name__ == "__main__":
    raise SystemExit(main())
