"""Multi-head attention in paper notation, as pure functions.

    Q_h = X W_Q,h,  K_h = Y W_K,h,  V_h = Y W_V,h           W_Q,h, W_K,h in R^{d_model x d_head}
    head_h = Attention(Q_h, K_h, V_h)                       W_V,h in R^{d_model x d_v}
    MultiHead(X, Y) = sum_h head_h W_O,h = Concat(head_1..head_H) W_O          (math text eq. 7)

W_O,h in R^{d_v x d_model} is the h-th row block of W_O (the text's W_{c,h}).

Grouped-query attention (Ainslie et al. 2023, "GQA"): H query heads share H_kv key/value heads,
H a multiple of H_kv, and query head h reads key/value head g(h) = floor(h / (H / H_kv)):

    head_h = Attention(X W_Q,h, Y W_K,g(h), Y W_V,g(h))       W_K, W_V: (H_kv, d_model, .)

(H_kv = H is multi-head attention, H_kv = 1 multi-query attention). The shared K, V are never
repeated in memory on the explicit path (a broadcast over the group) nor on the fused kernel's
plain and causal paths (``enable_gqa``); the fused path with key padding and a causal mask
repeats them (:mod:`attnlab.ops.fused`).

A transform of the projected queries, keys and values (``qkv_transform``, (q, k, v) -> (q', k', v'),
e.g. the rotary embedding of :mod:`attnlab.ops.rotary`, which rotates q and k and leaves v) acts
after the projections and biases, before the logits.
Per head, the QK circuit W_QK,h = W_Q,h W_K,h^T and the OV circuit
W_OV,h = W_V,h W_O,h are d_model x d_model matrices of rank <= d_head:
logits are X W_QK,h Y^T and the head writes P_h Y W_OV,h (rank-collapse notes
§2.1 calls W_OV,h the path weight W_h).
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.softmax import AttentionOutput, softmax_attention

AttentionFn = Callable[..., AttentionOutput]
QKVMap = Callable[[Tensor, Tensor, Tensor], tuple[Tensor, Tensor, Tensor]]


def check_head_weights(W_Q: Tensor, W_K: Tensor, W_V: Tensor, W_O: Tensor) -> None:
    """W_Q (H, d_model, d_head), W_K (H_kv, d_model, d_head), W_V (H_kv, d_model, d_v),
    W_O (H, d_v, d_model), H a multiple of H_kv; ConfigError naming the tensor otherwise."""
    if W_Q.ndim != 3 or W_K.ndim != 3 or W_V.ndim != 3 or W_O.ndim != 3:
        raise ConfigError(
            "per-head weights must be 3-D: W_Q (H, d_model, d_head), W_K (H_kv, d_model, d_head), "
            "W_V (H_kv, d_model, d_v), W_O (H, d_v, d_model)"
        )
    H, d_model, d_head = W_Q.shape
    H_kv = W_K.shape[0]
    if H_kv < 1 or H % H_kv or W_K.shape[1:] != (d_model, d_head):
        raise ConfigError(f"W_K has shape {tuple(W_K.shape)}, expected (H_kv, {d_model}, {d_head}) with H_kv "
                          f"dividing the {H} query heads")
    if W_V.shape[:2] != (H_kv, d_model):
        raise ConfigError(f"W_V has shape {tuple(W_V.shape)}, expected ({H_kv}, {d_model}, d_v) like W_K")
    if W_O.shape != (H, W_V.shape[2], d_model):
        raise ConfigError(
            f"W_O has shape {tuple(W_O.shape)}, expected {(H, W_V.shape[2], d_model)}"
        )


def project(x: Tensor, W: Tensor, b: Tensor | None = None) -> Tensor:
    """Per-head projections x W_h + b_h: x (..., n, d_model), W (H, d_model, k), b (H, k) or None
    -> (..., H, n, k)."""
    out = torch.einsum("...nd,hdk->...hnk", x, W)
    return out if b is None else out + b[:, None, :]


def multi_head_attention(
    x_q: Tensor,
    x_kv: Tensor,
    W_Q: Tensor,
    W_K: Tensor,
    W_V: Tensor,
    W_O: Tensor,
    b_Q: Tensor | None = None,
    b_K: Tensor | None = None,
    b_V: Tensor | None = None,
    b_O: Tensor | None = None,
    *,
    attention: AttentionFn = softmax_attention,
    return_weights: bool = False,
    qkv_transform: QKVMap | None = None,
    head_transform: Callable[[Tensor], Tensor] | None = None,
    **attention_kwargs,
) -> AttentionOutput:
    """Multi-head attention of queries from ``x_q`` over keys/values from ``x_kv``.

    x_q: (..., n_q, d_model), x_kv: (..., n_k, d_model); weights as :func:`check_head_weights`
    (H_kv < H: grouped-query attention, module docstring); biases b_Q (H, d_head), b_K
    (H_kv, d_head), b_V (H_kv, d_v), b_O (d_model,); qkv_transform: (q, k, v) -> (q', k', v') on the
    projected (..., H, n, d_head), (..., H_kv, n, d_head) and (..., H_kv, n, d_v), shapes kept, e.g. a
    :class:`attnlab.ops.rotary.Rotary`;
    head_transform: z -> z' on the heads' outputs z_h = head_h (..., H, n_q, d_v) before W_O (to read
    or replace a head: ablations, :mod:`attnlab.analysis.heads.ablation`). Remaining keyword arguments (mask, causal,
    key_padding_mask, scale) go to ``attention``. Returns output (..., n_q, d_model)
    and, on request, weights (..., H, n_q, n_k).
    """
    check_head_weights(W_Q, W_K, W_V, W_O)
    d_model = W_Q.shape[1]
    if x_q.shape[-1] != d_model or x_kv.shape[-1] != d_model:
        raise ConfigError(
            f"inputs have d_model={x_q.shape[-1]} and {x_kv.shape[-1]}, weights expect {d_model}"
        )
    q = project(x_q, W_Q, b_Q)  # (..., H, n_q, d_head)
    k = project(x_kv, W_K, b_K)  # (..., H_kv, n_k, d_head)
    v = project(x_kv, W_V, b_V)  # (..., H_kv, n_k, d_v)
    if qkv_transform is not None:
        q, k, v = qkv_transform(q, k, v)
    H, H_kv = W_Q.shape[0], W_K.shape[0]
    if H_kv == H:
        heads = attention(q, k, v, return_weights=return_weights, **attention_kwargs)
    elif attention is softmax_attention:
        heads = softmax_attention(q, k, v, return_weights=return_weights, enable_gqa=True, **attention_kwargs)
    else:  # any other operator: the group as a broadcast axis, (..., H_kv, G, n, d) against (..., H_kv, 1, n, d)
        G = H // H_kv
        res = attention(q.unflatten(-3, (H_kv, G)), k.unsqueeze(-3), v.unsqueeze(-3),
                        return_weights=return_weights, **attention_kwargs)
        heads = AttentionOutput(res.output.flatten(-4, -3),
                                None if res.weights is None else res.weights.flatten(-4, -3), res.diagnostics)
    z = heads.output if head_transform is None else head_transform(heads.output)
    out = torch.einsum("...hnv,hvd->...nd", z, W_O)  # (..., n_q, d_model)
    if b_O is not None:
        out = out + b_O
    return AttentionOutput(out, heads.weights)


def per_query_head(W: Tensor, n_heads: int) -> Tensor:
    """Key/value weights (H_kv, ...) as one entry per query head (H, ...): entry h is W[g(h)]
    (a view when H_kv = H, a copy otherwise)."""
    H_kv = W.shape[0]
    if n_heads % H_kv:
        raise ConfigError(f"{H_kv} key/value heads cannot be shared by {n_heads} query heads: H_kv must divide H")
    return W if H_kv == n_heads else W.repeat_interleave(n_heads // H_kv, dim=0)


def qk_circuit(W_Q: Tensor, W_K: Tensor) -> Tensor:
    """W_QK,h = W_Q,h W_K,g(h)^T, shape (H, d_model, d_model) (g(h) = h without grouping)."""
    return W_Q @ per_query_head(W_K, W_Q.shape[0]).transpose(-2, -1)


def ov_circuit(W_V: Tensor, W_O: Tensor) -> Tensor:
    """W_OV,h = W_V,g(h) W_O,h, shape (H, d_model, d_model) (g(h) = h without grouping)."""
    return per_query_head(W_V, W_O.shape[0]) @ W_O
