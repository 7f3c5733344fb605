"""How large w the proof of Theorem 1 needs: the scale at which its series expansion converges.

With W_QK = w E_11 the proof divides numerator and denominator of a^p(t) by the largest
exponential, at i_max(t) = argmax_i x(t, i)_1, and expands

    1 / (1 + x_t(w)),   x_t(w) = sum_{i != i_max(t)} exp(-w q_t g_{t,i}),
    q_t = x(t, L)_1 > 0,  g_{t,i} = x(t, i_max)_1 - x(t, i)_1 > 0,

as sum_j (-1)^j x_t(w)^j, which converges iff x_t(w) < 1. x_t is decreasing in w, so the
expansion holds for every sequence once w > w* = max_t w*_t with x_t(w*_t) = 1 (w*_t = 0
when L = 2: one term, x_t < 1 for every w > 0). A sufficient closed form is
w > ln(L - 1) / (q_t min_i g_{t,i}). :func:`expansion_w` solves x_t(w) = 1 per sequence by
bisection (80 halvings of a bracket in log w: relative accuracy ~1e-12).

With w_p = w p (:func:`attnlab.papers.invertibility.matrix.default_w`) the smallest scale
is w_1 = w, so every head's expansion converges iff w > w*. The rank does not need it: it
is full for every generic w > 0 (claim invertibility.any-w); w* only says where the proof's
own argument starts to apply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.embeddings import embeddings_of_kind
from attnlab.papers.invertibility.matrix import sequences
from attnlab.stored import Stored


@dataclass(frozen=True)
class ExpansionScale(Stored):
    """The scale w from which the proof's series 1 / (1 + x_t(w)) = sum_j (-x_t(w))^j converges for every t."""

    w_star: float  # w* = max_t w*_t, x_t(w*_t) = 1 (0 when L = 2)
    argmax: list[int]  # (L,): the sequence t attaining w* (0-based tokens)
    min_gap: float  # min over t and i != i_max(t) of g_{t,i} = x(t, i_max)_1 - x(t, i)_1
    closed_form: float  # max_t ln(L - 1) / (q_t min_i g_{t,i}), sufficient (>= w*)


def expansion_w(e, pos, seqs: np.ndarray | None = None) -> ExpansionScale:
    """w*, the sequence attaining it, the smallest gap and the closed form, for embeddings e (N, d), pos (L, d)."""
    e, pos = np.asarray(e, dtype=np.float64), np.asarray(pos, dtype=np.float64)
    N, L = e.shape[0], pos.shape[0]
    seqs = sequences(N, L) if seqs is None else np.asarray(seqs)
    x1 = e[seqs, 0] + pos[None, :, 0]  # (T, L): x(t, i)_1
    q = x1[:, -1]
    if not (q > 0).all():
        raise ConfigError("the proof's expansion needs x(t, L)_1 > 0 for every t: use positive embeddings")
    imax = x1.argmax(axis=1)
    gaps = x1.max(axis=1, keepdims=True) - x1  # (T, L), 0 at i_max
    others = np.ones_like(gaps, dtype=bool)
    others[np.arange(len(x1)), imax] = False
    g = np.where(others, gaps, np.inf)
    min_gap = float(g.min())
    if L == 2:
        return ExpansionScale(w_star=0.0, argmax=seqs[0].tolist(), min_gap=min_gap, closed_form=0.0)
    if not min_gap > 0:
        raise ConfigError("two positions of a sequence tie on the first coordinate: the proof's i_max is not unique")

    def x_of(w: np.ndarray) -> np.ndarray:  # x_t(w) for one w per sequence
        return np.exp(-w[:, None] * q[:, None] * g).sum(axis=1)

    closed = math.log(L - 1) / (q * g.min(axis=1))
    lo, hi = np.full(len(q), 1e-300), closed.copy()  # x_t(closed) <= 1: a bracket
    lo_log, hi_log = np.log(np.maximum(lo, closed * 1e-12)), np.log(hi)
    for _ in range(80):
        mid = (lo_log + hi_log) / 2
        above = x_of(np.exp(mid)) > 1  # still divergent: w*_t is larger
        lo_log, hi_log = np.where(above, mid, lo_log), np.where(above, hi_log, mid)
    w_t = np.exp(hi_log)
    w_t[x_of(np.full(len(q), np.exp(lo_log.min()))) <= 1] = 0.0  # x_t < 1 already at the bottom
    k = int(np.argmax(w_t))
    return ExpansionScale(w_star=float(w_t[k]), argmax=seqs[k].tolist(), min_gap=min_gap,
                          closed_form=float(closed.max()))


@dataclass(frozen=True)
class CaseExpansion:
    """:func:`expansion_w` for the embeddings of one (N, L, d): the case and its :class:`ExpansionScale`."""

    N: int
    L: int
    d: int
    scale: ExpansionScale

    def to_dict(self) -> dict[str, Any]:
        """The stored form (an experiment's ``expansion`` entry): N, L, d, then the scale's fields."""
        return {"N": self.N, "L": self.L, "d": self.d, **self.scale.to_dict()}


def case_expansion(N: int, L: int, d: int, embedding: str = "explicit", seed: int = 0) -> CaseExpansion:
    """w* and the rest of :func:`expansion_w` for the ``embedding`` kind ("explicit" or "random" from
    ``seed``; :func:`attnlab.papers.invertibility.embeddings.embeddings_of_kind`) of (N, L, d)."""
    e, pos = embeddings_of_kind(embedding, N, L, d, seed)
    return CaseExpansion(N=N, L=L, d=d, scale=expansion_w(e, pos))


__all__ = ["CaseExpansion", "ExpansionScale", "case_expansion", "expansion_w"]
