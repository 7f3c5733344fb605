"""Encoder, decoder and the encoder-decoder transformer (math-behind-transformers §1.2, §1.2.5).

Encoder:  X = W^E[tokens] sqrt(d) + P[:n]        W^E in R^{l x d} (one-hot X times W^E)
          Z = f_theta_L o ... o f_theta_1(X)     L TransformerBlocks
Decoder:  Y = g_L o ... o g_1(W^E_tgt[tokens] sqrt(d) + P[:n'], Z)   L DecoderBlocks
          logits = Y P_out,   P_out in R^{d x l}  (the text's P; here P_out to keep
          P for positions). With ``tie_embeddings`` P_out = (W^E_tgt)^T.

The sqrt(d) factor is the text's "multiply X W^E by sqrt(512) for stability".
With norm_position="pre" each stack ends with a final LayerNorm (as in GPT-2);
the text's post-LN stack has none. Causality of the decoder is exact: the
self-attention of every decoder block masks j > i (eq. 10), cross-attention
and FFN act per position, so logits_i never depend on target tokens j > i.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from attnlab.errors import ConfigError
from attnlab.nn.block import DecoderBlock, TransformerBlock
from attnlab.nn.layernorm import LayerNorm
from attnlab.nn.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding

POSITIONALS = ("sinusoidal", "learned")


def _final_norm(d_model: int, block_kwargs: dict) -> LayerNorm | None:
    """The LayerNorm closing a pre-LN stack; None for post-LN (the text)."""
    if block_kwargs.get("norm_position", "post") != "pre":
        return None
    return LayerNorm(d_model, block_kwargs.get("norm", "paper"), block_kwargs.get("eps"))


def _positional(kind: str, d_model: int, max_len: int, N: float, dropout: float) -> nn.Module:
    if kind == "sinusoidal":
        return SinusoidalPositionalEncoding(d_model, max_len, N, dropout)
    if kind == "learned":
        return LearnedPositionalEmbedding(d_model, max_len, dropout)
    raise ConfigError(f"unknown positional encoding {kind!r}: use 'sinusoidal' (eq. 1) or 'learned'")


class _Embedding(nn.Module):
    """tokens (B, n) -> W^E[tokens] sqrt(d) + positions, (B, n, d)."""

    def __init__(self, vocab_size: int, d_model: int, max_len: int, positional: str, N: float, dropout: float):
        super().__init__()
        if vocab_size <= 0 or d_model <= 0:
            raise ConfigError(f"vocab_size and d_model must be positive, got {vocab_size}, {d_model}")
        self.vocab_size, self.d_model = vocab_size, d_model
        self.W_E = nn.Parameter(torch.randn(vocab_size, d_model) / math.sqrt(d_model))
        self.positions = _positional(positional, d_model, max_len, N, dropout)

    def forward(self, tokens: Tensor) -> Tensor:
        if tokens.dtype not in (torch.int64, torch.int32) or tokens.ndim != 2:
            raise ConfigError(
                f"tokens must be an integer tensor of shape (batch, n), got {tokens.dtype} {tuple(tokens.shape)}"
            )
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            raise ConfigError(f"token ids must lie in [0, {self.vocab_size}), got [{tokens.min()}, {tokens.max()}]")
        return self.positions(self.W_E[tokens] * math.sqrt(self.d_model))  # (B, n, d)


class Encoder(nn.Module):
    """Token embedding x sqrt(d) + positional encoding, then L TransformerBlocks."""

    def __init__(
        self, vocab_size: int, d_model: int, n_heads: int, d_ff: int, n_layers: int, *,
        max_len: int = 512, positional: str = "sinusoidal", N: float = 10000.0,
        dropout: float = 0.0, **block_kwargs,
    ):
        super().__init__()
        if n_layers <= 0:
            raise ConfigError(f"n_layers must be positive, got {n_layers}")
        self.embed = _Embedding(vocab_size, d_model, max_len, positional, N, dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff, dropout=dropout, **block_kwargs) for _ in range(n_layers)
        )
        self.final_norm = _final_norm(d_model, block_kwargs)

    def encode(self, X: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """Position-aware embeddings X (B, n, d) -> Z (B, n, d)."""
        for block in self.blocks:
            X = block(X, key_padding_mask=key_padding_mask)
        return X if self.final_norm is None else self.final_norm(X)

    def forward(self, tokens: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """tokens (B, n) -> Z (B, n, d_model)."""
        return self.encode(self.embed(tokens), key_padding_mask)


class Decoder(nn.Module):
    """Embedding + PE, L DecoderBlocks, output projection P_out (d x l)."""

    def __init__(
        self, vocab_size: int, d_model: int, n_heads: int, d_ff: int, n_layers: int, *,
        max_len: int = 512, positional: str = "sinusoidal", N: float = 10000.0,
        dropout: float = 0.0, tie_embeddings: bool = False, **block_kwargs,
    ):
        super().__init__()
        if n_layers <= 0:
            raise ConfigError(f"n_layers must be positive, got {n_layers}")
        self.embed = _Embedding(vocab_size, d_model, max_len, positional, N, dropout)
        self.blocks = nn.ModuleList(
            DecoderBlock(d_model, n_heads, d_ff, dropout=dropout, **block_kwargs) for _ in range(n_layers)
        )
        self.final_norm = _final_norm(d_model, block_kwargs)
        self.tie_embeddings = tie_embeddings
        self.P_out = None if tie_embeddings else nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))

    def output_projection(self) -> Tensor:
        """P_out in R^{d x l} (W_E^T when tied)."""
        return self.embed.W_E.T if self.P_out is None else self.P_out

    def decode(
        self, X: Tensor, Z: Tensor, *,
        tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """Position-aware target embeddings X (B, n', d) and Z (B, n, d) -> logits (B, n', l)."""
        for block in self.blocks:
            X = block(
                X, Z, tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask
            )
        Y = X if self.final_norm is None else self.final_norm(X)
        return Y @ self.output_projection()  # (B, n', l)

    def forward(self, tokens: Tensor, Z: Tensor, **masks) -> Tensor:
        """tokens (B, n') and encoder output Z (B, n, d) -> logits (B, n', l)."""
        return self.decode(self.embed(tokens), Z, **masks)


class EncoderDecoder(nn.Module):
    """The transformer of [1] as in §1.2: Encoder + Decoder, logits over the target vocabulary."""

    def __init__(
        self, src_vocab_size: int, tgt_vocab_size: int, d_model: int, n_heads: int, d_ff: int,
        n_layers: int, *, n_decoder_layers: int | None = None, tie_embeddings: bool = False,
        **kwargs,
    ):
        super().__init__()
        self.encoder = Encoder(src_vocab_size, d_model, n_heads, d_ff, n_layers, **kwargs)
        self.decoder = Decoder(
            tgt_vocab_size, d_model, n_heads, d_ff, n_layers if n_decoder_layers is None else n_decoder_layers,
            tie_embeddings=tie_embeddings, **kwargs,
        )

    def forward(
        self, src_tokens: Tensor, tgt_tokens: Tensor,
        src_key_padding_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """src_tokens (B, n), tgt_tokens (B, n') -> logits (B, n', l_tgt)."""
        if src_tokens.shape[0] != tgt_tokens.shape[0]:
            raise ConfigError(
                f"source and target batches differ: {src_tokens.shape[0]} vs {tgt_tokens.shape[0]}"
            )
        Z = self.encoder(src_tokens, src_key_padding_mask)
        return self.decoder(
            tgt_tokens, Z, tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=src_key_padding_mask
        )
