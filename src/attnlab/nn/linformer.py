"""Linformer self-attention module (math-behind-transformers §2.1.3, eq. 17).

    head_h = softmax(c (X W_Q,h) (E_h X W_K,h)^T) (F_h X W_V,h)       (n, d_v)
    out    = sum_h head_h W_O,h                                         (n, d_model)

Parameters: W_Q, W_K (H, d_model, d_head), W_V (H, d_model, d_v), W_O (H, d_v, d_model),
and the projections E, F (H, k', n) of the text's E_i, F_i. E and F are learned
(``learn_projections=True``, nn.Parameter) or fixed buffers; either way they
start as N(0, 1/k') draws from the given generator, the Linformer/JL
initialisation. ``share_kv`` uses one matrix for E and F (the Linformer paper's
key-value sharing). The sequence length n is fixed at construction: E, F have
one column per position.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from attnlab.errors import ConfigError
from attnlab.ops.lowrank import linformer_attention, linformer_projections
from attnlab.ops.softmax import AttentionOutput, Scale, resolve_scale


class LinformerSelfAttention(nn.Module):
    """Multi-head Linformer self-attention over sequences of exactly n tokens."""

    def __init__(self, d_model: int, n_heads: int, n: int, k_proj: int, *, d_head: int | None = None,
                 learn_projections: bool = True, share_kv: bool = False, scale: Scale = "1/sqrt(d)",
                 generator: torch.Generator | None = None):
        super().__init__()
        if d_model <= 0 or n_heads <= 0 or n <= 0:
            raise ConfigError(f"d_model, n_heads and n must be positive, got {d_model}, {n_heads}, {n}")
        if d_head is None:
            if d_model % n_heads:
                raise ConfigError(f"d_model={d_model} is not divisible by n_heads={n_heads}: pass d_head")
            d_head = d_model // n_heads
        resolve_scale(scale, d_head)
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        E, F = linformer_projections(k_proj, n, generator=g, heads=n_heads, dtype=torch.float32)
        if share_kv:
            F = E
        H = n_heads
        self.d_model, self.n_heads, self.d_head, self.n, self.k_proj = d_model, H, d_head, n, k_proj
        self.scale, self.share_kv = scale, share_kv
        std = 1.0 / math.sqrt(d_model)
        self.W_Q = nn.Parameter(torch.randn(H, d_model, d_head, generator=g) * std)
        self.W_K = nn.Parameter(torch.randn(H, d_model, d_head, generator=g) * std)
        self.W_V = nn.Parameter(torch.randn(H, d_model, d_head, generator=g) * std)
        self.W_O = nn.Parameter(torch.randn(H, d_head, d_model, generator=g) / math.sqrt(H * d_head))
        if learn_projections:
            self.E = nn.Parameter(E)
            self.F = self.E if share_kv else nn.Parameter(F)
        else:
            self.register_buffer("E", E)
            self.register_buffer("F", F)

    def forward(self, x: Tensor, *, return_weights: bool = False) -> AttentionOutput:
        """x (..., n, d_model) -> output (..., n, d_model); weights P_bar F (..., H, n, n) on request."""
        if x.shape[-2] != self.n or x.shape[-1] != self.d_model:
            raise ConfigError(
                f"input must have shape (..., n={self.n}, d_model={self.d_model}), got {tuple(x.shape)}"
            )
        x = x.unsqueeze(-3)  # (..., 1, n, d_model): broadcast over heads
        q, k, v = x @ self.W_Q, x @ self.W_K, x @ self.W_V  # (..., H, n, d_head)
        res = linformer_attention(q, k, v, self.E.to(x.dtype), self.F.to(x.dtype), scale=self.scale,
                                  return_weights=return_weights)
        out = (res.output @ self.W_O).sum(-3)  # (..., H, n, d_model) -> (..., n, d_model)
        return AttentionOutput(out, res.weights)

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, n_heads={self.n_heads}, d_head={self.d_head}, n={self.n}, "
                f"k_proj={self.k_proj}, share_kv={self.share_kv}, scale={self.scale!r}")
