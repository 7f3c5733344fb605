"""Patching grids, as TransformerLens' ``get_act_patch_*``: one patched run per cell, batched.

    patch_resid_pre   blocks.{l}.hook_resid_pre at one position        grid (layer, position)
    patch_attn_out    blocks.{l}.hook_attn_out at one position         grid (layer, position)
    patch_mlp_out     blocks.{l}.hook_mlp_out at one position          grid (layer, position)
    patch_heads       blocks.{l}.attn.hook_{z,q,k,v,attn_scores,pattern}, one head at every position
                                                                       grid (layer, head)
                      ... with by_position=True, one head at one position (for attn_scores and
                      pattern: one query row)                          grid (layer, head, position)

q, k and v are the projections before any rotary embedding (hook_q, hook_k, hook_v; patching one at
position p is patching it after RoPE, which rotates both runs' vectors at p alike); k and v have one
head per key/value head under grouped-query attention (SmolLM2: 3 for 9 query heads).

Each cell is the metric of the corrupted prompt with that one site carrying the clean run's value
(:mod:`attnlab.patching.runner`, which runs the cells in batches). A :class:`PatchingResult` holds the grid,
the clean and corrupted values and the points patched; ``result.recovered`` is the normalised fraction
(patched - corrupted) / (clean - corrupted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.patching.metrics import Metric, recovered_fraction
from attnlab.patching.runner import baseline, patched_values, stack_of, token_pair
from attnlab.patching.sites import Site, axes_of

HEAD_POINTS = {"z": "attn.hook_z", "q": "attn.hook_q", "k": "attn.hook_k", "v": "attn.hook_v",
               "attn_scores": "attn.hook_attn_scores", "pattern": "attn.hook_pattern"}


@dataclass(frozen=True)
class PatchingResult:
    """grid: the metric of each patched run, shaped by ``dims`` (("layer", "position"), ("layer", "head") or
    ("layer", "head", "position")); hook_names: the point patched in each row of the grid (one per layer);
    clean, corrupted: the metric of the unpatched runs."""

    grid: Tensor
    dims: tuple[str, ...]
    hook_names: tuple[str, ...]
    clean: float
    corrupted: float

    @property
    def recovered(self) -> Tensor:
        """(grid - corrupted) / (clean - corrupted), the grid's shape: 0 = no effect, 1 = the clean value."""
        return recovered_fraction(self.grid, self.clean, self.corrupted)


def patch_resid_pre(model: Any, clean: Tensor, corrupted: Tensor, metric: Metric, *,
                    layers: Sequence[int] | None = None, include_final: bool = False, position: int | None = -1,
                    chunk_size: int = 32) -> PatchingResult:
    """The stream entering block l at position p patched, for every layer l (default: all) and position:
    grid (layer, position); ``include_final`` adds a last row for the last block's hook_resid_post."""
    L = len(stack_of(model).blocks)
    names = [f"blocks.{l}.hook_resid_pre" for l in _layers(layers, L)]
    if include_final:
        names.append(f"blocks.{L - 1}.hook_resid_post")
    return _by_position(model, clean, corrupted, metric, names, position, chunk_size)


def patch_attn_out(model: Any, clean: Tensor, corrupted: Tensor, metric: Metric, *,
                   layers: Sequence[int] | None = None, position: int | None = -1,
                   chunk_size: int = 32) -> PatchingResult:
    """Block l's attention output sum_h z_h W_O,h + b_O at position p patched: grid (layer, position)."""
    names = [f"blocks.{l}.hook_attn_out" for l in _layers(layers, len(stack_of(model).blocks))]
    return _by_position(model, clean, corrupted, metric, names, position, chunk_size)


def patch_mlp_out(model: Any, clean: Tensor, corrupted: Tensor, metric: Metric, *,
                  layers: Sequence[int] | None = None, position: int | None = -1,
                  chunk_size: int = 32) -> PatchingResult:
    """Block l's MLP output FFN(u) at position p patched: grid (layer, position)."""
    names = [f"blocks.{l}.hook_mlp_out" for l in _layers(layers, len(stack_of(model).blocks))]
    return _by_position(model, clean, corrupted, metric, names, position, chunk_size)


def patch_heads(model: Any, clean: Tensor, corrupted: Tensor, metric: Metric, *, activation: str = "z",
                by_position: bool = False, layers: Sequence[int] | None = None, position: int | None = -1,
                chunk_size: int = 32) -> PatchingResult:
    """One head's ``activation`` patched: "z" (z_h = P_h v_g(h), the head's output before W_O), "q", "k",
    "v" (k and v per key/value head under grouped-query attention), "attn_scores" (c q_h k_g(h)^T + M,
    before the softmax) or "pattern" (P_h); at every position, grid (layer, head), or with ``by_position``
    at one position (one query row of the scores or of P_h), grid (layer, head, position)."""
    if activation not in HEAD_POINTS:
        raise ConfigError(f"activation must be one of {', '.join(HEAD_POINTS)}, got {activation!r}")
    names = [f"blocks.{l}.{HEAD_POINTS[activation]}" for l in _layers(layers, len(stack_of(model).blocks))]
    clean, corrupted = token_pair(clean, corrupted)
    base = baseline(model, clean, corrupted, names, metric, position)
    shape = base.clean_cache[names[0]].shape
    pos_axis, head_axis = axes_of(names[0])
    H, n = shape[head_axis], shape[pos_axis]
    cells = [(name, h, p) for name in names for h in range(H) for p in (range(n) if by_position else [None])]
    values = patched_values(model, base, [(Site(name, p, h),) for name, h, p in cells], metric,
                            position=position, chunk_size=chunk_size)
    grid = values.reshape(len(names), H, n) if by_position else values.reshape(len(names), H)
    dims = ("layer", "head", "position") if by_position else ("layer", "head")
    return PatchingResult(grid, dims, tuple(names), base.clean, base.corrupted)


def _by_position(model: Any, clean: Tensor, corrupted: Tensor, metric: Metric, names: list[str],
                 position: int | None, chunk_size: int) -> PatchingResult:
    """grid (len(names), n): point names[i] patched at position p alone."""
    clean, corrupted = token_pair(clean, corrupted)
    n = clean.shape[1]
    base = baseline(model, clean, corrupted, names, metric, position)
    variants = [(Site(name, p),) for name in names for p in range(n)]
    values = patched_values(model, base, variants, metric, position=position, chunk_size=chunk_size)
    return PatchingResult(values.reshape(len(names), n), ("layer", "position"), tuple(names), base.clean,
                          base.corrupted)


def _layers(layers: Sequence[int] | None, L: int) -> list[int]:
    """The layers asked for (default 0..L-1), each checked to be a block."""
    if layers is None:
        return list(range(L))
    out = list(layers)
    bad = [l for l in out if isinstance(l, bool) or not isinstance(l, int) or not 0 <= l < L]
    if bad or not out:
        raise ConfigError(f"layers must be a non-empty list of blocks in [0, {L - 1}], got {layers!r}")
    return out
