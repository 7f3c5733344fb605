"""The extra losses of §4.1's lean flavours: how far the effective weights of the combined model
lie from solution s's structure.

The text trains the combined system "with an extra loss" leaning toward each solution and leaves
the loss unstated; here it is a sum of out-of-structure fractions, scale-free so that it cannot be
met by shrinking a weight (the LayerNorm undoes scale anyway). For a weight W and a 0/1 mask K
of the entries the structure keeps,

    out(W; K) = ||(1 - K) * W||_F^2 / ||W||_F^2                       (elementwise product)
    out_I(v)  = (||v||_F^2 - (tr v_CC)^2 / N) / ||v||_F^2            (v off the multiples of diag(I_N, 0))

and with A = k^t q (d x d, d = N + M; CC: the categories' N x N block, PP: the positions' M x M block)

    P_1 = out(A; PP) + out_I(v)                                      (solution 1: v copies, B decides)
    P_2 = out(A; CC) + out(v; PP)                                    (solution 2)
    P_3 = out(A; PP) + out(v; CC) + out(B; diag of its first d rows) (solution 3: no B)

each 0 exactly on its solution's structure (tests), at most 2 or 3. The lean-s flavour minimises
MSE + lambda P_s (:mod:`attnlab.papers.logic.experiments.learning`).
"""

from __future__ import annotations

import torch

TINY = 1e-30
"""added to ||W||_F^2 in the denominators, so that W = 0 gives 0 rather than 0 / 0"""


def out_fraction(W: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """out(W; K) = ||(1 - K) * W||_F^2 / ||W||_F^2: the share of W's squared norm outside the mask K."""
    total = (W ** 2).sum()
    return ((W * (1 - keep)) ** 2).sum() / (total + TINY)


def off_identity_fraction(v: torch.Tensor, N: int) -> torch.Tensor:
    """out_I(v) = (||v||_F^2 - (tr v[:N, :N])^2 / N) / ||v||_F^2: the share of ||v||_F^2 off the
    multiples of diag(I_N, 0) (its projection on c diag(I_N, 0) has squared norm (tr v_CC)^2 / N)."""
    total = (v ** 2).sum()
    on = torch.diagonal(v[:N, :N]).sum() ** 2 / N
    return (total - on) / (total + TINY)


def penalties(p: dict[str, torch.Tensor], N: int, M: int) -> torch.Tensor:
    """(P_1, P_2, P_3) (module docstring) of the effective weights ``p`` (q, k, v: d x d; B: h x d)."""
    d = N + M
    A = p["k"].T @ p["q"]
    cc = torch.zeros(d, d, dtype=A.dtype, device=A.device)
    cc[:N, :N] = 1
    pp = torch.zeros_like(cc)
    pp[N:, N:] = 1
    diag = torch.zeros_like(p["B"])
    diag[:d, :d] = torch.eye(d, dtype=A.dtype, device=A.device)
    return torch.stack([
        out_fraction(A, pp) + off_identity_fraction(p["v"], N),
        out_fraction(A, cc) + out_fraction(p["v"], pp),
        out_fraction(A, pp) + out_fraction(p["v"], cc) + out_fraction(p["B"], diag),
    ])
