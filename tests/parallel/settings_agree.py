# SPDX-License-Identifier: MIT
"""One problem through `attnbench run`, `check`, `bench`, `tune`'s timing call and the
Python module: each resolves the same execution settings (threads, bind, tile_q, tile_kv,
regtile, kv_split) with the same provenance (kernels/core/settings.h), as --explain prints
them (the Python module: attnbench.settings(), which run() uses).

    settings_agree.py ATTNBENCH LIBATTNBENCH_PY.so PYTHON_PACKAGE_DIR

Scenarios: (a) nothing given — threads, bind and tiles from the machine rule (hwloc; the
module: Linux sysfs), regtile and kv_split the kernel defaults; (b) --threads 1 on the
command line (the module: threads=1), ATTNBENCH_TILE_Q and ATTNBENCH_KV_SPLIT in the
environment (tune alone leaves those two out: the default it records is the rule's); (c) the tuning file `tune` wrote in (a), for run, check and bench (tune
measures without a file, and the module reads none): their tiles come from the file.
bench's results file carries the same sources as source_<setting> counters. The module
binds no threads: its bind is not compared; its command-line layer is the call's keyword
arguments (provenance "command line (threads=)" for run's "command line (--threads)")."""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

FAILED = []
SETTINGS = ("threads", "bind", "tile_q", "tile_kv", "regtile", "kv_split")
SOURCES = ("kernel default", "machine rule", "tuning file", "environment", "config",
           "command line")
LINE = re.compile(r"^  (\w+)\s+= (.+?)\s+from (.+)$")


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def blocks(text):
    """The --explain blocks of a command's stdout: [{setting: (value, provenance)}]."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("settings of "):
            cur = {}
            out.append(cur)
            continue
        m = LINE.match(line)
        if m and cur is not None and m.group(1) in SETTINGS:
            cur[m.group(1)] = (m.group(2).strip(), m.group(3).strip())
    return out


def main():
    exe, lib, pkg = sys.argv[1:4]
    # A sanitizer build's library cannot load into an uninstrumented Python (ASan must come
    # first): there the Python leg is left out, and says so; the Release build runs it.
    py_leg = "--no-python" not in sys.argv[4:]
    if not py_leg:
        print("note: the Python module's leg is left out (sanitizer build)")
    names = subprocess.run([exe, "list", "--available"], capture_output=True,
                           text=True).stdout.split()
    kernels = [k for k in ("flash__avx512", "flash__avx2", "flash__neon") if k in names]
    if not kernels:
        print("SKIPPED: no flash kernel runs on this CPU")
        return 77
    kernel = kernels[0]
    with tempfile.TemporaryDirectory() as d:
        rng = np.random.default_rng(7)
        b, h, sq, skv, dim = 1, 2, 40, 72, 32
        for n, shape in (("q", (b, h, sq, dim)), ("k", (b, h, skv, dim)), ("v", (b, h, skv, dim))):
            np.save(os.path.join(d, n + ".npy"), rng.standard_normal(shape).astype(np.float32))
        cfg = os.path.join(d, "one.ini")
        with open(cfg, "w") as f:
            f.write(f"[one]\nkernels = {kernel}\nbatch = {b}\nheads = {h}\nkv_heads = {h}\n"
                    f"head_dim = {dim}\nseq_len = {sq}\nseq_kv = {skv}\ncausal = false\n"
                    f"threads = 0\nrepetitions = 1\nmin_time = 0.001\n")
        base_env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("ATTNBENCH_", "OMP_"))}
        base_env["XDG_CONFIG_HOME"] = os.path.join(d, "xdg")  # no default tuning file
        tuned = os.path.join(d, "tuned.ini")

        def cmd(args, env):
            r = subprocess.run([exe] + args, capture_output=True, text=True, env=env)
            check(r.returncode == 0, f"{' '.join(args[:1])} exits 0 ({r.returncode}: "
                                     f"{r.stderr.strip()[-400:]})")
            return r

        def python(env, threads):
            code = ("import sys, numpy as np, attnbench as ab\n"
                    f"q, k, v = (np.load(sys.argv[1] + '/' + n + '.npy') for n in 'qkv')\n"
                    f"s = ab.settings('{kernel}', q, k, v, threads={threads})\n"
                    f"ab.run('{kernel}', q, k, v, threads={threads})\n"
                    "print('settings of python:'); print(s.explain, end='')\n"
                    "print('SOURCES', ' '.join(s.sources[n].replace(' ', '_') for n in "
                    f"{SETTINGS!r}))\n")
            e = dict(env, PYTHONPATH=pkg, ATTNBENCH_PY_LIBRARY=lib)
            r = subprocess.run([sys.executable, "-c", code, d], capture_output=True, text=True,
                               env=e)
            check(r.returncode == 0, f"python exits 0 ({r.stderr.strip()[-400:]})")
            return r

        def scenario(label, env, cli, with_tune, with_python, expect):
            env = dict(base_env, **env)
            got = {}
            io = ["--q", f"{d}/q.npy", "--k", f"{d}/k.npy", "--v", f"{d}/v.npy"]
            got["run"] = cmd(["run", "--kernel", kernel] + io +
                             ["--out", f"{d}/o.npy", "--explain"] + cli, env).stdout
            got["check"] = cmd(["check", "--config", cfg, "--kernel", kernel, "--explain",
                                "--no-progress"] + cli, env).stdout
            res = os.path.join(d, f"bench-{label}.json")
            got["bench"] = cmd(["bench", "--config", cfg, "--out", res, "--no-probe", "--quiet",
                                "--explain"] + cli, env).stdout
            if with_tune:
                got["tune"] = cmd(["tune", "--config", cfg, "--kernel", kernel, "--budget",
                                   "0.001", "--reps", "1", "--confirm", "0", "--tune-file",
                                   tuned, "--explain"] + cli, env).stdout
            threads = cli[cli.index("--threads") + 1] if "--threads" in cli else 0
            if with_python and py_leg:
                got["python"] = python(env, threads).stdout
            parsed = {}
            for name, text in got.items():
                bl = blocks(text)
                if check(len(bl) == 1 and len(bl[0]) == len(SETTINGS),
                         f"({label}) {name} --explain prints one block of every setting: "
                         f"{text[-600:]!r}"):
                    parsed[name] = bl[0]
            if "run" not in parsed:
                return None
            ref = parsed["run"]
            for name, p in parsed.items():
                for s in SETTINGS:
                    if name == "python" and s == "bind":
                        continue  # the module binds no threads
                    want = ref[s]
                    if name == "python" and want[1].startswith("command line"):
                        # the same layer; its detail names the keyword argument, not the flag
                        want = (want[0], want[1].replace("(--", "(").replace("-", "_")
                                .replace(")", "=)"))
                    if name == "tune" and want[1].startswith("environment"):
                        # tune times and records the built-in default: never a passing
                        # ATTNBENCH_TILE_* / _REGTILE / _KV_SPLIT (docs/tuning-files.md)
                        check(p[s][1].startswith(("machine rule", "kernel default")),
                              f"({label}) tune {s} = {p[s]}: not the environment's")
                        continue
                    check(p[s] == want, f"({label}) {name} {s} = {p[s]}, run: {ref[s]}")
            for s, src in expect.items():
                check(ref[s][1].startswith(src), f"({label}) {s} from {ref[s][1]}, want {src}")
            # bench's results: the counters say the same.
            with open(res) as f:
                doc = json.load(f)
            pts = [x for x in doc.get("benchmarks", []) if "source_tile_q" in x]
            if check(len(pts) >= 1, f"({label}) bench results have source_* counters"):
                for s in SETTINGS:
                    want = [i for i, n in enumerate(SOURCES) if ref[s][1].startswith(n)]
                    check(want and int(pts[0]["source_" + s]) == want[0],
                          f"({label}) bench source_{s} = {pts[0]['source_' + s]}, "
                          f"run: {ref[s][1]}")
                check(int(pts[0]["tile_q"]) == int(ref["tile_q"][0]),
                      f"({label}) bench tile_q counter {pts[0]['tile_q']} vs {ref['tile_q'][0]}")
            return ref

        a = scenario("a", {"ATTNBENCH_TUNE_FILE": "none"}, [], True, True,
                     {"threads": "machine rule", "tile_q": "machine rule",
                      "tile_kv": "machine rule", "regtile": "kernel default",
                      "kv_split": "kernel default"})
        scenario("b", {"ATTNBENCH_TUNE_FILE": "none", "ATTNBENCH_TILE_Q": "16",
                       "ATTNBENCH_KV_SPLIT": "2"}, ["--threads", "1"], True, True,
                 {"threads": "command line (--threads)", "tile_q": "environment",
                  "kv_split": "environment", "tile_kv": "machine rule"})
        if check(os.path.exists(tuned), "tune wrote the tuning file"):
            c = scenario("c", {"ATTNBENCH_TUNE_FILE": tuned}, [], False, False,
                         {"tile_q": "tuning file", "tile_kv": "tuning file"})
            if a and c:
                check(c["threads"] == a["threads"], "a tuning file leaves threads alone")
    if FAILED:
        print(f"{len(FAILED)} checks failed")
        return 1
    print("settings_agree: run, check, bench, tune and the Python module agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
