"""Attacking upper bounds on rank Z, and the skip layer of Proposition 4.

memorization-capacity-of-mha Proposition 2 (§4.2, App. E: with a shared context,
rank Z <= H (n - 1) + 1), Proposition 5 (App. I: if every token has 1^T e_i = C,
rank Z <= H (d - 1) + 1) and Proposition 4 (§4.4, App. G). Z (T, H d) is eq. (7) of
:mod:`attnlab.papers.memorization.model`.

An upper bound "for ANY weights" cannot be checked by one draw, so
:func:`adversarial_rank_search` attacks it: random W_K, W_Q (H, d, d_h) at logit scales
:data:`SCALES`, then gradient ascent (Adam, float64) on the smooth rank surrogate

    log det(Z Z^T / ||Z||_F^2 + eps I) = sum_i log(sigma_i^2 / ||Z||_F^2 + eps)

(a sum of log squared singular values, floored at eps), which pushes every singular
value of Z up. The largest rank ever seen is what a bound is compared with; rank counts
singular values > :data:`RANK_RTOL` sigma_1.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.papers.memorization.model import attention_features_torch, memorization_forward
from attnlab.runs.threads import num_threads

RANK_RTOL = 1e-10  # singular values <= RANK_RTOL * sigma_1 count as zero
SCALES = (0.1, 1.0, 10.0, 100.0)  # logit scale multipliers of the random draws
DRAWS_PER_SCALE = 6
ASCENT_STARTS, ASCENT_STEPS, ASCENT_LR, SURROGATE_EPS = 3, 40, 0.05, 1e-8


def _spectrum(Z: torch.Tensor) -> np.ndarray:
    """Singular values of Z divided by sigma_1 (descending)."""
    s = torch.linalg.svdvals(Z.detach()).numpy()
    return s / s[0]


def _surrogate(Z: torch.Tensor) -> torch.Tensor:
    """log det(Z Z^T / ||Z||_F^2 + eps I) = sum_i log(sigma_i^2 / ||Z||_F^2 + eps) (T terms)."""
    G = Z @ Z.T / (Z * Z).sum()  # (T, T)
    return torch.logdet(G + SURROGATE_EPS * torch.eye(G.shape[0], dtype=G.dtype))


def adversarial_rank_search(E: np.ndarray, e: np.ndarray, H: int, d_h: int, bound: int, seed: int) -> dict:
    """Largest rank of Z found over random draws and gradient ascent, and the largest
    sigma_{bound+1} / sigma_1 seen (how close any attempt came to breaking the bound).

    E: (n, d) shared or (T, n, d); e: (T, d). -> {"max_rank", "max_ratio_above_bound", "attempts"}.
    Runs on one torch thread (restored afterwards): the matrices are ~12 x 21, and on a busy
    machine intra-op threads made the search ~100x slower (43 s instead of 0.4 s)."""
    with num_threads(1):
        return _search(E, e, H, d_h, bound, seed)


def _search(E: np.ndarray, e: np.ndarray, H: int, d_h: int, bound: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    E_t, e_t = torch.as_tensor(E, dtype=torch.float64), torch.as_tensor(e, dtype=torch.float64)
    d = e.shape[1]
    best = {"max_rank": 0, "max_ratio_above_bound": 0.0, "attempts": 0}

    def record(W_Q, W_K):
        s = _spectrum(attention_features_torch(E_t, e_t, W_Q, W_K))
        best["max_rank"] = max(best["max_rank"], int((s > RANK_RTOL).sum()))
        if s.size > bound:
            best["max_ratio_above_bound"] = max(best["max_ratio_above_bound"], float(s[bound]))
        best["attempts"] += 1

    def draw(scale):  # W ~ N(0, 1/d): logits O(1) at scale 1, times ``scale``
        W_K = torch.randn(H, d, d_h, generator=g, dtype=torch.float64) / d ** 0.5
        W_Q = torch.randn(H, d, d_h, generator=g, dtype=torch.float64) * scale / d ** 0.5
        return W_Q, W_K

    for scale in SCALES:
        for _ in range(DRAWS_PER_SCALE):
            record(*draw(scale))
    for _ in range(ASCENT_STARTS):
        W_Q, W_K = (w.requires_grad_() for w in draw(1.0))
        opt = torch.optim.Adam([W_Q, W_K], lr=ASCENT_LR)
        for _ in range(ASCENT_STEPS):
            opt.zero_grad()
            (-_surrogate(attention_features_torch(E_t, e_t, W_Q, W_K))).backward()
            opt.step()
            record(W_Q.detach(), W_K.detach())
    return best


def skip_layer_outputs(E: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E', e') after the layer A_0 of Proposition 4: one head, W_K = W_Q = 0, W_V = W_O = I,
    skip connection, run through memorization_forward with W_D = I. E (T, n, d), e (T, d).

    With W_K = W_Q = 0 every softmax is uniform, so e' = e + (1/n) sum_i e_i (the e~ of
    Assumption 3) and every token of a context moves by the same context mean."""
    T, n, d = E.shape
    W = dict(W_Q=np.zeros((1, d, 1)), W_K=np.zeros((1, d, 1)), W_V=np.eye(d)[None], W_O=np.eye(d), W_D=np.eye(d))
    e_out = memorization_forward(E, e, **W, skip=True)  # e + mean_i e_i: (T, d)
    E_rep = np.repeat(E, n, axis=0)  # context of each token as a query: (T n, n, d)
    E_out = memorization_forward(E_rep, E.reshape(T * n, d), **W, skip=True).reshape(T, n, d)
    return E_out, e_out
