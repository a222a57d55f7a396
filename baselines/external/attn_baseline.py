#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""attn_baseline.py — runs one external attention implementation (a framework a user
would pick instead of attnbench) on the same inputs, with the same timing rules.

  attn_baseline.py list
  attn_baseline.py run --baseline NAME|FILE.py --q Q.npy --k K.npy --v V.npy --out O.npy
                       [--causal] [--scale S] [--threads N] [--warmup W]
                       [--repetitions R] [--min-time SEC] [--input-copies C] [--json R.json]
                       [--wait-for-check] [--window L,R] [--align top-left|bottom-right]
                       [--softcap C] [--alibi MAX_BIAS | --alibi-slopes S.npy]
                       [--sinks S.npy] [--mask M.npy] [--lse] [--layout L.json]

Tensors are attnbench's layout (float32, C order): Q [B][H][Sq][Dqk], K [B][KVH][Skv][Dqk],
V [B][KVH][Skv][Dv] -> O [B][H][Sq][Dv]. `run` writes O from the first call (for the
reference check, which `scripts/bench-baselines` does with `attnbench check --o`; with
--wait-for-check it then waits for "time" on stdin, so nothing is timed before the check
passed) and the timings as JSON: per repetition, iterations are repeated until --min-time has passed
(at least one) and the mean time per iteration is kept — Google Benchmark's rule, which
the kernels are timed with. --input-copies C cycles over C copies of the inputs (cold
inputs, as `cold_inputs = true` does for the kernels).

A baseline is one small Python file (see docs/baselines.md) with NAME, SUMMARY,
PACKAGES, available() -> (ok, why) and prepare(problem, inputs, threads) -> (fn, info),
fn(c) returning O for input copy c; optionally KV_STORAGE ("float16", …: a numpy
dtype, or "q8_0") and stored_inputs(q, k, v) -> (q', k', v') (the float32 values it really
computes on, when it rounds Q too) when it stores K/V rounded to another type — the rounded K/V are then written
beside O (O.npy.k.npy, O.npy.v.npy) and named on the checkpoint line.

Attention options (the flags of `attnbench run`; attn_options.py has their meaning) reach
the baseline in problem["options"]. A baseline lists those it computes in OPTIONS (a set
of attn_options.NAMES; none if absent) and may refine that with supports(problem) ->
(ok, why); a point using any other is not run (exit 4, "does not support …"), so a
framework is never timed on a problem it does not compute.

Serving batches (docs/serving.md): with --layout L.json (an export's "layout" manifest,
harness/bench/inputs.h) Q is [total_q][H][Dqk] packed by tokens, K and V are packed
[total_kv][KVH][D] (ragged) or the page pools [num_pages][KVH][page_size][D] (paged), and
O is [total_q][H][Dv]; problem["layout"] carries the manifest (attn_options.py). A
baseline lists the kinds it runs in LAYOUTS ("ragged", "paged"); one that cannot express
the batch (LAYOUT_NOTE says why) exits 4 with that reason, so the results say so.

Q, K, V (and a mask) are loaded onto huge pages as the harness allocates the kernels'
inputs (hugepages.py: 2 MiB-aligned, madvise(MADV_HUGEPAGE) from 2 MiB on, silently
ordinary memory where that does not exist); the result's info records huge_pages (every
such buffer advised) and anon_huge_kib (what the kernel backs with huge pages).

The result JSON has inputs_digest: the digest of the problem it ran (harness/bench/
inputs.h: Q, K, V, the option arrays, the sizes and option values; the same sum `attnbench
bench` records for every point).
Exit codes: 0 ok, 1 the baseline failed, 2 bad command line, 3 the baseline is not
installed (message says how to install it), 4 the baseline does not support the point's
options (message says which).
"""
import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # attn_options, for the baselines
import attn_options  # noqa: E402
import hugepages  # noqa: E402

BUILTIN = ("torch_sdpa", "ort_attention", "ggml_flash_attn", "ggml_flash_attn_f16",
           "ggml_flash_attn_q8_0", "openvino_sdpa", "openvino_sdpa_bf16", "torch_sdpa_bf16",
           "torch_sdpa_f16", "openvino_paged")
INSTALL_HINT = "scripts/setup-baselines (creates .venv-baselines with the pinned packages)"
EXIT_NOT_INSTALLED = 3
EXIT_UNSUPPORTED = 4


def inputs_digest(*arrays):
    """Σ_t w_t · ((2t + 1) · 0x9E3779B1) mod 2^32 over the words of the arrays concatenated
    in order: the bits of float32 elements, uint32 arrays as they are (harness/bench/
    inputs.h)."""
    import numpy as np
    total, t0, chunk = 0, 0, 1 << 20
    for a in arrays:
        if isinstance(a, np.ndarray) and a.dtype == np.uint32:
            w = np.ascontiguousarray(a).reshape(-1)
        else:
            w = np.ascontiguousarray(a, dtype=np.float32).reshape(-1).view(np.uint32)
        for s in range(0, w.size, chunk):
            part = w[s:s + chunk].astype(np.uint64)
            t = np.arange(t0 + s, t0 + s + part.size, dtype=np.uint64)
            m = ((2 * t + 1) * np.uint64(0x9E3779B1)) & np.uint64(0xFFFFFFFF)
            total = (total + int(((part * m) & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))) \
                & 0xFFFFFFFF
        t0 += w.size
    return total


def problem_digest(p, q, k, v):
    """The digest of harness/bench/inputs.h over the problem this runner computes: Q, K, V,
    the option arrays it loaded (slopes, sinks, mask), then the sizes and option scalars
    (ATTN_BENCH_DIGEST_SCALARS words). A replaced option file or value gives another
    digest than the export's."""
    import numpy as np
    o = p.get("options") or {}
    arrays = [q, k, v] + [o[key] for key in ("alibi_slopes", "sinks", "mask")
                          if o.get(key) is not None]
    bits = lambda x: int(np.array(x, dtype=np.float32).view(np.uint32))  # noqa: E731
    words = []

    def pair(x):  # an int64 as (low, high) 32-bit words, two's complement
        x &= 0xFFFFFFFFFFFFFFFF
        words.extend((x & 0xFFFFFFFF, x >> 32))

    for key in ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v"):
        pair(int(p[key]))
    win = o.get("window")
    words += [int(bool(p["causal"])), bits(p["scale"]), int(o.get("align") == "top-left"),
              int(win is not None)]
    for side in (win if win is not None else (0, 0)):
        pair(-1 if side is None else int(side))
    mask = o.get("mask")
    words += [bits(o.get("softcap") or 0.0), bits(o.get("alibi_max_bias") or 0.0),
              int(o.get("alibi_slopes") is not None), int(o.get("sinks") is not None),
              int(mask is not None), int(mask is not None and np.ndim(mask) == 4),
              int(bool(o.get("lse")))]
    lay = p.get("layout")
    if lay:  # the layout block: kind, page sizes, offsets, the pages each sequence uses
        paged = lay["kind"] == "paged"
        words.append(2 if paged else 1)
        for key in ("page_size", "num_pages", "pages_per_seq"):
            pair(int(lay[key]) if paged else 0)
        for key in ("cu_seqlens_q", "cu_seqlens_kv"):
            for x in lay[key]:
                pair(int(x))
        if paged:
            words.extend(int(e) for row in lay["page_table"] for e in row)
    return inputs_digest(*arrays, np.array(words, dtype=np.uint32))


def parse_window(text):
    """"L,R" with each a whole number >= 0 or "inf" -> (left, right), None = unbounded."""
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError("--window '%s': want L,R" % text)
    out = []
    for x in parts:
        if x == "inf":
            out.append(None)
        elif x.isdigit():
            out.append(int(x))
        else:
            raise ValueError("--window '%s': want L,R with each a whole number >= 0 or 'inf'"
                             % text)
    return tuple(out)


def options_from_args(a, p):
    """problem["options"] from the flags; arrays checked against the shape."""
    import numpy as np
    o = {"align": a.align or "bottom-right", "window": parse_window(a.window) if a.window else None,
         "softcap": a.softcap or 0.0, "alibi_max_bias": a.alibi or 0.0, "alibi_slopes": None,
         "sinks": None, "mask": None, "lse": bool(a.lse)}
    H = p["heads"]
    for key, path, shapes in (("alibi_slopes", a.alibi_slopes, [(H,)]), ("sinks", a.sinks, [(H,)]),
                              ("mask", a.mask, [(p["seq_q"], p["seq_kv"]),
                                                (p["batch"], H, p["seq_q"], p["seq_kv"])])):
        if path:
            arr = hugepages.load_npy(path)  # a mask can be large: huge pages as Q/K/V
            if arr.dtype != np.float32 or tuple(arr.shape) not in shapes:
                raise ValueError("--%s %s: float32 of shape %s wanted, got %s %s" % (
                    key.replace("_", "-"), path, " or ".join(map(str, shapes)), arr.dtype,
                    tuple(arr.shape)))
            o[key] = arr
    return o


def load_baseline(name):
    """A built-in baseline by name, or any baseline file by path."""
    path = name if name.endswith(".py") else os.path.join(HERE, name + ".py")
    if not name.endswith(".py") and name not in BUILTIN:
        raise SystemExit("attn_baseline: unknown baseline '%s' (built in: %s; or give a "
                         "FILE.py)" % (name, ", ".join(BUILTIN)))
    if not os.path.isfile(path):
        raise SystemExit("attn_baseline: no such baseline file: %s" % path)
    spec = importlib.util.spec_from_file_location("attn_baseline_" + os.path.basename(path)[:-3],
                                                  path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for attr in ("NAME", "SUMMARY", "available", "prepare"):
        if not hasattr(mod, attr):
            raise SystemExit("attn_baseline: %s lacks %s (see docs/baselines.md)" % (path, attr))
    return mod


def problem_from_shapes(q, k, v, causal, scale):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("Q, K and V must be 4-D (got %d-D, %d-D, %d-D)" % (q.ndim, k.ndim, v.ndim))
    B, H, Sq, D = q.shape
    Bk, KV, Skv, Dk = k.shape
    if (Bk, Dk) != (B, D) or v.shape[:3] != (B, KV, Skv) or H % KV:
        raise ValueError("shapes disagree: Q %s K %s V %s" % (q.shape, k.shape, v.shape))
    return {"batch": B, "heads": H, "kv_heads": KV, "seq_q": Sq, "seq_kv": Skv,
            "head_dim_qk": D, "head_dim_v": v.shape[3], "causal": bool(causal),
            "scale": float(scale) if scale is not None else 1.0 / math.sqrt(D)}


def problem_from_layout(q, k, v, causal, scale, lay):
    """A serving problem (docs/serving.md): Q [total_q][H][Dqk] packed by tokens, K and V
    packed [total_kv][KVH][D] (ragged) or pools [num_pages][KVH][page_size][D] (paged);
    lay is the export's manifest (harness/bench/inputs.h), checked against the shapes."""
    kind = lay.get("kind")
    cq, ck = lay.get("cu_seqlens_q") or [], lay.get("cu_seqlens_kv") or []
    paged = kind == "paged"
    if kind not in ("ragged", "paged") or len(cq) < 2 or len(cq) != len(ck):
        raise ValueError("--layout: want kind ragged or paged and cu_seqlens_q/kv of the same "
                         "length >= 2")
    n = len(cq) - 1
    ql = [cq[b + 1] - cq[b] for b in range(n)]
    kl = [ck[b + 1] - ck[b] for b in range(n)]
    if cq[0] or ck[0] or min(ql) < 0 or min(kl) < 0:
        raise ValueError("--layout: offsets must start at 0 and never decrease")
    kdims = 4 if paged else 3
    if q.ndim != 3 or k.ndim != kdims or v.ndim != kdims:
        raise ValueError("a %s batch wants Q 3-D and K, V %d-D (got %d-D, %d-D, %d-D)"
                         % (kind, kdims, q.ndim, k.ndim, v.ndim))
    H, D, KV = q.shape[1], q.shape[2], k.shape[1]
    if q.shape[0] != cq[-1] or k.shape[-1] != D or v.shape[:-1] != k.shape[:-1] or H % KV:
        raise ValueError("shapes disagree with the layout: Q %s K %s V %s, %d query tokens"
                         % (q.shape, k.shape, v.shape, cq[-1]))
    if paged:
        ps, table = int(lay["page_size"]), lay["page_table"]
        if k.shape[0] != lay["num_pages"] or k.shape[2] != ps or len(table) != n:
            raise ValueError("the pools %s disagree with the layout (%d pages of %d)"
                             % (k.shape, lay["num_pages"], ps))
        for b in range(n):
            if len(table[b]) != -(-kl[b] // ps) or any(not 0 <= e < k.shape[0] for e in table[b]):
                raise ValueError("page table row %d: want %d pages in [0, %d)"
                                 % (b, -(-kl[b] // ps), k.shape[0]))
    elif k.shape[0] != ck[-1]:
        raise ValueError("K has %d rows, the layout %d keys" % (k.shape[0], ck[-1]))
    return {"batch": n, "heads": H, "kv_heads": KV, "seq_q": max(ql), "seq_kv": max(kl),
            "head_dim_qk": D, "head_dim_v": v.shape[-1], "causal": bool(causal),
            "scale": float(scale) if scale is not None else 1.0 / math.sqrt(D),
            "layout": dict(lay)}


def time_calls(fn, copies, warmup, repetitions, min_time):
    """Seconds per iteration and the iterations, one of each per repetition (Google
    Benchmark's rule)."""
    c = 0
    for _ in range(warmup):
        fn(c % copies)
        c += 1
    times, counts = [], []
    for _ in range(repetitions):
        iters, t0 = 0, time.perf_counter()
        while True:
            fn(c % copies)
            c += 1
            iters += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_time:
                break
        times.append(elapsed / iters)
        counts.append(iters)
    return times, counts


def save_npy(path, a):
    import numpy as np
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, np.ascontiguousarray(a, dtype=np.float32))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def cmd_list(files=()):
    """One line per built-in baseline, then per baseline file given (named by its path)."""
    for name in list(BUILTIN) + list(files):
        try:
            mod = load_baseline(name)
        except (Exception, SystemExit) as e:  # a file that does not load: its run says why
            if name in BUILTIN:
                raise
            print("%-18s not loadable %s" % (name, str(e).splitlines()[0] if str(e) else e))
            continue
        ok, why = mod.available()
        opts = ",".join(sorted(getattr(mod, "OPTIONS", ()))) or "-"
        print("%-18s %-13s %s%s; compute: %s; kv: %s" % (
            name, "available" if ok else "not installed",
            mod.SUMMARY if ok else why + "; install: " + INSTALL_HINT,
            "; options: " + opts if ok else "", getattr(mod, "COMPUTE", "f32"),
            getattr(mod, "KV_STORAGE", "f32")))
    return 0


def cmd_run(a):
    import numpy as np
    mod = load_baseline(a.baseline)
    ok, why = mod.available()
    if not ok:
        print("attn_baseline: %s is not installed: %s; install it with %s" % (mod.NAME, why,
              INSTALL_HINT), file=sys.stderr)
        return EXIT_NOT_INSTALLED
    # On huge pages as the harness allocates the kernels' inputs (hugepages.py): every
    # input of 2 MiB or more, and its cold copies.
    q, k, v = (hugepages.load_npy(p) for p in (a.q, a.k, a.v))
    for name, t in (("Q", q), ("K", k), ("V", v)):
        if t.dtype != np.float32:
            print("attn_baseline: %s must be float32, got %s" % (name, t.dtype), file=sys.stderr)
            return 1
    try:
        if a.layout:
            with open(a.layout) as f:
                p = problem_from_layout(q, k, v, a.causal, a.scale, json.load(f))
        else:
            p = problem_from_shapes(q, k, v, a.causal, a.scale)
        p["options"] = options_from_args(a, p)
    except ValueError as e:
        print("attn_baseline: %s" % e, file=sys.stderr)
        return 1
    # Options the baseline does not compute: not run (a framework is never timed on
    # another problem), with the reason.
    # (No baseline hands back an LSE: the runner takes O only, so "lse" is never supported.)
    missing = attn_options.used(p) - (set(getattr(mod, "OPTIONS", ())) - {"lse"})
    why = "does not support %s" % ", ".join(sorted(missing)) if missing else ""
    kind = attn_options.layout_kind(p)
    if kind and not missing and kind not in getattr(mod, "LAYOUTS", ()):
        # A serving batch the framework has no way to express: reported, never timed.
        why = getattr(mod, "LAYOUT_NOTE", None) or "cannot express a %s serving batch" % kind
        why = why if why.startswith("cannot") else "cannot express a %s serving batch: %s" % (
            kind, why)
    if not missing and not why and hasattr(mod, "supports"):
        ok, why = mod.supports(p)
        why = "" if ok else why
    if why:
        print("attn_baseline: %s %s" % (mod.NAME, why), file=sys.stderr)
        return EXIT_UNSUPPORTED
    inputs = [(q, k, v)] + [tuple(hugepages.copy(x) for x in (q, k, v))
                            for _ in range(a.input_copies - 1)]
    try:
        fn, info = mod.prepare(p, inputs, a.threads)
        # every input buffer of 2 MiB or more (the runner's and the baseline's own) advised
        # for huge pages, and what the kernel backs with them after set-up
        info = dict(info, huge_pages=hugepages.advised(), anon_huge_kib=hugepages.anon_huge_kib())
        out = np.asarray(fn(0), dtype=np.float32)
        want = (p["batch"], p["heads"], p["seq_q"], p["head_dim_v"]) if not kind else (
            q.shape[0], p["heads"], p["head_dim_v"])
        if out.shape != want:
            raise RuntimeError("output shape %s, expected %s" % (out.shape, want))
        save_npy(a.out, out)
        # A baseline that stores K/V in another type (KV_STORAGE, e.g. "f16") computes on
        # the rounded values: they are written beside O, and the check's reference uses them.
        # A baseline that also rounds Q (ggml converts Q to its K type's dot-product type)
        # says so with stored_inputs(q, k, v) -> the float32 values it computes on.
        stored = getattr(mod, "KV_STORAGE", "f32")
        kv_paths = ""
        if hasattr(mod, "stored_inputs"):
            sq, sk, sv = (np.ascontiguousarray(x, dtype=np.float32)
                          for x in mod.stored_inputs(q, k, v))
            kv_paths = " stored-qkv %s %s %s" % (a.out + ".q.npy", a.out + ".k.npy",
                                                 a.out + ".v.npy")
            save_npy(a.out + ".q.npy", sq)
            save_npy(a.out + ".k.npy", sk)
            save_npy(a.out + ".v.npy", sv)
        elif stored != "f32":
            kv_paths = " stored-kv %s %s" % (a.out + ".k.npy", a.out + ".v.npy")
            save_npy(a.out + ".k.npy", k.astype(stored).astype(np.float32))
            save_npy(a.out + ".v.npy", v.astype(stored).astype(np.float32))
        # A low-precision baseline (COMPUTE, e.g. "bf16") is checked against the bound of
        # that attnbench compute mode: the checkpoint line names it.
        compute = getattr(mod, "COMPUTE", "f32")
        if compute != "f32":
            kv_paths += " compute %s" % compute
        if a.wait_for_check:
            # Checked before timed: the caller checks O against the reference and answers
            # "time" (go on) or anything else (stop here, untimed).
            print("checkpoint: output written to %s%s" % (a.out, kv_paths), flush=True)
            if sys.stdin.readline().strip() != "time":
                return 0
        # A baseline may time a cheaper call than the one that returns O (e.g. without
        # copying the result out of its own buffers): fn.timed.
        times, iterations = time_calls(getattr(fn, "timed", fn), a.input_copies, a.warmup,
                                       a.repetitions, a.min_time)
    except Exception as e:
        print("attn_baseline: %s failed: %s: %s" % (mod.NAME, type(e).__name__, e), file=sys.stderr)
        return 1
    shape = {k: x for k, x in p.items() if k not in ("options", "layout")}  # no arrays
    if kind:
        shape["layout"] = kind
    result = {"baseline": mod.NAME, "summary": mod.SUMMARY, "problem": shape, "threads": a.threads,
              "kv_storage": getattr(mod, "KV_STORAGE", "f32"),
              "compute": getattr(mod, "COMPUTE", "f32"),
              "warmup": a.warmup, "repetitions": a.repetitions, "min_time": a.min_time,
              "input_copies": a.input_copies, "times_s": times, "iterations": iterations,
              "inputs_digest": problem_digest(p, q, k, v),
              "options": sorted(attn_options.used(p)),
              "median_s": statistics.median(times), "info": info}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    else:
        json.dump(result, sys.stdout, indent=1)
        print()
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="the built-in baselines (and baseline files given) and "
                        "whether they are installed")
    ls.add_argument("files", nargs="*", metavar="FILE.py",
                    help="baseline files to list too, each named by its path")
    r = sub.add_parser("run", help="run and time one baseline on Q/K/V .npy files")
    r.add_argument("--baseline", required=True)
    for t in ("q", "k", "v", "out"):
        r.add_argument("--" + t, required=True)
    r.add_argument("--causal", action="store_true")
    r.add_argument("--scale", type=float)
    r.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    r.add_argument("--warmup", type=int, default=1)
    r.add_argument("--repetitions", type=int, default=1)
    r.add_argument("--min-time", type=float, default=0.1)
    r.add_argument("--input-copies", type=int, default=1)
    r.add_argument("--json")
    r.add_argument("--wait-for-check", action="store_true",
                   help="after writing O, wait for 'time' on stdin before timing")
    r.add_argument("--window", help="L,R: -L <= j - (i + off) <= R; 'inf' = unbounded")
    r.add_argument("--align", choices=("top-left", "bottom-right"))
    r.add_argument("--softcap", type=float, help="C > 0: s <- C*tanh(s/C)")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--alibi", type=float, metavar="MAX_BIAS", help="ALiBi, standard slopes")
    g.add_argument("--alibi-slopes", metavar="S.npy", help="ALiBi, float32 [heads]")
    r.add_argument("--sinks", metavar="S.npy", help="float32 [heads]")
    r.add_argument("--mask", metavar="M.npy", help="float32 [Sq][Skv] or [B][H][Sq][Skv]")
    r.add_argument("--lse", action="store_true", help="the point wants the LSE too")
    r.add_argument("--layout", metavar="L.json",
                   help="a serving batch: the export's layout manifest (Q, K, V then packed "
                        "by tokens or paged; docs/serving.md)")
    a = ap.parse_args(argv)
    if a.cmd == "list":
        return cmd_list(a.files)
    for name, x in (("--softcap", a.softcap), ("--alibi", a.alibi)):
        if x is not None and not (x > 0 and math.isfinite(x)):
            ap.error("%s %g: want a finite value > 0" % (name, x))
    if a.window:
        try:
            parse_window(a.window)
        except ValueError as e:
            ap.error(str(e))
    if a.threads < 1 or a.repetitions < 1 or a.warmup < 0 or a.input_copies < 1 or a.min_time < 0:
        ap.error("--threads, --repetitions and --input-copies must be >= 1, --warmup and "
                 "--min-time >= 0")
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
