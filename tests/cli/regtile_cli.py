# SPDX-License-Identifier: MIT
"""--regtile and --kv-split on run and check, and ATTNBENCH_REGTILE / ATTNBENCH_KV_SPLIT:

  * run --regtile by index and by name selects the variant (the tiles line names it) and
    every variant of a kernel writes a bitwise identical O (flash_body.h);
  * run --kv-split N runs with N (the line says so) and passes --check; a different
    kv_split may change bits, 1 and 2 threads may not;
  * an unknown variant, a kernel without variants given 1, --kv-split above the cap, a
    malformed ATTNBENCH_REGTILE or ATTNBENCH_KV_SPLIT: exit 2 with one line naming it;
  * check --kernel K --regtile V --kv-split N --quick passes; check --regtile naming a
    variant some selected kernel lacks is exit 2.
"""
import json
import os

import clitest
from clitest import check, run


def main():
    clitest.init()
    rc, out, err = run("list", "--json")
    recs = [k for k in json.loads(out) if k["available"] and len(k["regtiles"]) > 1]
    if not recs:
        print("no kernel with register-tile variants runs here")
        return 77
    import numpy as np
    env = {"ATTNBENCH_TUNE_FILE": "none"}
    with clitest.tempdir() as d:
        rng = np.random.default_rng(3)
        shapes = {"q": (1, 4, 70, 64), "k": (1, 2, 300, 64), "v": (1, 2, 300, 64)}
        for n, s in shapes.items():
            np.save(os.path.join(d, n + ".npy"), rng.standard_normal(s, dtype=np.float32))
        qkv = [x for n in "qkv" for x in (f"--{n}", os.path.join(d, n + ".npy"))]

        def run_o(kernel, *extra, env2=None):
            o = os.path.join(d, "o.npy")
            rc, out, err = run("run", "--kernel", kernel, *qkv, "--out", o, *extra,
                               env={**env, **(env2 or {})})
            return rc, out, err, (np.load(o) if rc == 0 else None)

        for k in recs:
            name, variants = k["name"], [r["name"] for r in k["regtiles"]]
            outs = []
            for i, v in enumerate(variants):
                for sel in (str(i), v):
                    rc, out, err, o = run_o(name, "--regtile", sel, "--check", "--causal")
                    check(rc == 0 and f"regtile {i} ({v}); kv_split 0" in out and "check: pass" in out,
                          f"{name} --regtile {sel}: (got {rc}: {out!r} {err!r})")
                    outs.append(o)
            check(all(o is not None and o.tobytes() == outs[0].tobytes() for o in outs),
                  f"{name}: every variant writes the same O bits")
            split = []
            for t in ("1", "2"):
                rc, out, err, o = run_o(name, "--kv-split", "3", "--threads", t, "--check")
                check(rc == 0 and "kv_split 3" in out and "check: pass" in out,
                      f"{name} --kv-split 3 T{t} (got {rc}: {out!r} {err!r})")
                split.append(o)
            check(split[0] is not None and split[1] is not None and
                  split[0].tobytes() == split[1].tobytes(), f"{name} --kv-split 3: 1 and 2 threads agree")
            rc, out, err, _ = run_o(name, env2={"ATTNBENCH_REGTILE": variants[-1], "ATTNBENCH_KV_SPLIT": "2"})
            check(rc == 0 and f"regtile {len(variants) - 1} ({variants[-1]}); kv_split 2" in out,
                  f"{name}: ATTNBENCH_REGTILE / ATTNBENCH_KV_SPLIT apply (got {rc}: {out!r} {err!r})")
            rc, out, err, _ = run_o(name, "--regtile", "0", "--kv-split", "0",
                                    env2={"ATTNBENCH_REGTILE": variants[-1], "ATTNBENCH_KV_SPLIT": "2"})
            check(rc == 0 and f"regtile 0 ({variants[0]}); kv_split 0" in out,
                  f"{name}: the command line beats the environment (got {rc}: {out!r})")

            for extra, want in ((("--regtile", "9x9/9x9"), "no such register-tile variant"),
                                (("--regtile", str(len(variants))), "no such register-tile variant"),
                                (("--kv-split", "4097"), "--kv-split 4097")):
                rc, out, err, _ = run_o(name, *extra)
                check(rc == 2 and want in err and len(err.strip().splitlines()) == 1,
                      f"{name} {' '.join(extra)}: exit 2, one line (got {rc}: {err!r})")
            for var, val in (("ATTNBENCH_REGTILE", "a;b"), ("ATTNBENCH_REGTILE", "9x9/9x9"),
                             ("ATTNBENCH_KV_SPLIT", "-1"), ("ATTNBENCH_KV_SPLIT", "x")):
                for cmd in (("run", "--kernel", name, *qkv, "--out", os.path.join(d, "x.npy")),
                            ("check", "--quick", "--kernel", name)):
                    rc, out, err = run(*cmd, env={**env, var: val})
                    check(rc == 2 and var in err, f"{cmd[0]} with {var}={val}: exit 2 (got {rc}: {err!r})")

            rc, out, err = run("check", "--quick", "--kernel", name, "--regtile", variants[1],
                               "--kv-split", "2", env=env)
            check(rc == 0 and " 0 failed, 0 inconclusive" in out,
                  f"check {name} --regtile {variants[1]} --kv-split 2 passes (got {rc}: {out[-300:]} {err})")
        rc, out, err, _ = run_o("naive", "--regtile", "1")
        check(rc == 2 and "kernel naive has no such register-tile variant (0..0: default)" in err,
              f"naive --regtile 1: exit 2 (got {rc}: {err!r})")
        rc, out, err = run("check", "--quick", "--regtile", "1", env=env)
        check(rc == 2 and "no such register-tile variant" in err and "--kernel" in err,
              f"check --regtile 1 over every kernel: exit 2 (got {rc}: {err!r})")
    return clitest.finish("regtile_cli")


if __name__ == "__main__":
    raise SystemExit(main())
