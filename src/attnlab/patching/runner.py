"""Batched activation patching: P patched variants of the corrupted prompt, a few forward passes.

Each variant is a set of :class:`~attnlab.patching.sites.Site`; in its run every site carries the clean
run's value (x_clean) and everything else is computed from the corrupted prompt. The P variants go in the
batch dimension, ``chunk_size`` rows per pass, one forward per chunk:

    rows b = 1..P' of a chunk: X^(b) = X_corrupted, and at every site s of variant b
        x_s^(b) <- x_s,clean        (a torch.where on the point's tensor; the rest of row b untouched)

A pass need not start at the embedding: no site of a chunk lies below its lowest block l0, so blocks
0..l0-1 would recompute the corrupted run exactly. The chunk starts at block l0 from the corrupted run's
stream X_l0 (``blocks.{l0}.hook_resid_pre``, the last block's ``hook_resid_post`` for l0 = L) and runs
blocks l0..L-1, the final norm and the output head as :meth:`attnlab.nn.Encoder.encode` does; variants
are sorted by their lowest block so that a chunk's rows share most of their start. With ``position`` set
(default -1, the last) only that position's logits (B, vocab) are formed and given to the metric;
``position=None`` gives it every position's (B, n, vocab). A stack without an output head (MiniLM) gives
its output Z in place of the logits.

One prompt pair: clean and corrupted token ids (1, n) or (n,), of the same length n. Everything runs
without gradients.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.nn import Encoder
from attnlab.patching.metrics import Metric
from attnlab.patching.sites import Site, axes_of, check_site, layer_of

Variant = Sequence[Site]


@dataclass(frozen=True)
class Baseline:
    """The two unpatched passes: each point's clean and corrupted tensors (1, ...) and the metric of each."""

    clean_cache: dict[str, Tensor]
    corrupted_cache: dict[str, Tensor]
    clean: float
    corrupted: float


@dataclass(frozen=True)
class PatchedValues:
    """The metric of each variant's run (P,), in the order given, and the unpatched clean and corrupted values."""

    values: Tensor
    clean: float
    corrupted: float


def stack_of(model: Any) -> Encoder:
    """The attnlab stack of a :class:`~attnlab.pretrained.PretrainedModel` (its ``model``), or an Encoder."""
    stack = model if isinstance(model, Encoder) else getattr(model, "model", None)
    if not isinstance(stack, Encoder):
        raise ConfigError(f"patching runs on an attnlab Encoder or a PretrainedModel, got {type(model).__name__}")
    return stack


def token_pair(clean: Tensor, corrupted: Tensor) -> tuple[Tensor, Tensor]:
    """Clean and corrupted ids as (1, n) each; a ConfigError unless they are one prompt each, same length."""
    out = []
    for what, ids in (("clean", clean), ("corrupted", corrupted)):
        if not isinstance(ids, Tensor) or ids.dtype.is_floating_point or ids.ndim not in (1, 2) \
                or (ids.ndim == 2 and ids.shape[0] != 1):
            got = tuple(ids.shape) if isinstance(ids, Tensor) else type(ids).__name__
            raise ConfigError(f"{what} must be the token ids of one prompt, (n,) or (1, n) integers, got {got}")
        out.append(ids.reshape(1, -1))
    if out[0].shape != out[1].shape:
        raise ConfigError(f"clean and corrupted must have the same length: {out[0].shape[1]} and {out[1].shape[1]} "
                          "tokens (pick a corruption with the same token count)")
    return out[0], out[1]


def baseline(model: Any, clean: Tensor, corrupted: Tensor, points: Sequence[str], metric: Metric,
             position: int | None = -1) -> Baseline:
    """The clean pass (caching ``points``) and the corrupted pass (caching every block's stream), and the
    metric of each: two forward passes."""
    clean, corrupted = token_pair(clean, corrupted)
    stack = stack_of(model)
    L = len(stack.blocks)
    streams = [f"blocks.{l}.hook_resid_pre" for l in range(L)] + [f"blocks.{L - 1}.hook_resid_post"]
    with torch.no_grad():
        out_clean, clean_cache = model.run_with_cache(clean, names_filter=sorted(set(points)))
        out_corrupted, corrupted_cache = model.run_with_cache(corrupted, names_filter=streams)
    m = [_metric(metric, o if position is None else o[:, position], 1) for o in (out_clean, out_corrupted)]
    return Baseline(clean_cache, corrupted_cache, float(m[0][0]), float(m[1][0]))


def patched_values(model: Any, base: Baseline, variants: Sequence[Variant], metric: Metric, *,
                   position: int | None = -1, chunk_size: int = 32) -> Tensor:
    """The metric of each variant's patched run (P,), ``chunk_size`` variants per forward (module docstring)."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ConfigError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    stack = stack_of(model)
    L = len(stack.blocks)
    variants = [tuple(v) for v in variants]
    for v in variants:
        for s in v:
            if s.point not in base.clean_cache:
                raise ConfigError(f"{s.name} was not cached in the clean run: pass it among the points patched")
            check_site(s, tuple(base.clean_cache[s.point].shape))
    starts = [min((layer_of(s.point, L) for s in v), default=L) for v in variants]
    order = sorted(range(len(variants)), key=lambda i: starts[i])
    values: list[Tensor] = [torch.empty(0)] * len(variants)
    with torch.no_grad():
        for c in range(0, len(order), chunk_size):
            rows = order[c:c + chunk_size]
            out = _patched_pass(stack, base, [variants[i] for i in rows], min(starts[i] for i in rows), position)
            for i, value in zip(rows, _metric(metric, out, len(rows))):
                values[i] = value
    return torch.stack(values) if values else torch.empty(0)


def patch(model: Any, clean: Tensor, corrupted: Tensor, variants: Sequence[Variant], metric: Metric, *,
          position: int | None = -1, chunk_size: int = 32) -> PatchedValues:
    """The metric of each variant (a sequence of Sites) patched from ``clean`` into ``corrupted``, batched
    (module docstring); an empty variant is the corrupted run itself."""
    points = {s.point for v in variants for s in v}
    base = baseline(model, clean, corrupted, sorted(points), metric, position)
    vals = patched_values(model, base, variants, metric, position=position, chunk_size=chunk_size)
    return PatchedValues(vals, base.clean, base.corrupted)


def _patched_pass(stack: Encoder, base: Baseline, variants: list[tuple[Site, ...]], start: int,
                  position: int | None) -> Tensor:
    """One forward of len(variants) rows from block ``start`` with each row's sites patched: the output head
    at ``position`` (B, vocab), or at every position (B, n, vocab) for None; Z where there is no head."""
    L, P = len(stack.blocks), len(variants)
    masks: dict[str, Tensor] = {}
    for b, v in enumerate(variants):
        for s in v:
            clean = base.clean_cache[s.point]  # (1, ...)
            if s.point not in masks:
                masks[s.point] = torch.zeros((P, *clean.shape[1:-1], 1), dtype=torch.bool, device=clean.device)
            pos_axis, head_axis = axes_of(s.point)
            index: list[Any] = [b] + [slice(None)] * (clean.ndim - 2)
            if s.position is not None:
                index[pos_axis] = s.position
            if s.head is not None:
                index[head_axis] = s.head
            masks[s.point][tuple(index)] = True
    hooks = [(name, _writer(mask, base.clean_cache[name])) for name, mask in masks.items()]
    X = base.corrupted_cache[f"blocks.{start}.hook_resid_pre" if start < L else f"blocks.{L - 1}.hook_resid_post"]
    X = X.expand(P, *X.shape[1:])  # (P, n, d_model)
    with stack.hooks(hooks):
        out = stack.encode(X, start=start, logits_at=position)  # Z (P, n, d_model)
    if out.logits is not None:
        return out.logits
    return out.output if position is None else out.output[:, position]


def _writer(mask: Tensor, clean: Tensor) -> Any:
    """A hook writing ``clean`` (1, ...) where ``mask`` (P, ..., 1) is True: torch.where keeps every other
    value of x bit for bit."""

    def write(x: Tensor, name: str) -> Tensor:
        return torch.where(mask, clean, x)

    return write


def _metric(metric: Metric, out: Tensor, rows: int) -> Tensor:
    """metric(out), checked to give one value per row: (rows,)."""
    value = metric(out)
    if not isinstance(value, Tensor) or tuple(value.shape) != (rows,):
        got = tuple(value.shape) if isinstance(value, Tensor) else type(value).__name__
        raise ConfigError(f"the metric must give one value per run, shape ({rows},), got {got} (for the logits "
                          f"at one position, (B, vocab), it returns (B,))")
    return value
