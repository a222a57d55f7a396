# SPDX-License-Identifier: MIT
"""attnbench: attnbench's CPU attention kernels on NumPy arrays and PyTorch tensors.

attention() is shaped like torch.nn.functional.scaled_dot_product_attention (causal
top-left aligned, as PyTorch); attention_varlen() and attention_paged() run a serving
batch (a ragged batch packed by tokens as flash_attn_varlen_func; paged K/V caches as
vLLM's), causal bottom-right aligned per sequence; benchmark() times any of them;
info() describes the machine;
run() / check() / reference() / settings() are `attnbench run` / `check`'s options.

    O[b,h] = softmax(scale · Q[b,h] · K[b,g]ᵀ + mask) · V[b,g],   g = h // (heads // kv_heads)

Tensors are float32, C-contiguous, shaped like kernels/attn.h lays them out:
    q [batch, heads,    seq_q,  head_dim_qk]
    k [batch, kv_heads, seq_kv, head_dim_qk]
    v [batch, kv_heads, seq_kv, head_dim_v ]
    o [batch, heads,    seq_q,  head_dim_v ]
Anything NumPy can view without copying is accepted: NumPy arrays, objects with the
buffer protocol or __array_interface__, and DLPack producers (e.g. PyTorch CPU tensors).
Nothing is converted silently: a wrong dtype, a non-contiguous view or a shape mismatch
raises (see the exception classes below). run()'s causal mask is bottom-right aligned
(query row i sees key j iff j <= i + seq_kv - seq_q); scale defaults to 1/sqrt(head_dim_qk).
"""

from ._api import (
    AttnError,
    CheckResult,
    DomainError,
    DtypeError,
    InvalidOptionError,
    InvalidProblemError,
    Kernel,
    KernelError,
    KernelMemoryError,
    KernelUnavailableError,
    LayoutError,
    Settings,
    ShapeError,
    UnknownKernelError,
    check,
    check_output,
    kernel_names,
    kernels,
    reference,
    run,
    settings,
)
from ._attention import (
    ALIGNS,
    COMPUTE_MODES,
    DEFAULT_KERNELS,
    KV_DTYPES,
    attention,
    check_attention,
    default_kernel,
    quantize,
)
from ._layouts import attention_paged, attention_varlen
from ._bench import BenchmarkResult, MachineInfo, benchmark, fma_peak, info

__version__ = "0.1.0"
__all__ = [
    "AttnError", "CheckResult", "DomainError", "DtypeError", "InvalidOptionError",
    "InvalidProblemError", "Kernel", "KernelError", "KernelMemoryError",
    "KernelUnavailableError", "LayoutError", "Settings", "ShapeError", "UnknownKernelError",
    "check", "check_output", "kernel_names", "kernels", "reference", "run", "settings",
    "ALIGNS", "COMPUTE_MODES", "DEFAULT_KERNELS", "KV_DTYPES", "attention", "check_attention",
    "default_kernel", "quantize", "attention_varlen", "attention_paged", "BenchmarkResult",
    "MachineInfo", "benchmark", "fma_peak",
    "info",
]
