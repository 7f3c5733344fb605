"""Dense (..., n_q, n_k) tensors refused before they are allocated.

An operator that returns the attention weights P, or computes through them, holds at least one
tensor of shape (*batch, n_q, n_k) (softmax's explicit path two: the logits c Q K^T and P). At
n = 200000 that is 149 GiB in float32 for one head: :func:`check_dense_fits` says so in one line
(a ConfigError, what to change) instead of the allocator's error after minutes of swapping. Only
the CPU (physical memory) and CUDA (free memory) are checked; other devices allocate lazily or
report no memory.

Operators whose large tensors are not (n_q, n_k) count them themselves and call
:func:`check_bytes_fit`: the gather paths (neighbour rows of K and V gathered per query,
O(n_q w d)), the banded window (its (n_q, B + 2h) band mask) and the dense weights a sparse
operator scatters when asked for them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.config import check_fits

CHECKED_DEVICES = ("cpu", "cuda")


def dense_shape(q: Tensor, k: Tensor, v: Tensor) -> tuple[int, ...] | None:
    """(*batch, n_q, n_k), batch broadcast from q, k, v; None when the batch shapes do not broadcast
    (the operator's own check says so)."""
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        return None
    return (*batch, q.shape[-2], k.shape[-2])


WEIGHTS_CHANGE = "lower n, or drop return_weights (the fused path's memory grows linearly in n)"


def check_dense_fits(q: Tensor, k: Tensor, v: Tensor, *, copies: int, what: str, change: str = WEIGHTS_CHANGE,
                     available: int | None = None) -> None:
    """ConfigError before any allocation when ``copies`` dense (*batch, n_q, n_k) tensors of q's dtype
    (``what``: the operator and the tensors) need more memory than q's device has (``available``
    bytes, default :func:`attnlab.config.device_memory`): both sizes in one line and ``change``."""
    shape = dense_shape(q, k, v) if q.device.type in CHECKED_DEVICES else None
    if shape is None:
        return
    need = copies * math.prod(shape) * q.dtype.itemsize
    dims = " x ".join(map(str, shape))
    check_bytes_fit(q.device, need, what=f"{what}, {copies} x ({dims}) {dtype_name(q.dtype)},", change=change,
                    available=available)


def check_bytes_fit(device: torch.device, need: int, *, what: str, change: str,
                    available: int | None = None) -> None:
    """ConfigError before any allocation when ``need`` bytes (``what``: the tensors counted, with their
    sizes) exceed the memory of ``device`` (``available`` bytes, default
    :func:`attnlab.config.device_memory`); devices outside CHECKED_DEVICES are not checked."""
    if device.type in CHECKED_DEVICES:
        check_fits(what, need, device=str(device), available=available, change=change)


def dtype_name(dtype: torch.dtype) -> str:
    """A dtype as a message writes it: "float32"."""
    return str(dtype).removeprefix("torch.")
