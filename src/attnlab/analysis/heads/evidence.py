"""Per-head evidence read from one forward pass: what a head moves (value-weighted attention), what it
writes towards the next token (direct logit attribution), and how much it rests on the first token
(the attention sink). Model-agnostic: every function takes tensors a forward pass produced.

Shapes. A (..., H, n, n): attention maps, rows are queries (:mod:`~attnlab.analysis.heads.maps`).
V (..., H_kv, n, d_v): value vectors v_j = x_j W_V,g + b_V,g per key/value head; with grouped-query
attention query head h reads key/value head g(h) = h // (H / H_kv)
(:mod:`~attnlab.analysis.heads.circuits`). W_O (..., H, d_v, d): the per-head output projection
(attnlab's orientation, :mod:`attnlab.nn.attention`). Everything in float64; inputs are never written.

Value-weighted attention (Kobayashi et al. 2020, "Attention is not only a weight: analyzing
transformers with vector norms"). Head h's output at query i is sum_j a_h,ij f_h(x_j) with

    f_h(x_j) = v_g(h),j W_O,h   (d,)     the vector key j contributes, before its weight,

so the size of what i receives from j is ||a_h,ij f_h(x_j)|| = a_h,ij ||f_h(x_j)|| (a >= 0), not a_h,ij
alone: a head that puts most of its weight on a token whose f is small (a first token or [SEP] whose
value vector nearly vanishes) moves little from it. ||f_h(x_j)|| is computed as ||R_h v_j^T||, R_h
the triangular factor of the reduced QR decomposition W_O,h^T = Q_h R_h (Q_h has orthonormal
columns, so ||v W_O,h|| = ||R_h v^T||), without forming the (..., H, n, d) vectors.

Direct logit attribution. The logits at position i are N(x_i) W_U + b_U, x_i = sum_h o_h,i + r_i the
final residual stream (o_h,i = head h's write P_h V_h W_O,h at position i, r_i everything else:
embeddings, MLPs, other layers, biases) and N the final norm,

    RMSNorm    N(x) = gamma * x / rms(x)                       rms(x) = sqrt(mean_k x_k^2 + eps)
    LayerNorm  N(x) = gamma * (x - mean_k x_k) / sigma(x) + beta

With the per-position factor s_i = gamma / rms(x_i) (or gamma / sigma(x_i)) frozen at its value on
the full residual, N is affine in x, and the logit of the next token y_i splits exactly into

    logit_i[y_i] = sum_h c_h,i + c_r,i + beta . W_U[:, y_i] + b_U[y_i],
    c_h,i = (C o_h,i * s_i) . W_U[:, y_i]                        C = centring (LayerNorm) or identity.

The approximation is the freezing: rms(x_i) depends on every term, so c_h,i is the head's share of
the logit at the model's own normalisation, not the change of the logit if the head were removed
(that needs a second forward pass).

Convention. s_i is frozen at the clean run's residual; gamma is folded into the unembedding
(s_i W_U[:, y] = (1/rms(x_i)) (diag(gamma) W_U)[:, y], the same number either way); and W_U is
uncentred by default. TransformerLens' default ``center_unembed`` subtracts from each row of the
(gamma-folded) unembedding its mean over the vocabulary,

    W_U' = W_U - m 1^T,    m_k = (1/V) sum_v W_U[k, v]      (d,), the mean unembedding direction,

which shifts every logit of a position by the same amount (the softmax is unchanged) and gives

    c'_h,i = c_h,i - (C o_h,i * s_i) . m,

the head's contribution to the next token's logit minus its contribution to the mean logit
(folding gamma before or after centring gives the same W_U': the mean over v commutes with scaling
row k by gamma_k). ``center_unembed=True`` computes c'.

Attention sink. The weight every query row puts on the first real token, averaged over the rows, and
its chance level: the same number read on uniform attention
(:func:`~attnlab.analysis.heads.maps.uniform_attention`), (1/n) sum_{i=0}^{n-1} 1/(i + 1) = H_n / n
for a causal map (H_n the harmonic number) and 1/n for a bidirectional one.
"""

from __future__ import annotations

from typing import Any

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.analysis.heads.circuits import as_weights, grouped_matmul, kv_group_size
from attnlab.analysis.heads.maps import as_maps, key_set, real_tokens, row_mean, uniform_attention
from attnlab.config import check_bool
from attnlab.errors import ConfigError


def _head_maps(A: Any) -> Tensor:
    A = as_maps(A)
    if A.ndim < 3:
        raise ConfigError(f"A must hold one map per head, shape (..., H, n, n), got {tuple(A.shape)}")
    return A


def _leading(x: Tensor, A: Tensor, *, name: str, shape: str) -> None:
    lead, have = tuple(A.shape[:-3]), tuple(x.shape[:-3])
    try:
        ok = tuple(torch.broadcast_shapes(have, lead)) == lead
    except RuntimeError:
        ok = False
    if not ok:
        raise ConfigError(f"{name} must have shape {shape} whose leading axes broadcast to the maps' {lead}, "
                          f"got {tuple(x.shape)}")


def value_weighted_attention(A, V, W_O=None) -> Tensor:
    """N (..., H, n, n) float64, N_h,ij = ||a_h,ij f_h(x_j)|| = a_h,ij ||v_g(h),j W_O,h|| (Kobayashi et al.
    2020; module docstring), or a_h,ij ||v_g(h),j|| with ``W_O=None``.

    A (..., H, n, n) maps (rows are queries); V (..., H_kv, n, d_v) value vectors with their bias, H a
    multiple of H_kv (query head h reads value head h // (H / H_kv)); W_O (..., H, d_v, d) or None.
    Leading axes of V and W_O broadcast to A's (e.g. W_O (H, d_v, d) for maps (B, H, n, n))."""
    A = _head_maps(A)
    H, n = A.shape[-3], A.shape[-1]
    V = as_weights(V, "V")
    if V.shape[-2] != n:
        raise ConfigError(f"V must have shape (..., H_kv, n={n}, d_v) (one value vector per key), got {tuple(V.shape)}")
    H_kv, d_v = V.shape[-3], V.shape[-1]
    G = kv_group_size(H, H_kv, name="V")
    _leading(V, A, name="V", shape="(..., H_kv, n, d_v)")
    if W_O is None:
        f = torch.linalg.vector_norm(V, dim=-1)  # (..., H_kv, n)
        f = f.unsqueeze(-2).expand(f.shape[:-2] + (H_kv, G, n)).reshape(f.shape[:-2] + (H, n))
    else:
        W_O = as_weights(W_O, "W_O")
        if W_O.shape[-3:-1] != (H, d_v):
            raise ConfigError(f"W_O must have shape (..., H={H}, d_v={d_v}, d) (one output projection per query "
                              f"head), got {tuple(W_O.shape)}")
        _leading(W_O, A, name="W_O", shape="(..., H, d_v, d)")
        R = torch.linalg.qr(W_O.mT, mode="r").R  # (..., H, k, d_v), W_O,h^T = Q_h R_h
        f = torch.linalg.vector_norm(grouped_matmul(R, V.mT), dim=-2)  # ||R_h v_j^T||, (..., H, n)
    return A * f.unsqueeze(-2)


@dataclass(frozen=True)
class KeyShare:
    """The share of each map's attention on a key set, (...) per map, averaged over the real query rows:

    - ``attention``: mean_i sum_{j in S} a_ij, the plain attention weight on S;
    - ``norm``: mean_i sum_{j in S} N_ij / sum_j N_ij with N_ij = ||a_ij f(x_j)|| (value-weighted,
      :func:`value_weighted_attention`), the share of the vector norm the row receives from S
      (rows receiving nothing are left out; NaN where no row is left).

    ``norm`` well below ``attention`` says the head attends to S but moves little from it."""

    attention: Tensor
    norm: Tensor


def norm_weighted_share(A, norms, keys, *, key_padding_mask=None) -> KeyShare:
    """The plain and the value-weighted share of attention on the keys S (:class:`KeyShare`).

    A (..., n, n) maps; norms (..., n, n) = :func:`value_weighted_attention` (A, V, W_O); keys: a
    boolean mask (..., n) aligned from the left with the maps, or key positions shared by every map
    (``[0]`` for the first token); key_padding_mask (..., n), True = padding."""
    A = as_maps(A)
    N = as_weights(norms, "norms", 2)
    if N.shape != A.shape:
        raise ConfigError(f"norms must have the maps' shape {tuple(A.shape)} (from value_weighted_attention), "
                          f"got {tuple(N.shape)}")
    if bool((N < 0).any()):
        raise ConfigError("norms must be non-negative (norms of vectors, from value_weighted_attention)")
    real = real_tokens(A, key_padding_mask)
    S = key_set(A, keys, name="keys") & real
    on = S[..., None, :]
    keep = real[..., None, :]
    attention = torch.where(on, A, 0.0).sum(-1)
    total = torch.where(keep, N, 0.0).sum(-1)
    share = torch.where(on, N, 0.0).sum(-1) / total.clamp_min(1e-300)
    return KeyShare(attention=row_mean(attention, real), norm=row_mean(share, real & (total > 0)))


@dataclass(frozen=True)
class DirectLogitAttribution:
    """Direct logit attribution per head (module docstring):

    - ``contributions``: (..., H, n), c_h,i = (C o_h,i * s_i) . W_U[:, y_i]; NaN where y_i = -1;
    - ``mean``: (..., H), the mean of c_h,i over the scored positions i (NaN where none is);
    - ``n_scored``: (...) int64, the scored positions; pool means over documents weighted by it."""

    contributions: Tensor
    mean: Tensor
    n_scored: Tensor


def direct_logit_attribution(head_outputs, final_scale, W_U, targets, *, center: bool = False,
                             center_unembed: bool = False) -> DirectLogitAttribution:
    """Each head's direct contribution to the logit of the next token (module docstring):

        c_h,i = (C o_h,i * s_i) . W_U[:, y_i]

    head_outputs o (..., H, n, d): head h's write to the residual stream at position i, P_h V_h W_O,h
    (without the output bias b_O, which belongs to the rest); final_scale s (..., n, 1) or (..., n, d):
    the final norm's per-position factor frozen on the full residual, gamma / rms(x_i) for RMSNorm
    (gamma / sigma(x_i) for LayerNorm; (..., n, 1) holds 1 / rms(x_i) when gamma is folded into W_U);
    W_U (d, V) the unembedding (logits = N(x) W_U + b_U); targets y (..., n) int token ids in [0, V),
    -1 for a position without a target. ``center``: C subtracts the mean over the d features
    (LayerNorm does; RMSNorm does not). The contributions of all heads plus the rest's, computed the
    same way, plus beta . W_U[:, y] + b_U[y], equal the logit exactly; the approximation is the frozen
    scale (module docstring). ``center_unembed``: W_U with each row's mean over the vocabulary subtracted
    (TransformerLens' default), c'_h,i = c_h,i - (C o_h,i * s_i) . m (module docstring, "Convention")."""
    check_bool("center", center)
    check_bool("center_unembed", center_unembed)
    o = as_weights(head_outputs, "head_outputs")
    n, d = o.shape[-2:]
    lead = tuple(o.shape[:-3])
    s = as_weights(final_scale, "final_scale", 2)
    if tuple(s.shape[:-1]) != lead + (n,) or s.shape[-1] not in (1, d):
        raise ConfigError(f"final_scale must have shape {lead + (n,)} + (1,) or (d={d},) (the final norm's factor "
                          f"per position, leading axes as head_outputs (..., H, n, d) without H), got {tuple(s.shape)}")
    W_U = as_weights(W_U, "W_U", 2)
    if W_U.ndim != 2 or W_U.shape[0] != d:
        raise ConfigError(f"W_U must be the unembedding (d={d}, V) with logits = x W_U, got {tuple(W_U.shape)}")
    y = torch.as_tensor(targets)
    if y.dtype.is_floating_point or y.dtype.is_complex or y.dtype == torch.bool:
        raise ConfigError(f"targets must be integer token ids (..., n), got dtype {y.dtype}")
    if tuple(y.shape) != lead + (n,):
        raise ConfigError(f"targets must have shape {lead + (n,)} (head_outputs' leading axes and positions), "
                          f"got {tuple(y.shape)}")
    y = y.to(device=o.device, dtype=torch.int64)
    V = W_U.shape[1]
    if bool(((y < -1) | (y >= V)).any()):
        raise ConfigError(f"targets must be token ids in [0, {V}) or -1 (no target), got values in "
                          f"[{int(y.min())}, {int(y.max())}]")
    if center:
        o = o - o.mean(-1, keepdim=True)
    if center_unembed:
        W_U = W_U - W_U.mean(-1, keepdim=True)  # W_U' = W_U - m 1^T
    scored = y >= 0
    read = s * W_U.mT[y.clamp_min(0)]  # s_i * W_U[:, y_i], (..., n, d)
    c = (o * read.unsqueeze(-3)).sum(-1)  # (..., H, n)
    rows = scored.unsqueeze(-2).expand(c.shape)
    c = torch.where(rows, c, torch.full_like(c, float("nan")))
    return DirectLogitAttribution(contributions=c, mean=row_mean(c, rows), n_scored=scored.sum(-1))


@dataclass(frozen=True)
class SinkShare:
    """The attention on the first real token, (...) per map:

    - ``share``: mean over the real query rows i of a_i,f (f the first real token);
    - ``causal_chance``: the same on causal uniform attention, mean_i 1/|{real j <= i}| (H_n / n
      without padding);
    - ``bidirectional_chance``: the same on bidirectional uniform attention, 1/(number of real tokens).
    """

    share: Tensor
    causal_chance: Tensor
    bidirectional_chance: Tensor


def _first_token_share(A: Tensor, real: Tensor) -> Tensor:
    first = real.to(torch.int64).argmax(-1)  # the first True, (...)
    idx = first[..., None, None].expand(A.shape[:-1] + (1,))
    return row_mean(A.gather(-1, idx).squeeze(-1), real)


def attention_sink_share(A, key_padding_mask=None) -> SinkShare:
    """The mean attention on the first real token and its causal and bidirectional chance levels
    (:class:`SinkShare`; module docstring). A (..., n, n) maps, rows are queries; key_padding_mask
    (..., n), True = padding, aligned from the left with the maps (e.g. (B, n) for (B, L, H, n, n))."""
    A = as_maps(A)
    n = A.shape[-1]
    real = real_tokens(A, key_padding_mask)
    share = _first_token_share(A, real)
    if key_padding_mask is None:
        ones = torch.ones(n, dtype=torch.bool)
        chance = [_first_token_share(uniform_attention(n, causal=c), ones).expand(share.shape) for c in (True, False)]
    else:
        chance = [_first_token_share(uniform_attention(n, causal=c, key_padding_mask=~real), real)
                  for c in (True, False)]
    return SinkShare(share=share, causal_chance=chance[0], bidirectional_chance=chance[1])
