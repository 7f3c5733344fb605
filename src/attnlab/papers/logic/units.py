"""Which hidden units of the feed-forward carry the output, and what switches them on.

The read-out of the §4 model (:mod:`~attnlab.papers.logic.model`) is

    Y^_i = c0 + sum_u c_u(i),    c_u(i) = C_u r_u(i),    r_u(i) = ReLU(B_u z_i + b_u),    u = 1..h,

a sum of h unit contributions. The three hand-built solutions of §2 differ in how many units they
need and in what switches each one on (:mod:`~attnlab.papers.logic.solutions`; tests):

    solution 1   N^2 pair detectors (a, b), each on only when X_{i-1} = a:   gated by the previous category
    solution 2   M positional units (B = I), unit N + r on only at i = r:     gated by the position
    solution 3   N category units (B = I), unit a on only when X_i = a:       gated by the current category

(solution 2's category units and solution 3's positional units add the constant -m, the offset of
the ReLU constant: together they carry no variance). This tells the solutions apart where
replacing the ReLU by the identity cannot: a linear feed-forward breaks every one of them.

**Gating** (:func:`gating`). A unit's *share* on a variable (the current category X_i, the previous
one X_{i-1}, with position 1's "none" as one more value, and the position i) is the largest fraction
of its activation mass sum_i r_u(i) on one value of the variable: 1 when the unit is on for that
value only, about 1/N (1/M) when it ignores the variable. A unit is *gated* by a variable when its
share is >= :data:`GATED`; its *type* (:func:`unit_types`) is the hand-built solution whose units
are gated as it is: "2" gated by the position, else "1" gated by the previous category, else "3"
gated by the current category, else "-" (none of them).

**Units needed** (:func:`units_needed`). Keep a set K of units, refit the read-out on them (least
squares of Y on 1 and the c_u, u in K) and measure R^2(K) = 1 - SSE / sum_i (Y_i - mean Y)^2; K
grows greedily by the unit that lowers the SSE most (orthogonal greedy selection). The units needed
for R^2 t is the size of the first K with R^2(K) >= t: an upper bound on the smallest such K, and a
:class:`~attnlab.checks.Bound` (at least h) where all h units stay below t. The refit makes the count
blind to how a solution spreads its constants over units (solution 3's offsets: m in each category
unit, -m in each positional one).

**Removing a type** (:func:`removal_cost`). The contributions of every unit of one type replaced by
their means over the sequences (a mean ablation, as in :mod:`~attnlab.papers.logic.mechanism`, with
the read-out as trained): the MSE / Var(Y) this adds is what the model loses without them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnlab.checks import Bound

R2_TARGETS = (0.9, 0.99, 0.999)
"""The R^2 levels at which the units needed are counted."""
GATES = ("current category", "previous category", "position")
GATED = 0.9
"""A unit is gated by a variable when at least this share of its activation mass falls on one of its values."""
TYPES = ("1", "2", "3", "-")
"""Unit types: gated as solution 1's (previous category), 2's (position), 3's (current category) units, or none."""


def contributions(params: dict[str, torch.Tensor], tokens: torch.Tensor, N: int, *, norm: str = "layernorm"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(c, r): the unit contributions c_u(i) = C_u r_u(i) and activations r_u(i) = ReLU(B_u z_i + b_u), each
    (S M, h) with the token rows of ``tokens`` (S, M) in order, in float64, for the model with effective weights
    ``params`` (:func:`attnlab.papers.logic.model.predict` is c0 plus the row sums of c)."""
    from attnlab.papers.logic.model import LN_EPS, hidden_rows

    p = {k: v.to(torch.float64) for k, v in params.items()}
    with torch.no_grad():
        H = hidden_rows(p, torch.as_tensor(tokens), N)
        if norm == "layernorm":
            H = torch.nn.functional.layer_norm(H, (H.shape[-1],), p["gamma"], p["beta"], LN_EPS)
        r = torch.relu(H @ p["B"].T + p["b"]).reshape(-1, p["B"].shape[0])
        c = r * p["C"][0]
    return c.numpy(), r.numpy()


def greedy_r2(c: np.ndarray, Y: np.ndarray) -> tuple[list[int], list[float]]:
    """(order, R^2 after each unit): the units in the order the orthogonal greedy selection keeps them (each step
    the unit whose contribution, orthogonalised against the constant and the units kept so far, explains most of
    the residual) and R^2(K) after each, the read-out refitted on K. ``c``: (T, h) contributions, ``Y``: (T,)
    targets. A unit whose contribution lies (numerically) in the span already kept is never kept, and the
    selection stops once R^2 is 1 to rounding.

    Computed on the h x h Gram matrix of the centred contributions, G = R^t R, and b = R^t y: after keeping K,
    G_K = G - G_{:K} G_{KK}^-1 G_{K:} and b_K = b - G_{:K} G_{KK}^-1 b_K (Schur complements, one rank-one update
    per unit kept), unit u explains b_K[u]^2 / G_K[u, u] more of the residual. O(T h^2) for G, then O(h^3)."""
    y = np.asarray(Y, np.float64).reshape(-1)
    yc = y - y.mean()
    total = float(yc @ yc)
    R = c - c.mean(0, keepdims=True)  # orthogonal to the constant
    G, bK = R.T @ R, R.T @ yc
    n0 = np.diag(G).copy()
    floor = 1e-20 * max(float(n0.max()), 1e-300)
    free = n0 > floor
    order: list[int] = []
    r2: list[float] = []
    sse = total
    while sse > 1e-12 * total:  # stop once the kept units explain Y (to rounding)
        n2 = np.diag(G)
        usable = free & (n2 > 1e-12 * n0) & (n2 > floor)
        if not usable.any():
            break
        u = int(np.argmax(np.where(usable, bK * bK / np.maximum(n2, 1e-300), -np.inf)))
        g = G[:, u] / G[u, u]
        sse -= float(bK[u] * bK[u] / G[u, u])
        bK = bK - g * bK[u]
        G = G - np.outer(g, G[u, :])
        free[u] = False
        order.append(u)
        r2.append(1.0 - max(sse, 0.0) / total)
    return order, r2


def gating(r: np.ndarray, tokens: np.ndarray, N: int) -> dict[str, np.ndarray]:
    """gate (:data:`GATES`) -> each unit's share (h,) of its activation mass on its commonest value of the current
    category, of the previous category (position 1's "none" is value N) and of the position. ``r``: (S M, h)
    activations in the token order of ``tokens`` (S, M)."""
    tokens = np.asarray(tokens)
    S, M = tokens.shape
    prev = np.concatenate([np.full((S, 1), N), tokens[:, :-1]], axis=1)
    labels = {"current category": (tokens.reshape(-1), N), "previous category": (prev.reshape(-1), N + 1),
              "position": (np.tile(np.arange(M), S), M)}
    mass = np.maximum(r.sum(0), 1e-300)
    out = {}
    for gate, (lab, k) in labels.items():
        per = np.eye(k)[lab].T @ r  # (k, h): each value's activation mass
        out[gate] = per.max(0) / mass
    return out


def unit_types(shares: dict[str, np.ndarray]) -> np.ndarray:
    """Each unit's type (:data:`TYPES`) from its shares (:func:`gating`): "2" if gated by the position, else "1" if
    by the previous category, else "3" if by the current category, else "-"."""
    pos, prev, cur = (np.asarray(shares[g]) >= GATED for g in ("position", "previous category", "current category"))
    return np.where(pos, "2", np.where(prev, "1", np.where(cur, "3", "-")))


def removal_cost(c: np.ndarray, Y: np.ndarray, units: np.ndarray) -> float:
    """MSE / Var(Y) added when the contributions of ``units`` (a boolean mask over the h units) are replaced by
    their means (the read-out as trained): (SSE with them mean-ablated - SSE as is) / sum (Y - mean Y)^2."""
    y = np.asarray(Y, np.float64).reshape(-1)
    full = c.sum(1)
    ablated = full - (c[:, units] - c[:, units].mean(0, keepdims=True)).sum(1)
    total = float(np.sum((y - y.mean()) ** 2))
    return float((np.sum((ablated - y) ** 2) - np.sum((full - y) ** 2)) / total) if total > 0 else 0.0


@dataclass(frozen=True)
class Units:
    """How many units one model's feed-forward needs, what gates them, and what removing each type costs.

    Attributes:
        width: h, the units it has.
        r2_all: R^2 of the refitted read-out on all h units (at least the model's own R^2).
        needed: R^2 target -> units needed (int), or a Bound (at least h) where all h do not reach it.
        share: gate (:data:`GATES`) -> the mean share of the units kept for R^2 0.99 (all h where 0.99 is not
            reached), each weighted by the R^2 it added.
        types: type (:data:`TYPES`) -> how many of the h units carry it (units with no activation count as "-").
        cost: type -> MSE / Var(Y) added by removing every unit of that type (:func:`removal_cost`).
    """

    width: int
    r2_all: float
    needed: dict[float, int | Bound]
    share: dict[str, float]
    types: dict[str, int]
    cost: dict[str, float]

    def to_dict(self) -> dict:
        return {"width": self.width, "r2_all": self.r2_all,
                "needed": {str(t): (n.to_dict() if isinstance(n, Bound) else n) for t, n in self.needed.items()},
                "share": dict(self.share), "types": dict(self.types), "cost": dict(self.cost)}


def units_needed(params: dict[str, torch.Tensor], tokens: torch.Tensor | np.ndarray, Y: torch.Tensor | np.ndarray,
                 N: int, *, norm: str = "layernorm", targets: tuple[float, ...] = R2_TARGETS) -> Units:
    """:class:`Units` of the model with effective weights ``params`` on the sequences ``tokens`` (S, M) with targets
    ``Y`` (S, M): units needed per R^2 target, gating of the units kept for R^2 0.99, types and their removal cost
    (module docstring)."""
    tok = np.asarray(tokens)
    c, r = contributions(params, torch.as_tensor(tok), N, norm=norm)
    y = np.asarray(Y, np.float64).reshape(-1)
    order, r2 = greedy_r2(c, y)
    h = c.shape[1]
    top = r2[-1] if r2 else 0.0
    needed: dict[float, int | Bound] = {}
    for t in targets:
        k = next((n + 1 for n, x in enumerate(r2) if x >= t), None)
        needed[t] = k if k is not None else Bound.at_least(h, f"all {h} units reach R^2 {top:.4g} < {t:g}")
    k99 = needed.get(0.99)
    kept = order[: k99] if isinstance(k99, int) else order
    w = np.maximum(np.diff([0.0] + r2)[: len(kept)], 0.0)
    w = w / w.sum() if w.sum() > 0 else np.full(len(kept), 1.0 / max(len(kept), 1))
    g = gating(r, tok, N)
    share = {gate: float(np.sum(w * g[gate][kept])) if kept else float("nan") for gate in GATES}
    kinds = np.where(r.sum(0) > 0, unit_types(g), "-")
    types = {t: int(np.sum(kinds == t)) for t in TYPES}
    cost = {t: removal_cost(c, y, kinds == t) for t in TYPES[:3]}
    return Units(h, top, needed, share, types, cost)


__all__ = ["GATED", "GATES", "R2_TARGETS", "TYPES", "Units", "contributions", "gating", "greedy_r2", "removal_cost",
           "unit_types", "units_needed"]
