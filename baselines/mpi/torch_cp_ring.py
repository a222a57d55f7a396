#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch's ring attention over the gloo backend on CPU: the context-parallel anchor of
attnbench-mpi (docs/mpi.md, "Anchor"). Launched like attnbench-mpi:

  mpirun -np 2 --bind-to core .venv-baselines/bin/python baselines/mpi/torch_cp_ring.py \\
      --seq-len 16384 --heads 8 --head-dim 128 --causal --threads 1 --out torch.json

torch's public `context_parallel` cannot run on CPU (its SDPA dispatcher knows the CUDA
flash, efficient and cuDNN ops only; the CPU op has no sharding rule: the error is recorded
in the output's context). The ring it ships, `_templated_ring_attention`, does run with the
CPU flash op `aten._scaled_dot_product_flash_attention_for_cpu`: each rank holds the
head-tail (zigzag) shard of Q, K and V (chunks r and 2N-1-r, torch's load balancer for a
causal mask), K/V rotate by gloo collectives and partial outputs merge by LSE.

Inputs are attnbench-mpi's (cp_input_value: a splitmix64 hash of seed, tensor, batch, head,
row, column), so both tools compute the same problem. Rank 0 checks the gathered output
against a float64 reference on a sample of rows per head (every chunk's first and last row
and rows spread between); |o - ref| <= --atol (2e-5, inputs in [-1, 1)) or the run fails
(exit 1). --fault attends without the causal mask (a wrong answer the check must catch).
Time: per repeat, each rank from a barrier to its merged output; the slowest rank's time;
the median over --repeats after one warm-up. Rank 0 writes the JSON atomically. Every
rank exits with rank 0's verdict (0 pass, 1 fail) after a barrier, skipping Python's
finalization (the reason is at the end of this file).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--seq-len", type=int, required=True)
ap.add_argument("--heads", type=int, default=8)
ap.add_argument("--head-dim", type=int, default=128)
ap.add_argument("--causal", action="store_true")
ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--atol", type=float, default=2e-5)
ap.add_argument("--sample-rows", type=int, default=64, help="rows per head checked, besides chunk edges")
ap.add_argument("--port", type=int, default=29531)
ap.add_argument("--fault", action="store_true", help="test only: attend without the causal mask")
ap.add_argument("--out", help="results JSON (rank 0)")
A = ap.parse_args()

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
S, H, D = A.seq_len, A.heads, A.head_dim
if S % (2 * size) != 0:  # torch's head-tail shards are equal chunks
    if rank == 0:
        print(f"torch_cp_ring: --seq-len {S} is not a multiple of 2*ranks = {2 * size}", file=sys.stderr)
    sys.exit(2)

import torch  # noqa: E402  (after the argument check: a bad call fails fast)
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", str(A.port))
dist.init_process_group("gloo", rank=rank, world_size=size)
torch.set_num_threads(A.threads)
import torch.distributed.tensor.experimental._context_parallel._attention as cpa  # noqa: E402

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(x):  # the splitmix64 finaliser, as harness/mpi/cp_run.c
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (x ^ (x >> np.uint64(31))) & M64


def inputs(t):
    """Tensor t (0 Q, 1 K, 2 V) as [1][H][S][D] float32: cp_input_value of every element."""
    x = mix64(np.uint64(A.seed) ^ (np.uint64(t) << np.uint64(56)))
    x = mix64(x ^ np.uint64(0))  # batch 0
    x = mix64(x ^ np.arange(H, dtype=np.uint64))[:, None, None]
    x = mix64(x ^ np.arange(S, dtype=np.uint64)[None, :, None])
    x = mix64(x ^ np.arange(D, dtype=np.uint64)[None, None, :])
    v = (x >> np.uint64(40)).astype(np.float64) / float(1 << 23) - 1.0
    return v.astype(np.float32)[None]


def public_api_error():
    """What torch's public context_parallel does on CPU (a tiny problem)."""
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.experimental import context_parallel
        mesh = init_device_mesh("cpu", (size,))
        t = [torch.zeros(1, 1, 4 * size, 8) for _ in range(3)]
        with context_parallel(mesh, buffers=t, buffer_seq_dims=[2, 2, 2]):
            F.scaled_dot_product_attention(*t, is_causal=True)
        return None
    except Exception as e:  # the failure is the finding
        return f"{type(e).__name__}: {e}"


q_all, k_all, v_all = (inputs(t) for t in range(3))
chunk = S // (2 * size)
mine = [rank, 2 * size - 1 - rank]


def shard(x):
    return torch.from_numpy(np.concatenate([x[:, :, c * chunk:(c + 1) * chunk] for c in mine], axis=2))


ql, kl, vl = shard(q_all), shard(k_all), shard(v_all)
cpa._cp_options.enable_load_balance = A.causal and not A.fault
op = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
causal = A.causal and not A.fault  # --fault: the wrong (unmasked) problem
times = []
for rep in range(A.repeats + 1):
    dist.barrier()
    t0 = time.perf_counter()
    out, lse, *_ = cpa._templated_ring_attention(dist.group.WORLD, 2, op, ql, kl, vl, is_causal=causal)
    t = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rep > 0:
        times.append(t.item())
parts = [torch.empty_like(out) for _ in range(size)] if rank == 0 else None
dist.gather(out.contiguous(), parts, dst=0)
api_error = public_api_error()
status = 0
if rank == 0:
    o = np.empty((1, H, S, D), dtype=np.float32)
    for r, p in enumerate(parts):
        for i, c in enumerate([r, 2 * size - 1 - r]):
            o[:, :, c * chunk:(c + 1) * chunk] = p[:, :, i * chunk:(i + 1) * chunk].numpy()
    edges = {c * chunk for c in range(2 * size)} | {c * chunk - 1 for c in range(1, 2 * size + 1)}
    rows = sorted(edges | set(np.linspace(0, S - 1, A.sample_rows).astype(int).tolist()))
    err = 0.0
    for h in range(H):  # float64 reference of the sampled rows
        qh, kh, vh = (x[0, h].astype(np.float64) for x in (q_all, k_all, v_all))
        s = qh[rows] @ kh.T / np.sqrt(D)
        if A.causal:
            s[np.arange(S)[None, :] > np.array(rows)[:, None]] = -np.inf
        s = np.exp(s - s.max(axis=1, keepdims=True))
        ref = (s @ vh) / s.sum(axis=1, keepdims=True)
        err = max(err, float(np.abs(o[0, h, rows] - ref).max()))
    verdict = "pass" if err <= A.atol else "fail"
    status = 0 if verdict == "pass" else 1
    med = statistics.median(times)
    name = f"torch-ring/S{S}/f32{'/causal' if A.causal else ''}"
    print(f"{name:40s} {verdict:5s} {med:10.4f} s {S / med:12.0f} tok/s  (max abs err {err:.3g} "
          f"on {len(rows)} rows/head; torch {torch.__version__}, gloo, {size} ranks)")
    doc = {"context": {"tool": "torch-cp-ring", "ranks": size, "torch": torch.__version__,
                       "backend": "gloo", "threads": A.threads,
                       "op": "aten._scaled_dot_product_flash_attention_for_cpu",
                       "ring": "torch.distributed.tensor.experimental._context_parallel."
                               "_attention._templated_ring_attention (head-tail shards)",
                       "public_context_parallel": api_error or "ran"},
           "runs": [{"name": name, "strategy": "torch-ring", "threads": A.threads, "batch": 1,
                     "heads": H, "kv_heads": H, "seq_len": S, "head_dim": D, "causal": A.causal,
                     "check": verdict, "max_abs_err": err, "checked_rows_per_head": len(rows),
                     "atol": A.atol, "time_s": med, "times_s": times, "tokens_per_s": S / med}]}
    if A.out:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
        import attnresults
        attnresults.write_atomic(A.out, json.dumps(doc, indent=1) + "\n")
st = torch.tensor([status])
dist.broadcast(st, 0)  # every rank ends with rank 0's verdict
dist.barrier()  # and none leaves while another still communicates
dist.destroy_process_group()
# The end, without Python's finalization. The gloo group survives destroy_process_group here
# (one call of the ring leaves ten more references to it, from the functional collectives
# that rotate K/V; a script that only ran a barrier sees its group destroyed), so its
# worker threads outlive the script, and the worker that ran the last collective releases
# that collective's tensors after the wait has returned here, which takes the GIL. When
# that falls into Py_Finalize, Python ends the worker with pthread_exit inside a noexcept
# C++ destructor (ProcessGroupGloo::AsyncWork) and std::terminate aborts the rank
# ("terminate called without an active exception", SIGABRT, exit 134) after the results
# were written. Here every rank has its verdict and rank 0 has written its file.
sys.stdout.flush()
sys.stderr.flush()
os._exit(int(st.item()))
