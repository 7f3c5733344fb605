"""Thin ``nn.Module`` wrappers over :mod:`attnlab.ops`: the transformer of math-behind-transformers §1.2."""

from attnlab.nn.attention import MultiHeadAttention, merge_heads, split_heads
from attnlab.nn.block import DecoderBlock, FeedForward, TransformerBlock
from attnlab.nn.layernorm import LayerNorm, layer_norm_paper
from attnlab.nn.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    frequencies,
    shift_matrix,
    sinusoidal_encoding,
)
from attnlab.nn.transformer import Decoder, Encoder, EncoderDecoder

__all__ = [
    "Decoder",
    "DecoderBlock",
    "Encoder",
    "EncoderDecoder",
    "FeedForward",
    "LayerNorm",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "SinusoidalPositionalEncoding",
    "TransformerBlock",
    "frequencies",
    "layer_norm_paper",
    "merge_heads",
    "shift_matrix",
    "sinusoidal_encoding",
    "split_heads",
]
