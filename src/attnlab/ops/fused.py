"""Exact softmax attention on PyTorch's fused kernels, with causal and key-padding masks
that never become an n_q x n_k tensor.

    out = softmax(c Q K^T + M) V,   M_ij = 0 where key j is allowed for query i, else -inf   (1)

with the allowed set of :mod:`attnlab.ops.masks`: causal (top-left j <= i, or bottom-right
j <= i + n_k - n_q) and/or key padding (j not padded in this batch element). A row with
no allowed key is 0, with zero gradient (the convention of :mod:`attnlab.ops.softmax`).

How each case reaches a fused kernel (``F.scaled_dot_product_attention``):

- no mask: the plain call.
- causal, top-left: ``is_causal=True`` (PyTorch's alignment); no row is empty.
- causal, bottom-right with n_q <= n_k: PyTorch's lower-right causal bias
  (``torch.nn.attention.bias.causal_lower_right``), which dispatches to the fused kernels.
- causal, bottom-right with n_q > n_k: the first s = n_q - n_k rows see no key (they are 0);
  row i >= s sees j <= i - s, which is top-left causal attention of Q[s:] against K.
- key padding alone: a boolean mask of shape (B, 1, ..., 1, n_k), broadcast by the kernel,
  never expanded.
- causal and key padding: no fused call takes both a causal flag and a mask, so the padding
  goes into the logits through one extra feature. With

      Q' = [Q | 1],   K' = [K | -p pad / c],   V' = [V | 0],

  the logits c Q'K'^T equal c Q K^T - p pad_j: unchanged for kept keys (the extra term is an
  exact 0) and lowered by p for padded ones. The penalty

      p = 2 c max_i ||q_i|| max_j ||k_j|| + 1000  >=  (largest logit gap) + 1000

  (Cauchy-Schwarz) puts a padded key at least 1000 below the row's largest kept logit,
  and exp(-1000) is exactly 0 in every floating-point format (float64 underflows below
  exp(-745)), so padded keys get weight exactly 0 and their keys and values exactly zero
  gradient. The causal flag does the rest. The extra column costs about (d+1)/d of the
  kernel's work; on CUDA the head size is rounded up to a multiple of 8, which the fused
  kernels need.

Rows that no key is allowed for are found from the first kept key of each batch element,
f_b, in O(B n): with the causal offset o (0 top-left, n_k - n_q bottom-right), row i is
empty iff i + o < f_b (iff every key is padded, without causality). They are computed
like the others (finite) and then set to 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.ops.masks import CausalAlignment

PADDING_MARGIN = 1000.0  # exp(-1000) == 0 in float16, bfloat16, float32 and float64


def fused_attention(q: Tensor, k: Tensor, v: Tensor, *, scale: float,
                    alignment: CausalAlignment | None = None, key_padding_mask: Tensor | None = None,
                    enable_gqa: bool = False) -> Tensor:
    """softmax(c Q K^T + M) V of eq. (1) on the fused kernels; memory linear in n.

    q, k, v: (B, ..., n_q, d), (B, ..., n_k, d), (B, ..., n_k, d_v), leading axes broadcast;
    scale: c; alignment: None, "top_left" or "bottom_right"; key_padding_mask: bool (B, n_k),
    True marks padding (validated by the caller); enable_gqa: k, v have H_kv heads on axis -3 shared
    by q's H (PyTorch's ``enable_gqa``; K and V are repeated only where the kernel takes no flag:
    key padding or a lower-right causal mask). Returns (B, ..., n_q, d_v).
    """
    n_q, n_k = q.shape[-2], k.shape[-2]
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        plain = key_padding_mask is None and (alignment is None or alignment == "top_left"
                                              or (alignment == "bottom_right" and n_q == n_k))
        if plain:
            causal = alignment is not None
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)
        G = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(G, dim=-3), v.repeat_interleave(G, dim=-3)
    if alignment == "bottom_right" and n_q > n_k:
        s = n_q - n_k  # rows 0..s-1 see no key; row i >= s sees j <= i - s
        tail = fused_attention(q[..., s:, :], k, v, scale=scale, alignment="top_left",
                               key_padding_mask=key_padding_mask)  # (..., n_k, d_v)
        head = tail.new_zeros(*tail.shape[:-2], s, tail.shape[-1])
        return torch.cat([head, tail], dim=-2)
    if alignment == "bottom_right" and n_q == n_k:
        alignment = "top_left"
    if key_padding_mask is None:
        if alignment is None:
            return F.scaled_dot_product_attention(q, k, v, scale=scale)
        if alignment == "top_left":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=_lower_right(n_q, n_k), scale=scale)

    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    keep = ~key_padding_mask  # (B, n_k)
    offset = None if alignment is None else (0 if alignment == "top_left" else n_k - n_q)
    empty = _empty_rows(keep, n_q, offset, len(batch))  # (B, 1, ..., 1, n_q or 1, 1)
    if alignment is None:
        # open the batch elements with no kept key (their rows are zeroed below)
        allowed = (keep | ~keep.any(dim=-1, keepdim=True)).reshape(_key_shape(keep, len(batch)))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=scale)
    else:
        qp, kp, vp = _penalized(q, k, v, key_padding_mask, scale, batch)
        if alignment == "top_left":
            out = F.scaled_dot_product_attention(qp, kp, vp, is_causal=True, scale=scale)
        else:
            out = F.scaled_dot_product_attention(qp, kp, vp, attn_mask=_lower_right(n_q, n_k), scale=scale)
        out = out[..., : v.shape[-1]]
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return out.masked_fill(empty, 0.0)  # the kernel's backward keeps its output: no in-place write
    return out.masked_fill_(empty, 0.0)


def _lower_right(n_q: int, n_k: int) -> Tensor:
    from torch.nn.attention.bias import causal_lower_right

    return causal_lower_right(n_q, n_k)


def _key_shape(keep: Tensor, n_batch: int) -> tuple[int, ...]:
    """(B, 1, ..., 1, 1, n_k): a key mask broadcast over the other batch axes and the queries."""
    return (keep.shape[0],) + (1,) * (n_batch - 1) + (1, keep.shape[-1])


def _empty_rows(keep: Tensor, n_q: int, offset: int | None, n_batch: int) -> Tensor:
    """Boolean (B, 1, ..., 1, n_q, 1) (causal) or (B, 1, ..., 1, 1, 1): rows with no allowed key."""
    n_k = keep.shape[-1]
    any_kept = keep.any(dim=-1)  # (B,)
    if offset is None:
        return (~any_kept).reshape((keep.shape[0],) + (1,) * (n_batch + 1))
    first = torch.where(any_kept, keep.to(torch.int8).argmax(dim=-1), n_k + n_q)  # f_b, (B,)
    rows = torch.arange(n_q, device=keep.device) + offset  # i + o, (n_q,)
    return (rows[None, :] < first[:, None]).reshape((keep.shape[0],) + (1,) * (n_batch - 1) + (n_q, 1))


def _penalized(q: Tensor, k: Tensor, v: Tensor, key_padding_mask: Tensor, scale: float,
               batch: tuple[int, ...]) -> tuple[Tensor, Tensor, Tensor]:
    """Q' = [Q | 1], K' = [K | -p pad / c], V' = [V | 0] (module docstring), all three padded
    with zeros to one head size D (the fused kernels want q, k and v alike): D = d + 1 on the
    CPU, the next multiple of 8 above d on CUDA, and at least d_v."""
    d, d_v = q.shape[-1], v.shape[-1]
    D = d + 1 if q.device.type == "cpu" else 8 * (d // 8 + 1)
    D = max(D, d_v)
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    with torch.no_grad():  # p is a constant of the construction, not a function of q, k
        q_norm = q.detach().to(acc).norm(dim=-1).amax()
        k_norm = k.detach().to(acc).norm(dim=-1).amax()
        penalty = 2 * scale * q_norm * k_norm + PADDING_MARGIN  # p, a 0-d tensor: no host sync
        column = (-penalty / scale).clamp(min=-torch.finfo(q.dtype).max / 4).to(q.dtype)  # -p / c
    n_q, n_k = q.shape[-2], k.shape[-2]
    pad = key_padding_mask.to(q.dtype).reshape(_key_shape(key_padding_mask, len(batch)))  # (B, 1.., 1, n_k)
    k_extra = (pad.transpose(-1, -2) * column).expand(*batch, n_k, 1)  # -p pad_j / c, (..., n_k, 1)
    qp = torch.cat([q.expand(*batch, n_q, d), q.new_ones(*batch, n_q, 1),
                    q.new_zeros(*batch, n_q, D - d - 1)], dim=-1)  # (..., n_q, D)
    kp = torch.cat([k.expand(*batch, n_k, d), k_extra, k.new_zeros(*batch, n_k, D - d - 1)], dim=-1)
    vp = torch.cat([v.expand(*batch, n_k, d_v), v.new_zeros(*batch, n_k, D - d_v)], dim=-1)  # (..., n_k, D)
    return qp, kp, vp
