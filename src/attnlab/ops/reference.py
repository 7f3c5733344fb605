"""The float64 oracle every fast path is tested against.

Written to be obviously correct, not fast: one query at a time, the softmax
spelled out as exp(z - max z) / sum exp(z - max z) over the allowed keys only,
in float64. Autograd flows through it, so gradients of fast paths are checked
against it too.

    o_i = sum_{j in N(i)} exp(c q_i·k_j + m_ij) v_j / sum_{j in N(i)} exp(c q_i·k_j + m_ij)

with N(i) the keys query i may attend to; o_i = 0 when N(i) is empty.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.ops.masks import combine_masks
from attnlab.ops.memory import check_dense_fits
from attnlab.ops.softmax import AttentionOutput, Scale, check_qkv, empty_attention, resolve_scale


def reference_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | None = None,
    causal: bool | str | None = None,
    key_padding_mask: Tensor | None = None,
    scale: Scale = "1/sqrt(d)",
    normalize: bool = True,
) -> AttentionOutput:
    """Softmax attention (``normalize=True``) or unnormalized (QK^T)V, in float64.

    Shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v); returns float64
    output (..., n_q, d_v) and weights (..., n_q, n_k).
    """
    q, k, v = (torch.as_tensor(t).to(torch.float64) for t in (q, k, v))  # the oracle takes any numbers
    check_qkv(q, k, v)
    if (empty := empty_attention(q, k, v, return_weights=True)) is not None:
        return empty
    check_dense_fits(q, k, v, copies=3, what="reference_attention: the mask, the offsets and the weights",
                     change="lower n (the reference holds every weight in float64)")
    n_q, n_k = q.shape[-2], k.shape[-2]
    c = resolve_scale(scale, q.shape[-1])
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    allowed, additive = combine_masks(
        n_q, n_k, batch_shape=tuple(batch), mask=mask, causal=causal,
        key_padding_mask=key_padding_mask, device=q.device,
    )
    full = (*batch, n_q, n_k)
    allowed = torch.ones(full, dtype=torch.bool, device=q.device) if allowed is None else allowed.expand(full)
    additive = (
        torch.zeros(full, dtype=torch.float64, device=q.device)
        if additive is None
        else additive.to(torch.float64).expand(full)
    )
    q, k, v = q.expand(*batch, *q.shape[-2:]), k.expand(*batch, *k.shape[-2:]), v.expand(*batch, *v.shape[-2:])
    Q, K, V = q.reshape(-1, n_q, q.shape[-1]), k.reshape(-1, n_k, k.shape[-1]), v.reshape(-1, n_k, v.shape[-1])
    A, M = allowed.reshape(-1, n_q, n_k), additive.reshape(-1, n_q, n_k)

    outputs, weight_rows = [], []
    for b in range(Q.shape[0]):
        for i in range(n_q):
            keys = torch.nonzero(A[b, i]).flatten()
            w = torch.zeros(n_k, dtype=torch.float64, device=q.device)
            if keys.numel() > 0:
                z = (K[b, keys] @ Q[b, i]) * c
                if normalize:
                    z = z + M[b, i, keys]
                    e = torch.exp(z - z.max())
                    w = w.index_put((keys,), e / e.sum())
                else:
                    w = w.index_put((keys,), z)
            weight_rows.append(w)
            outputs.append(w @ V[b])
    out = torch.stack(outputs).reshape(*batch, n_q, v.shape[-1])
    weights = torch.stack(weight_rows).reshape(*batch, n_q, n_k)
    return AttentionOutput(out, weights)
