"""Multi-head attention in paper notation, as pure functions.

    Q_h = X W_Q,h,  K_h = Y W_K,h,  V_h = Y W_V,h           W_Q,h, W_K,h in R^{d_model x d_head}
    head_h = Attention(Q_h, K_h, V_h)                       W_V,h in R^{d_model x d_v}
    MultiHead(X, Y) = sum_h head_h W_O,h = Concat(head_1..head_H) W_O          (math text eq. 7)

W_O,h in R^{d_v x d_model} is the h-th row block of W_O (the text's W_{c,h}).
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


def check_head_weights(W_Q: Tensor, W_K: Tensor, W_V: Tensor, W_O: Tensor) -> None:
    if W_Q.ndim != 3 or W_K.ndim != 3 or W_V.ndim != 3 or W_O.ndim != 3:
        raise ConfigError(
            "per-head weights must be 3-D: W_Q, W_K (H, d_model, d_head), "
            "W_V (H, d_model, d_v), W_O (H, d_v, d_model)"
        )
    H, d_model, d_head = W_Q.shape
    if W_K.shape != (H, d_model, d_head):
        raise ConfigError(f"W_K has shape {tuple(W_K.shape)}, expected {(H, d_model, d_head)} like W_Q")
    if W_V.shape[:2] != (H, d_model):
        raise ConfigError(f"W_V has shape {tuple(W_V.shape)}, expected ({H}, {d_model}, d_v)")
    if W_O.shape != (H, W_V.shape[2], d_model):
        raise ConfigError(
            f"W_O has shape {tuple(W_O.shape)}, expected {(H, W_V.shape[2], d_model)}"
        )


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
    **attention_kwargs,
) -> AttentionOutput:
    """Multi-head attention of queries from ``x_q`` over keys/values from ``x_kv``.

    x_q: (..., n_q, d_model), x_kv: (..., n_k, d_model); biases b_Q, b_K: (H, d_head),
    b_V: (H, d_v), b_O: (d_model,). Remaining keyword arguments (mask, causal,
    key_padding_mask, scale) go to ``attention``. Returns output (..., n_q, d_model)
    and, on request, weights (..., H, n_q, n_k).
    """
    check_head_weights(W_Q, W_K, W_V, W_O)
    d_model = W_Q.shape[1]
    if x_q.shape[-1] != d_model or x_kv.shape[-1] != d_model:
        raise ConfigError(
            f"inputs have d_model={x_q.shape[-1]} and {x_kv.shape[-1]}, weights expect {d_model}"
        )
    q = torch.einsum("...nd,hdk->...hnk", x_q, W_Q)  # (..., H, n_q, d_head)
    k = torch.einsum("...nd,hdk->...hnk", x_kv, W_K)  # (..., H, n_k, d_head)
    v = torch.einsum("...nd,hdk->...hnk", x_kv, W_V)  # (..., H, n_k, d_v)
    if b_Q is not None:
        q = q + b_Q[:, None, :]
    if b_K is not None:
        k = k + b_K[:, None, :]
    if b_V is not None:
        v = v + b_V[:, None, :]
    heads = attention(q, k, v, return_weights=return_weights, **attention_kwargs)
    out = torch.einsum("...hnv,hvd->...nd", heads.output, W_O)  # (..., n_q, d_model)
    if b_O is not None:
        out = out + b_O
    return AttentionOutput(out, heads.weights)


def qk_circuit(W_Q: Tensor, W_K: Tensor) -> Tensor:
    """W_QK,h = W_Q,h W_K,h^T, shape (H, d_model, d_model)."""
    return W_Q @ W_K.transpose(-2, -1)


def ov_circuit(W_V: Tensor, W_O: Tensor) -> Tensor:
    """W_OV,h = W_V,h W_O,h, shape (H, d_model, d_model)."""
    return W_V @ W_O
