"""Input embedding of a transformer stack: tokens -> position-aware vectors.

    X = N(W_E[x_i] s + P[p_i] + W_T[t_i])                                  (B, n, d)

    x_i   token id in [0, l)           W_E in R^{l x d}   token table (the text's one-hot X times W^E)
    s     sqrt(d) (the text, §1.2: "multiply X W^E by sqrt(512)") or 1 (BERT, GPT-2)
    p_i   position id, default i       P in R^{max_len x d}: sinusoidal (eq. 1) or learned; none
                                       (P = 0) where positions enter the attention instead (RoPE)
    t_i   token type (segment) id      W_T in R^{n_types x d}: BERT's token-type table
                                       (absent when type_vocab_size = 0, the text and GPT-2)
    N     a LayerNorm (BERT: "standard", eps from its config) or the identity (the text, GPT-2)

followed by dropout (0 by default). With the defaults (s = sqrt(d), no types, no N) this is
the text's X W^E sqrt(d) + P[:n] (math-behind-transformers §1.2, §1.2.1).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from attnlab.config import check_bool, check_int
from attnlab.errors import ConfigError
from attnlab.nn.layernorm import LayerNorm
from attnlab.nn.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding

POSITIONALS = ("sinusoidal", "learned", "none")


def _positional(kind: str, d_model: int, max_len: int, N: float) -> nn.Module | None:
    if kind == "none":
        return None
    if kind == "sinusoidal":
        return SinusoidalPositionalEncoding(d_model, max_len, N)
    if kind == "learned":
        return LearnedPositionalEmbedding(d_model, max_len)
    raise ConfigError(f"unknown positional encoding {kind!r}: use 'sinusoidal' (eq. 1), 'learned' or 'none'")


def _check_ids(name: str, ids: Tensor, shape: tuple[int, ...], size: int) -> None:
    if ids.dtype not in (torch.int64, torch.int32) or tuple(ids.shape) != shape:
        raise ConfigError(f"{name} must be an integer tensor of shape {shape}, got {ids.dtype} {tuple(ids.shape)}")
    if ids.numel() and (ids.min() < 0 or ids.max() >= size):
        raise ConfigError(f"{name} must lie in [0, {size}), got [{ids.min()}, {ids.max()}]")


class Embedding(nn.Module):
    """tokens (B, n) -> X (B, n, d_model), the formula of the module docstring.

    ``scale``: multiply W_E[x] by sqrt(d) (the text) or not; ``type_vocab_size``: rows of W_T
    (0: no token types); ``norm``: None or a LayerNorm variant ("paper", "standard") with ``eps``.
    """

    def __init__(
        self, vocab_size: int, d_model: int, *, max_len: int = 512, positional: str = "sinusoidal",
        N: float = 10000.0, dropout: float = 0.0, scale: bool = True, type_vocab_size: int = 0,
        norm: str | None = None, eps: float | None = None,
    ):
        super().__init__()
        if vocab_size <= 0 or d_model <= 0:
            raise ConfigError(f"vocab_size and d_model must be positive, got {vocab_size}, {d_model}")
        self.vocab_size, self.d_model = vocab_size, d_model
        self.scale = check_bool("scale", scale)
        self.type_vocab_size = check_int("type_vocab_size", type_vocab_size, minimum=0)
        self.W_E = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))
        self.positions = _positional(positional, d_model, max_len, N)
        self.W_T = nn.Parameter(torch.randn(type_vocab_size, d_model) * 0.02) if type_vocab_size else None
        self.norm = None if norm is None else LayerNorm(d_model, norm, eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens: Tensor, token_type_ids: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        """tokens, token_type_ids, position_ids: integer (B, n); types default to 0, positions to
        0, ..., n-1. Returns X (B, n, d_model)."""
        if tokens.dtype not in (torch.int64, torch.int32) or tokens.ndim != 2:
            raise ConfigError(
                f"tokens must be an integer tensor of shape (batch, n), got {tokens.dtype} {tuple(tokens.shape)}"
            )
        _check_ids("token ids", tokens, tuple(tokens.shape), self.vocab_size)
        X = self.W_E[tokens]  # (B, n, d)
        if self.scale:
            X = X * math.sqrt(self.d_model)
        # types before positions: BERT's order of the sum, so its embedding output is reproduced
        # to the last bit
        if token_type_ids is not None:
            if self.W_T is None:
                raise ConfigError("token_type_ids given, but this embedding has no token types (type_vocab_size=0)")
            _check_ids("token_type_ids", token_type_ids, tuple(tokens.shape), self.type_vocab_size)
            X = X + self.W_T[token_type_ids]
        elif self.W_T is not None:
            X = X + self.W_T[0]  # every token of type 0, BERT's default
        if self.positions is not None:
            X = self.positions(X, position_ids)  # + P[p_i]
        if self.norm is not None:
            X = self.norm(X)
        return self.dropout(X)

    def extra_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, d_model={self.d_model}, scale={self.scale}, "
                f"type_vocab_size={self.type_vocab_size}")
