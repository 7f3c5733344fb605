"""Structured sparse patterns: a window, a few extra keys per row, and dense global rows.

A padded neighbour list (graphs.py) stores every row as wide as the widest
one, so one global token (a row that sees all n keys) makes it (n, n): O(n^2).
A :class:`SparsePattern` keeps the three parts of a BigBird or Longformer graph
(math-behind-transformers §2.1.1, Figures 7 and 9) apart, all O(n):

* the window N_win(i) = {j : |j - i| <= dilation * half, dilation | (j - i), j <= i if causal},
  computed by banded blocks (one matmul per block of queries, attention.py);
* ``extra`` (..., n, e): the other keys of each row (random keys, global columns),
  excluding the window's keys (so no key counts twice), -1 = padding; gathered;
* ``global_rows`` (g,) with ``global_mask`` (..., g, n): rows computed densely (O(g n)).

N(i) = N_win(i) ∪ extra(i) for the other rows, N(i) = global_mask row for global rows.
The patterns equal the graphs of graphs.py exactly (tests/ops/test_sparse_pattern.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.sparse.graphs import (
    _check_positive,
    _check_window,
    _dilations,
    _random_keys,
    canonical,
    check_graph,
    graph_to_mask,
)
from attnlab.ops.tables import table_cache


@dataclass(frozen=True, eq=False)
class SparsePattern:
    """n tokens; half: window half-width (-1 = no window); dilation: one per head or a single
    shared value; causal; extra (..., n, e); global_rows (g,); global_mask (..., g, n)."""

    n: int
    half: int
    dilation: tuple[int, ...]
    causal: bool
    extra: Tensor
    global_rows: Tensor
    global_mask: Tensor

    def __post_init__(self) -> None:
        check_graph(self.extra, self.n)
        if self.extra.shape[-2] != self.n:
            raise ConfigError(f"extra has {self.extra.shape[-2]} rows but the pattern has n={self.n} tokens")
        if self.global_mask.shape[-2:] != (self.global_rows.numel(), self.n):
            raise ConfigError(
                f"global_mask must be (..., {self.global_rows.numel()}, {self.n}), got {tuple(self.global_mask.shape)}"
            )

    @property
    def heads(self) -> int | None:
        """Number of heads the pattern fixes (per-head dilation), None if shared."""
        return len(self.dilation) if len(self.dilation) > 1 else None

    def window_mask(self) -> Tensor:
        """Boolean (H, n, n) or (n, n) window part (for tests and weights, O(n^2))."""
        rel = torch.arange(self.n)[None, :] - torch.arange(self.n)[:, None]  # j - i
        out = []
        for d in self.dilation:
            ok = (rel.abs() <= d * self.half) & (rel % d == 0) & torch.tensor(self.half >= 0)
            out.append(ok & (rel <= 0) if self.causal else ok)
        return torch.stack(out) if self.heads else out[0]

    def to_mask(self) -> Tensor:
        """The dense boolean (..., n, n) pattern, True where j in N(i) (O(n^2): for checks)."""
        M = self.window_mask() | graph_to_mask(self.extra, self.n)
        M = M.expand(*torch.broadcast_shapes(M.shape[:-2], self.global_mask.shape[:-2]), self.n, self.n).clone()
        M[..., self.global_rows, :] = self.global_mask.expand(*M.shape[:-2], *self.global_mask.shape[-2:])
        return M


def _in_window(j: Tensor, half: int, dilation: int) -> Tensor:
    """(..., n, e) True where key j[i, :] lies in the (non-causal) window of row i."""
    rel = j - torch.arange(j.shape[-2])[:, None]
    return (rel.abs() <= dilation * half) & (rel % dilation == 0) & (half >= 0)


def _extra(cols: Tensor, n: int, half: int, dilations: Sequence[int], causal: bool) -> Tensor:
    """Drop window keys (per head), keys after i if causal, duplicates; canonical (..., n, e)."""
    per_head = []
    for d in dilations:
        j = cols.masked_fill(_in_window(cols, half, d), -1)
        if causal:
            j = j.masked_fill(j > torch.arange(n)[:, None], -1)
        per_head.append(j)
    stacked = torch.stack(per_head) if len(dilations) > 1 else per_head[0]
    return canonical(stacked, n)


def _globals(glob: Tensor, n: int, causal: bool) -> Tensor:
    """(g, n) rows of the global tokens: every key, or the keys j <= i if causal."""
    if not causal:
        return torch.ones(glob.numel(), n, dtype=torch.bool)
    return torch.arange(n)[None, :] <= glob[:, None]


@table_cache(maxsize=16)
def bigbird_pattern(n: int, *, g: int, w: int, r: int, seed: int, causal: bool = False) -> SparsePattern:
    """The BigBird graph of graphs.bigbird_graph (same seed, same random keys) as a SparsePattern."""
    _check_positive("n", n)
    _check_window(n, w, least=0)
    for name, val in (("g (global tokens)", g), ("r (random keys)", r)):
        _check_positive(name, val, least=0)
        if val > n:
            raise ConfigError(f"{name}={val} is larger than the sequence (n={n}): use at most {n}")
    if g == 0 and w == 0 and r == 0:
        raise ConfigError("BigBird with g = w = r = 0 attends to nothing (an empty graph, every output 0): give "
                          "at least one global token, window or random key")
    gen = torch.Generator().manual_seed(int(seed))
    glob = torch.arange(g)
    cols = torch.cat([_random_keys(n, r, gen), glob[None, :].expand(n, g)], dim=-1)  # (n, r + g)
    half = w // 2 if w >= 1 else -1
    return SparsePattern(n, half, (1,), causal, _extra(cols, n, half, (1,), causal), glob, _globals(glob, n, causal))


def longformer_pattern(
    n: int, *, w: int, dilation: int | Sequence[int] = 1, global_tokens: Sequence[int] = (), causal: bool = False
) -> SparsePattern:
    """The Longformer graph of graphs.longformer_graph as a SparsePattern (per-head dilation allowed)."""
    _check_window(n, w)
    per_head = _dilations(dilation)
    dils = tuple(per_head) if per_head is not None else (int(dilation),)
    glob_list = sorted({int(t) for t in global_tokens})
    bad = [t for t in glob_list if not 0 <= t < n]
    if bad:
        raise ConfigError(f"global token positions {bad} are outside [0, {n}): use positions 0 .. {n - 1}")
    return _longformer_pattern(n, w, dils, tuple(glob_list), bool(causal))


@table_cache(maxsize=16)
def _longformer_pattern(n: int, w: int, dils: tuple[int, ...], glob_list: tuple[int, ...], causal: bool) -> SparsePattern:
    """longformer_pattern on checked, hashable arguments (one pattern object per geometry)."""
    glob = torch.tensor(glob_list, dtype=torch.long)
    cols = glob[None, :].expand(n, glob.numel())
    extra = _extra(cols, n, w // 2, dils, causal)  # (H, n, e) per head, or (n, e)
    return SparsePattern(n, w // 2, dils, causal, extra, glob, _globals(glob, n, causal))


def pattern_from_mask(mask: Tensor, global_rows: Sequence[int] = ()) -> SparsePattern:
    """Any boolean (..., n, n) pattern: rows ``global_rows`` dense, the others as gathered lists (no window)."""
    if mask.dtype != torch.bool or mask.shape[-1] != mask.shape[-2]:
        raise ConfigError(f"pattern_from_mask needs a square boolean (..., n, n) mask, got {mask.dtype} {tuple(mask.shape)}")
    n = mask.shape[-1]
    glob = torch.tensor(sorted({int(t) for t in global_rows}), dtype=torch.long)
    local = mask.clone()
    local[..., glob, :] = False
    j = torch.arange(n).expand(local.shape)
    extra = canonical(torch.where(local, j, torch.full_like(j, -1)), n)
    return SparsePattern(n, -1, (1,), False, extra, glob, mask[..., glob, :])
