"""The matmul ceiling: GFLOP/s of an N x N by N x N torch.matmul, measured in the same run.

GFLOP/s of an attention variant is only meaningful next to what the machine's
best kernel reaches on the same threads at the same moment, so every benchmark
run measures this first: the best of ``repeats`` calls (the ceiling is a maximum,
so the best call, not the median, estimates it), 2 N^3 FLOPs each.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.ops.flops import matmul_flops
from attnlab.bench.timing import time_call


@dataclass(frozen=True)
class Ceiling:
    gflops: float  # best over the repeats
    median_gflops: float
    N: int
    dtype: str
    threads: int


def matmul_ceiling(*, N: int = 2048, dtype: torch.dtype = torch.float32, repeats: int = 3,
                   threads: int | None = None, device: str = "cpu", seed: int = 0) -> Ceiling:
    """Best and median GFLOP/s of an N x N matmul in ``dtype``."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn(N, N, generator=g).to(device=device, dtype=dtype)
    b = torch.randn(N, N, generator=g).to(device=device, dtype=dtype)
    t = time_call(lambda: a @ b, repeats=repeats, warmup=1, threads=threads)
    f = matmul_flops(N) / 1e9
    return Ceiling(f / min(t.times), f / t.median_s, N, str(dtype).removeprefix("torch."), t.threads)
