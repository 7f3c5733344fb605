"""Sliding-window attention with three backends (math text §2.1.1, Longformer's window).

Query i sits at key position p(i) = i + off (off = n_k - n_q for
causal="bottom_right", else 0; the conventions of attnlab.ops.masks) and attends to

    N(i) = {j in [0, n_k): |j - p(i)| <= dilation (w // 2), dilation | (j - p(i)), and j <= p(i) if causal}

(w // 2 on each side: w tokens for odd w, w + 1 for even w, as in graphs.py).
Backends, all equal to the dense masked computation:

* ``"gather"``: banded blocks. Queries are cut into blocks of B; block b only
  needs the keys of positions [p_0 - h, p_{B-1} + h] (h = w // 2), a window of
  B + 2h keys, so the overlapping key blocks are views of one padded K (unfold)
  and each block runs PyTorch's fused attention on (B, B + 2h) with a band mask.
  Cost O(n (B + 2h) d) instead of O(n^2 d). A dilation delta splits the sequence
  into delta residue classes mod delta, each an undilated window on a
  subsequence. With ``return_weights`` the neighbour-gather path of gather.py is
  used instead (the weights are dense anyway).
* ``"flex"``: torch.nn.attention.flex_attention with a block mask (flex.py).
* ``"dense"``: softmax_attention with the (n_q, n_k) window mask: the reference.

Memory is checked before anything is allocated (attnlab.ops.memory). The banded path
holds the band mask of every residue class, (rows, L) in the dtype with its boolean
layout, rows = the class's queries rounded up to blocks of B, L = B + 2h (B + h causal):
O(n_q w), cached after it is first built, so counted on the first call for these sizes
only; and per call K and V padded once (the blocks are views of them) and the output.
The weights path first builds the (n_q, w_max) int64 neighbour lists, then gathers
(gather.py's count).
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.masks import resolve_causal
from attnlab.ops.softmax import (
    AttentionOutput,
    Scale,
    batch_shape,
    check_qkv,
    empty_attention,
    resolve_scale,
    softmax_attention,
)
from attnlab.ops.memory import check_bytes_fit, dtype_name
from attnlab.ops.sparse.gather import check_gather_fits, gather_bytes, graph_attention
from attnlab.ops.sparse.graphs import canonical
from attnlab.ops.tables import table_cache

BACKENDS = ("gather", "flex", "dense")
BLOCK = 64  # query block size of the banded path (measured: 64 is fastest at w = 256, d = 64)


def window_neighbors(n_q: int, n_k: int, w: int, dilation: int, causal: bool, off: int) -> Tensor:
    """(n_q, w_max) neighbour lists of the window described in the module docstring."""
    half = w // 2
    t = torch.arange(-half, (0 if causal else half) + 1) * dilation  # offsets j - p(i)
    j = (torch.arange(n_q) + off)[:, None] + t[None, :]  # (n_q, w_max)
    return canonical(j.masked_fill((j < 0) | (j >= n_k), -1), n_k)


def window_mask(n_q: int, n_k: int, w: int, dilation: int, causal: bool, off: int) -> Tensor:
    """Boolean (n_q, n_k) mask of the same window, True = may attend."""
    rel = torch.arange(n_k)[None, :] - (torch.arange(n_q) + off)[:, None]  # j - p(i)
    ok = (rel.abs() <= dilation * (w // 2)) & (rel % dilation == 0)
    return ok & (rel <= 0) if causal else ok


def sliding_window_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    w: int,
    *,
    dilation: int = 1,
    causal: bool | str = False,
    backend: str = "gather",
    scale: Scale = "1/sqrt(d)",
    return_weights: bool = False,
) -> AttentionOutput:
    """Softmax attention of each query over its window (module docstring).

    q, k, v: (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v); w: window (1 <= w <= n_k);
    dilation >= 1; causal: False, True (n_q == n_k), "top_left" or "bottom_right".
    """
    check_qkv(q, k, v)
    if (empty := empty_attention(q, k, v, return_weights)) is not None:
        return empty
    n_q, n_k = q.shape[-2], k.shape[-2]
    if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= n_k:
        raise ConfigError(f"window w must be an integer in [1, n_k={n_k}], got {w!r}")
    if isinstance(dilation, bool) or not isinstance(dilation, int) or dilation < 1:
        raise ConfigError(f"dilation must be an integer >= 1, got {dilation!r}")
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}: use one of {', '.join(BACKENDS)}")
    alignment = resolve_causal(causal, n_q, n_k)
    off = n_k - n_q if alignment == "bottom_right" else 0
    is_causal = alignment is not None
    if backend == "dense":
        mask = window_mask(n_q, n_k, w, dilation, is_causal, off).to(q.device)
        return softmax_attention(q, k, v, mask=mask, scale=scale, return_weights=return_weights)
    if return_weights:
        if backend == "flex":
            raise ConfigError("the flex backend never forms the weights: use backend='gather' or 'dense'")
        _check_neighbors_fit(q, k, v, w, is_causal)
        nbrs = window_neighbors(n_q, n_k, w, dilation, is_causal, off)
        return graph_attention(q, k, v, nbrs, scale=scale, return_weights=True)
    c = resolve_scale(scale, q.shape[-1])
    if backend == "flex":
        from attnlab.ops.sparse.flex import flex_window_attention

        return AttentionOutput(flex_window_attention(q, k, v, w // 2, dilation, is_causal, off, c))
    _check_band_fits(n_q, n_k, w // 2, is_causal, off, dilation, q.dtype, q.device)
    _check_padded_fits(q, k, v, w // 2, is_causal, off, dilation)
    return AttentionOutput(_dilated_banded(q, k, v, w // 2, dilation, is_causal, off, c))


def _residue_classes(n_q: int, n_k: int, dilation: int, off: int) -> list[tuple[int, int, int]]:
    """(r, i0, off_r) of each residue class mod ``dilation`` that has queries and keys: its first key r, its
    first query i0 (p(i0) = r mod dilation) and the offset of its undilated window (module docstring)."""
    if dilation == 1:
        return [(0, 0, off)]
    out = []
    for r in range(dilation):
        i0 = (r - off) % dilation
        if i0 < n_q and r < n_k:
            # query a of the class sits at p = i0 + off + dilation a; key b of the class is j = r + dilation b
            out.append((r, i0, (i0 + off - r) // dilation))
    return out


def _class_sizes(n_q: int, n_k: int, half: int, causal: bool, off: int,
                 dilation: int) -> dict[tuple[int, int, int], tuple[int, int, int]]:
    """{(queries, keys, offset): (rows, L, T)} over the residue classes' banded calls: query rows padded to
    blocks, keys per block, padded keys (_banded). Classes of equal sizes share one band layout."""
    out = {}
    for r, i0, off_r in _residue_classes(n_q, n_k, dilation, off):
        m_q, m_k = len(range(i0, n_q, dilation)), len(range(r, n_k, dilation))
        B = max(1, min(BLOCK, m_q))
        nb, L = -(-m_q // B), B + half + (0 if causal else half)
        out[m_q, m_k, off_r] = (nb * B, L, (nb - 1) * B + L)
    return out


@lru_cache(maxsize=64)
def _check_band_fits(n_q: int, n_k: int, half: int, causal: bool, off: int, dilation: int, dtype: torch.dtype,
                     device: torch.device) -> None:
    """ConfigError when the band layouts of the residue classes (_band_layout, one per distinct size) cannot
    fit on ``device``. Cached when it passes: the layouts are built and cached right after, so a later call
    with these sizes does not count them again (on CUDA they are then part of the memory in use)."""
    sizes = _class_sizes(n_q, n_k, half, causal, off, dilation).values()
    rows, L = sum(s[0] for s in sizes), max(s[1] for s in sizes)
    # built on the host, a boolean of the same shape beside it at the peak, then copied to the device
    need = sum(r * l_ for r, l_, _ in sizes) * (dtype.itemsize + (device.type == "cpu"))
    check_bytes_fit(device, need, what=f"sliding_window_attention(backend='gather'): the band mask, {rows} x {L} "
                    f"{dtype_name(dtype)}" + (" and bool" if device.type == "cpu" else "") + ",",
                    change=f"lower w (the mask is n_q x (B + w), B = {BLOCK}), or use backend='flex'")


def _check_padded_fits(q: Tensor, k: Tensor, v: Tensor, half: int, causal: bool, off: int, dilation: int) -> None:
    """ConfigError when K and V padded for one residue class's blocks, and the output, cannot fit (per call:
    with a broadcast batch these are larger than k and v themselves)."""
    n_q, n_k, d_k, d_v = q.shape[-2], k.shape[-2], k.shape[-1], v.shape[-1]
    P = math.prod(batch_shape(q, k, v))
    T = max(s[2] for s in _class_sizes(n_q, n_k, half, causal, off, dilation).values())
    need = P * (T * (d_k + d_v) + n_q * d_v) * q.element_size()
    check_bytes_fit(q.device, need, what=f"sliding_window_attention(backend='gather'): K and V padded into blocks, "
                    f"{P} x {T} x ({d_k} + {d_v}), and the output, {dtype_name(q.dtype)},",
                    change="lower n or the batch")


def _check_neighbors_fit(q: Tensor, k: Tensor, v: Tensor, w: int, causal: bool) -> None:
    """ConfigError before the weights path builds its (n_q, w_max) int64 neighbour lists and gathers over them
    (gather.py's count), when the two cannot fit."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    w_max = w // 2 + (0 if causal else w // 2) + 1
    batch = batch_shape(q, k, v)
    need = n_q * w_max * 8 + gather_bytes(batch, n_q, n_k, w_max, q.shape[-1], v.shape[-1], q.element_size(), True)
    check_gather_fits(q, need, batch, w_max, return_weights=True, caller="sliding_window_attention")


def _dilated_banded(q: Tensor, k: Tensor, v: Tensor, half: int, dilation: tuple[int, ...], causal: bool, off: int, c: float) -> Tensor:
    """Split into residue classes mod dilation; each is an undilated window of half-width ``half``."""
    batch = batch_shape(q, k, v)
    q, k, v = (t.expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    if dilation == 1:
        return _banded(q, k, v, half, causal, off, c)
    out = q.new_zeros(*batch, q.shape[-2], v.shape[-1])
    for r, i0, off_r in _residue_classes(q.shape[-2], k.shape[-2], dilation, off):
        out[..., i0::dilation, :] = _banded(
            q[..., i0::dilation, :], k[..., r::dilation, :], v[..., r::dilation, :], half, causal, off_r, c
        )
    return out


def _banded(q: Tensor, k: Tensor, v: Tensor, half: int, causal: bool, off: int, c: float) -> Tensor:
    """Window attention by query blocks; q, k, v share the batch shape. Returns (..., n_q, d_v)."""
    *batch, n_q, d_k = q.shape
    n_k, d_v = k.shape[-2], v.shape[-1]
    B = max(1, min(BLOCK, n_q))
    nb = -(-n_q // B)  # number of query blocks
    bias, empty = _band_layout(n_q, n_k, half, causal, off, B, q.dtype, q.device)
    L = bias.shape[-1]
    if nb * B != n_q:
        q = F.pad(q, (0, 0, 0, nb * B - n_q))
    Q_b = q.reshape(-1, nb, B, d_k)  # (prod(batch), nb, B, d_k)
    # The overlapping key blocks are strided views of one padded copy of K and V
    # (unfold); positions outside [0, n_k) are zeros excluded by the bias.
    start, T = off - half, (nb - 1) * B + L
    K_b = _padded(k, start, T).reshape(-1, T, d_k).unfold(1, L, B).transpose(-1, -2)  # (P, nb, L, d_k)
    V_b = _padded(v, start, T).reshape(-1, T, d_v).unfold(1, L, B).transpose(-1, -2)  # (P, nb, L, d_v)
    # A float mask expanded to the full 4-D shape (a stride-0 view) keeps SDPA on its
    # fused CPU kernel; a 3-D or boolean mask is 3-4x slower here (measured).
    attn_mask = bias.expand(Q_b.shape[0], nb, B, L)
    out = F.scaled_dot_product_attention(Q_b, K_b, V_b, attn_mask=attn_mask, scale=c)  # (P, nb, B, d_v)
    if empty is not None:
        out = out.masked_fill(empty, 0.0)
    out = out.reshape(*batch, nb * B, d_v)
    return out if nb * B == n_q else out[..., :n_q, :]


@table_cache(maxsize=16)
def _band_layout(n_q: int, n_k: int, half: int, causal: bool, off: int, B: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor | None]:
    """Additive bias (nb, B, L) and empty rows (nb, B, 1) or None of the banded path.

    Block b holds queries b B .. b B + B - 1 at positions p = i + off and needs keys
    j = p_0 - half + t, t in [0, L), L = B + half + (0 if causal else half); query a
    of the block sees key t iff a <= t <= a + half + hi and j lies in [0, n_k).

    So row i (position p = i + off, padding rows i >= n_q included) sees the keys
    [p - half, p + hi] ∩ [0, n_k), and some row is empty iff the first one ends before key 0
    or the last one starts after key n_k - 1: decided from the sizes, reading no tensor.
    """
    hi = 0 if causal else half
    nb, L = -(-n_q // B), B + half + hi
    has_empty = off + hi < 0 or off + nb * B - 1 - half > n_k - 1
    j = (torch.arange(nb) * B + off - half)[:, None] + torch.arange(L)  # (nb, L)
    valid = (j >= 0) & (j < n_k)
    a = torch.arange(B)[:, None]
    t = torch.arange(L)[None, :]
    allowed = ((t >= a) & (t <= a + half + hi))[None] & valid[:, None, :]  # (nb, B, L)
    empty = ~allowed.any(dim=-1, keepdim=True)  # (nb, B, 1): opened below, zeroed after (no 0/0)
    # in place: at the peak the (nb, B, L) bias and one boolean of that shape, as window.py's check counts
    blocked = allowed.logical_or_(empty).logical_not_()
    bias = torch.zeros(blocked.shape, dtype=dtype).masked_fill_(blocked, float("-inf"))
    del allowed, blocked
    return bias.to(device), (empty.to(device) if has_empty else None)


def _padded(x: Tensor, start: int, T: int) -> Tensor:
    """x (..., n_k, d) placed on positions t = j - start, t in [0, T), zeros elsewhere."""
    n_k = x.shape[-2]
    j0 = min(max(start, 0), n_k)
    j1 = max(min(max(start + T, 0), n_k), j0)
    left = min(max(j0 - start, 0), T)
    return F.pad(x[..., j0:j1, :], (0, 0, left, T - left - (j1 - j0)))
