#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The inputs scripts/bench-baselines runs a baseline on: an `attnbench bench
--export-inputs` directory (its index.json, harness/bench/inputs.h), found for a kernel
point by the point's problem, or made from a results file's recorded config; and the
point's attention options as command-line flags."""
import json
import os
import re
import subprocess


def point_key(name, kernel):
    """The point name without the kernel and the /T<n> segment: the same for every kernel
    and thread count of one problem (bench/inputs.h computes the same key)."""
    rest = name[len(kernel) + 1:] if name.startswith(kernel + "/") else name
    return re.sub(r"/T[0-9]+(?=/|$)", "", rest, count=1)


def kv_free_key(key):
    """A point key without its K/V type segment (/f16, /bf16, /q8_0): every K/V type of a
    problem is generated from the same float32 values (bench/point.c), which the export
    holds once; so is every compute mode's (the mode rounds inside the run, not the
    inputs), so the /compute:MODE segment goes too, and so do a register-tile variant's and
    a KV split's (/rtN, /splitN: how a kernel runs, not the problem)."""
    return re.sub(r"/(f16|bf16|q8_0|compute:[a-z0-9]+|rt[0-9]+|split[0-9]+)(?=/|$)", "", key)


# Config keys that choose how a kernel runs, not the problem: left out of the export's
# dry run, whose one portable kernel has no variants.
EXEC_ONLY_KEYS = ("regtile", "kv_split")


def problem_config(text):
    """The config text without the EXEC_ONLY_KEYS lines (and their continuation lines)."""
    out, skipping = [], False
    for line in text.splitlines(True):
        stripped = line.strip()
        if skipping and line[:1] in (" ", "\t") and stripped and not stripped.startswith(("#", ";")):
            continue  # a continuation line of a key left out
        key = stripped.split("=", 1)[0].split(":", 1)[0].strip().lower()
        skipping = "=" in stripped and key in EXEC_ONLY_KEYS
        if not skipping:
            out.append(line)
    return "".join(out)


def points_of(doc_points):
    """One representative kernel point per distinct (problem, threads, input copies)."""
    seen = {}
    for p in doc_points.values():
        if p.error or p.get("baseline"):
            continue
        key = (point_key(p.name, p.kernel), p.threads, int(p.get("input_copies", 1)))
        if key not in seen:
            seen[key] = p
    return list(seen.values())


class Inputs:
    """An export of `attnbench bench --export-inputs` (bench/inputs.h)."""

    def __init__(self, d):
        self.dir = d
        with open(os.path.join(d, "index.json")) as f:
            self.index = json.load(f)
        if self.index.get("format") != "attnbench-inputs-2":
            raise ValueError("%s/index.json is not an attnbench inputs export of this version "
                             "(format %r; attnbench-inputs-2 digests the option arrays and "
                             "values too: export again)" % (d, self.index.get("format")))
        self.by_key = {}
        for s in self.index["inputs"].values():
            self.by_key.setdefault(kv_free_key(s["key"]), s)

    def for_point(self, kp):
        """The input set of a results point: by its name, else by its key."""
        ref = self.index["points"].get(kp.name)
        if ref:
            return self.index["inputs"][ref["inputs"]]
        return self.by_key.get(kv_free_key(point_key(kp.name, kp.kernel)))

    def path(self, f):
        return os.path.join(self.dir, f)


def export_inputs(attnbench, context, d):
    """An export for a results file without one: the recorded config, dry run."""
    text = context.get("config_text")
    if not text:
        raise ValueError("the results file records no config_text; pass --inputs DIR "
                         "(attnbench bench --export-inputs DIR)")
    cfg = os.path.join(d, "config.ini")
    with open(cfg, "w") as f:
        f.write(problem_config(text))
    # Inputs depend on the problem only: one portable kernel is enough for every shape.
    r = subprocess.run([attnbench, "bench", "--config", cfg, "--kernel", "naive", "--dry-run",
                        "--export-inputs", os.path.join(d, "inputs")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ValueError("exporting the inputs failed: %s" % (r.stderr.strip().splitlines()
                                                              or ["exit %d" % r.returncode])[-1])
    return Inputs(os.path.join(d, "inputs"))


def option_flags(inp, s, for_check):
    """The point's options (the export's) as flags of attnbench check / attn_baseline.py."""
    o = s.get("options")
    if not o:
        return []
    flags = []
    if o.get("align") == "top-left":
        flags += ["--align", "top-left"]
    if o.get("window"):
        side = [("inf" if int(o[k]) < 0 else str(int(o[k]))) for k in ("window_left",
                                                                         "window_right")]
        flags += ["--window", ",".join(side)]
    if o.get("softcap"):
        flags += ["--softcap", repr(float(o["softcap"]))]
    if o.get("alibi_max_bias"):
        flags += ["--alibi", repr(float(o["alibi_max_bias"]))]
    for key, flag in (("alibi_slopes", "--alibi-slopes"), ("sinks", "--sinks"),
                      ("mask", "--mask")):
        if o.get(key):
            flags += [flag, inp.path(o[key])]
    if o.get("lse") and not for_check:
        flags.append("--lse")  # no baseline returns the LSE: the runner skips such points
    return flags


# The units a baseline of a compute mode may run on (peak.h's unit names): a bf16 framework
# uses the CPU's best bf16 unit — the dot product, or AMX tiles where the CPU has them (as
# PyTorch's and OpenVINO's CPU attention do) — so it is judged by the faster of the two.
