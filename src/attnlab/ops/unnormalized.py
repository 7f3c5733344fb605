"""Unnormalized (softmax-free) attention.

    ATTENTION_*(Q, K, V) = (Q K^T) V                                  logic text, eq. (2.2)

The logic text writes it transposed, ATTENTION_*(Q,K,V)^t = v X K Q^t, with
tokens as columns; attnlab keeps tokens as rows throughout, so (2.2) is the
transpose of what is computed here. The weights Q K^T are *not* normalised:
rows need not sum to 1, which is exactly what the hand-programmed transformers
of that text rely on. A mask zeroes the forbidden weights (there is no softmax
to send -inf through).
"""

from __future__ import annotations

from torch import Tensor

from attnlab.ops.masks import combine_masks, reject_finite_additive
from attnlab.ops.memory import check_dense_fits
from attnlab.ops.softmax import AttentionOutput, Scale, batch_shape, check_qkv, resolve_scale


def unnormalized_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | None = None,
    causal: bool | str | None = None,
    key_padding_mask: Tensor | None = None,
    scale: Scale = "none",
    return_weights: bool = False,
) -> AttentionOutput:
    """(c Q K^T ⊙ allowed) V with c = 1 by default (eq. 2.2).

    Shapes as in :func:`attnlab.ops.softmax.softmax_attention`. A float ``mask``
    is treated as allowed where it is finite (its values are not added: there
    are no logits to shift).
    """
    check_qkv(q, k, v)
    check_dense_fits(q, k, v, copies=1, what="unnormalized_attention: the weights Q K^T",
                     change="lower n (the weights are formed whether or not they are returned)")
    n_q, n_k = q.shape[-2], k.shape[-2]
    allowed, additive = combine_masks(
        n_q,
        n_k,
        batch_shape=batch_shape(q, k, v),
        mask=mask,
        causal=causal,
        key_padding_mask=key_padding_mask,
        device=q.device,
    )
    reject_finite_additive(additive, "unnormalized attention")
    weights = (q @ k.transpose(-2, -1)) * resolve_scale(scale, q.shape[-1])  # (..., n_q, n_k)
    if allowed is not None:
        weights = weights.masked_fill(~allowed, 0.0)
    return AttentionOutput(weights @ v, weights if return_weights else None)
