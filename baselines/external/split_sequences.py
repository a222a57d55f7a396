#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""split_sequences.py — a serving point's inputs and a baseline's packed output, split into
one dense problem per sequence for `attnbench check --o` (scripts/bench-baselines runs it
with the baselines' Python, which has NumPy).

  split_sequences.py ENTRY.json DIR O.npy OUTDIR

ENTRY.json is the point's entry of an export's index (harness/bench/inputs.h: "q", "k",
"v", "problem", "layout"), DIR the export. Sequence b's keys are gathered from the export
by this file's own index arithmetic (key t: slot t % page_size of page
page_table[b][t // page_size]; ragged: rows cu_seqlens_kv[b] …), independent of any
baseline's. Writes OUTDIR/s<b>.{q,k,v,o}.npy as [1][heads or kv_heads][len][D] for every
sequence with queries and keys, and prints one JSON line per sequence with queries:
{"seq", "q_len", "kv_len", "files"} (files null for a sequence without keys, then
"zeros": whether its output rows are exactly 0). Exit 1 with a line on stderr if O does
not have the packed shape [total_q][heads][head_dim_v] in float32.
"""
import json
import os
import sys


def main(argv):
    import numpy as np
    entry_path, d, o_path, out = argv
    with open(entry_path) as f:
        s = json.load(f)
    lay, pr = s["layout"], s["problem"]
    q, k, v = (np.load(os.path.join(d, s[t]), mmap_mode="r") for t in ("q", "k", "v"))
    o = np.load(o_path, allow_pickle=False)
    cq, ck = lay["cu_seqlens_q"], lay["cu_seqlens_kv"]
    want = (cq[-1], pr["heads"], pr["head_dim_v"])
    if o.dtype != np.float32 or o.shape != want:
        print("output %s %s, want float32 %s" % (o.dtype, tuple(o.shape), want), file=sys.stderr)
        return 1
    paged = lay["kind"] == "paged"

    def rows(x, b):
        kl = ck[b + 1] - ck[b]
        if not paged:
            g = x[ck[b]:ck[b + 1]]
        else:
            ps, table = lay["page_size"], lay["page_table"][b]
            g = np.stack([x[table[t // ps], :, t % ps, :] for t in range(kl)], axis=0)
        return np.ascontiguousarray(np.asarray(g).transpose(1, 0, 2))[None]

    for b in range(len(cq) - 1):
        ql, kl = cq[b + 1] - cq[b], ck[b + 1] - ck[b]
        if ql == 0:
            continue
        ob = np.ascontiguousarray(o[cq[b]:cq[b + 1]].transpose(1, 0, 2))[None]
        line = {"seq": b, "q_len": ql, "kv_len": kl, "files": None}
        if kl == 0:
            line["zeros"] = bool(np.all(ob == 0))
        else:
            files = {t: os.path.join(out, "s%d.%s.npy" % (b, t)) for t in ("q", "k", "v", "o")}
            np.save(files["q"], np.ascontiguousarray(q[cq[b]:cq[b + 1]].transpose(1, 0, 2))[None])
            np.save(files["k"], rows(k, b))
            np.save(files["v"], rows(v, b))
            np.save(files["o"], ob)
            line["files"] = files
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
