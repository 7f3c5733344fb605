"""Multi-head attention module in paper notation (math-behind-transformers §1.2.2, eq. 3-7).

    Q_h = X W_Q,h + b_Q,h,  K_h = Y W_K,h + b_K,h,  V_h = Y W_V,h + b_V,h
    head_h = softmax(c Q_h K_h^T + M) V_h                                  eq. (5), (10)
    MultiHead(X, Y) = Concat(head_1, ..., head_H) W_O + b_O = sum_h head_h W_O,h + b_O   eq. (7)

Parameters, per head (the text's W_{h,q}, W_{h,k}, W_{h,v}, W_{c,h}):
    W_Q: (H, d_model, d_head)   W_K: (H_kv, d_model, d_head)   W_V: (H_kv, d_model, d_v)
    W_O: (H, d_v, d_model)      b_Q: (H, d_head)   b_K: (H_kv, d_head)   b_V: (H_kv, d_v)   b_O: (d_model,)

H_kv = H (``n_kv_heads`` None) is the text's multi-head attention; H_kv < H is grouped-query
attention (query head h reads key/value head h // (H / H_kv), :mod:`attnlab.ops.multihead`).
A ``qkv_transform`` passed to :meth:`MultiHeadAttention.forward` acts on the projected queries,
keys and values (the rotary embedding: :class:`attnlab.nn.positional.QKVTransform`).

Hook points (:class:`attnlab.nn.hooks.HookPoint`; TransformerLens' names and orientation, B batch,
n positions, H query heads, H_kv key/value heads):

    hook_q            (B, n_q, H, d_head)     X W_Q,h + b_Q,h, before any qkv_transform
    hook_k            (B, n_k, H_kv, d_head)  Y W_K,g + b_K,g, per key/value head (grouped-query: H_kv < H)
    hook_v            (B, n_k, H_kv, d_v)     Y W_V,g + b_V,g
    hook_rot_q        (B, n_q, H, d_head)     the queries after the qkv_transform (RoPE); = hook_q without one
    hook_rot_k        (B, n_k, H_kv, d_head)  the keys after the qkv_transform
    hook_attn_scores  (B, H, n_q, n_k)        c q_h k_g(h)^T + M, masked pairs -inf
    hook_pattern      (B, H, n_q, n_k)        P_h = softmax(scores)
    hook_z            (B, n_q, H, d_v)        z_h = P_h v_g(h), before W_O

As in TransformerLens, hook_q and hook_k come before the rotary embedding and hook_rot_q, hook_rot_k
after it. With no hook attached, :meth:`MultiHeadAttention.forward` is
:func:`attnlab.ops.multihead.multi_head_attention` unchanged (the fused kernel unless weights are asked
for); hooks on q, k, v or z keep the fused kernel; only a hook on the scores or the pattern takes the
explicit path (:func:`attnlab.ops.multihead.softmax_heads_exposed`). A hook's tensor is a view in
the orientation above; a replacement is turned back into attnlab's (B, H, n, d) layout.

Scale: eq. (5)/(6) print softmax(Q K^T / k), while §1.2.3 motivates 1/sqrt(k)
and eq. (10) uses it; the default is c = 1/sqrt(d_head), "1/d" gives the
literal eq. (5).

Eq. (3) builds the heads by slicing full d x d matrices into H column blocks
of width k = d/H: W_{h,q} = W_q[:, (h-1)k : hk], and W_c into H row blocks.
:func:`split_heads` / :func:`merge_heads` do this and its inverse. Typos in
eq. (3): the last value block is taken from W_k (it must be W_v), and the
blocks are (d, k), not (n, k).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.nn.hooks import HookPoint
from attnlab.ops.multihead import (QKVMap, attend_heads, check_inputs, combine_heads, multi_head_attention, ov_circuit,
                                   project, qk_circuit, softmax_heads_exposed)
from attnlab.ops.softmax import AttentionOutput, Scale, resolve_scale, softmax_attention
from attnlab.ops.unnormalized import unnormalized_attention

ATTENTIONS = {"softmax": softmax_attention, "unnormalized": unnormalized_attention}
HOOK_POINTS = ("hook_q", "hook_k", "hook_v", "hook_rot_q", "hook_rot_k", "hook_attn_scores", "hook_pattern", "hook_z")


def split_heads(
    W_q: Tensor, W_k: Tensor, W_v: Tensor, W_c: Tensor, n_heads: int
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Eq. (3): full W_q, W_k (d, H d_head), W_v (d, H d_v), W_c (H d_v, d) -> per-head tensors.

    Returns W_Q, W_K (H, d, d_head), W_V (H, d, d_v), W_O (H, d_v, d) with
    W_Q[h] = W_q[:, h d_head : (h+1) d_head] and W_O[h] = W_c[h d_v : (h+1) d_v, :].
    """
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_c", W_c)):
        if W.ndim != 2:
            raise ConfigError(f"{name} must be a 2-D matrix, got shape {tuple(W.shape)}")
    d = W_q.shape[0]
    if W_q.shape[1] % n_heads or W_v.shape[1] % n_heads:
        raise ConfigError(
            f"n_heads={n_heads} must divide the column counts of W_q ({W_q.shape[1]}) and W_v ({W_v.shape[1]})"
        )
    if W_k.shape != W_q.shape or W_v.shape[0] != d or W_c.shape != (W_v.shape[1], d):
        raise ConfigError(
            f"expected W_k {tuple(W_q.shape)} like W_q, W_v ({d}, H d_v), W_c (H d_v, {d}); got "
            f"W_k {tuple(W_k.shape)}, W_v {tuple(W_v.shape)}, W_c {tuple(W_c.shape)}"
        )
    H = n_heads
    W_O = W_c.reshape(H, W_c.shape[0] // H, d)  # (H, d_v, d)
    return column_blocks(W_q, H), column_blocks(W_k, H), column_blocks(W_v, H), W_O


def column_blocks(W: Tensor, n_heads: int) -> Tensor:
    """Eq. (3)'s column blocks: W (d, n_heads k) -> (n_heads, d, k), block h = W[:, h k:(h+1) k]."""
    d = W.shape[0]
    return W.reshape(d, n_heads, W.shape[1] // n_heads).permute(1, 0, 2)


def merge_heads(W_Q: Tensor, W_K: Tensor, W_V: Tensor, W_O: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Inverse of :func:`split_heads`: per-head tensors -> full W_q, W_k, W_v, W_c."""
    H, d, _ = W_Q.shape

    def cols(W: Tensor) -> Tensor:
        return W.permute(1, 0, 2).reshape(d, W.shape[0] * W.shape[2])  # (d, heads x width); K, V may have H_kv

    return cols(W_Q), cols(W_K), cols(W_V), W_O.reshape(H * W_O.shape[1], d)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with per-head parameters W_Q, W_K, W_V, W_O (module docstring)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_head: int | None = None,
        d_v: int | None = None,
        bias: bool = True,
        scale: Scale = "1/sqrt(d)",
        attention: str = "softmax",
        n_kv_heads: int | None = None,
    ):
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ConfigError(f"d_model and n_heads must be positive, got {d_model}, {n_heads}")
        if d_head is None:
            if d_model % n_heads:
                raise ConfigError(
                    f"d_model={d_model} is not divisible by n_heads={n_heads}: pass d_head explicitly"
                )
            d_head = d_model // n_heads
        d_v = d_head if d_v is None else d_v
        if d_head <= 0 or d_v <= 0:
            raise ConfigError(f"d_head and d_v must be positive, got {d_head}, {d_v}")
        if attention not in ATTENTIONS:
            raise UnknownNameError(f"unknown attention {attention!r}: choose one of {', '.join(ATTENTIONS)}")
        resolve_scale(scale, d_head)  # fail early on a bad scale
        H = n_heads
        H_kv = H if n_kv_heads is None else n_kv_heads
        if isinstance(H_kv, bool) or not isinstance(H_kv, int) or H_kv <= 0 or H % H_kv:
            raise ConfigError(f"n_kv_heads must be a positive divisor of n_heads={H}, got {n_kv_heads!r}")
        self.d_model, self.n_heads, self.d_head, self.d_v = d_model, n_heads, d_head, d_v
        self.n_kv_heads = H_kv
        self.scale, self.attention = scale, attention
        self.W_Q = nn.Parameter(torch.empty(H, d_model, d_head))
        self.W_K = nn.Parameter(torch.empty(H_kv, d_model, d_head))
        self.W_V = nn.Parameter(torch.empty(H_kv, d_model, d_v))
        self.W_O = nn.Parameter(torch.empty(H, d_v, d_model))
        if bias:
            self.b_Q = nn.Parameter(torch.zeros(H, d_head))
            self.b_K = nn.Parameter(torch.zeros(H_kv, d_head))
            self.b_V = nn.Parameter(torch.zeros(H_kv, d_v))
            self.b_O = nn.Parameter(torch.zeros(d_model))
        else:
            self.b_Q = self.b_K = self.b_V = self.b_O = None
        for point in HOOK_POINTS:  # module docstring
            setattr(self, point, HookPoint())
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """W_Q, W_K, W_V ~ N(0, 1/d_model); W_O ~ N(0, 1/(H d_v)); biases 0."""
        with torch.no_grad():
            for W in (self.W_Q, self.W_K, self.W_V):
                W.normal_(0.0, 1.0 / math.sqrt(self.d_model))
            self.W_O.normal_(0.0, 1.0 / math.sqrt(self.n_heads * self.d_v))
            for b in (self.b_Q, self.b_K, self.b_V, self.b_O):
                if b is not None:
                    b.zero_()

    @classmethod
    def from_full(
        cls, W_q: Tensor, W_k: Tensor, W_v: Tensor, W_c: Tensor, n_heads: int, **kwargs
    ) -> "MultiHeadAttention":
        """A bias-free module whose heads are the eq. (3) column blocks of W_q, W_k, W_v and row blocks of W_c."""
        W_Q, W_K, W_V, W_O = split_heads(W_q, W_k, W_v, W_c, n_heads)
        m = cls(W_q.shape[0], n_heads, d_head=W_Q.shape[2], d_v=W_V.shape[2], bias=False, **kwargs)
        m = m.to(W_q.dtype)
        with torch.no_grad():
            for p, W in ((m.W_Q, W_Q), (m.W_K, W_K), (m.W_V, W_V), (m.W_O, W_O)):
                p.copy_(W)
        return m

    def to_full(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(W_q, W_k, W_v, W_c) of eq. (3)/(7), shapes (d, H d_head) x2, (d, H d_v), (H d_v, d)."""
        return merge_heads(self.W_Q, self.W_K, self.W_V, self.W_O)

    def qk_circuit(self) -> Tensor:
        """W_QK,h = W_Q,h W_K,g(h)^T, (H, d_model, d_model): logits_h = c X W_QK,h Y^T (+ bias terms)."""
        return qk_circuit(self.W_Q, self.W_K)

    def ov_circuit(self) -> Tensor:
        """W_OV,h = W_V,g(h) W_O,h, (H, d_model, d_model): head h writes P_h Y W_OV,h (+ bias terms)."""
        return ov_circuit(self.W_V, self.W_O)

    def forward(
        self,
        x_q: Tensor,
        x_kv: Tensor | None = None,
        *,
        mask: Tensor | None = None,
        causal: bool | str | None = None,
        key_padding_mask: Tensor | None = None,
        return_weights: bool = False,
        attention: str | None = None,
        qkv_transform: QKVMap | None = None,
    ) -> AttentionOutput:
        """x_q: (..., n_q, d_model), x_kv: (..., n_k, d_model) (default x_q: self-attention).

        Returns output (..., n_q, d_model) and, with ``return_weights``, P (..., H, n_q, n_k).
        ``attention`` overrides the module's operator for this call ("softmax" or
        "unnormalized"; a block with its softmax switched off passes "unnormalized");
        ``qkv_transform`` (q, k, v) -> (q', k', v') acts on the projected queries (..., H, n_q, d_head),
        keys (..., H_kv, n_k, d_head) and values (..., H_kv, n_k, d_v) (RoPE: :class:`~attnlab.nn.positional.RoPE`).
        """
        name = self.attention if attention is None else attention
        if name not in ATTENTIONS:
            raise UnknownNameError(f"unknown attention {name!r}: choose one of {', '.join(ATTENTIONS)}")
        kw = dict(mask=mask, causal=causal, key_padding_mask=key_padding_mask, scale=self.scale)
        x_kv = x_q if x_kv is None else x_kv
        weights = (self.W_Q, self.W_K, self.W_V, self.W_O, self.b_Q, self.b_K, self.b_V, self.b_O)
        if not any(getattr(self, p).fns for p in HOOK_POINTS):
            return multi_head_attention(x_q, x_kv, *weights, attention=ATTENTIONS[name], return_weights=return_weights,
                                        qkv_transform=qkv_transform, **kw)
        check_inputs(x_q, x_kv, *weights[:4])
        q = _heads(self.hook_q, project(x_q, self.W_Q, self.b_Q))  # (..., H, n_q, d_head)
        k = _heads(self.hook_k, project(x_kv, self.W_K, self.b_K))  # (..., H_kv, n_k, d_head)
        v = _heads(self.hook_v, project(x_kv, self.W_V, self.b_V))  # (..., H_kv, n_k, d_v)
        if qkv_transform is not None:
            q, k, v = qkv_transform(q, k, v)
        q, k = _heads(self.hook_rot_q, q), _heads(self.hook_rot_k, k)
        if self.hook_attn_scores.fns or self.hook_pattern.fns:
            if name != "softmax":
                raise ConfigError(f"hook_attn_scores and hook_pattern need softmax attention; this pass runs {name!r}")
            S, P = self.hook_attn_scores, self.hook_pattern
            heads = softmax_heads_exposed(q, k, v, scores_map=S if S.fns else None, pattern_map=P if P.fns else None,
                                          **kw)
        else:
            heads = attend_heads(q, k, v, attention=ATTENTIONS[name], return_weights=return_weights, **kw)
        z = _heads(self.hook_z, heads.output)  # (..., H, n_q, d_v)
        return AttentionOutput(combine_heads(z, self.W_O, self.b_O), heads.weights if return_weights else None)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, n_heads={self.n_heads}"
            + (f", n_kv_heads={self.n_kv_heads}" if self.n_kv_heads != self.n_heads else "")
            + f", d_head={self.d_head}, d_v={self.d_v}, "
            f"bias={self.b_O is not None}, scale={self.scale!r}, attention={self.attention!r}"
        )


def _heads(point: HookPoint, x: Tensor) -> Tensor:
    """x (..., H, n, d) through ``point`` shown as (..., n, H, d), TransformerLens' orientation; x itself
    when nothing is attached."""
    return point(x.transpose(-3, -2)).transpose(-3, -2) if point.fns else x
