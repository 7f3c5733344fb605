"""The memorization paper's model: one multi-head attention layer, eqs. (1)-(8).

memorization-capacity-of-mha §3, eqs. (1)-(6), and §4.1, eqs. (7)-(8). This module
docstring is where the package writes the model out; every other module refers here.

Symbols (paper notation):

    T          examples t = 1..T;  H heads h = 1..H
    E^(t)      (n, d)      context of example t: its n tokens e_1^(t), ..., e_n^(t) as rows
    e^(t)      (d,)        query of example t
    W_K,h      (d, d_h)    keys of head h;    W_Q,h (d, d_h) queries of head h
    W_V,h      (d, d_v)    values of head h
    W_O        (H d_v, d)  output map; W_O,h its h-th block of d_v rows
    W_D        (d, d_out)  read-out; d_out = n_classes (class logits) or the label dimension

For one example (E, e) and every head h:

    alpha_h = E W_K,h W_Q,h^T e        (n)        (1)
    theta_h = Softmax(alpha_h)          (n)        (2)
    z_h     = E^T theta_h               (d)        (3)
    p_h     = W_V,h^T z_h               (d_v)      (4)
    o       = W_O^T [p_1; ...; p_H]     (d)        (5)   (+ e with a skip connection, App. C)
    y_hat   = W_D^T o                   (d_out)    (6)

There is no 1/sqrt(d_h) factor: the paper has none. Z (T, H d) stacks the rows
z^(t)T = [z_1^(t)T, ..., z_H^(t)T] (eq. (7)), so that

    y_hat^(t)T = [Z diag(W_V,1, ..., W_V,H) W_O W_D]_t                      (8)

(the paper writes "in R", a typo for R^{d_out}, and drops the row index t on the right).

Shapes, in the paper's orientation throughout the package:

    parameters of one model:  W_K, W_Q (H, d, d_h)   W_V (H, d, d_v)   W_O (H d_v, d)   W_D (d, d_out)
    stacked for M models:     every tensor gains a leading axis M
    data:                     E (n, d), one context shared by all examples (§5.2, Proposition 2),
                              or (T, n, d), one per example (App. I.1);  e (T, d)

Two implementations of the same equations:

- torch, for batched training (:func:`attention_classifier`, :func:`init_attention_classifier`;
  losses in :mod:`attnlab.papers.memorization.losses`). The products are ordered by what a
  batch shares. With one context E for all queries, K_h = E W_K,h and V_h = E W_V,h are
  computed once per batch, and alpha_h = K_h (W_Q,h^T e) and p_h = V_h^T theta_h are GEMMs
  over the batch. With one context per query, the circuits W_QK,h = W_K,h W_Q,h^T and
  W_OV,h = W_V,h W_O,h (d, d) are formed once per batch, then alpha_h = E (W_QK,h e) and
  o = sum_h W_OV,h^T E^T theta_h, so that E, by far the largest tensor, meets only two
  batched products and is never copied. The softmax is ``torch.softmax`` on explicit logits
  (never the fused SDPA kernel, which has no vmap rule on CPU), so the model works under
  ``torch.func.vmap``; gradients reach W_K, W_Q, W_V, W_O, W_D.
- NumPy float64, for the constructions and rank checks: :func:`memorization_forward` (the
  torch forward in float64, with the optional skip connection), :func:`attention_features`
  (Z of eq. (7)), :func:`rank_and_sigma_min`, :func:`context_ranks`; :func:`numpy_forward`
  runs eqs. (1)-(6) head by head, a reference independent of the torch forward.

The data draws of §5.2 are in :mod:`attnlab.papers.memorization.data`.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from attnlab.config import check_int
from attnlab.errors import ConfigError


# --------------------------------------------------------------------------------------
# Theorem 1's count
# --------------------------------------------------------------------------------------
def memorization_bound(H: int, r: int) -> int:
    """T = H (r - 1) + 1: the labels H heads memorize (Theorem 1 with r = min(n, d_h); Remark 1 with r = min(Q, d_h))."""
    return H * (r - 1) + 1


def theorem1_bound(H: int, n: int, d_h: int) -> int:
    """Theorem 1's T = H (min(n, d_h) - 1) + 1."""
    return memorization_bound(H, min(n, d_h))


# --------------------------------------------------------------------------------------
# torch: batched training
# --------------------------------------------------------------------------------------
def init_attention_classifier(
    M: int,
    d: int,
    n: int,
    H: int,
    d_h: int,
    n_classes: int,
    generator: torch.Generator,
    *,
    d_v: int | None = None,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> dict[str, Tensor]:
    """Stacked parameters of M models, each entry N(0, 1/fan_in) (LeCun normal).

    ``n_classes`` is d_out (class logits, or the label dimension for regression).
    ``n`` (context length) does not enter the parameter shapes; it is checked so a
    call states the whole model. d_v defaults to d_h.
    """
    d_v = d_h if d_v is None else d_v
    for name, value in dict(M=M, d=d, n=n, H=H, d_h=d_h, d_v=d_v, n_classes=n_classes).items():
        check_int(name, value, 1)
    shapes = {
        "W_K": ((M, H, d, d_h), d),
        "W_Q": ((M, H, d, d_h), d),
        "W_V": ((M, H, d, d_v), d),
        "W_O": ((M, H * d_v, d), H * d_v),
        "W_D": ((M, d, n_classes), d),
    }
    params = {}
    for name, (shape, fan_in) in shapes.items():
        w = torch.randn(shape, generator=generator, dtype=torch.float64) / math.sqrt(fan_in)
        params[name] = w.to(dtype=dtype, device=device)
    return params


def attention_classifier(params: dict[str, Tensor], E: Tensor, e: Tensor) -> Tensor:
    """y_hat of eqs. (1)-(6) for one model (unstacked params).

    e: (..., d) queries.  E: (n, d), one context shared by all queries (the paper's
    §5.2 setting), or (..., n, d), one per query.  -> (..., d_out).
    """
    if E.ndim == 2:
        return _shared_context_logits(params, E, e)
    return _per_example_logits(params, E, e)


def _shared_context_logits(params: dict[str, Tensor], E: Tensor, e: Tensor) -> Tensor:
    """Keys and values projected once per batch: K_h = E W_K,h, V_h = E W_V,h (n x d_h, n x d_v);
    then alpha_h = K_h (W_Q,h^T e) is eq. (1) and p_h = V_h^T theta_h is eqs. (3)-(4)."""
    W_K, W_Q, W_V, W_O, W_D = (params[k] for k in ("W_K", "W_Q", "W_V", "W_O", "W_D"))
    H, d, d_h = W_Q.shape
    lead = e.shape[:-1]
    K = E @ W_K  # (n, d) @ (H, d, d_h) -> (H, n, d_h)
    V = E @ W_V  # (H, n, d_v)
    q = e.reshape(-1, d) @ W_Q.permute(1, 0, 2).reshape(d, H * d_h)  # W_Q,h^T e: (B, H d_h)
    q = q.view(-1, H, d_h).transpose(0, 1)  # (H, B, d_h)
    alpha = q @ K.mT  # eq. (1): (H, B, d_h) @ (H, d_h, n) -> (H, B, n)
    theta = torch.softmax(alpha, dim=-1)  # eq. (2)
    p = theta @ V  # eqs. (3)-(4): (H, B, n) @ (H, n, d_v) -> (H, B, d_v)
    o = p.transpose(0, 1).flatten(1) @ W_O  # eq. (5): [p_1; ...; p_H] (B, H d_v) -> (B, d)
    return (o @ W_D).view(*lead, W_D.shape[-1])  # eq. (6): (..., d_out)


def _per_example_logits(params: dict[str, Tensor], E: Tensor, e: Tensor) -> Tensor:
    """Through the circuits W_QK,h = W_K,h W_Q,h^T and W_OV,h = W_V,h W_O,h (d x d):
    alpha_h = E (W_QK,h e) is eq. (1), o = sum_h W_OV,h^T E^T theta_h is eqs. (3)-(5)."""
    W_K, W_Q, W_V, W_O, W_D = (params[k] for k in ("W_K", "W_Q", "W_V", "W_O", "W_D"))
    H, d, d_v = W_V.shape
    W_QK = W_K @ W_Q.mT  # (H, d, d)
    W_OV = W_V @ W_O.view(H, d_v, d)  # W_O = [W_O,1; ...; W_O,H], W_O,h: (d_v, d) -> (H, d, d)
    u = e @ W_QK.permute(2, 0, 1).reshape(d, H * d)  # rows (W_QK,h e)^T: (..., H d)
    u = u.unflatten(-1, (H, d))  # (..., H, d)
    # E enters only through matmuls with E or its transposed view, never a permuted
    # copy: it is the largest tensor by far (n d per example)
    alpha = u @ E.mT  # eq. (1), one row per head: (..., H, d) @ (..., d, n) -> (..., H, n)
    theta = torch.softmax(alpha, dim=-1)  # eq. (2): (..., H, n)
    z = theta @ E  # eq. (3): rows theta_h^T E = (E^T theta_h)^T: (..., H, d)
    o = z.flatten(-2) @ W_OV.reshape(H * d, d)  # eqs. (4)-(5): (..., H d) @ (H d, d) -> (..., d)
    return o @ W_D  # eq. (6): (..., d_out)


def training_flops_per_step(d: int, n: int, H: int, d_h: int, n_classes: int, batch: int,
                            *, shared_context: bool, d_v: int | None = None) -> int:
    """Forward + backward FLOPs of one model's step on ``batch`` examples, counted from
    the matmuls of attention_classifier (2 FLOPs per multiply-add).

    shared context, per example: 2 d H d_h (q) + 2 H d_h n (alpha, eq. 1)
        + 2 H n d_v (p, eqs. 3-4) + 2 H d_v d (o, eq. 5) + 2 d n_classes (eq. 6);
        per batch: 2 n d H (d_h + d_v) (K and V).
    per-example context, per example: 2 d H d (W_QK e) + 2 H n d (alpha) + 2 H n d (z)
        + 2 H d d (o through W_OV) + 2 d n_classes;
        per batch: 2 H d d (d_h + d_v) (W_QK and W_OV).
    Training = 3 x forward (the backward pass costs two matmuls per forward matmul:
    weight gradient and input gradient). Softmax, cross-entropy and the optimizer
    (elementwise) are not counted.
    """
    d_v = d_h if d_v is None else d_v
    if shared_context:
        per_example = 2 * d * H * d_h + 2 * H * d_h * n + 2 * H * n * d_v + 2 * H * d_v * d
        per_batch = 2 * n * d * H * (d_h + d_v)
    else:
        per_example = 2 * d * H * d + 4 * H * n * d + 2 * H * d * d
        per_batch = 2 * H * d * d * (d_h + d_v)
    return 3 * (batch * (per_example + 2 * d * n_classes) + per_batch)


def training_bytes(M: int, T: int, H: int, n: int, d: int, d_h: int, d_out: int, *, shared_context: bool,
                   embedded: bool = False, lbfgs: bool = False, itemsize: int = 4) -> int:
    """A lower bound on the memory of training M models at once on T examples each (full
    batch, the largest case), in bytes of ``itemsize`` (4: float32), d_v = d_h:

        data         (8 + 8 + itemsize) M (T d + (n d shared | T n d per example))
                     (drawn in float64, stacked, then converted)
        parameters   itemsize (4 | 104 L-BFGS) M (3 H d d_h + d d_out)
                     (weights, gradients, Adam's two moments; L-BFGS keeps 100 pairs more)
        activations  3 itemsize M T H (2 n + 2 d)       logits, softmax, z, o: forward and backward
                     + 3 itemsize M T (n + 1) d         embedded tokens (the authors' model)

    Small models spend more on the framework; what matters here is the growth with T, H, n, d."""
    data = (16 + itemsize) * M * (T * d + (n * d if shared_context else T * n * d))
    params = itemsize * (104 if lbfgs else 4) * M * (3 * H * d * d_h + d * d_out)
    acts = 3 * itemsize * M * T * (H * (2 * n + 2 * d) + ((n + 1) * d if embedded else 0))
    return int(data + params + acts)


def attention_features_torch(E: Tensor, e: Tensor, W_Q: Tensor, W_K: Tensor) -> Tensor:
    """Z (T, H d) of eq. (7) in torch, differentiable in W_Q, W_K; E (n, d) shared or (T, n, d)."""
    q = torch.einsum("td,hdk->htk", e, W_Q)  # W_Q,h^T e^(t): (H, T, d_h)
    if E.ndim == 2:
        alpha = torch.einsum("htk,hnk->htn", q, torch.einsum("nd,hdk->hnk", E, W_K))  # eq. (1): (H, T, n)
        z = torch.softmax(alpha, dim=-1) @ E  # eqs. (2)-(3): (H, T, d)
    else:
        alpha = torch.einsum("htk,htnk->htn", q, torch.einsum("tnd,hdk->htnk", E, W_K))  # (H, T, n)
        z = torch.einsum("htn,tnd->htd", torch.softmax(alpha, dim=-1), E)  # (H, T, d)
    return z.transpose(0, 1).reshape(e.shape[0], -1)  # eq. (7): (T, H, d) -> (T, H d)


# --------------------------------------------------------------------------------------
# NumPy float64: constructions and rank checks
# --------------------------------------------------------------------------------------
def memorization_forward(E, e, W_Q, W_K, W_V, W_O, W_D, *, skip: bool = False) -> np.ndarray:
    """y_hat (T x d_out) of eqs. (1)-(6) in float64; with ``skip``, eq. (5) becomes
    o = W_O^T [p_1; ...; p_H] + e (Appendix C). Arrays or tensors in, a NumPy array out."""
    t = {k: torch.as_tensor(np.asarray(v, dtype=np.float64))
         for k, v in dict(E=E, e=e, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O, W_D=W_D).items()}
    _check_shapes(t["E"].shape, t["e"].shape, t["W_Q"].shape, t["W_K"].shape, t["W_V"].shape,
                  t["W_O"].shape, t["W_D"].shape)
    y_hat = attention_classifier(t, t["E"], t["e"])  # eqs. (1)-(6): (T, d_out)
    if skip:
        y_hat = y_hat + t["e"] @ t["W_D"]  # W_D^T (o + e), App. C
    return y_hat.numpy()


def numpy_forward(E: np.ndarray, e: np.ndarray, W_Q, W_K, W_V, W_O, W_D) -> np.ndarray:
    """eqs. (1)-(6) head by head in NumPy, a reference independent of the torch forward
    (:func:`memorization_forward`) that the construction is built and checked with.

    E (n, d) or (T, n, d); e (T, d) -> y_hat (T, d_out)."""
    T = e.shape[0]
    Es = np.broadcast_to(E, (T, *E.shape)) if E.ndim == 2 else E  # (T, n, d)
    H, _, d_v = W_V.shape
    p = np.empty((T, H * d_v))
    for h in range(H):
        alpha = np.einsum("tnk,tk->tn", Es @ W_K[h], e @ W_Q[h])  # (1): (T, n)
        theta = np.exp(alpha - alpha.max(axis=1, keepdims=True))
        theta /= theta.sum(axis=1, keepdims=True)  # (2)
        z = np.einsum("tn,tnd->td", theta, Es)  # (3)
        p[:, h * d_v:(h + 1) * d_v] = z @ W_V[h]  # (4)
    return (p @ W_O) @ W_D  # (5), (6)


def attention_features(E: np.ndarray, e: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray) -> np.ndarray:
    """Z (T x H d) of eq. (7): row t is [z_1^(t); ...; z_H^(t)], z_h = E^T Softmax(E W_K,h W_Q,h^T e)."""
    q = np.einsum("td,hdk->htk", e, W_Q)  # W_Q,h^T e^(t): (H, T, d_h)
    if E.ndim == 2:
        K = np.einsum("nd,hdk->hnk", E, W_K)  # E W_K,h: (H, n, d_h)
        alpha = np.einsum("htk,hnk->htn", q, K)  # eq. (1): (H, T, n)
        z = softmax(alpha) @ E  # eqs. (2)-(3): (H, T, n) @ (n, d) -> (H, T, d)
    else:
        K = np.einsum("tnd,hdk->htnk", E, W_K)  # E^(t) W_K,h: (H, T, n, d_h)
        alpha = np.einsum("htk,htnk->htn", q, K)  # eq. (1): (H, T, n)
        z = np.einsum("htn,tnd->htd", softmax(alpha), E)  # eqs. (2)-(3): (H, T, d)
    return z.transpose(1, 0, 2).reshape(e.shape[0], -1)  # eq. (7): (T, H, d) -> (T, H d)


def softmax(alpha: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, shifted by the row maximum (exact one-hot once saturated)."""
    x = np.exp(alpha - alpha.max(axis=-1, keepdims=True))
    return x / x.sum(axis=-1, keepdims=True)


def rank_and_sigma_min(Z: np.ndarray) -> tuple[int, float, float]:
    """(rank, smallest singular value sigma_min(Z) of the min(T, H d), tolerance) of Z.

    The rank counts singular values above tol = sigma_max * max(T, H d) * eps_float64
    (NumPy's matrix_rank default)."""
    s = np.linalg.svd(Z, compute_uv=False)
    tol = float(s[0] * max(Z.shape) * np.finfo(np.float64).eps) if s.size else 0.0
    return int((s > tol).sum()), float(s[-1]) if s.size else 0.0, tol


def context_ranks(E: np.ndarray) -> np.ndarray:
    """rank E^(t) for every example (Assumption 2 asks n for each); one entry when shared."""
    return np.atleast_1d(np.linalg.matrix_rank(E if E.ndim == 3 else E[None]))


def _check_shapes(E: np.ndarray, e: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray, W_V: np.ndarray, W_O: np.ndarray, W_D: np.ndarray) -> None:
    if len(e) != 2 or len(E) not in (2, 3):
        raise ConfigError(f"e must be (T, d) and E (n, d) or (T, n, d), got e {tuple(e)}, E {tuple(E)}")
    T, d = e
    if E[-1] != d or (len(E) == 3 and E[0] != T):
        raise ConfigError(f"E {tuple(E)} does not fit e {tuple(e)}: give E as (n, {d}) or ({T}, n, {d})")
    if len(W_Q) != 3 or tuple(W_K) != tuple(W_Q) or W_Q[1] != d:
        raise ConfigError(f"W_Q and W_K must both be (H, {d}, d_h), got {tuple(W_Q)} and {tuple(W_K)}")
    H = W_Q[0]
    if len(W_V) != 3 or W_V[:2] != (H, d):
        raise ConfigError(f"W_V must be ({H}, {d}, d_v), got {tuple(W_V)}")
    if tuple(W_O) != (H * W_V[2], d) or len(W_D) != 2 or W_D[0] != d:
        raise ConfigError(f"W_O must be ({H * W_V[2]}, {d}) and W_D ({d}, d_out), got {tuple(W_O)}, {tuple(W_D)}")
