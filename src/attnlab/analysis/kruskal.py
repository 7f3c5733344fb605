"""Kruskal rank, general position and the memorization paper's data assumptions.

memorization-capacity-of-mha §3 (Definitions 1-2, Assumptions 1-2), §4.4 (Assumption 3)
and §5.1 (the randomized test behind Tables 1 and 3).

    Kruskal rank of {x_1, ..., x_m} in R^d: the largest k such that EVERY subset of size k
    is linearly independent (Definition 1). General position: Kruskal rank = min(m, d)
    (Definition 2 says "the maximal possible Kruskal rank of d", which presumes m >= d).
    Assumption 1: the queries {e^(t)}_{t=1..T} have Kruskal rank >= n.
    Assumption 2: every context E^(t) (n x d) has rank n.
    Assumption 3: {e~^(t) = e^(t) + (1/n) sum_i e_i^(t)} has Kruskal rank >= n.

Vectors are the ROWS of X (m, d). A subset is independent iff its smallest singular value
is > rtol * its largest (RTOL = 1e-10 by default; a zero vector is never independent).
The exact Kruskal rank enumerates subsets (NP-hard in general), so it is refused with a
ConfigError beyond ``max_subsets``; the paper's randomized test is the scalable substitute,
and it only ever tests subsets of size n.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from attnlab.errors import ConfigError

RTOL = 1e-10  # relative singular-value tolerance deciding linear independence
MAX_SUBSETS = 200_000  # exact enumeration limit (total subsets over all sizes)
PAPER_TRIALS = 5000  # §5.1: "After repeating this test 5000 times"
PAPER_PASS_FRACTION = 0.99  # §5.1: "holds for at least 99% of the test instances"
_CHUNK = 4096


def _rows(X, name: str = "X") -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ConfigError(f"{name} must be a non-empty (m, d) array of m row vectors, got shape {X.shape}")
    return X


def _independent(S: np.ndarray, rtol: float) -> np.ndarray:
    """For a stack S (B, k, d) of k row vectors each: are they linearly independent? (B,)"""
    s = np.linalg.svd(S, compute_uv=False)  # (B, min(k, d)), descending
    if S.shape[1] > S.shape[2]:
        return np.zeros(S.shape[0], dtype=bool)  # more than d vectors in R^d
    return (s[:, -1] > rtol * s[:, 0]) & (s[:, 0] > 0)


def _all_subsets_independent(X: np.ndarray, k: int, rtol: float) -> bool:
    it = combinations(range(X.shape[0]), k)
    while True:
        idx = np.array([c for _, c in zip(range(_CHUNK), it)], dtype=np.intp)  # (B, k)
        if idx.size == 0:
            return True
        if not _independent(X[idx], rtol).all():  # X[idx]: (B, k, d)
            return False


def kruskal_rank(X, *, rtol: float = RTOL, max_subsets: int = MAX_SUBSETS) -> int:
    """Exact Kruskal rank of the rows of X (m, d) (Definition 1), by checking every subset of
    size k = 1, 2, ... up to min(m, d) (independence of all k-subsets implies it for smaller ones).

    Raises ConfigError when sum_{k <= min(m, d)} C(m, k) > max_subsets."""
    X = _rows(X)
    m, d = X.shape
    k_max = min(m, d)
    needed = sum(comb(m, k) for k in range(1, k_max + 1))
    if needed > max_subsets:
        raise ConfigError(
            f"exact Kruskal rank of {m} vectors in R^{d} needs {needed:.3g} subset checks, over the limit "
            f"max_subsets={max_subsets}: use randomized_rank_test (the paper's test) or raise max_subsets")
    for k in range(1, k_max + 1):
        if not _all_subsets_independent(X, k, rtol):
            return k - 1
    return k_max


def in_general_position(X, *, rtol: float = RTOL, max_subsets: int = MAX_SUBSETS) -> bool:
    """Definition 2: every subset of min(m, d) rows of X (m, d) is independent (checked exactly).

    Raises ConfigError when C(m, min(m, d)) > max_subsets."""
    X = _rows(X)
    m, d = X.shape
    k = min(m, d)
    if comb(m, k) > max_subsets:
        raise ConfigError(f"general position of {m} vectors in R^{d} needs C({m}, {k}) = {comb(m, k):.3g} "
                          f"subset checks, over the limit max_subsets={max_subsets}: raise max_subsets")
    return _all_subsets_independent(X, k, rtol)


@dataclass(frozen=True)
class RandomizedRankTest:
    """The §5.1 test: ``trials`` random n-subsets of the rows, each checked for rank n.

    fraction_full_rank_: share of trials with rank n; holds_: fraction_full_rank_ >= pass_fraction.
    """

    n: int
    trials: int
    pass_fraction: float
    fraction_full_rank_: float
    holds_: bool


def randomized_rank_test(X, n: int, *, trials: int = PAPER_TRIALS, seed: int = 0,
                         pass_fraction: float = PAPER_PASS_FRACTION, rtol: float = RTOL) -> RandomizedRankTest:
    """The paper's test of "Kruskal rank >= n" (§5.1): sample n distinct rows of X (m, d)
    ``trials`` times (numpy Generator seeded with ``seed``), count the samples of rank n,
    and report whether the fraction reaches ``pass_fraction`` (paper: 5000 trials, 99%).

    A Kruskal rank >= n makes every trial pass; a pass does not prove it (only sampled subsets
    are seen), which is why the paper allows 1% failures."""
    X = _rows(X)
    m, d = X.shape
    if not isinstance(n, int) or not 1 <= n <= m:
        raise ConfigError(f"n must be an integer in [1, {m}] (the number of rows to sample), got {n!r}")
    if not isinstance(trials, int) or trials < 1:
        raise ConfigError(f"trials must be an integer >= 1 (the paper uses {PAPER_TRIALS}), got {trials!r}")
    if not 0.0 < pass_fraction <= 1.0:
        raise ConfigError(f"pass_fraction must be in (0, 1] (the paper uses {PAPER_PASS_FRACTION}), got {pass_fraction}")
    rng = np.random.default_rng(seed)
    keys = rng.random((trials, m))  # distinct n-subsets: the n smallest of m iid keys
    idx = np.argpartition(keys, n - 1, axis=1)[:, :n]  # (trials, n)
    ok = np.concatenate([_independent(X[idx[i:i + _CHUNK]], rtol)  # (B, n, d) each
                         for i in range(0, trials, _CHUNK)])
    frac = float(ok.mean())
    return RandomizedRankTest(n, trials, pass_fraction, frac, frac >= pass_fraction)


def assumption1_holds(e, n: int, *, rtol: float = RTOL, max_subsets: int = MAX_SUBSETS) -> bool:
    """Assumption 1, exactly: Kruskal rank of the queries e (T, d) >= n."""
    return kruskal_rank(_rows(e, "e"), rtol=rtol, max_subsets=max_subsets) >= n


def assumption2_holds(E, *, rtol: float = RTOL) -> bool:
    """Assumption 2: every context E^(t) (n, d), given as (n, d) shared or (T, n, d), has rank n."""
    E = np.asarray(E, dtype=np.float64)
    if E.ndim not in (2, 3):
        raise ConfigError(f"E must be (n, d) or (T, n, d), got shape {E.shape}")
    E = E if E.ndim == 3 else E[None]
    return bool(_independent(E, rtol).all())


def assumption3_vectors(E, e) -> np.ndarray:
    """e~^(t) = e^(t) + (1/n) sum_i e_i^(t) for every t (Assumption 3): (T, d)."""
    E, e = np.asarray(E, dtype=np.float64), _rows(e, "e")
    if E.ndim not in (2, 3) or E.shape[-1] != e.shape[1] or (E.ndim == 3 and E.shape[0] != e.shape[0]):
        raise ConfigError(f"E must be (n, {e.shape[1]}) or ({e.shape[0]}, n, {e.shape[1]}) to fit e "
                          f"{e.shape}, got {E.shape}")
    return e + E.mean(axis=-2)  # (T, d) + (d,) or (T, d)


def assumption3_holds(E, e, *, rtol: float = RTOL, max_subsets: int = MAX_SUBSETS) -> bool:
    """Assumption 3, exactly: Kruskal rank of {e~^(t)} >= n (n = the context size)."""
    n = np.asarray(E).shape[-2]
    return kruskal_rank(assumption3_vectors(E, e), rtol=rtol, max_subsets=max_subsets) >= n
