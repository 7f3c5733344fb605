"""Attention over a graph D by gathering each query's neighbours (math text §2.1.1, eq. 11).

    o_i = sum_{j in N(i)} softmax_j(c q_i · k_j) v_j,   softmax over N(i) only        (11)

(eq. 11 without its residual term x_i and the sum over heads: one head, as a
pure operator). For every query the rows K_{N(i)}, V_{N(i)} are gathered into
(..., n_q, w_max, d) tensors, so time and memory are O(n w_max d) instead of
O(n^2 d). A query with no neighbours gets output 0 (attnlab's convention for
fully masked rows). The result equals the dense masked computation
softmax_attention(q, k, v, mask=graph_to_mask(neighbors, n_k)) in value and
gradient (float64, 1e-12; tests/ops/test_sparse_attention.py).

Memory, counted before anything is gathered (:func:`gather_bytes`): the gathered rows are
O(n_q w (d_k + d_v)), more than the dense weights once w (d_k + d_v) > n_k, so a wide graph
is refused in one line (attnlab.ops.memory) like a dense path, not by the allocator.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.memory import check_bytes_fit, dtype_name
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


def gather_bytes(batch: tuple[int, ...], n_q: int, n_k: int, w: int, d_k: int, d_v: int, itemsize: int,
                 return_weights: bool) -> int:
    """Bytes graph_attention holds at least, with E = prod(batch) n_q w: the gathered rows K_N, V_N
    (E (d_k + d_v)), the logits, the weights over the neighbours and one softmax temporary (3 E) in the
    dtype, the clamped neighbour index and its flattened copy (2 E int64) and the mask (E bool); with
    ``return_weights`` also the dense (*batch, n_q, n_k + 1) weights and the scatter's int64 index (E).
    Measured: 0.8 to 0.9 of the resident peak (tests/ops/test_memory_check.py)."""
    E = math.prod(batch) * n_q * w
    need = E * ((d_k + d_v + 3) * itemsize + 2 * 8 + 1)
    if return_weights:
        need += math.prod(batch) * n_q * (n_k + 1) * itemsize + E * 8
    return need


def check_gather_fits(q: Tensor, need: int, batch: tuple[int, ...], w: int, *, return_weights: bool,
                      caller: str = "graph_attention") -> None:
    """ConfigError before any gathering when ``need`` bytes (:func:`gather_bytes`, and what the caller
    adds) exceed q's device: one line naming the tensors, their sizes and what to lower."""
    dims = " x ".join(map(str, (*batch, q.shape[-2], w)))
    weights = ", and the dense weights" if return_weights else ""
    check_bytes_fit(q.device, need, what=f"{caller}(return_weights={return_weights}): K and V gathered over "
                    f"({dims}) neighbours and the logits{weights}, {dtype_name(q.dtype)},",
                    change="lower n or the neighbour lists' width" + (", or drop return_weights" * return_weights))


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
    check_gather_fits(q, gather_bytes(batch, n_q, n_k, w, q.shape[-1], v.shape[-1], q.element_size(), return_weights),
                      batch, w, return_weights=return_weights)
    valid = (neighbors >= 0).expand(*batch, n_q, w)  # (*batch, n_q, w)
    idx = neighbors.clamp(min=0).expand(*batch, n_q, w)
    K_N = gather_rows(k, batch, idx)  # (*batch, n_q, w, d_k)
    V_N = gather_rows(v, batch, idx)  # (*batch, n_q, w, d_v)
    logits = torch.einsum("...id,...iwd->...iw", q.expand(*batch, n_q, q.shape[-1]), K_N) * c
    P_N = masked_softmax(logits, valid)  # (*batch, n_q, w), rows with no neighbour are 0
    out = torch.einsum("...iw,...iwd->...id", P_N, V_N)  # (*batch, n_q, d_v)
    weights = None
    if return_weights:
        pad_idx = torch.where(valid, idx, torch.full_like(idx, n_k))
        # column n_k collects the padding; scattered in place, so one dense tensor is held
        weights = q.new_zeros(*batch, n_q, n_k + 1).scatter_(-1, pad_idx, P_N.masked_fill(~valid, 0.0))[..., :n_k]
    return AttentionOutput(out, weights)


def _check_no_repeats(neighbors: Tensor) -> None:
    s = neighbors.sort(dim=-1).values
    if bool(((s[..., 1:] == s[..., :-1]) & (s[..., 1:] >= 0)).any()):
        raise ConfigError(
            "a neighbour list names the same key twice: deduplicate it, "
            "e.g. mask_to_graph(graph_to_mask(neighbors, n_k))"
        )
