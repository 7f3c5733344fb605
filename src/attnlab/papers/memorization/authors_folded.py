"""The authors' model with one shared context, folded: its loss and gradients written out.

memorization-capacity-of-mha §5.2 and Appendix H, on the model of
:mod:`attnlab.papers.memorization.authors_model` with the query's own key masked
(``keys="context"``, the released BaselineAttention). Symbols as there: raw context
X (n x d_in) shared by all T examples, raw queries x^(t) (d_in), embedding W_E, b_E,
sinusoidal positions pos_0 (the query) and pos_1..n (the context), H heads of size d_h
with d_v values each, logit scale s (1/sqrt(d) as released), C = d_out classes.

Everything that involves the context is the same for all T examples, so it is computed
once per step (sizes independent of T):

    E    = X W_E + 1 b_E^T + [pos_1; ...; pos_n]           (n x d)       embedded context
    K_h  = E W_K,h,  V_h = E W_V,h                          (n x d_h), (n x d_v)
    A_h  = s W_Q,h K_h^T,  A = [A_1, ..., A_H]              (d x H n)     eq. (1)'s bilinear form
    A~   = W_E A,  c = (b_E + pos_0)^T A                    (d_in x H n), (H n)
    U    = W_O W_D                                          (H d_v x C)   eqs. (5)-(6) read out

and per example only two products over the T rows remain:

    alpha^(t) = x^(t)T A~ + c                               eq. (1): e^(t) = W_E^T x^(t) + b_E + pos_0
    theta_h^(t) = Softmax(alpha_h^(t))                      eq. (2), per head over the n context tokens
    y_hat^(t) = sum_h p_h^(t)T U_h + b_D,  p_h^(t) = V_h^T theta_h^(t)     eqs. (3)-(6)

The read-out takes the cheaper of two orders (``values_first``): through the d_v values
per head, 2 H (n d_v + d_v C) FLOPs per example (the released d_v = 1: 2 H (n + C)), or
through N_h = V_h U_h (n x C), 2 H n C FLOPs per example (d_v = d_h = 64: fewer than the
values' order). At d = d_in = 64, n = 32, C = 100, H = 8, d_v = 1 a forward pass costs
2 H n (d_in + 1) + 2 H (n + C) = 35k FLOPs per example against the unfolded 2 (d_in d
+ H d (2 d_h + d_v) + H n d_h + H n d_v + H d_v d + d C) = 191k (what
:func:`attnlab.papers.memorization.authors_model.authors_model` computes per query,
which projects the query's key and value too).

The backward pass is the chain rule through the definitions above, with
G = dL/dy_hat (T x C) of the masked mean cross-entropy
(:func:`attnlab.papers.memorization.losses.masked_cross_entropy`):

    db_D = sum_t G^(t);  values first:  dU = P^T G,  dP = G U^T,  dtheta_h = dP_h V_h^T,  dV_h = theta_h^T dP_h
                         N first:       dN = theta^T G,  dtheta = G N^T,  dV_h = dN_h U_h^T,  dU_h = V_h^T dN_h
    dalpha_h = theta_h * (dtheta_h - <theta_h, dtheta_h>)                  softmax, per head
    dA~ = x^T dalpha,  dc = sum_t dalpha^(t)
    dW_E = dA~ A^T + X^T dE,  dA = W_E^T dA~ + (b_E + pos_0) dc^T,  db_E = A dc + sum_i dE_i
    dW_Q,h = s dA_h K_h,  dK_h = s dA_h^T W_Q,h,  dW_K,h = E^T dK_h,  dW_V,h = E^T dV_h
    dE = sum_h (dK_h W_K,h^T + dV_h W_V,h^T),  dW_O = dU W_D^T,  dW_D = W_O^T dU

It equals autograd through :func:`authors_model` (tests/papers/memorization/test_authors_folded.py:
float64, 1e-10 relative). The parameters, and so the optimisation path, are the authors'
W_E, b_E, W_K, W_Q, W_V, W_O, W_D, b_D: only the order of the products changes.
"""

from __future__ import annotations

import math

from torch import Tensor

from attnlab.papers.memorization.authors_model import positions
from attnlab.papers.memorization.losses import masked_cross_entropy

Params = dict[str, Tensor]


def values_first(H: int, n: int, d_v: int, C: int) -> bool:
    """Read out through the values (2 H (n d_v + d_v C) FLOPs per example) when that is
    cheaper than through N_h = V_h U_h (2 H n C)."""
    return d_v * (n + C) < n * C


def _fold(params: Params, X: Tensor, scale: float | None) -> dict[str, Tensor]:
    """The per-step matrices of the module docstring for M stacked models:
    E (M, n, d), K (M, H, n, d_h), V (M, H, n, d_v), A (M, d, H n), Aq = A~ (M, d_in, H n),
    c (M, 1, H n), b = b_E + pos_0 (M, d), U (M, H d_v, C), s."""
    W_E, b_E, W_K, W_Q, W_V = (params[k] for k in ("W_E", "b_E", "W_K", "W_Q", "W_V"))
    M, H, d, _ = W_Q.shape
    n = X.shape[0]
    s = 1.0 / math.sqrt(d) if scale is None else float(scale)
    pos = positions(n + 1, d, X.dtype, str(X.device))  # (n+1, d): pos_0 the query, pos_1..n the context
    E = X @ W_E + b_E[:, None, :] + pos[1:]  # (n, d_in) @ (M, d_in, d) -> (M, n, d)
    K = E[:, None] @ W_K  # (M, 1, n, d) @ (M, H, d, d_h) -> (M, H, n, d_h)
    V = E[:, None] @ W_V  # (M, H, n, d_v)
    A = (s * (W_Q @ K.mT)).permute(0, 2, 1, 3).reshape(M, d, H * n)  # A_h = s W_Q,h K_h^T: (M, d, H n)
    b = b_E + pos[0]  # (M, d)
    return {"E": E, "K": K, "V": V, "A": A, "Aq": W_E @ A, "c": b[:, None, :] @ A, "b": b,
            "U": params["W_O"] @ params["W_D"], "s": s}


def folded_authors_logits(params: Params, X: Tensor, x: Tensor, *, scale: float | None = None) -> Tensor:
    """y_hat of the authors' model (keys="context") for M stacked models, shared raw context
    X (n, d_in), raw queries x (T, d_in) -> (M, T, C); the same numbers as a vmap of
    :func:`attnlab.papers.memorization.authors_model.authors_model` over the models."""
    return _forward(params, _fold(params, X, scale), x)[0]


def _forward(params: Params, f: dict[str, Tensor], x: Tensor) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """(logits (M, T, C), theta (M, T, H, n), P (M, T, H d_v) or None, N (M, H n, C) or None)."""
    V, U = f["V"], f["U"]
    M, H, n, d_v = V.shape
    T, C = x.shape[0], U.shape[-1]
    theta = (x @ f["Aq"] + f["c"]).view(M, T, H, n).softmax(dim=-1)  # eqs. (1)-(2): (M, T, H, n)
    if d_v == 1:  # one value per head (as released): p_h = <theta_h, V_h>, elementwise
        P = (theta * V[:, None, :, :, 0]).sum(-1)  # (M, T, H, n) * (M, 1, H, n) -> (M, T, H)
        return P @ U + params["b_D"][:, None, :], theta, P, None
    if values_first(H, n, d_v, C):
        P = (theta.transpose(1, 2) @ V).transpose(1, 2).reshape(M, T, H * d_v)  # p_h = V_h^T theta_h
        return P @ U + params["b_D"][:, None, :], theta, P, None  # (M, T, H d_v) @ (M, H d_v, C)
    N = (V @ U.view(M, H, d_v, C)).reshape(M, H * n, C)  # N_h = V_h U_h
    return theta.view(M, T, H * n) @ N + params["b_D"][:, None, :], theta, None, N


def authors_loss_and_grads(params: Params, X: Tensor, x: Tensor, y: Tensor, T_m: Tensor, *,
                           scale: float | None = None) -> tuple[Tensor, Params, Tensor]:
    """Masked mean cross-entropy of M stacked authors' models (keys="context") and its
    gradients, backward written out (module docstring).

    params: stacked (M, ...) as :func:`attnlab.papers.memorization.authors_model.init_authors_model`.
    X (n, d_in): the shared raw context.  x (T, d_in), y (T,): the longest prefix needed; model m
    uses rows t < T_m[m] (T_m: (M,) int64).  -> loss (M,), grads like params, correct (M,) int64:
    the labels among its T_m that are argmax of y_hat (before any update).
    """
    f = _fold(params, X, scale)
    logits, theta, P, N = _forward(params, f, x)
    E, K, V, A, U, s = f["E"], f["K"], f["V"], f["A"], f["U"], f["s"]
    M, H, n, d_v = V.shape
    T, C, d = x.shape[0], U.shape[-1], A.shape[1]
    W_E, W_K, W_Q, W_V, W_O, W_D = (params[k] for k in ("W_E", "W_K", "W_Q", "W_V", "W_O", "W_D"))
    loss, G, correct = masked_cross_entropy(logits, y, T_m)  # G = dL/dy_hat: (M, T, C)
    if d_v == 1:
        dU = P.mT @ G  # (M, H, T) @ (M, T, C)
        dP = G @ U.mT  # (M, T, H)
        dtheta = dP[..., None] * V[:, None, :, :, 0]  # (M, T, H, n)
        dV = (theta * dP[..., None]).sum(1)[..., None]  # sum_t theta_h^(t) dP_h^(t): (M, H, n, 1)
    elif P is not None:  # values first
        dU = P.mT @ G  # (M, H d_v, T) @ (M, T, C)
        dP = (G @ U.mT).view(M, T, H, d_v).transpose(1, 2)  # (M, H, T, d_v)
        dtheta = (dP @ V.mT).transpose(1, 2)  # dP_h V_h^T: (M, H, T, n) -> (M, T, H, n)
        dV = theta.transpose(1, 2).mT @ dP  # theta_h^T dP_h: (M, H, n, T) @ (M, H, T, d_v)
    else:  # N first
        dN = (theta.view(M, T, H * n).mT @ G).view(M, H, n, C)  # (M, H, n, C)
        dtheta = (G @ N.mT).view(M, T, H, n)
        U_h = U.view(M, H, d_v, C)
        dV = dN @ U_h.mT  # (M, H, n, d_v)
        dU = (V.mT @ dN).reshape(M, H * d_v, C)  # V_h^T dN_h
    dalpha = theta * (dtheta - (theta * dtheta).sum(-1, keepdim=True))  # softmax backward per head
    dalpha = dalpha.view(M, T, H * n)
    dAq = x.T @ dalpha  # (d_in, T) @ (M, T, H n) -> (M, d_in, H n)
    dc = dalpha.sum(1)  # (M, H n)
    dA = W_E.mT @ dAq + f["b"][:, :, None] * dc[:, None, :]  # (M, d, H n)
    dA = dA.view(M, d, H, n).permute(0, 2, 1, 3)  # (M, H, d, n)
    dK = s * (dA.mT @ W_Q)  # (M, H, n, d) @ (M, H, d, d_h)
    Et = E.mT[:, None]  # (M, 1, d, n)
    dE = (dK @ W_K.mT).sum(1) + (dV @ W_V.mT).sum(1)  # (M, n, d)
    grads = {
        "W_E": dAq @ A.mT + X.T @ dE,  # (M, d_in, H n) @ (M, H n, d) + (d_in, n) @ (M, n, d)
        "b_E": (dc[:, None, :] @ A.mT)[:, 0] + dE.sum(1),  # (M, d)
        "W_K": Et @ dK,  # (M, H, d, d_h)
        "W_Q": s * (dA @ K),  # (M, H, d, n) @ (M, H, n, d_h)
        "W_V": Et @ dV,  # (M, H, d, d_v)
        "W_O": dU @ W_D.mT,  # (M, H d_v, C) @ (M, C, d)
        "W_D": W_O.mT @ dU,  # (M, d, H d_v) @ (M, H d_v, C)
        "b_D": G.sum(1),  # (M, C)
    }
    return loss, grads, correct
