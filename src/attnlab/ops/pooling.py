"""General attention pooling with a pluggable similarity.

    o_j = (1 / C_j) sum_i f(q_j, k_i) g(v_i),   C_j = sum_i f(q_j, k_i)      math text, eq. (18)

With f(q, k) = exp(q·k / sqrt(d)) and g = identity this is softmax attention;
with f(q, k) = phi(q)·phi(k) it is linear attention (eq. 13-15). ``normalize=
False`` drops C_j (C_j = 1), giving e.g. the unnormalized attention of the logic
text with f(q, k) = q·k. The math text indexes queries by j and keys by i; the
tensors below keep queries on the second-to-last axis as everywhere else.

A row whose similarities sum to 0 (C_j = 0: every key masked, or a
non-negative f that vanishes) gives o_j = 0 with finite gradients.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor

from attnlab.errors import UnknownNameError
from attnlab.ops.masks import combine_masks
from attnlab.ops.softmax import AttentionOutput, check_qkv

Similarity = Callable[[Tensor, Tensor], Tensor]
"""f(Q, K) -> (..., n_q, n_k) matrix of f(q_j, k_i)."""


def exp_similarity(q: Tensor, k: Tensor) -> Tensor:
    """f(q, k) = exp(q·k / sqrt(d) - row max); the row shift cancels in o_j."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.exp(s - s.amax(dim=-1, keepdim=True).detach())


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
    return_weights: bool = False,
) -> AttentionOutput:
    """Eq. (18): o_j = (1/C_j) sum_i f(q_j, k_i) g(v_i).

    Returns weights f(q_j, k_i)/C_j (or f itself when ``normalize=False``).
    """
    check_qkv(q, k, v)
    f = get_similarity(f) if isinstance(f, str) else f
    n_q, n_k = q.shape[-2], k.shape[-2]
    allowed, _ = combine_masks(
        n_q, n_k, logits_ndim=max(q.ndim, k.ndim), mask=mask, causal=causal, device=q.device
    )
    sim = f(q, k)  # (..., n_q, n_k)
    if allowed is not None:
        sim = sim.masked_fill(~allowed, 0.0)
    if normalize:
        C = sim.sum(dim=-1, keepdim=True)  # (..., n_q, 1)
        safe = torch.where(C == 0, torch.ones_like(C), C)
        sim = torch.where(C == 0, torch.zeros_like(sim), sim / safe)
    gv = v if g is None else g(v)  # (..., n_k, d_out)
    return AttentionOutput(sim @ gv, sim if return_weights else None)
