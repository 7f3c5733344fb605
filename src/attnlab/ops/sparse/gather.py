"""Attention over a graph D by gathering each query's neighbours (math text §2.1.1, eq. 11).

    o_i = sum_{j in N(i)} softmax_j(c q_i · k_j) v_j,   softmax over N(i) only        (11)

(eq. 11 without its residual term x_i and the sum over heads: one head, as a
pure operator). For every query the rows K_{N(i)}, V_{N(i)} are gathered into
(..., n_q, w_max, d) tensors, so time and memory are O(n w_max d) instead of
O(n^2 d). A query with no neighbours gets output 0 (attnlab's convention for
fully masked rows). The result equals the dense masked computation
softmax_attention(q, k, v, mask=graph_to_mask(neighbors, n_k)) in value and
gradient (float64, 1e-12; tests/ops/test_sparse_attention.py).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.memory import check_dense_fits
from attnlab.ops.softmax import (
    AttentionOutput,
    Scale,
    batch_shape,
    check_qkv,
    masked_softmax,
    resolve_scale,
)
from attnlab.ops.sparse.graphs import check_graph


def gather_rows(x: Tensor, batch: tuple[int, ...], idx: Tensor) -> Tensor:
    """x (..., n_k, d), idx (*batch, n_q, w) with entries in [0, n_k) -> (*batch, n_q, w, d)."""
    n_k, d = x.shape[-2], x.shape[-1]
    flat = x.expand(*batch, n_k, d).reshape(-1, d)  # (prod(batch) n_k, d)
    base = torch.arange(math.prod(batch), device=x.device).reshape(batch) * n_k  # (*batch,)
    flat_idx = (idx + base[..., None, None]).reshape(-1)  # (prod(batch) n_q w,)
    return flat.index_select(0, flat_idx).reshape(*idx.shape, d)


def graph_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    neighbors: Tensor,
    *,
    scale: Scale = "1/sqrt(d)",
    return_weights: bool = False,
    validate: bool = False,
) -> AttentionOutput:
    """Softmax attention restricted to a graph, eq. (11), by gathering.

    Parameters
    ----------
    q, k, v : (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
    neighbors : LongTensor (n_q, w_max) or broadcastable (..., n_q, w_max) (e.g. (H, n_q, w_max)
        for per-head graphs); row i lists N(i), -1 = padding; no key twice in a row
    scale : "1/sqrt(d)", "1/d", "none" or a positive float
    return_weights : also return the dense (..., n_q, n_k) weights (scattered; O(n_q n_k) memory)
    validate : also check that no row names a key twice (a sort per call); the builders of
        graphs.py return canonical lists, so the default checks only dtype and range
    """
    check_qkv(q, k, v)
    if return_weights:
        check_dense_fits(q, k, v, copies=1, what="graph_attention(return_weights=True): the dense weights")
    n_q, n_k = q.shape[-2], k.shape[-2]
    check_graph(neighbors, n_k)
    if neighbors.shape[-2] != n_q:
        raise ConfigError(f"neighbors has {neighbors.shape[-2]} rows but there are n_q={n_q} queries")
    if validate:
        _check_no_repeats(neighbors)
    c = resolve_scale(scale, q.shape[-1])
    neighbors = neighbors.to(device=q.device, dtype=torch.long)
    w = neighbors.shape[-1]
    try:
        batch = tuple(torch.broadcast_shapes(batch_shape(q, k, v), neighbors.shape[:-2]))
    except RuntimeError:
        raise ConfigError(
            f"neighbors' leading shape {tuple(neighbors.shape[:-2])} does not broadcast "
            f"to the batch shape {batch_shape(q, k, v)}"
        ) from None
    valid = (neighbors >= 0).expand(*batch, n_q, w)  # (*batch, n_q, w)
    idx = neighbors.clamp(min=0).expand(*batch, n_q, w)
    K_N = gather_rows(k, batch, idx)  # (*batch, n_q, w, d_k)
    V_N = gather_rows(v, batch, idx)  # (*batch, n_q, w, d_v)
    logits = torch.einsum("...id,...iwd->...iw", q.expand(*batch, n_q, q.shape[-1]), K_N) * c
    P_N = masked_softmax(logits, valid)  # (*batch, n_q, w), rows with no neighbour are 0
    out = torch.einsum("...iw,...iwd->...id", P_N, V_N)  # (*batch, n_q, d_v)
    weights = None
    if return_weights:
        weights = q.new_zeros(*batch, n_q, n_k + 1)  # column n_k collects the padding
        pad_idx = torch.where(valid, idx, torch.full_like(idx, n_k))
        weights = weights.scatter(-1, pad_idx, P_N.masked_fill(~valid, 0.0))[..., :n_k]
    return AttentionOutput(out, weights)


def _check_no_repeats(neighbors: Tensor) -> None:
    s = neighbors.sort(dim=-1).values
    if bool(((s[..., 1:] == s[..., :-1]) & (s[..., 1:] >= 0)).any()):
        raise ConfigError(
            "a neighbour list names the same key twice: deduplicate it, "
            "e.g. mask_to_graph(graph_to_mask(neighbors, n_k))"
        )
