"""A full-batch loss evaluated chunk by chunk: the whole batch's value and gradient at one chunk's memory.

For a loss that is a sum over examples, L(theta) = sum_c f(theta; D_c) over a partition of the data
into chunks D_1 .. D_K,

    L(theta)         = sum_c f(theta; D_c)
    grad L(theta)    = sum_c grad f(theta; D_c)

so the forward and backward of each chunk can run one after the other, and only one chunk's
intermediates exist at a time. :func:`chunked_sum` returns L as a tensor whose ``backward`` gives
grad L: each chunk's forward and backward run inside the forward (one ``torch.autograd.grad`` per
chunk, accumulated), and the backward multiplies the stored gradient by the incoming one. It is a
drop-in for ``sum(f(theta, D_c) for c)`` in a closure that calls ``loss.backward()`` (L-BFGS), and
under ``torch.no_grad`` it only sums the values.

Why: on a CPU a matrix product whose operands and output stay in the cache runs at two to three times
the rate of one whose output streams through memory (measured for the logic text's §4 model at
batch 1000: (50000 x 60) @ (60 x 100) in float32 at 25 GFLOP/s, the same product in chunks of 2500
rows at 85 GFLOP/s, one thread; ``benchmarks/bench_logic_training.py``). The values differ from the
one-pass sum by floating-point order only.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
from torch import Tensor


class _ChunkedSum(torch.autograd.Function):
    """forward: sum_c fn(params, chunk_c) with the gradient accumulated chunk by chunk; backward:
    the incoming gradient times the accumulated one."""

    @staticmethod
    def forward(ctx, fn, chunks, names, *values):
        want = [i for i, _ in enumerate(values) if ctx.needs_input_grad[3 + i]]
        ctx.want, ctx.n = want, len(values)
        if not want:
            with torch.no_grad():
                return _value(fn, chunks, dict(zip(names, values)))
        leaves = [v.detach().requires_grad_(i in want) for i, v in enumerate(values)]
        params = dict(zip(names, leaves))
        grads = [torch.zeros_like(values[i]) for i in want]
        total = torch.zeros((), dtype=values[0].dtype, device=values[0].device)
        with torch.enable_grad():
            for chunk in chunks:
                part = fn(params, chunk)
                for acc, g in zip(grads, torch.autograd.grad(part, [leaves[i] for i in want], allow_unused=True)):
                    if g is not None:
                        acc.add_(g)
                total += part.detach()
        ctx.save_for_backward(*grads)
        return total

    @staticmethod
    def backward(ctx, grad_output):
        out: list[Tensor | None] = [None] * ctx.n
        for i, g in zip(ctx.want, ctx.saved_tensors):
            out[i] = grad_output * g
        return (None, None, None, *out)


def _value(fn: Callable[[dict[str, Tensor], Any], Tensor], chunks: Sequence[Any], params: dict[str, Tensor]) -> Tensor:
    total = None
    for chunk in chunks:
        part = fn(params, chunk)
        total = part if total is None else total + part
    return total


def chunked_sum(fn: Callable[[dict[str, Tensor], Any], Tensor], params: dict[str, Tensor],
                chunks: Sequence[Any]) -> Tensor:
    """L = sum_c fn(params, chunks[c]) (a 0-d tensor), differentiable in ``params`` (module docstring).

    fn:     (params, chunk) -> a 0-d tensor, the chunk's share of the loss (e.g. its sum of squared
            errors divided by the whole batch's count, so that the shares add up to the mean).
    params: name -> tensor; those that require grad get grad L through ``L.backward()``.
    chunks: anything ``fn`` reads its data from, one item per chunk (at least one).
    """
    if len(chunks) == 0:
        raise ValueError("chunked_sum needs at least one chunk")
    names = tuple(params)
    return _ChunkedSum.apply(fn, chunks, names, *(params[k] for k in names))
