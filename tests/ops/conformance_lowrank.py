"""Conformance entries of the low-rank family (attnlab.ops.lowrank).

Linformer (eq. 17) with fixed projections E, F: N(0, 1/k') draws from a
generator seeded by n_k, so the operator and its oracle see the same matrices.
It approximates softmax attention rather than equalling it, so it is held to
its own float64 oracle: the same computation spelled out naively. Keys are
mixed by the projection, so masks, causality and key padding do not apply;
the weights it returns are the effective n_q x n_k matrix P_bar F (rows do not
sum to 1). best_rank_k is a matrix approximation, not an operator: not listed.
"""

from __future__ import annotations

import math

import torch

from conformance import OperatorEntry

from attnlab.ops.lowrank import linformer_attention, linformer_projections
from attnlab.ops.softmax import AttentionOutput

K_PROJ = 3  # k' < n_k for every suite shape (n_k = 5 or 7)


def _projections(n_k: int, dtype: torch.dtype, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 + n_k)  # drawn on the CPU, the same on every device
    return linformer_projections(min(K_PROJ, n_k), n_k, generator=g, dtype=dtype, device=device)


def _no_masks(masks: dict) -> None:
    if any(m is not None for m in masks.values()):
        raise AssertionError("Linformer supports no masks")


def _linformer(q, k, v, *, return_weights=False, **masks) -> AttentionOutput:
    _no_masks(masks)
    E, F = _projections(k.shape[-2], q.dtype, q.device)
    return linformer_attention(q, k, v, E, F, return_weights=return_weights)


def _linformer_naive(q, k, v, *, return_weights=False, **masks) -> AttentionOutput:
    """Eq. (17) one query at a time: K_bar_r = sum_j E_rj k_j, logits, exp(z - max z) / sum, float64."""
    _no_masks(masks)
    E, F = _projections(k.shape[-2], torch.float64)
    c = 1.0 / math.sqrt(q.shape[-1])
    K_bar = (E[:, :, None] * k[..., None, :, :]).sum(-2)  # (..., k', d_k)
    V_bar = (F[:, :, None] * v[..., None, :, :]).sum(-2)  # (..., k', d_v)
    outs, weights = [], []
    for i in range(q.shape[-2]):
        z = (q[..., i, None, :] * K_bar).sum(-1) * c  # (..., k')
        e = torch.exp(z - z.amax(-1, keepdim=True))
        p = e / e.sum(-1, keepdim=True)  # (..., k')
        outs.append((p[..., :, None] * V_bar).sum(-2))  # (..., d_v)
        weights.append((p[..., :, None] * F).sum(-2))  # (..., n_k): row i of P_bar F
    return AttentionOutput(torch.stack(outs, -2), torch.stack(weights, -2))


OPERATORS: list[OperatorEntry] = [
    OperatorEntry("linformer-fixed", _linformer, normalized=False, features=frozenset({"weights"}),
                  reference_fn=_linformer_naive, variant="linformer"),
]
