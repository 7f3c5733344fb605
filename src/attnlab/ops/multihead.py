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
from attnlab.ops.masks import combine_masks
from attnlab.ops.memory import check_dense_fits
from attnlab.ops.softmax import AttentionOutput, Scale, batch_shape, check_qkv, masked_softmax, resolve_scale, softmax_attention

AttentionFn = Callable[..., AttentionOutput]
QKVMap = Callable[[Tensor, Tensor, Tensor], tuple[Tensor, Tensor, Tensor]]
TensorMap = Callable[[Tensor], Tensor]


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
    **attention_kwargs,
) -> AttentionOutput:
    """Multi-head attention of queries from ``x_q`` over keys/values from ``x_kv``.

    x_q: (..., n_q, d_model), x_kv: (..., n_k, d_model); weights as :func:`check_head_weights`
    (H_kv < H: grouped-query attention, module docstring); biases b_Q (H, d_head), b_K
    (H_kv, d_head), b_V (H_kv, d_v), b_O (d_model,); qkv_transform: (q, k, v) -> (q', k', v') on the
    projected (..., H, n, d_head), (..., H_kv, n, d_head) and (..., H_kv, n, d_v), shapes kept, e.g. a
    :class:`attnlab.ops.rotary.Rotary`. Remaining keyword arguments (mask, causal,
    key_padding_mask, scale) go to ``attention``. Returns output (..., n_q, d_model)
    and, on request, weights (..., H, n_q, n_k). The steps are :func:`project`, :func:`attend_heads`
    and :func:`combine_heads` (an attnlab module with hooks runs them one by one).
    """
    check_inputs(x_q, x_kv, W_Q, W_K, W_V, W_O)
    q = project(x_q, W_Q, b_Q)  # (..., H, n_q, d_head)
    k = project(x_kv, W_K, b_K)  # (..., H_kv, n_k, d_head)
    v = project(x_kv, W_V, b_V)  # (..., H_kv, n_k, d_v)
    if qkv_transform is not None:
        q, k, v = qkv_transform(q, k, v)
    heads = attend_heads(q, k, v, attention=attention, return_weights=return_weights, **attention_kwargs)
    return AttentionOutput(combine_heads(heads.output, W_O, b_O), heads.weights)


def check_inputs(x_q: Tensor, x_kv: Tensor, W_Q: Tensor, W_K: Tensor, W_V: Tensor, W_O: Tensor) -> None:
    """:func:`check_head_weights`, and inputs whose last axis is the weights' d_model."""
    check_head_weights(W_Q, W_K, W_V, W_O)
    d_model = W_Q.shape[1]
    if x_q.shape[-1] != d_model or x_kv.shape[-1] != d_model:
        raise ConfigError(
            f"inputs have d_model={x_q.shape[-1]} and {x_kv.shape[-1]}, weights expect {d_model}"
        )


def attend_heads(q: Tensor, k: Tensor, v: Tensor, *, attention: AttentionFn = softmax_attention,
                 return_weights: bool = False, **attention_kwargs) -> AttentionOutput:
    """Every head's z_h = Attention(q_h, k_g(h), v_g(h)): q (..., H, n_q, d_head), k (..., H_kv, n_k, d_head),
    v (..., H_kv, n_k, d_v) -> z (..., H, n_q, d_v) and, on request, P (..., H, n_q, n_k)."""
    H, H_kv = q.shape[-3], k.shape[-3]
    if H_kv == H:
        return attention(q, k, v, return_weights=return_weights, **attention_kwargs)
    if attention is softmax_attention:
        return softmax_attention(q, k, v, return_weights=return_weights, enable_gqa=True, **attention_kwargs)
    G = H // H_kv  # any other operator: the group as a broadcast axis, (..., H_kv, G, n, d) against (..., H_kv, 1, n, d)
    res = attention(q.unflatten(-3, (H_kv, G)), k.unsqueeze(-3), v.unsqueeze(-3),
                    return_weights=return_weights, **attention_kwargs)
    return AttentionOutput(res.output.flatten(-4, -3),
                           None if res.weights is None else res.weights.flatten(-4, -3), res.diagnostics)


def combine_heads(z: Tensor, W_O: Tensor, b_O: Tensor | None = None) -> Tensor:
    """Eq. (7): sum_h z_h W_O,h + b_O, z (..., H, n_q, d_v), W_O (H, d_v, d_model) -> (..., n_q, d_model)."""
    out = torch.einsum("...hnv,hvd->...nd", z, W_O)  # (..., n_q, d_model)
    return out if b_O is None else out + b_O


def softmax_heads_exposed(
    q: Tensor, k: Tensor, v: Tensor, *, scale: Scale = "1/sqrt(d)", mask: Tensor | None = None,
    causal: bool | str | None = None, key_padding_mask: Tensor | None = None,
    scores_map: TensorMap | None = None, pattern_map: TensorMap | None = None,
) -> AttentionOutput:
    """Every head's softmax attention on the explicit path, with its scores and pattern exposed:

        S_h = c q_h k_g(h)^T + M   (masked pairs -inf),   P_h = softmax(S_h),   z_h = P_h v_g(h)

    q (..., H, n_q, d_head), k (..., H_kv, n_k, d_head), v (..., H_kv, n_k, d_v); masks and scale as
    :func:`attnlab.ops.softmax.softmax_attention`. ``scores_map`` receives S (..., H, n_q, n_k) and returns
    the scores the softmax uses (masked pairs stay masked whatever it returns; a row with no allowed key
    gives P = 0); ``pattern_map`` receives P and returns the weights applied to v. Returns z (..., H, n_q, d_v)
    and P. With both maps None (or the identity) z and P equal ``softmax_attention(..., return_weights=True)``
    to the last bit: the same operations in the same order (grouped heads as a broadcast axis, as there).
    """
    H, H_kv = q.shape[-3], k.shape[-3]
    if H_kv < 1 or H % H_kv or v.shape[-3] != H_kv:
        raise ConfigError(f"k and v need the same number of heads H_kv dividing the {H} query heads, got k "
                          f"{H_kv} and v {v.shape[-3]}")
    G = H // H_kv
    if G > 1:  # the group as a broadcast axis: (..., H_kv, G, n, d) against (..., H_kv, 1, n, d)
        if mask is not None and mask.ndim >= 3:
            mask = mask.unflatten(-3, (H_kv, G)) if mask.shape[-3] == H else mask.unsqueeze(-3)
        q, k, v = q.unflatten(-3, (H_kv, G)), k.unsqueeze(-3), v.unsqueeze(-3)
    check_qkv(q, k, v)
    c = resolve_scale(scale, q.shape[-1])
    check_dense_fits(q, k, v, copies=2, what="the scores and the pattern of every head")
    allowed, additive = combine_masks(q.shape[-2], k.shape[-2], batch_shape=batch_shape(q, k, v), mask=mask,
                                      causal=causal, key_padding_mask=key_padding_mask, device=q.device)
    logits = (q @ k.transpose(-2, -1)) * c  # (..., n_q, n_k)
    if additive is not None:
        logits = logits + additive.to(logits.dtype)
    if scores_map is not None:
        shown = logits if allowed is None else logits.masked_fill(~allowed, float("-inf"))
        logits = _per_head(scores_map, shown, G)
    P = masked_softmax(logits, allowed)
    if pattern_map is not None:
        P = _per_head(pattern_map, P, G)
    z = P @ v
    return AttentionOutput(z.flatten(-4, -3), P.flatten(-4, -3)) if G > 1 else AttentionOutput(z, P)


def _per_head(fn: TensorMap, x: Tensor, G: int) -> Tensor:
    """fn on x with one axis of H heads: x (..., H_kv, G, n_q, n_k) is shown as (..., H, n_q, n_k) when G > 1."""
    if G == 1:
        return fn(x)
    return fn(x.flatten(-4, -3)).unflatten(-3, (x.shape[-4], G))


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
