"""The conformance registry: every attention operator attnlab ships is listed here.

tests/ops/test_conformance.py runs the whole suite (shapes, dtypes, row sums,
causality by Jacobian, agreement with the float64 reference in value and
gradient, fully masked rows, large logits) over every entry of
:data:`OPERATORS`. Adding an operator is one more :class:`OperatorEntry`: a
family of variants (sparse, linear, low-rank) keeps its entries in its own file
``tests/ops/conformance_<family>.py`` defining ``OPERATORS: list[OperatorEntry]``
(importing OperatorEntry from this module), which is appended here. An entry that
computes a variant of the catalogue (attnlab.ops.catalogue.CATALOGUE) names it in
``variant``; every catalogue entry must be named by at least one (test_conformance.py).

An entry's ``fn`` has the common signature

    fn(q, k, v, *, mask=None, causal=None, key_padding_mask=None, return_weights=False)
        -> AttentionOutput(output (..., n_q, d_v), weights (..., n_q, n_k) or None)

with q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v). ``features``
lists what the operator supports, so the suite only asks for that:

* ``"mask"``:        boolean masks, and float masks whose entries are 0 or -inf;
* ``"float_mask"``:  finite additive float masks, treated exactly as the reference treats them
                     (added to the logits when normalised, ignored apart from -inf otherwise);
* ``"causal"``:      causal=True, "top_left", "bottom_right";
* ``"key_padding"``: key_padding_mask (B, n_k), True = padding;
* ``"weights"``:     return_weights=True gives the weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import Tensor

from attnlab.ops import (
    AttentionOutput,
    attention_pooling,
    multi_head_attention,
    reference_attention,
    softmax_attention,
    unnormalized_attention,
)

ALL_FEATURES = frozenset({"mask", "float_mask", "causal", "key_padding", "weights"})

OperatorFn = Callable[..., AttentionOutput]


@dataclass(frozen=True)
class OperatorEntry:
    """One attention operator under test.

    name:                pytest id
    fn:                  the operator, with the common signature above
    normalized:          rows of the weights sum to 1 (softmax-like) or not (unnormalized)
    exact:               compared to the reference at the dtype's tolerance (tests/tolerances.py);
                         approximate operators are held to ``approx_rel_error`` instead
    reference_normalize: which reference it matches: reference_attention(normalize=...)
    reference_scale:     the scale c of the reference it matches
    features:            see the module docstring
    min_ndim:            least number of axes q, k, v need (4 for (B, H, n, d) only operators)
    approx_rel_error:    max |out - ref| / max(1, max |ref|) for approximate operators
    variant:             the entry of attnlab.ops.catalogue.CATALOGUE whose function this operator
                         computes (None for operators that are not attention variants of their own:
                         pooling, multi-head)
    reference_fn:        a float64 oracle of the operator's own (same signature as ``fn``, called
                         with float64 inputs), e.g. the dense masked computation a sparse fast
                         path must equal, or kernel attention computed naively; when None the
                         oracle is reference_attention(normalize=..., scale=...)
    """

    name: str
    fn: OperatorFn
    normalized: bool
    exact: bool = True
    reference_normalize: bool = True
    reference_scale: str | float = "1/sqrt(d)"
    features: frozenset[str] = field(default=ALL_FEATURES)
    min_ndim: int = 2
    approx_rel_error: float | None = None
    reference_fn: OperatorFn | None = None
    variant: str | None = None

    def supports(self, *features: str) -> bool:
        return set(features) <= self.features

    def reference(self, q: Tensor, k: Tensor, v: Tensor, **masks) -> AttentionOutput:
        """The float64 oracle this operator must match."""
        if self.reference_fn is not None:
            q, k, v = (t.to(torch.float64) for t in (q, k, v))
            return self.reference_fn(q, k, v, return_weights=True, **masks)
        return reference_attention(
            q, k, v, normalize=self.reference_normalize, scale=self.reference_scale, **masks
        )

    def __post_init__(self) -> None:
        unknown = self.features - ALL_FEATURES
        assert not unknown, f"{self.name}: unknown features {sorted(unknown)}"
        assert self.exact or self.approx_rel_error is not None, (
            f"{self.name}: an approximate operator needs approx_rel_error"
        )


# --- adapters to the common signature ------------------------------------------------


def _softmax_fused(q, k, v, *, return_weights=False, **masks) -> AttentionOutput:
    return softmax_attention(q, k, v, return_weights=False, **masks)


def _softmax_explicit(q, k, v, *, return_weights=False, **masks) -> AttentionOutput:
    """Always the explicit path (weights materialised), even when they are not returned."""
    res = softmax_attention(q, k, v, return_weights=True, **masks)
    return AttentionOutput(res.output, res.weights if return_weights else None)


def _unnormalized(q, k, v, **kw) -> AttentionOutput:
    return unnormalized_attention(q, k, v, scale="none", **kw)


def _pooling_exp(q, k, v, **kw) -> AttentionOutput:
    """Eq. (18) with f = exp(q·k / sqrt(d)), g = id: softmax attention."""
    return attention_pooling(q, k, v, "exp", **kw)


def _pooling_dot(q, k, v, **kw) -> AttentionOutput:
    """Eq. (18) with f = q·k, C_j = 1: the logic text's (QK^T)V, eq. (2.2)."""
    return attention_pooling(q, k, v, "dot", normalize=False, **kw)


def _multihead(q, k, v, *, return_weights=False, **masks) -> AttentionOutput:
    """multi_head_attention with selection weights that make head h see exactly q_h, k_h, v_h.

    q (B, H, n_q, d_k), k (B, H, n_k, d_k), v (B, H, n_k, d_v) are laid side by side
    in a d_model = H (d_k + d_v) space: x_q = [q_1 .. q_H | 0], x_kv = [k_1 .. k_H | v_1 .. v_H].
    W_Q,h and W_K,h pick block h of the q/k part, W_V,h block h of the v part, and
    W_O,h writes head h into columns h d_v .. (h+1) d_v of the output. Products with
    0/1 matrices are exact, so the output, read back per head, must equal the
    single-head reference per head at the dtype's tolerance.
    """
    B, H, n_q, d_k = q.shape
    n_k, d_v = v.shape[-2], v.shape[-1]
    d_model = H * (d_k + d_v)
    x_q = torch.cat(
        [q.transpose(1, 2).reshape(B, n_q, H * d_k), q.new_zeros(B, n_q, H * d_v)], dim=-1
    )  # (B, n_q, d_model)
    x_kv = torch.cat(
        [k.transpose(1, 2).reshape(B, n_k, H * d_k), v.transpose(1, 2).reshape(B, n_k, H * d_v)],
        dim=-1,
    )  # (B, n_k, d_model)
    E = torch.eye(d_model, dtype=q.dtype, device=q.device)
    W_Q = torch.stack([E[:, h * d_k : (h + 1) * d_k] for h in range(H)])  # (H, d_model, d_k)
    W_V = torch.stack(
        [E[:, H * d_k + h * d_v : H * d_k + (h + 1) * d_v] for h in range(H)]
    )  # (H, d_model, d_v)
    W_O = torch.stack([E[h * d_v : (h + 1) * d_v, :] for h in range(H)])  # (H, d_v, d_model)
    res = multi_head_attention(x_q, x_kv, W_Q, W_Q, W_V, W_O, return_weights=return_weights, **masks)
    out = res.output[..., : H * d_v].reshape(B, n_q, H, d_v).transpose(1, 2)  # (B, H, n_q, d_v)
    return AttentionOutput(out, res.weights)  # weights (B, H, n_q, n_k)


# --- the registry: append new operators here -----------------------------------------

OPERATORS: list[OperatorEntry] = [
    OperatorEntry(
        "softmax-fused", _softmax_fused, normalized=True, features=ALL_FEATURES - {"weights"}, variant="softmax"
    ),
    OperatorEntry("softmax-explicit", _softmax_explicit, normalized=True, variant="softmax"),
    # Operators without logits reject finite additive mask values (there is
    # nothing to add them to), so they do not claim float_mask.
    OperatorEntry(
        "unnormalized", _unnormalized, normalized=False,
        reference_normalize=False, reference_scale="none",
        features=ALL_FEATURES - {"float_mask"}, variant="unnormalized",
    ),
    OperatorEntry("pooling-exp", _pooling_exp, normalized=True),
    OperatorEntry(
        "pooling-dot-unnormalized", _pooling_dot, normalized=False,
        reference_normalize=False, reference_scale="none",
        features=ALL_FEATURES - {"float_mask"},
    ),
    OperatorEntry("multihead", _multihead, normalized=True, min_ndim=4),
]


def _collect_variant_entries() -> None:
    """Append the OPERATORS lists of tests/ops/conformance_*.py (one file per variant family)."""
    import importlib.util
    from pathlib import Path

    for path in sorted(Path(__file__).parent.glob("conformance_*.py")):
        spec = importlib.util.spec_from_file_location(f"attnlab_tests_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        OPERATORS.extend(module.OPERATORS)


_collect_variant_entries()


def entries(*features: str) -> list[OperatorEntry]:
    """The operators that support every feature named."""
    return [e for e in OPERATORS if e.supports(*features)]


def draw_qkv(
    shape: tuple[int, ...], dtype: torch.dtype, seed: int, *, requires_grad: bool = False
) -> tuple[Tensor, Tensor, Tensor]:
    """Standard normal q, k, v for shape = (*batch, n_q, n_k, d_k, d_v)."""
    *batch, n_q, n_k, d_k, d_v = shape
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, n_q, d_k, generator=g, dtype=torch.float64).to(dtype)
    k = torch.randn(*batch, n_k, d_k, generator=g, dtype=torch.float64).to(dtype)
    v = torch.randn(*batch, n_k, d_v, generator=g, dtype=torch.float64).to(dtype)
    return tuple(t.requires_grad_(requires_grad) for t in (q, k, v))  # type: ignore[return-value]
