"""Encoder, decoder and the encoder-decoder transformer (math-behind-transformers §1.2, §1.2.5).

Encoder:  X_0 = W^E[tokens] sqrt(d) + P[:n]      W^E in R^{l x d} (one-hot X times W^E)
          X_l = f_theta_l(X_{l-1}),  l = 1..L    L TransformerBlocks;  Z = X_L
Decoder:  Y = g_L o ... o g_1(W^E_tgt[tokens] sqrt(d) + P[:n'], Z)   L DecoderBlocks
          logits = Y P_out,   P_out in R^{d x l}  (the text's P; here P_out to keep
          P for positions). With ``tie_embeddings`` P_out = (W^E_tgt)^T.

The sqrt(d) factor is the text's "multiply X W^E by sqrt(512) for stability";
:class:`attnlab.nn.embedding.Embedding` documents the other embedding options (no scale,
token types, a LayerNorm: BERT). With norm_position="pre" each stack ends with a final
LayerNorm (as in GPT-2); the text's post-LN stack has none. Causality of the decoder is
exact: the self-attention of every decoder block masks j > i (eq. 10), cross-attention
and FFN act per position, so logits_i never depend on target tokens j > i. An Encoder
with ``causal=True`` masks j > i in every block: a decoder-only stack (GPT-2).

Every forward returns one typed output: a block a :class:`attnlab.nn.block.BlockOutput`, a stack a
:class:`TransformerOutput`, the encoder-decoder an :class:`EncoderDecoderOutput`. One pass returns
every intermediate on request (``output_hidden_states``, ``output_attentions``; None otherwise):
hidden_states = [X_0, ..., X_L]
(the embedding output and every block's output, before the final LayerNorm) and
attentions = [P_1, ..., P_L], P_l (B, H, n_q, n_k) the weights of every head of block l.

Positions acting on q, k, v (``qkv_transform``, a :class:`attnlab.nn.positional.QKVTransform`;
Llama-family decoders: :class:`attnlab.nn.positional.RoPE`): the embedding adds no position
vector and every block applies the pass's map T_p (q, k, v) -> (R(p) q, R(p) k, v), built once
per pass from the position ids. An output head (``lm_head``) turns Z into next-token
logits Z W_U, W_U (d, l): tied (W_U = W_E^T, GPT-2, SmolLM2) or its own matrix.

Hook points with TransformerLens' names (:mod:`attnlab.nn.hooked`: the names, shapes and
``run_with_hooks`` / ``run_with_cache``): an Encoder's ``hook_embed`` sees X_0 and ``hook_normalized``
(TL's ``ln_final.hook_normalized``) Z, before the output head; a Decoder's the target embeddings and Y,
before P_out; every block and attention has its own (a decoder block: self- and cross-attention).

Parts of every block can be switched off per layer (:class:`attnlab.nn.block.BlockParts`):
``parts=`` at construction or :meth:`Encoder.set_parts` later, one BlockParts for every
layer or a sequence of L.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlab.config import check_bool
from attnlab.errors import ConfigError
from attnlab.nn.block import BlockConfig, BlockParts, DecoderBlock, TransformerBlock
from attnlab.nn.embedding import Embedding
from attnlab.nn.hooked import Hooked
from attnlab.nn.hooks import HookPoint
from attnlab.nn.layernorm import LayerNorm
from attnlab.ops.multihead import project
from attnlab.nn.positional import QKVTransform
from attnlab.ops.multihead import QKVMap

__all__ = ["Decoder", "Encoder", "EncoderDecoder", "EncoderDecoderOutput", "TransformerOutput"]


@dataclass(frozen=True)
class TransformerOutput:
    """What one pass of a stack returns, always (the intermediates on request).

    output:           Z (B, n, d) of an encoder, Y (B, n', d) of a decoder (after the final
                      LayerNorm of a pre-LN stack)
    hidden_states:    [X_0, X_1, ..., X_L], each (B, n, d): the embedding output and the
                      output of every block (before any final LayerNorm); None unless asked
    attentions:       [P_1, ..., P_L], each (B, H, n_q, n_k): every head's (self-)attention
                      weights; None unless asked
    cross_attentions: a decoder's [C_1, ..., C_L], each (B, H, n', n); None otherwise
    logits:           the output head's Z W_U (B, n, l) of an Encoder with one (None without),
                      Y P_out (B, n', l) of a decoder
    """

    output: Tensor
    hidden_states: list[Tensor] | None = None
    attentions: list[Tensor] | None = None
    cross_attentions: list[Tensor] | None = None
    logits: Tensor | None = None


@dataclass(frozen=True)
class EncoderDecoderOutput:
    """logits (B, n', l_tgt) (or (N, l_tgt) with ``logits_at``) with the encoder's and the decoder's
    :class:`TransformerOutput`."""

    logits: Tensor
    encoder: TransformerOutput
    decoder: TransformerOutput


def _final_norm(d_model: int, block: BlockConfig) -> LayerNorm | None:
    """The LayerNorm closing a pre-LN stack; None for post-LN (the text)."""
    if block.norm_position != "pre":
        return None
    return LayerNorm(d_model, block.norm, block.eps)


def _check_block(block: BlockConfig) -> BlockConfig:
    if not isinstance(block, BlockConfig):
        raise ConfigError(f"block must be a BlockConfig, got {type(block).__name__}")
    return block


LM_HEADS = ("none", "tied", "separate")


class _Stack(Hooked):
    """Per-layer :class:`BlockParts` of ``self.blocks``, and named hooks (:class:`attnlab.nn.hooked.Hooked`)."""

    blocks: nn.ModuleList

    @property
    def parts(self) -> list[BlockParts]:
        """The switches of every layer, in order."""
        return [block.parts for block in self.blocks]

    def set_parts(self, parts: BlockParts | Sequence[BlockParts]) -> None:
        """One BlockParts for every layer, or a sequence of one per layer."""
        if isinstance(parts, BlockParts):
            parts = [parts] * len(self.blocks)
        parts = list(parts) if isinstance(parts, Sequence) and not isinstance(parts, str) else None
        if parts is None or len(parts) != len(self.blocks):
            raise ConfigError(f"parts must be one BlockParts or a sequence of {len(self.blocks)} (one per layer)")
        for block, p in zip(self.blocks, parts):
            block.parts = p


def _flags(output_hidden_states: bool, output_attentions: bool) -> bool:
    check_bool("output_hidden_states", output_hidden_states)
    check_bool("output_attentions", output_attentions)
    return output_hidden_states or output_attentions


class Encoder(_Stack):
    """Embedding, then L TransformerBlocks (and the final LayerNorm of a pre-LN stack).

    ``embedding_scale``, ``type_vocab_size``, ``embedding_norm`` configure the
    :class:`~attnlab.nn.embedding.Embedding` (its ``scale``, ``type_vocab_size``, ``norm``;
    the norm takes the blocks' ``eps``, its dropout the blocks' ``dropout``); ``block`` configures
    every TransformerBlock (:class:`~attnlab.nn.block.BlockConfig`); ``causal`` masks j > i in every
    block; ``parts`` as :meth:`set_parts` (overriding ``block.parts`` per layer); ``qkv_transform`` (with ``positional="none"``; e.g.
    :class:`~attnlab.nn.positional.RoPE`) acts on every block's queries, keys and values; ``lm_head`` "none",
    "tied" or "separate" adds the output head.
    """

    def __init__(
        self, vocab_size: int, d_model: int, n_heads: int, d_ff: int, n_layers: int, *,
        block: BlockConfig = BlockConfig(), max_len: int = 512, positional: str = "sinusoidal",
        N: float = 10000.0, causal: bool = False, embedding_scale: bool = True, type_vocab_size: int = 0,
        embedding_norm: str | None = None, parts: BlockParts | Sequence[BlockParts] | None = None,
        qkv_transform: QKVTransform | None = None, lm_head: str = "none",
    ):
        super().__init__()
        if n_layers <= 0:
            raise ConfigError(f"n_layers must be positive, got {n_layers}")
        _check_block(block)
        if lm_head not in LM_HEADS:
            raise ConfigError(f"unknown lm_head {lm_head!r}: use one of {', '.join(LM_HEADS)}")
        self.causal = check_bool("causal", causal)
        if qkv_transform is not None and not isinstance(qkv_transform, QKVTransform):
            raise ConfigError(f"qkv_transform must be a QKVTransform (e.g. RoPE), got {type(qkv_transform).__name__}")
        self.qkv_transform = qkv_transform
        self.d_head = block.d_head or d_model // n_heads
        if qkv_transform is not None:  # fail early on a head size it cannot act on (RoPE: an odd one)
            qkv_transform.at(torch.zeros(1, 1, dtype=torch.int64, device="cpu"), self.d_head, torch.float64)
        self.embed = Embedding(vocab_size, d_model, max_len=max_len, positional=positional, N=N,
                               dropout=block.dropout, scale=embedding_scale, type_vocab_size=type_vocab_size,
                               norm=embedding_norm, eps=block.eps)
        self.blocks = nn.ModuleList(TransformerBlock(d_model, n_heads, d_ff, block) for _ in range(n_layers))
        self.final_norm = _final_norm(d_model, block)
        self.hook_embed = HookPoint()  # X_0 (B, n, d)
        self.hook_normalized = HookPoint()  # Z (B, n, d): TransformerLens' ln_final.hook_normalized
        self.lm_head = lm_head
        self.W_U = nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model)) if lm_head == "separate" else None
        if parts is not None:
            self.set_parts(parts)
        self.hook_points()  # every point knows its name from the start

    def unembedding(self) -> Tensor | None:
        """W_U (d, l) of the output head: W_E^T when tied, None without a head."""
        return self.embed.W_E.T if self.lm_head == "tied" else self.W_U

    def qkv_map(self, position_ids: Tensor, dtype: torch.dtype) -> QKVMap | None:
        """The pass's map T_p (q, k, v) -> (q', k', v') of positions (B, n) for every block (RoPE:
        the rotations R(p)); None without a ``qkv_transform``."""
        if self.qkv_transform is None:
            return None
        return self.qkv_transform.at(position_ids, self.d_head, dtype)

    def queries_keys(self, tokens: Tensor, layer: int, *, position_ids: Tensor | None = None,
                     token_type_ids: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """The queries (B, H, n, d_head) and keys (B, H_kv, n, d_head) of block ``layer`` (0-based) on
        ``tokens`` (B, n), after the stack's ``qkv_transform`` (RoPE) where it has one: the blocks below run on the fused
        kernels (no n x n tensor), so a long sequence costs memory linear in n up to this point.
        Unpadded input only (every key is real)."""
        if not isinstance(layer, int) or isinstance(layer, bool) or not 0 <= layer < len(self.blocks):
            raise ConfigError(f"layer must be an integer in [0, {len(self.blocks) - 1}], got {layer!r}")
        X = self.embed(tokens, token_type_ids, None if self.qkv_transform is not None else position_ids)
        f = self._qkv_map(X, position_ids)
        for block in self.blocks[:layer]:
            X = block(X, causal=self.causal or None, qkv_transform=f).output
        block = self.blocks[layer]
        a = block.attn
        h = block.norm1(X) if block.norm_position == "pre" and block.parts.layer_norm else X
        q, k = project(h, a.W_Q, a.b_Q), project(h, a.W_K, a.b_K)
        if f is None:
            return q, k
        q, k, _ = f(q, k, project(h, a.W_V, a.b_V))
        return q, k

    def _qkv_map(self, X: Tensor, position_ids: Tensor | None) -> QKVMap | None:
        """:meth:`qkv_map` of ``position_ids`` (default 0, ..., n-1) for the embeddings X (B, n, d)."""
        if self.qkv_transform is None:
            return None
        if position_ids is None:
            position_ids = torch.arange(X.shape[-2], device=X.device)[None]
        return self.qkv_map(position_ids, X.dtype)

    def encode(
        self, X: Tensor, key_padding_mask: Tensor | None = None, *,
        output_hidden_states: bool = False, output_attentions: bool = False,
        position_ids: Tensor | None = None, start: int = 0, logits_at: int | None = None,
    ) -> TransformerOutput:
        """Position-aware embeddings X (B, n, d) -> a :class:`TransformerOutput`: Z (B, n, d), the
        intermediates ``output_hidden_states`` and ``output_attentions`` ask for, and ``logits``
        Z W_U when the stack has an output head.
        ``position_ids`` (B, n) feed the ``qkv_transform`` (default 0, ..., n-1).
        ``start``: X is the stream entering block ``start`` (0 <= start <= L; ``hook_embed`` runs for
        start = 0 only), so a pass can resume from a cached stream (:mod:`attnlab.patching`).
        ``logits_at``: the logits at that position only, (B, l), instead of (B, n, l)."""
        _flags(output_hidden_states, output_attentions)
        if not 0 <= start <= len(self.blocks):
            raise ConfigError(f"start must be a block index 0..{len(self.blocks)}, got {start}")
        X = self.hook_embed(X) if start == 0 else X
        hidden, attentions = [X], []
        f = self._qkv_map(X, position_ids)
        for block in self.blocks[start:]:
            res = block(X, causal=self.causal or None, key_padding_mask=key_padding_mask,
                        return_weights=output_attentions, qkv_transform=f)
            X = res.output
            if output_attentions:
                attentions.append(res.weights)
            if output_hidden_states:
                hidden.append(X)
        Z = self.hook_normalized(X if self.final_norm is None else self.final_norm(X))
        W_U = self.unembedding()
        read = Z if logits_at is None else Z[:, logits_at]
        return TransformerOutput(Z, hidden if output_hidden_states else None,
                                 attentions if output_attentions else None,
                                 logits=None if W_U is None else read @ W_U)

    def forward(
        self, tokens: Tensor, key_padding_mask: Tensor | None = None, *,
        token_type_ids: Tensor | None = None, position_ids: Tensor | None = None,
        output_hidden_states: bool = False, output_attentions: bool = False,
    ) -> TransformerOutput:
        """tokens (B, n) -> the :class:`TransformerOutput` of :meth:`encode` (Z (B, n, d_model) its ``output``).

        key_padding_mask: bool (B, n), True = padding (:mod:`attnlab.ops.masks`);
        token_type_ids, position_ids: integer (B, n), see :class:`~attnlab.nn.embedding.Embedding`.
        """
        X = self.embed(tokens, token_type_ids, None if self.qkv_transform is not None else position_ids)
        return self.encode(X, key_padding_mask, output_hidden_states=output_hidden_states,
                           output_attentions=output_attentions, position_ids=position_ids)


class Decoder(_Stack):
    """Embedding + PE, L DecoderBlocks, output projection P_out (d x l); ``block`` configures every
    DecoderBlock (:class:`~attnlab.nn.block.BlockConfig`), the other keywords as :class:`Encoder`.

    Hook points as an Encoder's, with a cross-attention in every block (:mod:`attnlab.nn.hooked`); the
    pass needs the encoder output: ``decoder.run_with_cache(tokens, Z=Z)`` -> (logits, cache)."""

    def __init__(
        self, vocab_size: int, d_model: int, n_heads: int, d_ff: int, n_layers: int, *,
        block: BlockConfig = BlockConfig(), max_len: int = 512, positional: str = "sinusoidal",
        N: float = 10000.0, tie_embeddings: bool = False, parts: BlockParts | Sequence[BlockParts] | None = None,
    ):
        super().__init__()
        if n_layers <= 0:
            raise ConfigError(f"n_layers must be positive, got {n_layers}")
        _check_block(block)
        self.embed = Embedding(vocab_size, d_model, max_len=max_len, positional=positional, N=N,
                               dropout=block.dropout)
        self.blocks = nn.ModuleList(DecoderBlock(d_model, n_heads, d_ff, block) for _ in range(n_layers))
        self.final_norm = _final_norm(d_model, block)
        self.hook_embed = HookPoint()  # the target embeddings (B, n', d)
        self.hook_normalized = HookPoint()  # Y (B, n', d): TransformerLens' ln_final.hook_normalized
        self.tie_embeddings = tie_embeddings
        self.P_out = None if tie_embeddings else nn.Parameter(torch.randn(d_model, vocab_size) / math.sqrt(d_model))
        if parts is not None:
            self.set_parts(parts)
        self.hook_points()

    def output_projection(self) -> Tensor:
        """P_out in R^{d x l} (W_E^T when tied)."""
        return self.embed.W_E.T if self.P_out is None else self.P_out

    def decode(
        self, X: Tensor, Z: Tensor, *,
        tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
        output_hidden_states: bool = False, output_attentions: bool = False, logits_at: Tensor | None = None,
    ) -> TransformerOutput:
        """Position-aware target embeddings X (B, n', d) and Z (B, n, d) -> a :class:`TransformerOutput`:
        Y (B, n', d) its ``output``, logits = Y P_out (B, n', l), and the intermediates asked for.

        ``logits_at``, a boolean (B, n') mask, forms the logits only where it is True: Y[logits_at] P_out,
        (N, l) with N = logits_at.sum(), rows in row-major order of the mask. Equal to (Y P_out)[logits_at]
        row for row, without the products, memory and gradient of the other positions (a padded batch's
        padding, whose loss is not counted: with l >> d they are most of a step's work)."""
        _flags(output_hidden_states, output_attentions)
        if logits_at is not None and (logits_at.dtype != torch.bool or logits_at.shape != X.shape[:2]):
            raise ConfigError(f"logits_at must be a boolean mask of shape {tuple(X.shape[:2])} (batch, target "
                              f"positions), got {logits_at.dtype} {tuple(logits_at.shape)}")
        X = self.hook_embed(X)
        hidden, attentions, cross = [X], [], []
        for block in self.blocks:
            res = block(X, Z, tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask, return_weights=output_attentions)
            X = res.output
            if output_attentions:
                attentions.append(res.weights)
                cross.append(res.cross_weights)
            if output_hidden_states:
                hidden.append(X)
        Y = self.hook_normalized(X if self.final_norm is None else self.final_norm(X))
        logits = (Y if logits_at is None else Y[logits_at]) @ self.output_projection()  # (B, n', l) or (N, l)
        return TransformerOutput(Y, hidden if output_hidden_states else None, attentions if output_attentions else None,
                                 cross if output_attentions else None, logits)

    def forward(self, tokens: Tensor, Z: Tensor, **kwargs) -> TransformerOutput:
        """tokens (B, n') and encoder output Z (B, n, d) -> the :class:`TransformerOutput` of :meth:`decode`
        (logits (B, n', l) its ``logits``); keywords as :meth:`decode`."""
        return self.decode(self.embed(tokens), Z, **kwargs)


class EncoderDecoder(nn.Module):
    """The transformer of [1] as in §1.2: Encoder + Decoder, logits over the target vocabulary.

    The keywords (``block``, ``max_len``, ``positional``, ``N``, ``parts``) go to both stacks."""

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
        src_key_padding_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None, *,
        output_hidden_states: bool = False, output_attentions: bool = False, logits_at: Tensor | None = None,
    ) -> EncoderDecoderOutput:
        """src_tokens (B, n), tgt_tokens (B, n') -> an :class:`EncoderDecoderOutput`: logits (B, n', l_tgt)
        and both stacks' outputs (with the intermediates asked for); ``logits_at`` (B, n') bool: the
        logits (N, l_tgt) at its True positions only (:meth:`Decoder.decode`)."""
        if src_tokens.shape[0] != tgt_tokens.shape[0]:
            raise ConfigError(
                f"source and target batches differ: {src_tokens.shape[0]} vs {tgt_tokens.shape[0]}"
            )
        _flags(output_hidden_states, output_attentions)
        flags = dict(output_hidden_states=output_hidden_states, output_attentions=output_attentions)
        enc = self.encoder(src_tokens, src_key_padding_mask, **flags)
        dec = self.decoder(
            tgt_tokens, enc.output, tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=src_key_padding_mask, logits_at=logits_at, **flags,
        )
        return EncoderDecoderOutput(dec.logits, enc, dec)
