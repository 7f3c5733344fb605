"""The weights of one attention layer read as circuits in the residual basis: the QK and OV
circuits of every head and the OV circuit's copying score (Elhage et al. 2021, "A Mathematical
Framework for Transformer Circuits").

Orientation (attnlab's, :mod:`attnlab.nn.attention`): row vectors, x W. Per layer

    W_Q  (..., H, d, d_head)      W_K  (..., H_kv, d, d_head)
    W_V  (..., H_kv, d, d_v)      W_O  (..., H, d_v, d)
    W_E  (V, d)  token embedding (row t is token t)      W_U  (d, V)  unembedding

(d = d_model, V = vocabulary size, any leading axes such as layers, broadcast). Grouped-query
attention: H query heads share H_kv key/value heads (H a multiple of H_kv; H_kv = H is ordinary
multi-head attention, H_kv = 1 multi-query attention), query head h reads key/value head

    g(h) = h // (H / H_kv)          (heads 0..G-1 share head 0, G = H / H_kv)

The shared heads are never repeated in memory: the G query heads of one group are stacked into
one matrix and multiplied by their key/value head once (:func:`grouped_matmul`).

Circuits (Elhage et al. 2021):

    W_QK,h = W_Q,h W_K,g(h)^T   (d, d)   logits_h,ij = x_i W_QK,h x_j^T / sqrt(d_head) (+ biases)
    W_OV,h = W_V,g(h) W_O,h     (d, d)   head h writes sum_j a_h,ij x_j W_OV,h (+ biases)

Copying score. Embedding a token s, moving it through head h and reading the logit of token t
gives the full OV circuit (the paper's W_U W_OV W_E, transposed for row vectors)

    F_h = W_E W_OV,h W_U   (V, V),   F_h[s, t] = the logit of t raised by attending to s.

A head copies when attending to s raises the logit of s itself: F_h has positive eigenvalues.
Elhage et al. summarise the spectrum lambda_1..lambda_V of F_h by

    sum_k lambda_k / sum_k |lambda_k|   in [-1, 1]

(1 for a pure copying head, -1 for a head that suppresses what it attends to; the numerator is
trace F_h, real although the lambda_k may be complex, since a real matrix's complex eigenvalues
come in conjugate pairs). F_h is V x V, but its nonzero eigenvalues are those of the d x d matrix

    M_h = W_OV,h (W_U W_E)   (d, d),

because F_h = A B and M_h = B A with A = W_E (V, d), B = W_OV,h W_U (d, V), and AB and BA have
the same nonzero eigenvalues with the same multiplicities (if AB u = lambda u with lambda != 0
then B u != 0 and BA (B u) = lambda (B u); the characteristic polynomials satisfy
det(z I_V - AB) = z^(V - d) det(z I_d - BA)). F_h has V - d further zeros, which change
neither sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.config import check_number
from attnlab.errors import ConfigError

ZERO_EIGENVALUE_RTOL = 1e-9  # |lambda| <= this * max |lambda|: a zero eigenvalue computed with rounding error


def as_weights(W, name: str, ndim: int = 3) -> Tensor:
    """W as a float64 tensor with at least ``ndim`` axes and finite entries (a copy only where the
    dtype changes; inputs are never written)."""
    W = torch.as_tensor(W).detach()
    if W.ndim < ndim:
        raise ConfigError(f"{name} must have at least {ndim} axes, got shape {tuple(W.shape)}")
    if not (W.is_floating_point() and bool(torch.isfinite(W).all())):
        raise ConfigError(f"{name} must hold finite real numbers (a float tensor), got dtype {W.dtype}")
    return W.to(torch.float64)


def kv_group_size(H: int, H_kv: int, *, name: str = "W_K") -> int:
    """G = H / H_kv, the query heads per key/value head; ConfigError unless H_kv divides H."""
    if H_kv < 1 or H % H_kv:
        raise ConfigError(f"{name} has {H_kv} heads, which does not divide the {H} query heads: grouped-query "
                          f"attention needs H a multiple of H_kv (pass key/value weights with a divisor of {H} heads)")
    return H // H_kv


def kv_head_index(H: int, H_kv: int) -> Tensor:
    """g (H,) int64: the key/value head of every query head, g(h) = h // (H / H_kv)."""
    return torch.arange(H) // kv_group_size(H, H_kv)


def grouped_matmul(X: Tensor, Y: Tensor) -> Tensor:
    """X_h Y_g(h) (..., H, a, c) from X (..., H, a, b), one matrix per query head, and Y (..., H_kv, b, c),
    one per key/value head: the G = H / H_kv heads of a group are stacked into rows, (H_kv, G a, b),
    and multiplied by their shared Y once, so Y is never repeated. Leading axes broadcast."""
    H, a, b = X.shape[-3:]
    H_kv = Y.shape[-3]
    G = kv_group_size(H, H_kv)
    out = X.reshape(X.shape[:-3] + (H_kv, G * a, b)) @ Y
    return out.reshape(out.shape[:-3] + (H, a, Y.shape[-1]))


def _check_layer(W_Q: Tensor, W_K: Tensor, W_V: Tensor, W_O: Tensor) -> None:
    H, d, d_head = W_Q.shape[-3:]
    if W_K.shape[-2:] != (d, d_head):
        raise ConfigError(f"W_K must have shape (H_kv, d={d}, d_head={d_head}) like W_Q (H, d, d_head), "
                          f"got {tuple(W_K.shape)}")
    kv_group_size(H, W_K.shape[-3], name="W_K")
    if W_V.shape[-3] != W_K.shape[-3] or W_V.shape[-2] != d:
        raise ConfigError(f"W_V must have shape (H_kv={W_K.shape[-3]}, d={d}, d_v) (as many heads as W_K), "
                          f"got {tuple(W_V.shape)}")
    if W_O.shape[-3:] != (H, W_V.shape[-1], d):
        raise ConfigError(f"W_O must have shape (H={H}, d_v={W_V.shape[-1]}, d={d}), got {tuple(W_O.shape)}")


def qk_ov_circuits(W_Q, W_K, W_V, W_O) -> tuple[Tensor, Tensor]:
    """The residual-basis circuits of every query head (module docstring; Elhage et al. 2021):

        W_QK,h = W_Q,h W_K,g(h)^T   (..., H, d, d)
        W_OV,h = W_V,g(h) W_O,h     (..., H, d, d)

    W_Q (..., H, d, d_head), W_K (..., H_kv, d, d_head), W_V (..., H_kv, d, d_v), W_O (..., H, d_v, d);
    g(h) = h // (H / H_kv). Returns (W_QK, W_OV) in float64. With H_kv = H these are
    :func:`attnlab.ops.multihead.qk_circuit` and :func:`~attnlab.ops.multihead.ov_circuit`."""
    W_Q, W_K = as_weights(W_Q, "W_Q"), as_weights(W_K, "W_K")
    W_V, W_O = as_weights(W_V, "W_V"), as_weights(W_O, "W_O")
    _check_layer(W_Q, W_K, W_V, W_O)
    W_QK = grouped_matmul(W_Q, W_K.mT)
    W_OV = grouped_matmul(W_O.mT, W_V.mT).mT  # (W_V,g W_O,h)^T = W_O,h^T W_V,g^T
    return W_QK, W_OV


@dataclass(frozen=True)
class CopyingScore:
    """The spectrum of each head's full OV circuit F_h = W_E W_OV,h W_U and its summaries, shape (...)
    for circuits W_OV (..., d, d). Only the nonzero eigenvalues count (|lambda| above ``rtol`` times
    the head's largest); every score is NaN for a circuit that is zero.

    - ``eigenvalues``: (..., d) complex128, the eigenvalues of M_h = W_OV,h W_U W_E, largest |lambda|
      first: the nonzero ones are F_h's, the rest are zeros (up to rounding);
    - ``elhage_score``: sum_k lambda_k / sum_k |lambda_k| in [-1, 1], Elhage et al. (2021)'s copying
      statistic (= sum_k Re lambda_k / sum_k |lambda_k|: the imaginary parts cancel in pairs);
    - ``positive_share``: sum_k max(Re lambda_k, 0) / sum_k |lambda_k| in [0, 1], the share of the
      spectrum's magnitude on the positive real side (elhage_score = positive_share - the same share
      of the negative real parts; a rotation-like circuit, lambda = +-i, has neither);
    - ``positive_fraction``: the fraction of the nonzero eigenvalues whose real part is positive
      (above ``rtol`` times the largest |lambda|), whatever their size;
    - ``n_nonzero``: (...) int64, how many eigenvalues are nonzero (at most the rank of W_OV,h, which
      is at most d_v; equal to the rank of F_h when F_h is diagonalisable).
    """

    eigenvalues: Tensor
    elhage_score: Tensor
    positive_share: Tensor
    positive_fraction: Tensor
    n_nonzero: Tensor


def copying_score(W_OV, W_E, W_U, *, norm_scale=None, rtol: float = ZERO_EIGENVALUE_RTOL) -> CopyingScore:
    """The copying scores of OV circuits W_OV (..., d, d) (e.g. (H, d, d) from :func:`qk_ov_circuits`)
    with token embedding W_E (V, d) and unembedding W_U (d, V): the eigenvalues of the full circuit
    F_h = W_E W_OV,h W_U (V, V) computed from the d x d matrix M_h = W_OV,h W_U W_E, which has the same
    nonzero eigenvalues (AB and BA share their nonzero spectrum: module docstring), in float64 with
    torch.linalg.eigvals. Summaries in :class:`CopyingScore`; ``elhage_score`` is Elhage et al.
    (2021)'s sum lambda / sum |lambda|.

    ``norm_scale``: gamma (d,), the gain of the RMSNorm or LayerNorm the head reads its input through,
    folded into the circuit as W_OV,h <- diag(gamma) W_OV,h (the head sees gamma * x / rms(x); the
    per-token factor 1/rms(x) and LayerNorm's centring and bias are not folded in). A final norm's
    gain before the unembedding belongs in W_U: pass diag(gamma_final) W_U.
    ``rtol``: an eigenvalue with |lambda| <= rtol * max_k |lambda_k| is a zero (M_h has d - rank zeros,
    computed as rounding noise of that relative size)."""
    rtol = check_number("rtol", rtol, 0.0, 1.0, open_max=True)
    W_OV, W_E, W_U = as_weights(W_OV, "W_OV", 2), as_weights(W_E, "W_E", 2), as_weights(W_U, "W_U", 2)
    d = W_OV.shape[-1]
    if W_OV.shape[-2] != d:
        raise ConfigError(f"W_OV must be square circuits (..., d, d) (W_V W_O per head), got {tuple(W_OV.shape)}")
    if W_E.ndim != 2 or W_E.shape[1] != d:
        raise ConfigError(f"W_E must be the token embedding (V, d={d}), one row per token, got {tuple(W_E.shape)}")
    if W_U.shape != (d, W_E.shape[0]):
        raise ConfigError(f"W_U must be the unembedding (d={d}, V={W_E.shape[0]}) with logits = x W_U, "
                          f"got {tuple(W_U.shape)}")
    if norm_scale is not None:
        gamma = as_weights(norm_scale, "norm_scale", 1)
        if gamma.shape != (d,):
            raise ConfigError(f"norm_scale must be the norm's gain gamma of shape (d={d},), got {tuple(gamma.shape)}")
        W_OV = gamma[:, None] * W_OV
    M = W_OV @ (W_U @ W_E)  # (..., d, d)
    lam = torch.linalg.eigvals(M)  # complex128
    order = lam.abs().argsort(dim=-1, descending=True, stable=True)
    lam = lam.gather(-1, order)
    size = lam.abs()
    cut = rtol * size[..., :1]
    nonzero = (size > cut) & (size > 0)
    total = torch.where(nonzero, size, 0.0).sum(-1)
    re = torch.where(nonzero, lam.real, 0.0)
    nan = torch.full_like(total, float("nan"))
    count = nonzero.sum(-1)
    positive = (nonzero & (lam.real > cut)).sum(-1).to(torch.float64)
    return CopyingScore(
        eigenvalues=lam,
        elhage_score=torch.where(total > 0, re.sum(-1) / total.clamp_min(1e-300), nan),
        positive_share=torch.where(total > 0, re.clamp_min(0).sum(-1) / total.clamp_min(1e-300), nan),
        positive_fraction=torch.where(count > 0, positive / count.clamp_min(1), nan),
        n_nonzero=count,
    )
