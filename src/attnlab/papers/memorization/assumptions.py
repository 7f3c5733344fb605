"""The memorization paper's data assumptions, exactly and by the paper's randomized test.

memorization-capacity-of-mha §3 (Assumptions 1-2), §4.4 (Assumption 3) and §5.1 (the test
behind Tables 1 and 3), for T examples with queries e^(t) (d,) and contexts E^(t) (n, d)
(:mod:`attnlab.papers.memorization.model`):

    Assumption 1: the queries {e^(t)}_{t=1..T} have Kruskal rank >= n.
    Assumption 2: every context E^(t) (n x d) has rank n.
    Assumption 3: {e~^(t) = e^(t) + (1/n) sum_i e_i^(t)} has Kruskal rank >= n.

(§4.4 calls Assumption 3 "more relaxed compared to Assumption 2"; it is Assumption 1 for the
shifted queries e~, i.e. a relaxation of Assumption 1, which is how Proposition 4 uses it.)

Shapes: e (T, d); E (n, d) shared by all examples or (T, n, d), one per example.
Independence means sigma_k > rtol sigma_1 (rtol = :data:`attnlab.analysis.kruskal.RTOL`,
1e-10). ``assumption*_holds`` decide exactly (Kruskal rank by enumeration, refused beyond
``max_subsets``); ``assumption*_test`` are the §5.1 tests of Tables 1 and 3, each result
recording its tolerance and margin (:mod:`attnlab.analysis.kruskal` does the linear algebra).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlab.analysis.kruskal import (
    MAX_SUBSETS,
    RTOL,
    RandomizedRankTest,
    as_row_vectors,
    independent_rows,
    kruskal_rank,
    randomized_rank_test,
    row_rank_margins,
)
from attnlab.errors import ConfigError


# --------------------------------------------------------------------------------------
# exact decisions
# --------------------------------------------------------------------------------------
def assumption1_holds(e, n: int, *, rtol: float = RTOL, max_subsets: int = MAX_SUBSETS) -> bool:
    """Assumption 1, exactly: Kruskal rank of the queries e (T, d) >= n."""
    return kruskal_rank(as_row_vectors(e, "e"), rtol=rtol, max_subsets=max_subsets) >= n


def assumption2_holds(E, *, rtol: float = RTOL) -> bool:
    """Assumption 2: every context E^(t) (n, d), given as (n, d) shared or (T, n, d), has rank n."""
    E = np.asarray(E, dtype=np.float64)
    if E.ndim not in (2, 3):
        raise ConfigError(f"E must be (n, d) or (T, n, d), got shape {E.shape}")
    E = E if E.ndim == 3 else E[None]
    return bool(independent_rows(E, rtol).all())


def assumption3_vectors(E, e) -> np.ndarray:
    """e~^(t) = e^(t) + (1/n) sum_i e_i^(t) for every t (Assumption 3): (T, d)."""
    E, e = np.asarray(E, dtype=np.float64), as_row_vectors(e, "e")
    if E.ndim not in (2, 3) or E.shape[-1] != e.shape[1] or (E.ndim == 3 and E.shape[0] != e.shape[0]):
        raise ConfigError(f"E must be (n, {e.shape[1]}) or ({e.shape[0]}, n, {e.shape[1]}) to fit e "
                          f"{e.shape}, got {E.shape}")
    return e + E.mean(axis=-2)  # (T, d) + (d,) or (T, d)


def assumption3_holds(E, e, *, rtol: float = RTOL, max_subsets: int = MAX_SUBSETS) -> bool:
    """Assumption 3, exactly: Kruskal rank of {e~^(t)} >= n (n = the context size)."""
    n = np.asarray(E).shape[-2]
    return kruskal_rank(assumption3_vectors(E, e), rtol=rtol, max_subsets=max_subsets) >= n


# --------------------------------------------------------------------------------------
# the tests of Tables 1 and 3 (§5.1, App. J): every result carries its tolerance
# --------------------------------------------------------------------------------------
def assumption1_test(e, n: int, **kw) -> RandomizedRankTest:
    """Assumption 1 as §5.1 tests it: ``trials`` random n-subsets of the queries e (T, d) have rank n
    in >= 99% of trials (:func:`attnlab.analysis.kruskal.randomized_rank_test`; keyword arguments go
    there)."""
    return randomized_rank_test(as_row_vectors(e, "e"), n, **kw)


@dataclass(frozen=True)
class ContextRankTest:
    """Assumption 2 on T contexts E^(t) (n, d): fraction_full_rank_ = share of t with rank n
    (sigma_n > rtol sigma_1); min_rel_sigma_ = min_t sigma_n(E^(t)) / sigma_1(E^(t)) (a certified
    lower bound within 1% where the Gram screen decided, as in the randomized test);
    holds_ = every context has rank n (fraction 1)."""

    n: int
    T: int
    rtol: float
    fraction_full_rank_: float
    min_rel_sigma_: float
    holds_: bool


def assumption2_test(E, *, rtol: float = RTOL) -> ContextRankTest:
    """Assumption 2 on E, (n, d) shared or (T, n, d): the rank of every context, with margins."""
    E = np.asarray(E, dtype=np.float64)
    if E.ndim not in (2, 3) or 0 in E.shape:
        raise ConfigError(f"E must be a non-empty (n, d) or (T, n, d) array, got shape {E.shape}")
    E = E if E.ndim == 3 else E[None]
    T, n, d = E.shape
    if n > d:
        return ContextRankTest(n, T, rtol, 0.0, 0.0, False)  # n vectors in R^d, n > d: rank < n
    rel = row_rank_margins(E, rtol=rtol)  # (T,)
    frac = float((rel > rtol).mean())
    return ContextRankTest(n, T, rtol, frac, float(rel.min()), frac == 1.0)


def assumption3_test(E, e, **kw) -> RandomizedRankTest:
    """Assumption 3 (§4.4) by the §5.1 test: n-subsets of e~^(t) = e^(t) + (1/n) sum_i e_i^(t)
    (:func:`assumption3_vectors`), n = the context size; keyword arguments go to
    :func:`attnlab.analysis.kruskal.randomized_rank_test`."""
    return randomized_rank_test(assumption3_vectors(E, e), np.asarray(E).shape[-2], **kw)
