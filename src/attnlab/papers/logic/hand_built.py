"""The hand-built solutions of §2 as weights of §4's trainable model: exact without the normalisation, and
solution 2 under the LayerNorm only a near-zero-loss point.

Without the LayerNorm, solutions 1, 2, 3 (attnlab's corrected weights,
:func:`~attnlab.papers.logic.solutions.build`) load into the model exactly
(:func:`~attnlab.papers.logic.model.hand_built_params`) and reach MSE <= 1e-20 (float64). With it, the
normalisation divides each token's row by its own mean and standard deviation, and the read-out the
solution was built for no longer fits (:func:`solution2_under_layernorm`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnlab.papers.logic.lbfgs_training import Trained
from attnlab.papers.logic.model import chunked_mse, effective, hand_built_params, masks
from attnlab.papers.logic.model import mse as model_mse
from attnlab.papers.logic.solutions import build


def solution2_under_layernorm(q_true: np.ndarray, M: int, tokens: torch.Tensor, Y: torch.Tensor, *,
                              relu_const: float | None = None, steps: int = 2, inner: int = 150,
                              B: str = "full") -> tuple[float, float]:
    """Is solution 2 a zero-loss point of system 2 *with* the LayerNorm? (MSE / Var(Y) with solution 2's
    q, k, v, B, b, C and gamma = 1, beta = 0; the same after refitting the read-out gamma, beta, B, b, C, c0
    by L-BFGS in float64 with q, k, v kept), on ``tokens`` (S, M), targets ``Y`` (S, M).

    Not exactly: the LayerNorm divides token i's row, which holds q_true(X_{r-1}, X_i) / c at every
    position r besides the skip's two ones, by that row's own mean and standard deviation, so the
    selected entry reaches the read-out rescaled by a sequence-dependent factor. Expanding in 1/c, the
    error is O(1/c) after the best read-out: measured MSE / Var(Y) 2.3e-3 at c = c* and 1.2e-5 at
    c = 1000 (N = 5, M = 12). A near-zero-loss point that needs large weights, not a zero-loss one."""
    N = q_true.shape[0]
    p = hand_built_params(build("2", q_true, M, relu_const=relu_const))
    m2 = masks("2", N, M, B=B)
    var = float(Y.var(unbiased=False))
    Y = Y.to(torch.float64)
    built = float(model_mse(p, m2, tokens, Y, N, norm="layernorm")) / var
    theta = {k: p[k].clone().requires_grad_(True) for k in ("gamma", "beta", "B", "b", "C", "c0")}
    opt = torch.optim.LBFGS(list(theta.values()), max_iter=inner, history_size=100, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-12, tolerance_change=1e-15)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = chunked_mse(effective(dict(p, **theta), m2), tokens, Y, N, norm="layernorm")
        loss.backward()
        return loss

    for _ in range(steps):
        opt.step(closure)
    with torch.no_grad():
        refit = float(model_mse(dict(p, **theta), m2, tokens, Y, N, norm="layernorm")) / var
    return built, refit


@dataclass(frozen=True)
class HandBuilt:
    """The hand-built solutions in the trainable model (:func:`hand_built`).

    Attributes:
        mse: solution "1", "2", "3" -> its MSE without the normalisation (seed index 0's test sequences).
        layernorm: solution 2 in system 2 with the LayerNorm, (MSE / Var(Y) as built, after refitting the
            read-out) (:func:`solution2_under_layernorm`); None when norm = "none".
    """

    mse: dict[str, float]
    layernorm: tuple[float, float] | None


def hand_built(tr: Trained, N: int, M: int, norm: str) -> HandBuilt:
    """The hand-built solutions' MSE as weights of the trainable model (no norm, the combined system's masks),
    and solution 2 under the LayerNorm with system 2's B as trained (``tr.system2_B``) when ``norm`` is
    "layernorm", on seed index 0's test sequences."""
    qt0 = tr.tasks[0].q_true
    tok64, Y64 = torch.as_tensor(tr.tasks[0].test), torch.as_tensor(tr.tasks[0].Y_test)
    mse = {s: float(model_mse(hand_built_params(build(s, qt0, M)), masks("combined", N, M), tok64, Y64, N,
                              norm="none")) for s in ("1", "2", "3")}
    ln2 = solution2_under_layernorm(qt0, M, tok64, Y64, B=tr.system2_B) if norm == "layernorm" else None
    return HandBuilt(mse, ln2)
