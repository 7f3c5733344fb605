"""Thin ``nn.Module`` wrappers over :mod:`attnlab.ops`: the transformer of math-behind-transformers §1.2."""

from attnlab.nn.activations import ACTIVATIONS, resolve_activation
from attnlab.nn.attention import MultiHeadAttention, merge_heads, split_heads
from attnlab.nn.block import BlockConfig, BlockOutput, BlockParts, DecoderBlock, FeedForward, TransformerBlock
from attnlab.nn.embedding import Embedding
from attnlab.nn.hooked import TL_NAMES, Hooked
from attnlab.nn.hooks import HookPoint
from attnlab.nn.layernorm import LayerNorm, layer_norm_paper
from attnlab.nn.positional import (
    LearnedPositionalEmbedding,
    QKVTransform,
    RoPE,
    SinusoidalPositionalEncoding,
    frequencies,
    shift_matrix,
    sinusoidal_encoding,
)
from attnlab.nn.transformer import Decoder, Encoder, EncoderDecoder, EncoderDecoderOutput, TransformerOutput

__all__ = [
    "ACTIVATIONS",
    "BlockConfig",
    "BlockOutput",
    "BlockParts",
    "Decoder",
    "DecoderBlock",
    "Embedding",
    "Encoder",
    "EncoderDecoder",
    "EncoderDecoderOutput",
    "FeedForward",
    "HookPoint",
    "Hooked",
    "LayerNorm",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "QKVTransform",
    "RoPE",
    "SinusoidalPositionalEncoding",
    "TL_NAMES",
    "TransformerBlock",
    "TransformerOutput",
    "frequencies",
    "layer_norm_paper",
    "merge_heads",
    "resolve_activation",
    "shift_matrix",
    "sinusoidal_encoding",
    "split_heads",
]
