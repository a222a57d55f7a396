# SPDX-License-Identifier: MIT
"""`attnbench tune` and tuning files (harness/tunefile.h, docs/tuning-files.md), end to end on a
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
    was spent;
  * the shapes as the config gives them: a serving sweep (paged layout) and K/V types
    other than float32 (bf16, q8_0) are tuned on that layout and type and written;
  * register-tile variants and kv_split: tune times the kernel's other variants (progress
    lines) and writes `regtile = NAME` per section; a file's regtile / kv_split reach
    bench's points (regtile / kv_split / tuned_variant counters, the context) and run;
    --regtile, ATTNBENCH_REGTILE and a config's regtile / kv_split keys beat the file; an
    unknown variant name or a bad kv_split in the file is FILE:LINE (exit 1), in a config
    FILE:LINE (exit 2).
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
    # Flash kernels with register-tile variants (`list` shows rt=): the tiles and the
    # variants are what tune searches (a kernel on fixed hardware tiles, as AMX's, has none).
    kernels = [n for n, ok, line in clitest.list_kernels()
               if ok and n.startswith("flash__") and " rt=" in line]
    if not kernels:
        print("no flash kernel with register-tile variants runs here")
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
        m = re.search(r"wrote (\S+) \((\d+) entries: \2 from this run, 0 kept\)", out)
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
        variants = [r["name"] for r in
                    next(k for k in json.loads(run("list", "--json")[1]) if k["name"] == kernel)["regtiles"]]
        check(len(variants) >= 2, f"{kernel} has register-tile variants: {variants}")
        check(re.search(rf"\[1/2 regtile 1/{len(variants) - 1}\] {kernel} prefill d64 .* regtile "
                        rf"{re.escape(variants[1])}: [\d.]+ ms", err) is not None,
              f"a progress line per register-tile variant: {err!r}")
        check(all(e.get("regtile") in variants for e in (pre, dec)),
              f"tune writes each section's winning variant: {pre} {dec}")
        # A choice other than the built-in default is only written after it won the
        # alternated confirmation rounds (5 by default): its stdout line says so, with
        # that ratio and no other (the search's medians are on stderr).
        check("5 confirmation round(s)" in err, f"the confirmation rounds are announced: {err!r}")
        groups = 0
        for line in out.splitlines():
            g = re.match(r"\S+\s+\S+ \S+\s+tile_q\s+(\d+) tile_kv\s+(\d+) regtile (\S+)( kv_split \d+)?"
                         r": (.*); built-in (\d+) x (\d+)$", line)
            if line.startswith("wrote "):
                continue
            if not check(g is not None, f"a group line: {line!r}"):
                continue
            groups += 1
            tuned = (g.group(1), g.group(2)) != (g.group(6), g.group(7)) or \
                g.group(3) != variants[0] or g.group(4) is not None
            verdict = g.group(5)
            check(verdict.startswith("tuned: ") and "median of 5 alternated rounds" in verdict
                  if tuned else verdict.startswith("the built-in default"),
                  f"a tuned choice is written only confirmed, and says so: {line!r} {err!r}")
            check(len(re.findall(r"\d+(?:\.\d+)?x\b", verdict)) == (1 if tuned else 0),
                  f"one ratio per line, the confirmed one: {line!r}")
        check(groups == 2, f"one stdout line per group: {out!r}")

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

        # bench's results may not replace the tuning file it reads: named, or the default
        before = open(path, "rb").read()
        for named in (["--tune-file", path], []):
            rc, _, err = run("bench", "--config", cfg, "--kernel", kernel, "--out", path,
                             *named, "--no-probe", "--quiet", env=env)
            check(rc == 1 and "is the same file as the tuning file" in err
                  and open(path, "rb").read() == before,
                  f"bench --out over its tuning file {named}: refused, file kept ({rc}: {err})")
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

        # The file's regtile and kv_split reach bench's points and run; the command line,
        # the environment and a config beat them. (tune writes kv_split for the decode class
        # only when a value won by 2%, which depends on the machine's noise: drop any it
        # wrote, so the one edited in below is the section's only kv_split.)
        text3 = re.sub(r"^kv_split = .*\n", "", text2, flags=re.M)
        text3 = re.sub(rf"(\[{kernel} prefill d64\]\n(?:.*\n)*?)regtile = .*\n",
                       rf"\g<1>regtile = {variants[1]}\n", text3, count=1)
        text3 = re.sub(rf"(\[{kernel} decode d128\]\n(?:.*\n)*?regtile = .*\n)", r"\g<1>kv_split = 3\n",
                       text3, count=1)
        check(f"regtile = {variants[1]}" in text3 and "kv_split = 3" in text3,
              f"the variant keys were edited in: {text3!r}")
        with open(path, "w") as f:
            f.write(text3)

        def points(doc):
            return {b["run_name"].split("/")[4]: b for b in doc["benchmarks"] if "Sq" in b}

        rc, err, doc = bench()
        if check(rc == 0 and doc, f"bench with regtile/kv_split in the file (got {rc}: {err})"):
            p, q = points(doc).get("Sq256"), points(doc).get("Sq1")
            check(p is not None and (p["regtile"], p["kv_split"], p["tuned_variant"]) == (1, 0, 1),
                  f"prefill point ran the file's variant: {p}")
            check(q is not None and (q["regtile"], q["kv_split"], q["tuned_variant"]) ==
                  (variants.index(dec["regtile"]), 3, 1), f"decode point ran the file's kv_split: {q}")
            ctx = doc["context"]
            check(f"{kernel} prefill d64 tile_q 40 tile_kv 72 regtile {variants[1]}" in ctx.get("tuning", "")
                  and "kv_split 3" in ctx.get("tuning", ""), f"context records them: {ctx.get('tuning')!r}")
            check(f"{kernel} 0={variants[0]} 1={variants[1]}" in ctx.get("regtiles", ""),
                  f"context names the variants: {ctx.get('regtiles')!r}")
        rc, out, err = run("run", "--kernel", kernel, *(x for n in "qkv" for x in (f"--{n}", os.path.join(d, n + ".npy"))),
                           "--out", os.path.join(d, "o.npy"), env=env)
        check(rc == 0 and f"regtile 1 ({variants[1]}); kv_split 0" in out,
              f"run uses the file's variant (got {rc}: {out!r} {err!r})")
        rc, err, doc = bench("--regtile", "2" if len(variants) > 2 else "0", "--kv-split", "5")
        if check(rc == 0 and doc, f"bench --regtile --kv-split (got {rc}: {err})"):
            want = 2 if len(variants) > 2 else 0
            for b in points(doc).values():
                check((b["regtile"], b["kv_split"], b["tuned_variant"]) == (want, 5, 0) and
                      b["run_name"].endswith(f"/rt{want}/split5"), f"the command line wins: {b}")
        rc, err, doc = bench(env2={"ATTNBENCH_REGTILE": variants[0], "ATTNBENCH_KV_SPLIT": "2"})
        if check(rc == 0 and doc, f"bench with ATTNBENCH_REGTILE (got {rc}: {err})"):
            for b in points(doc).values():
                check((b["regtile"], b["kv_split"], b["tuned_variant"]) == (0, 2, 0),
                      f"the environment beats the file: {b}")
        rc, out, err = run("bench", "--config", cfg, "--kernel", kernel, "--regtile", "9x9/9x9",
                           "--dry-run", env=env)
        check(rc == 2 and "no such register-tile variant" in err,
              f"bench --regtile unknown: exit 2 (got {rc}: {err!r})")
        cfg_rt = os.path.join(d, "rt.ini")
        with open(cfg_rt, "w") as f:
            f.write(f"[p]\nkernels = {kernel}\nheads = 2\nhead_dim = 64\nseq_len = 256\n"
                    f"regtile = {variants[1]}\nkv_split = 2\n")
        rc, out, err = run("bench", "--config", cfg_rt, "--out", res, "--no-probe", "--quiet",
                           "--benchmark_min_time=0.001", env=env)
        if check(rc == 0, f"bench with a config's regtile / kv_split (got {rc}: {err})"):
            with open(res) as f:
                b = json.load(f)["benchmarks"][0]
            check((b["regtile"], b["kv_split"], b["tuned_variant"]) == (1, 2, 0),
                  f"the config's values win: {b}")
        with open(cfg_rt, "w") as f:
            f.write(f"[p]\nkernels = {kernel}\nheads = 2\nhead_dim = 64\nseq_len = 256\n"
                    "regtile = 9x9/9x9\n")
        rc, out, err = run("bench", "--config", cfg_rt, "--dry-run", env=env)
        check(rc == 2 and f"{cfg_rt}:6: " in err and "no such register-tile variant" in err,
              f"a config's unknown regtile: FILE:LINE, exit 2 (got {rc}: {err!r})")
        with open(path, "w") as f:
            f.write(text2)

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
        n_rt = next(i for i, l in enumerate(lines) if l.startswith("regtile")) + 1
        for value, why in (("9x9/9x9", "has no such variant (expected " + ", ".join(variants)),
                           ("a b", "expected a register-tile variant name")):
            with open(bad, "w") as f:
                f.write("\n".join(l if i + 1 != n_rt else f"regtile = {value}" for i, l in enumerate(lines)) + "\n")
            for cmd in (("check", "--quick", "--kernel", "blocked"), ("bench", "--config", cfg, "--dry-run")):
                rc, out, err = run(*cmd, "--tune-file", bad, env=env)
                check(rc == 1 and f"{bad}:{n_rt}: " in err and why in err,
                      f"{cmd[0]}: regtile = {value}: exit 1 with FILE:LINE (got {rc}: {err!r})")
        with open(bad, "w") as f:
            f.write("\n".join(lines[:n_rt] + ["kv_split = 0"] + lines[n_rt:]) + "\n")
        rc, out, err = run("check", "--quick", "--kernel", "blocked", "--tune-file", bad, env=env)
        check(rc == 1 and f"{bad}:{n_rt + 1}: " in err and "kv_split = '0'" in err,
              f"kv_split = 0: exit 1 with FILE:LINE (got {rc}: {err!r})")
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
        # The edited values differ from this machine's whatever it is (an AMD machine's
        # file says AuthenticAMD already; a model-1 CPU's says model 1).
        own = dict(re.findall(r"^(vendor|model) = (.*)$", text, flags=re.M))
        other_vendor = "GenuineIntel" if own.get("vendor") == "AuthenticAMD" else "AuthenticAMD"
        other_model = str(int(own.get("model", "0")) + 1)
        for key, val in (("vendor", other_vendor), ("model", other_model)):
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
        # A foreign file at the target is replaced, with a note, not merged (another model
        # than this CPU's: other_model, above).
        with open(other, "w") as f:
            f.write(re.sub(r"^model = .*$", f"model = {other_model}", text, count=1, flags=re.M))
        rc, out, err = run("tune", "--config", cfg, "--kernel", tiled, "--budget", "0.5",
                           "--tune-file", other, env=env)
        with open(other) as f:
            only = sections(f.read())
        check(rc == 0 and f"not keeping its entries: written for model {other_model}" in err
              and sorted(only) == sorted(["machine", f"{tiled} prefill d64", f"{tiled} decode d128"]),
              f"a foreign target is replaced (got {rc}: {list(only)} {err})")
        rc, out, err = run("tune", "--kernel", "blocked", env=env)
        check(rc == 2 and "no tiles to tune" in err, f"tune --kernel blocked: exit 2 (got {rc}: {err})")

        # 8. Each class's first shape is timed as the config gives it: a paged serving sweep
        #    (its layout stays alive while tuned) and K/V stored as bf16 / q8_0.
        shapes = os.path.join(d, "shapes.ini")
        with open(shapes, "w") as f:
            f.write("[srv]\nkernels = blocked\nheads = 4\nkv_heads = 2\nhead_dim = 64\ncausal = true\n"
                    "kv_lens = fixed:4:64\nq_lens = decode\npage_size = 16\npage_order = shuffled\n"
                    "[bf16]\nkernels = blocked\nheads = 2\nhead_dim = 128\nseq_len = 64\nkv_dtype = bf16\n"
                    "[q8]\nkernels = blocked\nheads = 4\nkv_heads = 2\nhead_dim = 128\nseq_len = 1\n"
                    "seq_kv = 256\nkv_dtype = q8_0\n")
        shapes_out = os.path.join(d, "shapes.tune")
        rc, out, err = run("tune", "--config", shapes, "--kernel", kernel, "--budget", "0.5",
                           "--confirm", "0", "--reps", "1", "--threads", "1", "--tune-file",
                           shapes_out, env=env)
        got = {}
        if os.path.exists(shapes_out):
            with open(shapes_out) as f:
                got = sections(f.read())
        check(rc == 0 and all(f"{kernel} {c}" in got for c in ("decode d64", "prefill d128", "decode d128")),
              f"tune of a serving sweep and bf16 / q8_0 K/V: all three classes written "
              f"(got {rc}: {list(got)} {err[-400:]!r})")
        check(re.search(r" D64 causal paged, T1\)", err) and re.search(r" D128 bf16, T1\)", err)
              and re.search(r" D128 q8_0, T1\)", err),
              f"the progress lines name the layout and the K/V types: {err[-600:]!r}")
        # 9. The built-in default tune records is the machine rule's and the kernel's:
        # ATTNBENCH_TILE_*, _REGTILE and _KV_SPLIT set while tuning do not become it.
        said = {}
        for name, extra in (("plain", {}), ("env", {"ATTNBENCH_TILE_Q": "64", "ATTNBENCH_TILE_KV": "64",
                                                    "ATTNBENCH_KV_SPLIT": "2", "ATTNBENCH_REGTILE": "1"})):
            rc, out, err = run("tune", "--config", cfg, "--kernel", kernel, "--budget", "0.001",
                               "--confirm", "0", "--tune-file", os.path.join(d, name + ".ini"),
                               env=dict(env, **extra))
            said[name] = (re.findall(r"built-in (\d+ x \d+)", out),
                          re.findall(r"tile_q (\d+) tile_kv (\d+): [\d.]+ ms \[built-in rule\]", err))
            check(rc == 0 and said[name][0] and said[name][1], f"tune ({name}): {rc} {err[-300:]!r}")
        check(said["env"] == said["plain"] and "ATTNBENCH" not in out + err,
              f"the environment's settings are not taken as the built-in default: {said}")
    return clitest.finish("tune_file")


if __name__ == "__main__":
    raise SystemExit(main())
