"""Attention operators: pure functions on tensors, one file per variant.

``reference.py`` is the slow float64 oracle the others are tested against;
``catalogue.py`` lists every attention variant with its exactness, features and FLOP model.
"""

from attnlab.ops.catalogue import (
    CATALOGUE,
    AttentionVariant,
    Exactness,
    get_attention_variant,
    select_variants,
)

from attnlab.ops.lse import attention_lse, attention_rows
from attnlab.ops.masks import causal_mask, combine_masks, key_padding_mask_from_attention_mask
from attnlab.ops.multihead import multi_head_attention, ov_circuit, qk_circuit
from attnlab.ops.pooling import SIMILARITIES, attention_pooling
from attnlab.ops.reference import reference_attention
from attnlab.ops.softmax import (
    AttentionOutput,
    attention_logits,
    masked_softmax,
    resolve_scale,
    softmax_attention,
)
from attnlab.ops.unnormalized import unnormalized_attention

__all__ = [
    "AttentionOutput",
    "AttentionVariant",
    "CATALOGUE",
    "Exactness",
    "SIMILARITIES",
    "attention_logits",
    "attention_lse",
    "attention_pooling",
    "attention_rows",
    "causal_mask",
    "combine_masks",
    "get_attention_variant",
    "key_padding_mask_from_attention_mask",
    "masked_softmax",
    "multi_head_attention",
    "ov_circuit",
    "qk_circuit",
    "reference_attention",
    "resolve_scale",
    "select_variants",
    "softmax_attention",
    "unnormalized_attention",
]
