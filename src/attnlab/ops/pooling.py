"""General attention pooling with a pluggable similarity.

    o_j = (1 / C_j) sum_i f(q_j, k_i) g(v_i),   C_j = sum_i f(q_j, k_i)      math text, eq. (18)

With f(q, k) = exp(q·k / sqrt(d)) and g = identity this is softmax attention;
with f(q, k) = phi(q)·phi(k) it is linear attention (eq. 13-15). ``normalize=
False`` drops C_j (C_j = 1), giving e.g. the unnormalized attention of the logic
text with f(q, k) = q·k. The math text indexes queries by j and keys by i; the
tensors below keep queries on the second-to-last axis as everywhere else.

A row whose similarities sum to 0 (C_j = 0: every key masked, or a
non-negative f that vanishes) gives o_j = 0 with finite gradients.

A similarity of the form f = exp(s(q, k)) declares its exponent as
``f.log_similarity = s``; pooling then works in log space (masked keys get
s = -inf, the row maximum is taken over allowed keys only, and an additive
float mask is added to s), so it never overflows and never loses an allowed
key to a masked one. For other similarities an additive mask has no meaning
beyond its -inf entries, and finite non-zero entries are rejected.

The text writes the normaliser as C; it depends on the query, C = C_j.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor

from attnlab.errors import UnknownNameError
from attnlab.ops.masks import combine_masks, reject_finite_additive
from attnlab.ops.memory import check_dense_fits
from attnlab.ops.softmax import AttentionOutput, batch_shape, check_qkv, masked_softmax

Similarity = Callable[[Tensor, Tensor], Tensor]
"""f(Q, K) -> (..., n_q, n_k) matrix of f(q_j, k_i)."""


def scaled_dot(q: Tensor, k: Tensor) -> Tensor:
    """s(q, k) = q·k / sqrt(d), shape (..., n_q, n_k)."""
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def exp_similarity(q: Tensor, k: Tensor) -> Tensor:
    """f(q, k) = exp(q·k / sqrt(d)); with it eq. (18) is softmax attention."""
    return torch.exp(scaled_dot(q, k))


exp_similarity.log_similarity = scaled_dot  # type: ignore[attr-defined]


def dot_similarity(q: Tensor, k: Tensor) -> Tensor:
    """f(q, k) = q·k (may be negative; meaningful with normalize=False)."""
    return q @ k.transpose(-2, -1)


def elu_feature_similarity(q: Tensor, k: Tensor) -> Tensor:
    """f(q, k) = phi(q)·phi(k) with phi(x) = elu(x) + 1 > 0 (math text eq. 14-15)."""
    phi = lambda x: torch.nn.functional.elu(x) + 1.0  # noqa: E731
    return phi(q) @ phi(k).transpose(-2, -1)


def taylor_similarity(q: Tensor, k: Tensor) -> Tensor:
    """f(q, k) = 1 + (q/|q|)·(k/|k|) >= 0, first-order Taylor form of exp (math text §2.1.2)."""
    qn = q / q.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(q.dtype).tiny)
    kn = k / k.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(k.dtype).tiny)
    return 1.0 + qn @ kn.transpose(-2, -1)


SIMILARITIES: dict[str, Similarity] = {
    "exp": exp_similarity,
    "dot": dot_similarity,
    "elu+1": elu_feature_similarity,
    "taylor": taylor_similarity,
}


def get_similarity(name: str) -> Similarity:
    try:
        return SIMILARITIES[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown similarity {name!r}: choose one of {', '.join(SIMILARITIES)}"
        ) from None


def attention_pooling(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    f: Similarity | str = "exp",
    g: Callable[[Tensor], Tensor] | None = None,
    *,
    normalize: bool = True,
    mask: Tensor | None = None,
    causal: bool | str | None = None,
    key_padding_mask: Tensor | None = None,
    return_weights: bool = False,
) -> AttentionOutput:
    """Eq. (18): o_j = (1/C_j) sum_i f(q_j, k_i) g(v_i).

    Returns weights f(q_j, k_i)/C_j (or f itself when ``normalize=False``).
    """
    check_qkv(q, k, v)
    check_dense_fits(q, k, v, copies=1, what="attention_pooling: the similarities",
                     change="lower n (the similarities are formed whether or not they are returned)")
    f = get_similarity(f) if isinstance(f, str) else f
    allowed, additive = combine_masks(
        q.shape[-2], k.shape[-2], batch_shape=batch_shape(q, k, v),
        mask=mask, causal=causal, key_padding_mask=key_padding_mask, device=q.device,
    )
    log_f = getattr(f, "log_similarity", None)
    if log_f is not None:
        s = log_f(q, k)  # (..., n_q, n_k)
        if additive is not None:
            s = s + additive.to(s.dtype)
        sim = masked_softmax(s, allowed) if normalize else torch.exp(s)
        if not normalize and allowed is not None:
            sim = sim.masked_fill(~allowed, 0.0)
    else:
        reject_finite_additive(additive, "this similarity")
        sim = f(q, k)  # (..., n_q, n_k)
        if allowed is not None:
            sim = sim.masked_fill(~allowed, 0.0)
        if normalize:
            C = sim.sum(dim=-1, keepdim=True)  # C_j, (..., n_q, 1)
            safe = torch.where(C == 0, torch.ones_like(C), C)
            sim = torch.where(C == 0, torch.zeros_like(sim), sim / safe)
    gv = v if g is None else g(v)  # (..., n_k, d_out)
    return AttentionOutput(sim @ gv, sim if return_weights else None)
