"""The transformer block and the decoder block (math-behind-transformers §1.2.2, §1.2.4, §1.2.5).

Encoder block f_theta: R^{n x d} -> R^{n x d}, post-LN exactly as §1.2.2:

    u = LN(x + MHA(x); gamma_1, beta_1)
    z = LN(u + FFN(u); gamma_2, beta_2),     FFN(u) = ReLU(u W_1 + b_1) W_2 + b_2

with W_1 in R^{d x m}, b_1 in R^m, W_2 in R^{m x d}, b_2 in R^d (the text
writes b_1, b_2 in R: a typo, they are vectors; it also repeats gamma_1, beta_1
where gamma_2, beta_2 are meant). Pre-LN (GPT-2 and later):

    u = x + MHA(LN(x)),   z = u + FFN(LN(u)).

Decoder block (§1.2.5): masked (causal, eq. 10) self-attention, cross-attention
to the encoder output Z, FFN, each with residual + LN. The text writes the
cross-attention as softmax(X Z^T / sqrt(k)) Z, which omits the projections:
queries are X W_Q,h and keys/values Z W_K,h, Z W_V,h with the cross-attention
layer's own W_K, W_V (and W_O), as in [1].

Dropout is optional and 0.0 by default, so every forward is deterministic.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.errors import ConfigError
from attnlab.nn.attention import MultiHeadAttention
from attnlab.nn.layernorm import LayerNorm
from attnlab.ops.softmax import Scale

NORM_POSITIONS = ("post", "pre")


class FeedForward(nn.Module):
    """FFN(u) = ReLU(u W_1 + b_1) W_2 + b_2, W_1 (d_model, d_ff), W_2 (d_ff, d_model) (§1.2.4)."""

    def __init__(self, d_model: int, d_ff: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        if d_model <= 0 or d_ff <= 0:
            raise ConfigError(f"d_model and d_ff must be positive, got {d_model}, {d_ff}")
        self.d_model, self.d_ff = d_model, d_ff
        self.W_1 = nn.Parameter(torch.randn(d_model, d_ff) / d_model**0.5)
        self.W_2 = nn.Parameter(torch.randn(d_ff, d_model) / d_ff**0.5)
        self.b_1 = nn.Parameter(torch.zeros(d_ff)) if bias else None
        self.b_2 = nn.Parameter(torch.zeros(d_model)) if bias else None
        self.dropout = nn.Dropout(dropout)

    def forward(self, u: Tensor) -> Tensor:
        """u: (..., n, d_model) -> (..., n, d_model)."""
        h = u @ self.W_1  # (..., n, d_ff)
        if self.b_1 is not None:
            h = h + self.b_1
        z = self.dropout(torch.relu(h)) @ self.W_2  # (..., n, d_model)
        return z if self.b_2 is None else z + self.b_2


def _check_norm_position(norm_position: str) -> None:
    if norm_position not in NORM_POSITIONS:
        raise ConfigError(
            f"unknown norm_position {norm_position!r}: use 'post' (the text, §1.2.2) or 'pre'"
        )


class TransformerBlock(nn.Module):
    """One encoder block f_theta (module docstring): MHA + FFN, residuals, LayerNorm post or pre."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        *,
        d_head: int | None = None,
        norm: str = "paper",
        norm_position: str = "post",
        eps: float | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        scale: Scale = "1/sqrt(d)",
        attention: str = "softmax",
    ):
        super().__init__()
        _check_norm_position(norm_position)
        self.norm_position = norm_position
        self.attn = MultiHeadAttention(d_model, n_heads, d_head, bias=bias, scale=scale, attention=attention)
        self.ffn = FeedForward(d_model, d_ff, bias=bias, dropout=dropout)
        self.norm1 = LayerNorm(d_model, norm, eps)
        self.norm2 = LayerNorm(d_model, norm, eps)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        *,
        mask: Tensor | None = None,
        causal: bool | str | None = None,
        key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """x: (B, n, d_model) -> z: (B, n, d_model)."""

        def mha(h: Tensor) -> Tensor:
            out = self.attn(h, mask=mask, causal=causal, key_padding_mask=key_padding_mask).output
            return self.dropout(out)

        if self.norm_position == "post":
            u = self.norm1(x + mha(x))
            return self.norm2(u + self.dropout(self.ffn(u)))
        u = x + mha(self.norm1(x))
        return u + self.dropout(self.ffn(self.norm2(u)))


class DecoderBlock(nn.Module):
    """Masked self-attention, cross-attention to Z, FFN; each with residual + LN (§1.2.5)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        *,
        d_head: int | None = None,
        norm: str = "paper",
        norm_position: str = "post",
        eps: float | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        scale: Scale = "1/sqrt(d)",
        attention: str = "softmax",
    ):
        super().__init__()
        _check_norm_position(norm_position)
        self.norm_position = norm_position
        kw = dict(bias=bias, scale=scale, attention=attention)
        self.self_attn = MultiHeadAttention(d_model, n_heads, d_head, **kw)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, d_head, **kw)
        self.ffn = FeedForward(d_model, d_ff, bias=bias, dropout=dropout)
        self.norm1 = LayerNorm(d_model, norm, eps)
        self.norm2 = LayerNorm(d_model, norm, eps)
        self.norm3 = LayerNorm(d_model, norm, eps)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        Z: Tensor,
        *,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """x: (B, n_tgt, d_model) decoder stream, Z: (B, n_src, d_model) encoder output."""

        def self_mha(h: Tensor) -> Tensor:  # eq. (10): query i sees targets j <= i only
            return self.dropout(
                self.self_attn(h, causal=True, key_padding_mask=tgt_key_padding_mask).output
            )

        def cross_mha(h: Tensor) -> Tensor:  # queries from the decoder, keys/values from Z
            return self.dropout(
                self.cross_attn(h, Z, key_padding_mask=memory_key_padding_mask).output
            )

        if self.norm_position == "post":
            u = self.norm1(x + self_mha(x))
            v = self.norm2(u + cross_mha(u))
            return self.norm3(v + self.dropout(self.ffn(v)))
        u = x + self_mha(self.norm1(x))
        v = u + cross_mha(self.norm2(u))
        return v + self.dropout(self.ffn(self.norm3(v)))
