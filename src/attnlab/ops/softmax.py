"""Scaled dot-product (softmax) attention.

    Attention(Q, K, V) = softmax(c * Q K^T + M) V                              (1)

math-behind-transformers §1.2.2 eq. (5)-(6) and §1.2.5 eq. (10);
rank-collapse notes §2.1. Shapes:

    Q: (..., n_q, d_k)    K: (..., n_k, d_k)    V: (..., n_k, d_v)
    weights P: (..., n_q, n_k)                  output: (..., n_q, d_v)

The scale c is ``"1/sqrt(d)"`` (default, c = 1/sqrt(d_k)), ``"1/d"``
(c = 1/d_k, as eq. (5) of the math text literally prints: a typo for
1/sqrt(k), which §1.2.3 motivates, but a legitimate choice), ``"none"`` (c = 1,
the logic text and the memorization paper) or any positive float.

A fully masked row (no key allowed) has weights 0 and output 0, with finite
gradients. This is a definition, not a limit: softmax over an empty set is
undefined, and NaN would poison every later layer.

Without ``return_weights`` the computation goes through PyTorch's fused
``scaled_dot_product_attention``, which never materialises the n_q x n_k
weights; causal and key-padding masks reach it without an n_q x n_k mask either
(:mod:`attnlab.ops.fused`), so time and memory stay those of the fused kernel.
Only an arbitrary dense ``mask`` is handed to the kernel as a tensor. With
``return_weights`` the explicit path below is used. Both agree to the dtype's
tolerance (tests/ops/test_conformance.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.fused import fused_attention
from attnlab.ops.masks import check_key_padding_mask, combine_masks, resolve_causal
from attnlab.ops.memory import check_dense_fits

Scale = Union[str, float, None]
SCALE_NAMES = ("1/sqrt(d)", "1/d", "none")


@dataclass(frozen=True)
class AttentionOutput:
    """Output of an attention operator.

    output:      (..., n_q, d_v)
    weights:     (..., n_q, n_k) attention weights P, or None when not requested.
    diagnostics: numbers an operator reports about its own numerics (e.g. linear
                 attention's smallest denominator), a read-only mapping that reads the
                 device only when a value is accessed (:mod:`attnlab.ops.diagnostics`), or None.
    """

    output: Tensor
    weights: Tensor | None = None
    diagnostics: Mapping[str, float | int] | None = None


def resolve_scale(scale: Scale, d_k: int) -> float:
    """The multiplier c applied to Q K^T."""
    if scale is None or scale == "1/sqrt(d)":
        return 1.0 / math.sqrt(d_k)
    if scale == "1/d":
        return 1.0 / d_k
    if scale == "none":
        return 1.0
    if isinstance(scale, str):
        raise ConfigError(
            f"unknown scale {scale!r}: use one of {', '.join(SCALE_NAMES)} or a positive number"
        )
    c = float(scale)
    if not math.isfinite(c) or c <= 0:
        raise ConfigError(f"scale must be a positive finite number, got {scale!r}")
    return c


FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    """The one input check of every attention operator: a ConfigError (one line, saying what to change)
    for a non-tensor, a non-floating dtype, mixed dtypes or devices, a missing axis, a mismatched size,
    non-finite entries, or (below float64) logits q . k that overflow the dtype. Empty sizes are valid
    (:func:`empty_attention`). The finiteness and overflow checks read the values, so they run on the
    CPU only (on a GPU they would wait for the device at every call)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, Tensor):
            raise ConfigError(f"{name} must be a torch.Tensor, got {type(x).__name__}: convert it with "
                              "torch.as_tensor(x, dtype=torch.float32)")
        if x.dtype not in FLOATS:
            raise ConfigError(f"{name} is a {x.dtype} tensor; attention needs floating-point inputs: cast it with "
                              f"{name}.float() (or .double() for verification)")
    if not (q.device == k.device == v.device):
        raise ConfigError(f"q, k, v are on different devices ({q.device}, {k.device}, {v.device}): move them "
                          "to one with .to(device)")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ConfigError("q, k, v must have at least two axes (..., n, d)")
    if q.shape[-1] != k.shape[-1]:
        raise ConfigError(
            f"query and key feature sizes differ: q has d_k={q.shape[-1]}, k has d_k={k.shape[-1]}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ConfigError(
            f"keys and values must have the same length: k has n_k={k.shape[-2]}, v has {v.shape[-2]}"
        )
    if not (q.dtype == k.dtype == v.dtype):
        raise ConfigError(f"q, k, v dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
    if q.device.type == "cpu" and q.numel() and k.numel():
        check_values(q, k, v)


def _extremes(x: Tensor) -> tuple[float, float]:
    """(min x, max x) in one pass over x, no copy; NaN anywhere makes both NaN, inf shows as ±inf."""
    lo, hi = torch.aminmax(x.detach())
    return float(lo), float(hi)


def check_values(q: Tensor, k: Tensor, v: Tensor) -> None:
    """The value half of :func:`check_qkv`: every entry finite, and (below float64) no logit q . k beyond
    the dtype's largest value. One read of each tensor (``torch.aminmax``: min and max in a single pass,
    no copy, NaN propagating), from which both tests follow:

        finite(x)  <=>  min x and max x are finite
        |q . k| <= max|q| max|k| d_k,   max|x| = max(-min x, max x)

    so the checks cost three memory-bound reductions, a few per cent of the O(n^2 d) kernel at n >= 512
    (benchmarks/bench_input_checks.py). Only when a tensor fails is it read again, to count its
    non-finite entries for the message."""
    top: dict[str, float] = {}
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not x.numel():
            continue
        lo, hi = _extremes(x)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            bad = x.numel() - int(torch.isfinite(x).sum())
            raise ConfigError(f"{name} holds {bad} non-finite value(s) (NaN or inf): attention of non-finite "
                              "inputs is undefined; find where they come from")
        top[name] = max(-lo, hi)
    if q.dtype != torch.float64:
        bound = top["q"] * top["k"] * q.shape[-1]
        largest = torch.finfo(q.dtype).max
        if bound > largest:
            raise ConfigError(f"the logits q . k can overflow {q.dtype} (max |q| max |k| d_k = {bound:.3g} > "
                              f"{largest:.3g}): scale the inputs down or use float64")


def empty_attention(q: Tensor, k: Tensor, v: Tensor, return_weights: bool = False) -> AttentionOutput | None:
    """The result of attention with no query (n_q = 0: an empty output) or no key (n_k = 0: every row is
    empty, so every output row is 0, the convention of this module), or None when neither is empty."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    if n_q and n_k:
        return None
    batch = batch_shape(q, k, v)
    out = q.new_zeros(*batch, n_q, v.shape[-1])
    return AttentionOutput(out, q.new_zeros(*batch, n_q, n_k) if return_weights else None)


def batch_shape(q: Tensor, k: Tensor, v: Tensor) -> tuple[int, ...]:
    """The broadcast leading shape of q, k, v (everything but the last two axes)."""
    try:
        return tuple(torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]))
    except RuntimeError:
        raise ConfigError(
            f"q, k, v batch shapes do not broadcast: {tuple(q.shape[:-2])}, "
            f"{tuple(k.shape[:-2])}, {tuple(v.shape[:-2])}"
        ) from None


def masked_softmax(logits: Tensor, allowed: Tensor | None) -> Tensor:
    """Row softmax over allowed entries; rows with no allowed entry give 0.

    softmax is shift invariant (rank-collapse notes §2.1), so torch.softmax
    subtracts the row maximum and never overflows; it saturates to an exact
    one-hot only when the logit gap passes ~745 (float64) / ~104 (float32).
    """
    if allowed is None:
        return torch.softmax(logits, dim=-1)
    allowed = allowed.expand_as(logits)
    empty = ~allowed.any(dim=-1, keepdim=True)  # (..., n_q, 1)
    # Rows with nothing allowed are computed over zeros (finite, no NaN) and
    # then multiplied by 0, so both the value and the gradient are 0.
    logits = logits.masked_fill(~allowed | empty, float("-inf")).masked_fill(empty, 0.0)
    return torch.softmax(logits, dim=-1).masked_fill(empty, 0.0)


def attention_logits(q: Tensor, k: Tensor, scale: Scale = "1/sqrt(d)") -> Tensor:
    """c * Q K^T, shape (..., n_q, n_k)."""
    return (q @ k.transpose(-2, -1)) * resolve_scale(scale, q.shape[-1])


def softmax_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | None = None,
    causal: bool | str | None = None,
    key_padding_mask: Tensor | None = None,
    scale: Scale = "1/sqrt(d)",
    return_weights: bool = False,
    enable_gqa: bool = False,
) -> AttentionOutput:
    """softmax(c Q K^T + M) V, eq. (1) above.

    Parameters
    ----------
    q, k, v : (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
    mask : bool (True = may attend) or additive float, broadcastable to (..., n_q, n_k)
    causal : False, True (n_q == n_k only), "top_left" or "bottom_right"
    key_padding_mask : bool (B, n_k), True marks padding
    scale : "1/sqrt(d)", "1/d", "none" or a positive float
    return_weights : also return P (uses the explicit path)
    enable_gqa : grouped-query attention: q (..., H, n_q, d_k) against k, v (..., H_kv, n_k, .),
        H a multiple of H_kv, query head h reading key/value head h // (H / H_kv)
        (:mod:`attnlab.ops.multihead`); K and V are not repeated in memory except on the fused
        path with key padding and a causal mask. Weights and output have H heads.
    """
    if enable_gqa:
        return _grouped(q, k, v, mask=mask, causal=causal, key_padding_mask=key_padding_mask, scale=scale,
                        return_weights=return_weights)
    check_qkv(q, k, v)
    return _softmax(q, k, v, mask=mask, causal=causal, key_padding_mask=key_padding_mask, scale=scale,
                    return_weights=return_weights)


def _softmax(q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None, causal: bool | None, key_padding_mask: Tensor | None, scale: float | str | None,
             return_weights: bool) -> AttentionOutput:
    """softmax_attention on inputs :func:`check_qkv` has passed."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    c = resolve_scale(scale, q.shape[-1])
    if not return_weights and mask is None:  # structured masks only: no n_q x n_k tensor
        batch = batch_shape(q, k, v)
        alignment = resolve_causal(causal, n_q, n_k)
        if key_padding_mask is not None:
            check_key_padding_mask(key_padding_mask, batch, n_k)
            key_padding_mask = key_padding_mask.to(q.device)
        return AttentionOutput(fused_attention(q, k, v, scale=c, alignment=alignment,
                                               key_padding_mask=key_padding_mask))
    if return_weights:
        check_dense_fits(q, k, v, copies=2, what="softmax_attention(return_weights=True): the logits and the weights P")
    allowed, additive = combine_masks(
        n_q,
        n_k,
        batch_shape=batch_shape(q, k, v),
        mask=mask,
        causal=causal,
        key_padding_mask=key_padding_mask,
        device=q.device,
    )
    if return_weights:
        logits = (q @ k.transpose(-2, -1)) * c  # (..., n_q, n_k)
        if additive is not None:
            logits = logits + additive.to(logits.dtype)
        weights = masked_softmax(logits, allowed)
        return AttentionOutput(weights @ v, weights)
    return AttentionOutput(_fused(q, k, v, allowed, additive, c))


def _grouped(q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None, causal: bool | None, key_padding_mask: Tensor | None, scale: float | str | None,
             return_weights: bool) -> AttentionOutput:
    """softmax_attention with H_kv key/value heads shared by H query heads (``enable_gqa``)."""
    if q.ndim < 3 or k.ndim < 3 or v.ndim < 3:
        raise ConfigError("grouped-query attention needs a head axis: q (..., H, n_q, d), k and v (..., H_kv, n_k, d)")
    H, H_kv = q.shape[-3], k.shape[-3]
    if v.shape[-3] != H_kv or H_kv < 1 or H % H_kv:
        raise ConfigError(f"grouped-query attention needs k and v with the same number of heads H_kv dividing the "
                          f"{H} query heads, got k {H_kv} and v {v.shape[-3]}")
    check_qkv(q, k, v)
    if H_kv == H:
        return _softmax(q, k, v, mask=mask, causal=causal, key_padding_mask=key_padding_mask, scale=scale,
                        return_weights=return_weights)
    if not return_weights and mask is None:
        c = resolve_scale(scale, q.shape[-1])
        try:
            batch = tuple(torch.broadcast_shapes(q.shape[:-2], (*k.shape[:-3], H), (*v.shape[:-3], H)))
        except RuntimeError:
            raise ConfigError(f"q, k, v batch shapes do not broadcast: {tuple(q.shape[:-3])}, "
                              f"{tuple(k.shape[:-3])}, {tuple(v.shape[:-3])}") from None
        alignment = resolve_causal(causal, q.shape[-2], k.shape[-2])
        if key_padding_mask is not None:
            check_key_padding_mask(key_padding_mask, batch, k.shape[-2])
            key_padding_mask = key_padding_mask.to(q.device)
        return AttentionOutput(fused_attention(q, k, v, scale=c, alignment=alignment,
                                               key_padding_mask=key_padding_mask, enable_gqa=True))
    G = H // H_kv  # the group as a broadcast axis: (..., H_kv, G, n, d) against (..., H_kv, 1, n, d)
    if mask is not None and mask.ndim >= 3:
        mask = mask.unflatten(-3, (H_kv, G)) if mask.shape[-3] == H else mask.unsqueeze(-3)
    res = _softmax(q.unflatten(-3, (H_kv, G)), k.unsqueeze(-3), v.unsqueeze(-3), mask=mask, causal=causal,
                   key_padding_mask=key_padding_mask, scale=scale, return_weights=return_weights)
    return AttentionOutput(res.output.flatten(-4, -3), None if res.weights is None else res.weights.flatten(-4, -3))


def _fused(
    q: Tensor, k: Tensor, v: Tensor, allowed: Tensor | None, additive: Tensor | None, c: float
) -> Tensor:
    """PyTorch's fused kernel given a dense mask (``mask=``), with attnlab's fully-masked-row
    semantics. The mask keeps its own (broadcastable) shape: expanding it over the batch and heads
    would cost a pass over B H n_q n_k entries and slow the kernel down (measured once on 2 loaded
    cores: SDPA given a (1, 8, 1024, 1024) mask 96 ms, given the shared (1024, 1024) one 60 ms). Rows with no
    allowed key are opened, so the kernel never divides 0 by 0, and their output set to 0; on the
    CPU this happens only when such a row exists."""
    if allowed is None and additive is None:
        return F.scaled_dot_product_attention(q, k, v, scale=c)
    empty = None
    if allowed is not None:
        # (..., n_q, 1) in the mask's own batch shape; a max over bytes is ~30x torch.any's pass on CPU
        empty = allowed.view(torch.uint8).amax(dim=-1, keepdim=True) == 0
        if allowed.device.type == "cpu" and not bool(empty.any()):
            empty = None
        else:
            allowed = allowed | empty
    if additive is not None:
        attn_mask = additive.to(q.dtype)
        if allowed is not None:
            attn_mask = torch.where(allowed, attn_mask, float("-inf"))
        if empty is not None:
            attn_mask = attn_mask.masked_fill(empty, 0.0)
    else:
        attn_mask = allowed
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=c)
    if empty is not None:
        out = out.masked_fill(empty, 0.0)
    return out
