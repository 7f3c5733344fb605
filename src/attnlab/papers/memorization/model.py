"""The memorization paper's model in its own notation, for one data set at a time.

memorization-capacity-of-mha §3, eqs. (1)-(6), and §4.1, eqs. (7)-(8). For example t
(context E^(t), n x d, tokens as rows; query e^(t), d) and every head h = 1..H:

    alpha_h = E W_K,h W_Q,h^T e     (n)        (1)
    theta_h = Softmax(alpha_h)       (n)        (2)
    z_h     = E^T theta_h            (d)        (3)
    p_h     = W_V,h^T z_h            (d_v)      (4)
    o       = W_O^T [p_1; ...; p_H]  (d)        (5)   (+ e with a skip connection, App. C)
    y_hat   = W_D^T o                (d_out)    (6)

Z (T x H d) stacks the rows z^(t)T = [z_1^(t)T, ..., z_H^(t)T] (eq. (7)), so that
y_hat^(t)T = [Z diag(W_V,1, ..., W_V,H) W_O W_D]_t (eq. (8); the paper writes "in R",
a typo for R^{d_out}, and drops the row index t on the right-hand side).

Shapes (the paper's orientation, also that of attnlab.papers.memorization.batched_model):
    E: (n, d) shared by all examples, or (T, n, d)    e: (T, d)
    W_K, W_Q: (H, d, d_h)   W_V: (H, d, d_v)   W_O: (H d_v, d)   W_D: (d, d_out)

The forward pass is attnlab.papers.memorization.batched_model.attention_classifier (the same eqs.
(1)-(6), written for batched training) run in float64; this module adds the skip
connection, Z and the data-set checks the construction needs, in NumPy float64.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.errors import ConfigError
from attnlab.papers.memorization.batched_model import attention_classifier


def memorization_bound(H: int, r: int) -> int:
    """T = H (r - 1) + 1: the labels H heads memorize (Theorem 1 with r = min(n, d_h); Remark 1 with r = min(Q, d_h))."""
    return H * (r - 1) + 1


def theorem1_bound(H: int, n: int, d_h: int) -> int:
    """Theorem 1's T = H (min(n, d_h) - 1) + 1."""
    return memorization_bound(H, min(n, d_h))


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


def draw_dataset(T: int, n: int, d: int, d_out: int, *, shared: bool, seed: int) -> tuple:
    """(E, e, y) as in §5.2: tokens and queries iid U(0, 1)^d (Assumptions 1 and 2 hold
    almost surely), regression labels y iid N(0, 1) of shape (T, d_out)."""
    for name, v in dict(T=T, n=n, d=d, d_out=d_out).items():
        if not isinstance(v, int) or v < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {v!r}")
    rng = np.random.default_rng(seed)
    E = rng.uniform(size=(n, d) if shared else (T, n, d))
    e = rng.uniform(size=(T, d))
    y = rng.standard_normal((T, d_out))
    return E, e, y


def _check_shapes(E, e, W_Q, W_K, W_V, W_O, W_D) -> None:
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
