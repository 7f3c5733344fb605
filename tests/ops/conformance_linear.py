"""Conformance entries of linear attention (attnlab.ops.linear), math text §2.1.2.

Each entry's oracle is the naive O(n^2) kernel form with the same feature map,
eq. (18) with f(q, k) = phi(q)·phi(k), computed by attention_pooling in float64
(masking by zeroing the kernel). Causal entries use chunk_size 2, so several
chunks and a partial last chunk are exercised at these sizes. For favor+ the oracle uses the same random
directions but the raw, unshifted features: the operator's stabilising shifts
cancel exactly, so agreement checks that too. General masks go through the
quadratic form; finite additive masks have no logits, so no entry claims float_mask.
"""

from __future__ import annotations

import torch

from conformance import ALL_FEATURES, OperatorEntry

from attnlab.ops.linear import FeatureMap, favor_features, feature_map, linear_attention, recurrent_linear_attention
from attnlab.ops.pooling import attention_pooling

_FEATURES = ALL_FEATURES - {"float_mask"}
_FAVOR_SEED = 1234
_FAVOR_M = 17  # more features than d_k = 11: two orthogonal blocks
_favor_cache: dict[int, FeatureMap] = {}


def _favor(d: int) -> FeatureMap:
    """The favor+ feature map for inputs of size d, drawn once from a fixed seed."""
    if d not in _favor_cache:
        g = torch.Generator().manual_seed(_FAVOR_SEED + d)
        _favor_cache[d] = feature_map("favor+", d=d, num_features=_FAVOR_M, generator=g)
    return _favor_cache[d]


def _phi(name: str, d: int) -> FeatureMap:
    return _favor(d) if name == "favor+" else feature_map(name)


def _operator(name: str, causal_form: str = "chunked"):
    def fn(q, k, v, *, causal=None, return_weights=False, **masks):
        form = causal_form if causal not in (None, False) and "mask" not in masks else "auto"
        return linear_attention(
            q, k, v, feature_map=_phi(name, q.shape[-1]), causal=causal, form=form,
            chunk_size=2, return_weights=return_weights, **masks,
        )
    return fn


def _recurrent(q, k, v, *, causal=None, mask=None, return_weights=False, **masks):
    if mask is not None:  # the recurrent form has no general mask: the quadratic path
        return linear_attention(
            q, k, v, causal=causal, mask=mask, return_weights=return_weights, **masks
        )
    return recurrent_linear_attention(
        q, k, v, causal=causal, return_weights=return_weights, **masks
    )


def _naive(name: str):
    def reference(q, k, v, **kw):
        if name == "favor+":
            W = _favor(q.shape[-1]).W
            f = lambda a, b: favor_features(a, W) @ favor_features(b, W).transpose(-2, -1)  # noqa: E731
        else:
            phi = feature_map(name)
            f = lambda a, b: phi(a) @ phi(b).transpose(-2, -1)  # noqa: E731
        return attention_pooling(q, k, v, f, **kw)
    return reference


OPERATORS: list[OperatorEntry] = [
    OperatorEntry("linear-elu1", _operator("elu+1"), normalized=True, features=_FEATURES,
                  reference_fn=_naive("elu+1"), variant="linear"),
    OperatorEntry("linear-elu1-cumsum", _operator("elu+1", "cumsum"), normalized=True,
                  features=_FEATURES, reference_fn=_naive("elu+1"), variant="linear"),
    # relu features vanish on half the space, so phi(q)·phi(k) = 0 for some visible
    # pairs; the causality test compares with the oracle's own non-zero pattern.
    OperatorEntry("linear-relu", _operator("relu"), normalized=True, features=_FEATURES,
                  reference_fn=_naive("relu"), variant="linear-relu"),
    OperatorEntry("linear-taylor", _operator("taylor"), normalized=True, features=_FEATURES,
                  reference_fn=_naive("taylor"), variant="linear-taylor"),
    OperatorEntry("linear-favor+", _operator("favor+"), normalized=True, features=_FEATURES,
                  reference_fn=_naive("favor+"), variant="favor+"),
    OperatorEntry("linear-elu1-recurrent", _recurrent, normalized=True,
                  features=_FEATURES, reference_fn=_naive("elu+1"), variant="linear"),
]
