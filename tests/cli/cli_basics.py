#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""attnbench dispatcher, `list`, `--help` on every subcommand, `check` exit codes and its
final 'N passed, M failed, K inconclusive, S skipped, F fallback' line counting (kernel, case) pairs."""
import json
import re

import clitest
from clitest import check, run

clitest.init()

# Dispatcher.
rc, out, err = run()
check(rc == 2 and "usage: attnbench" in err, f"no command: exit 2 with usage on stderr (got {rc})")
rc, out, err = run("frobnicate")
check(rc == 2 and "unknown command 'frobnicate'" in err, f"unknown command: exit 2 + message (got {rc}: {err})")
rc, out, err = run("--version")
check(rc == 0 and out.startswith("attnbench "), "--version")
rc, top_help, err = run("--help")
check(rc == 0 and "commands:" in top_help, "attnbench --help lists commands")
commands = re.findall(r"^  (\w+)\s", top_help.split("commands:")[1], re.M)
check({"list", "check", "run"} <= set(commands), f"commands include list/check/run: {commands}")
for cmd in commands:
    for args in ((cmd, "--help"), (cmd, "-h"), ("help", cmd)):
        rc, out, err = run(*args)
        check(rc == 0 and out.startswith(f"usage: attnbench {cmd}") and "--help" in out and not err,
              f"`attnbench {' '.join(args)}` prints help to stdout and exits 0 (got {rc}: {err})")
    rc, out, err = run(cmd, "--no-such-option")
    check(rc == 2 and "unknown option '--no-such-option'" in err and f"attnbench {cmd} --help" in err,
          f"`attnbench {cmd} --no-such-option` exits 2 with a message (got {rc}: {err})")
for cmd in ("list", "check", "run"):  # commands that take no positional arguments
    rc, out, err = run(cmd, "stray")
    check(rc == 2 and "unexpected argument 'stray'" in err, f"`attnbench {cmd} stray` is rejected ({rc}: {err})")
rc, out, err = run("help", "frobnicate")
check(rc == 2 and "unknown command" in err, "help for an unknown command")

# list: every registered kernel, name first; reference/naive/blocked always available.
kernels = clitest.list_kernels()
names = [k[0] for k in kernels]
for required in ("reference", "naive", "blocked"):
    check(required in names, f"list shows {required}")
    check(any(n == required and ok for n, ok, _ in kernels), f"{required} is available on any CPU")
check(len(set(names)) == len(names), "kernel names are unique")
for name, ok, line in kernels:
    if not ok:
        check(re.search(r"unavailable \(needs [a-z0-9 -]+\)", line), f"unavailable line says why: {line!r}")
rc, out, err = run("list", "--json")
check(rc == 0, "list --json exits 0")
try:
    js = json.loads(out)
    check([k["name"] for k in js] == names, "list --json has the same kernels in the same order")
    check(all(k["available"] == ok for k, (_, ok, _) in zip(js, kernels)), "list --json availability matches")
except json.JSONDecodeError as e:
    check(False, f"list --json is valid JSON ({e})")
rc, out, err = run("list", "--available")
check(rc == 0 and [l.split()[0] for l in out.splitlines()] == [n for n, ok, _ in kernels if ok],
      "list --available shows exactly the available kernels")
# With every SIMD ISA masked off, kernels that need one are listed as unavailable, not hidden.
masked = clitest.list_kernels(env={"ATTNBENCH_ISA_MASK": "0"})
check([k[0] for k in masked] == names, "masked ISA: every kernel is still listed")
check(all(ok for n, ok, _ in masked if n in ("reference", "naive", "blocked")), "portable kernels stay available")

# check: counts are (kernel, case) pairs; exit 0 iff nothing failed; last line exact.
def check_run(*args, env=None):
    rc, out, err = run("check", "--quick", "--no-progress", *args, env=env)
    last = out.rstrip("\n").splitlines()[-1] if out.strip() else ""
    m = re.fullmatch(r"(\d+) passed, (\d+) failed, (\d+) inconclusive, (\d+) skipped, (\d+) fallback", last)
    check(m is not None, f"check {args}: last line is 'N passed, M failed, K inconclusive, S skipped, F fallback' (got {last!r})")
    # an inconclusive pair counts as not passed (exit 1, like a failure); a pair that passed
    # on the shared fallback (an option the kernel does not claim) ran and passed too
    return rc, (int(m.group(1)) + int(m.group(5)), int(m.group(2)) + int(m.group(3))) if m else (None, None), out, err

rc, (p1, f1), out, err = check_run("--kernel", "naive")
check(rc == 0 and f1 == 0 and p1 and p1 > 0, f"check --kernel naive passes ({rc}, {p1}, {f1})")
rc, (p2, f2), out, err = check_run("--kernel", "naive", "--kernel", "blocked", "--kernel", "naive")
check(rc == 0 and f2 == 0 and p1 and p2 == 2 * p1, f"two kernels give twice the pairs ({p2} vs {p1})")
check("naive" in out and "blocked" in out and "worst err/tol" in out, "per-kernel summary table")
rc, (p3, f3), out, err = check_run("--verbose", "--kernel", "blocked", "--threads", "2")
check(rc == 0 and sum(1 for l in out.splitlines() if l.startswith("ok   blocked ")) == p1,
      "--verbose prints one line per passing pair")
rc, (pa, fa), out, err = check_run()
n_avail = sum(1 for _, ok, _ in kernels if ok)
check(rc == 0 and fa == 0 and pa == n_avail * p1, f"default check runs every available kernel ({pa} pairs)")
rc, out, err = run("check", "--quick", "--list-cases")
check(rc == 0 and len(out.splitlines()) == p1, f"--list-cases prints one line per case ({len(out.splitlines())} vs {p1})")
rc, out, err = run("check", "--quick", "--list-cases", "--filter", "causal")
n_causal = len(out.splitlines())
check(rc == 0 and 0 < n_causal < p1 and all("causal" in l for l in out.splitlines()), "--filter selects cases")
rc, (pf, ff), out, err = check_run("--kernel", "naive", "--filter", "causal")
check(rc == 0 and pf == n_causal, f"check --filter runs only the matching cases ({pf} vs {n_causal})")
rc, out, err = run("check", "--filter", "no-such-case")
check(rc == 2 and "matches no case" in err, f"--filter matching nothing is an error ({rc}: {err})")
rc, out, err = run("check", "--kernel", "nope")
check(rc == 2 and "unknown kernel 'nope'" in err and "blocked" in err, f"check unknown kernel: exit 2 ({rc}: {err})")
rc, out, err = run("check", "--quick", "--threads", "-3")
check(rc == 2 and "out of range" in err, "check --threads -3 is rejected")
needs_isa = [n for n, ok, _ in masked if not ok]
if needs_isa:
    rc, (pn, fn), out, err = check_run("--kernel", needs_isa[0], "--allow-skips",
                                       env={"ATTNBENCH_ISA_MASK": "0"})
    check(rc == 1 and pn == 0 and fn == 0 and "nothing was checked" in err
          and f"skipping {needs_isa[0]}" in err,
          f"--allow-skips: an unavailable kernel is skipped with a note; nothing checked: exit 1 ({rc}: {err})")

clitest.finish("cli_basics")
