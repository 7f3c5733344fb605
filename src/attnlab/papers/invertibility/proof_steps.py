"""Three steps of the proof of Theorem 1, computed exactly: the Taylor series it writes, the
multinomial count it abbreviates, and a witness that its hyperplane step with v_t in R^d fails for
d >= L (errata invertibility.taylor-sign, invertibility.multinomial-notation,
invertibility.hyperplane-vt; :mod:`attnlab.papers.invertibility.errata`).

- :func:`taylor`: the note's 1 + sum_{j>=1} x^j against 1 / (1 + x) (it sums to 1 / (1 - x)), and
  the alternating series sum_j (-x)^j, in exact rationals;
- :func:`multinomial`: the coefficients of (z_1 + ... + z_m)^j expanded over ordered index tuples,
  against j! / prod_i k_i!;
- :func:`hyperplane`: for d >= L, v_t orthogonal to the L - 1 vectors x(t, i) - x(t, i_max(t)) makes
  v_t^T f_t(W) = v_t^T x(t, i_max(t)) constant in W, so two sequences give a nonzero (v_t) with
  sum_t v_t^T f_t(W) = 0 for every W.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from attnlab.papers.invertibility.embeddings import explicit_embeddings
from attnlab.papers.invertibility.matrix import attention_matrix, qk_matrices

TAYLOR_X = Fraction(1, 2)
TAYLOR_TERMS = 200


@dataclass(frozen=True)
class TaylorSeries:
    """The note's 1 + sum_{j>=1} x^j and the alternating sum_j (-x)^j against 1 / (1 + x), at one x."""

    x: float  # the point x
    target: float  # 1 / (1 + x)
    note: float  # the note's 1 + sum_{j=1}^{terms-1} x^j
    note_limit: float  # 1 / (1 - x), what the note's series sums to
    note_error: float  # |note - target|
    right_error: float  # |sum_{j<terms} (-x)^j - target|

    def to_dict(self) -> dict[str, Any]:
        """The stored form (data["taylor"], the check's values)."""
        return dataclasses.asdict(self)


def taylor(x: Fraction = TAYLOR_X, terms: int = TAYLOR_TERMS) -> TaylorSeries:
    """The note's series 1 + sum_{j=1}^{terms-1} x^j and the alternating sum_{j<terms} (-x)^j against
    1 / (1 + x), in exact rational arithmetic (x = 1/2 and 200 terms by default), rounded to float64
    at the end."""
    target = 1 / (1 + x)
    note = 1 + sum(x ** j for j in range(1, terms))  # -> 1/(1 - x)
    right = sum((-x) ** j for j in range(terms))
    return TaylorSeries(x=float(x), target=float(target), note=float(note), note_limit=float(1 / (1 - x)),
                        note_error=float(abs(note - target)), right_error=float(abs(right - target)))


@dataclass(frozen=True)
class MultinomialCount:
    """(z_1 + ... + z_m)^j expanded over ordered index tuples, each monomial's count against j! / prod_i k_i!."""

    m: int  # number of variables z_i
    j: int  # the power
    monomials: int  # distinct monomials prod_i z_i^{k_i}
    terms: int  # ordered tuples (i_1, ..., i_j): m^j
    max_diff: int  # max over monomials of |count - j! / prod_i k_i!|

    def to_dict(self) -> dict[str, Any]:
        """The stored form (data["multinomial"], the check's values)."""
        return dataclasses.asdict(self)


def multinomial(m: int, j: int) -> MultinomialCount:
    """Expand (z_1 + ... + z_m)^j as a sum over ordered index tuples (i_1, ..., i_j); the count of
    tuples with k_i copies of index i must be j! / prod k_i!."""
    counts = Counter(tuple(Counter(t).get(i, 0) for i in range(m)) for t in itertools.product(range(m), repeat=j))
    diff = max(abs(c - math.factorial(j) // math.prod(math.factorial(k) for k in ks)) for ks, c in counts.items())
    return MultinomialCount(m=m, j=j, monomials=len(counts), terms=m ** j, max_diff=diff)


@dataclass(frozen=True)
class HyperplaneWitness:
    """A nonzero (v_t), v_t in R^d, with sum_t v_t^T f_t(w) = 0 for every w (d >= L), for two sequences."""

    N: int  # tokens
    L: int  # sequence length
    d: int  # embedding width
    sequences: list[list[int]]  # (2, L): the sequences t_1, t_2, 1-based tokens
    residual: float  # max_w |v_1^T f_1(w) - v_2^T f_2(w)| / ((|v_1| + |v_2|) max |f|)
    constant_error: float  # max over t and w of |v_t^T f_t(w) - 1|
    v_norms: list[float]  # (2,): |v_1|, |v_2|

    def to_dict(self) -> dict[str, Any]:
        """The stored form (data["hyperplane"], the check's values)."""
        return dataclasses.asdict(self)


def hyperplane(N: int, L: int, d: int, seqs: Sequence[Sequence[int]],
               w_values: Sequence[float] | None = None) -> HyperplaneWitness:
    """A nonzero (v_t) with sum_t v_t^T f_t(w) = 0 for every w, when d >= L (explicit embeddings,
    W = w E_11): per sequence, v_t spans the null space of the L - 1 differences x(t, i) - x(t, i_max),
    scaled so that v_t^T x(t, i_max) = 1; then v_{t1}^T f_{t1} - v_{t2}^T f_{t2} = 1 - 1 = 0.
    Returns the relative residual max_w |sum| / ((|v_1| + |v_2|) max |f|) over 64 w in [0.01, 50]."""
    e, pos = explicit_embeddings(N, L, d)
    w = np.linspace(0.01, 50, 64) if w_values is None else np.asarray(w_values, dtype=np.float64)
    vs, Fs = [], []
    for t in seqs:
        X = e[list(t)] + pos
        imax = int(np.argmax(X[:, 0]))
        D = np.array([X[i] - X[imax] for i in range(L) if i != imax])
        v = np.linalg.svd(D)[2][-1]  # d >= L: orthogonal to the L - 1 differences
        v = v / (v @ X[imax])
        vs.append(v)
        Fs.append(attention_matrix(e, pos, qk_matrices(w, d), np.array([t])).reshape(len(w), d))
    total = Fs[0] @ vs[0] - Fs[1] @ vs[1]
    scale = (np.linalg.norm(vs[0]) + np.linalg.norm(vs[1])) * max(np.abs(F).max() for F in Fs)
    return HyperplaneWitness(N=N, L=L, d=d, sequences=[[x + 1 for x in t] for t in seqs],
                             residual=float(np.abs(total).max() / scale),
                             constant_error=float(max(np.abs(F @ v - 1).max() for F, v in zip(Fs, vs))),
                             v_norms=[float(np.linalg.norm(v)) for v in vs])


__all__ = ["TAYLOR_TERMS", "TAYLOR_X", "HyperplaneWitness", "MultinomialCount", "TaylorSeries", "hyperplane",
           "multinomial", "taylor"]
