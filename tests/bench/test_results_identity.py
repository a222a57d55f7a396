#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Which results-file points the scripts treat as the same measurement (scripts/
attnresults.py: Point.shape, Point.base_shape, Point.serving; summary.py's options table;
plot-serving's facets). Each case is a pair of points that once merged and must not:

  - serving batches named by the hash of a long length list ("kv#1a2b3c4d") are serving
    points, and two hashes are two batches;
  - a cold point and the warm point of the same problem are two measurements;
  - an option point is compared with the base point of its own K/V type, compute mode,
    serving batch and warmth, never another's;
  - plot-serving draws points of another mode, option or warmth as another facet.

  test_results_identity.py SCRIPTS
"""
import importlib.machinery
import importlib.util
import os
import sys

SCRIPTS = sys.argv[1]
sys.path.insert(0, SCRIPTS)
import attnresults  # noqa: E402
import summary  # noqa: E402

FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)


def point(name, median_s=0.01, **counters):
    p = attnresults.Point(name)
    p.counters = {"B": 10, "H": 2, "KV": 2, "Sq": 1, "Skv": 512, "Dqk": 32, "Dv": 32,
                  "causal": 1, "kernel_threads": 2, "GFLOP/s": 1.0, "kv_bytes": 1e6}
    p.counters.update(counters)
    p.median_s = median_s
    return p


BASE = "flash__avx2/B10/H2/KV2/Sq1/Skv512/D32/causal/T2"

# hashed length lists
h1 = point(BASE + "/q=decode/kv#1a2b3c4d/ragged")
h2 = point(BASE + "/q=decode/kv#99887766/ragged")
h3 = point(BASE + "/q#0badf00d/kv=fixed:10:512/page16s")
dense = point(BASE)
check(h1.serving == "q=decode/kv#1a2b3c4d/ragged", "a hashed kv list is a serving point: %r"
      % h1.serving)
check(h1.serving_batch and h1.serving_batch.kv == "#1a2b3c4d" and h1.serving_batch.q == "decode"
      and h1.serving_batch.fixed is None, "the batch keeps the hash, has no fixed mix")
check(h3.serving_batch and h3.serving_batch.q == "#0badf00d" and h3.serving_batch.fixed == (10, 512)
      and h3.serving_batch.page_size == 16 and h3.serving_batch.shuffled, "a hashed q list")
check(len({h1.shape, h2.shape, dense.shape}) == 3, "two hashes and a dense point: three shapes")
check("kv#1a2b3c4d" in h1.shape_label(), "the label names the hash: %s" % h1.shape_label())

# cold against warm
warm, cold = point(BASE), point(BASE + "/cold")
check(warm.shape != cold.shape, "a cold point is not the warm point's shape")
check(cold.shape_label().endswith(" cold") and not warm.shape_label().endswith(" cold"),
      "the label says cold: %r / %r" % (cold.shape_label(), warm.shape_label()))
check(point(BASE + "/q=decode/kv=fixed:8:4096/ragged/cold").cold, "cold after a serving part")
check(not point(BASE + "/coldish").cold, "only a whole /cold part")

# summary.py: options vs none, each against its own base
f32 = point(BASE, 0.010)
q8 = point(BASE + "/q8_0", 0.004, kv_dtype=3)
f32_cap = point(BASE + "/softcap30", 0.012, softcap=30.0)
q8_cap = point(BASE + "/q8_0/softcap30", 0.006, kv_dtype=3, softcap=30.0)
rag = point(BASE + "/q=decode/kv=fixed:10:512/ragged", 0.020)
page = point(BASE + "/q=decode/kv=fixed:10:512/page1", 0.100)
rag_cap = point(BASE + "/q=decode/kv=fixed:10:512/ragged/softcap30", 0.030, softcap=30.0)
rows = summary.option_costs({p.name: p for p in (f32, q8, f32_cap, q8_cap, rag, page, rag_cap)})
ratios = sorted(round(r[4], 3) for r in rows)
check(ratios == [1.2, 1.5, 1.5], "each option point against its own base: %s" % rows)

# plot-serving: one facet per mode / options / warmth
loader = importlib.machinery.SourceFileLoader("plot_serving", os.path.join(SCRIPTS, "plot-serving"))
spec = importlib.util.spec_from_loader("plot_serving", loader)
ps = importlib.util.module_from_spec(spec)
loader.exec_module(ps)
pts = [point(BASE.replace("Skv512", "Skv%d" % L) + "/q=decode/kv=fixed:2:%d/ragged%s" % (L, sfx),
             Skv=L, **kw)
       for L in (256, 512) for sfx, kw in (("", {}), ("/softcap30", {"softcap": 30.0}))]
facets = ps.facets(ps.decode_points(pts))
ctx = [f for f in facets if f[1].startswith("context")]
check(len(ctx) == 2 and all(len(f[3]) == 2 for f in ctx),
      "softcap and plain decode points are two context facets of two points each: %s"
      % [(f[0], len(f[3])) for f in ctx])

if FAILED:
    print("%d check(s) failed" % len(FAILED))
    sys.exit(1)
print("results identity: all checks passed")
