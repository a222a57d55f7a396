# SPDX-License-Identifier: MIT
"""openvino_sdpa_bf16 — openvino_sdpa with INFERENCE_PRECISION_HINT bf16: the CPU plugin's
default precision on CPUs with AVX512-BF16 or AMX, where it runs attention on BF16 units.

It computes on Q, K and V rounded to bfloat16 (stored_inputs: the runner writes them beside
O and the check's reference uses them), with its own roundings inside (probabilities and
the output in bfloat16); its output is checked with attnbench's bound for compute mode
bf16 (COMPUTE), the bound every bf16 kernel meets.
"""
import openvino_sdpa as _base  # baselines/external (attn_baseline.py puts it on the path)

NAME = "openvino_sdpa_bf16"
SUMMARY = "OpenVINO CPU plugin: opset-13 ScaledDotProductAttention, BF16 inference precision"
PACKAGES = _base.PACKAGES
OPTIONS = _base.OPTIONS
COMPUTE = "bf16"  # attnbench's compute mode whose bound its output is checked against
available = _base.available


def supports(problem):
    """Only where the CPU plugin computes in BF16: elsewhere the hint falls back to f32, and
    an f32 run must not be recorded and paired as this compute mode."""
    import openvino as ov
    caps = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    if "BF16" not in caps:
        return False, ("cannot run BF16 on this CPU: the OpenVINO CPU plugin lists no BF16 "
                       "capability (%s) and would compute in f32" % ", ".join(caps))
    return True, ""


def stored_inputs(q, k, v):
    """Q, K and V rounded to bfloat16 (nearest, ties to even), as float32 values."""
    import numpy as np

    def bf16(x):
        b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
        return b.astype(np.uint32).view(np.float32)
    return tuple(bf16(x) for x in (q, k, v))


def prepare(problem, inputs, threads):
    fn, info = _base.prepare(problem, inputs, threads, precision="bf16")
    if "bf16" not in info["precision"].lower():  # the plugin chose otherwise after all
        raise RuntimeError("the CPU plugin compiled the model in %s, not bf16" % info["precision"])
    return fn, info
