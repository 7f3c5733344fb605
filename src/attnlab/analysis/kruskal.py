"""Kruskal rank, general position, and randomized tests of both.

Definitions 1-2 and the §5.1 test of memorization-capacity-of-mha (the data assumptions
that paper builds on them are in :mod:`attnlab.papers.memorization.assumptions`):

    Kruskal rank of {x_1, ..., x_m} in R^d: the largest k such that EVERY subset of size k
    is linearly independent (Definition 1). General position: Kruskal rank = min(m, d)
    (Definition 2 says "the maximal possible Kruskal rank of d", which presumes m >= d).

Vectors are the ROWS of X (m, d). A subset is independent iff its smallest singular value
is > rtol * its largest (RTOL = 1e-10 by default; a zero vector is never independent).
The exact Kruskal rank enumerates subsets (NP-hard in general), so it is refused with a
ConfigError beyond ``max_subsets``; the paper's randomized test is the scalable substitute,
and it only ever tests subsets of one size.

Tests that record their tolerance and how they decided:
:func:`randomized_rank_test` (the §5.1 test: random n-subsets, 5000 trials, 99%),
:func:`general_position_test` (exact enumeration when feasible, else randomized d-subsets),
:func:`kruskal_rank_estimate` (Figure 1: an upper estimate from nested random subsets), and,
for a stack of small matrices, :func:`independent_rows` and :func:`row_rank_margins`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from contextlib import nullcontext
from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from attnlab.errors import ConfigError

RTOL = 1e-10  # relative singular-value tolerance deciding linear independence
MAX_SUBSETS = 200_000  # exact enumeration limit (total subsets over all sizes)
PAPER_TRIALS = 5000  # §5.1: "After repeating this test 5000 times"
PAPER_PASS_FRACTION = 0.99  # §5.1: "holds for at least 99% of the test instances"
SUBSET_CHUNK = 4096  # subsets whose Gram blocks (and undecided SVDs) are held at once
PROJECTION_RTOL = 1e-14  # row-space truncation in randomized tests (relative to sigma_1 of all rows)
GRAM_SAFE = 1e-8  # Gram screen: lambda_min / lambda_max above this certifies independence


def as_row_vectors(X, name: str = "X") -> np.ndarray:
    """X as a float64 (m, d) array of m row vectors; ConfigError naming ``name`` otherwise."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ConfigError(f"{name} must be a non-empty (m, d) array of m row vectors, got shape {X.shape}")
    return X


def independent_rows(S: np.ndarray, rtol: float = RTOL) -> np.ndarray:
    """For a stack S (B, k, d) of k row vectors each: are they linearly independent? (B,) bool,
    sigma_k > rtol sigma_1 (and sigma_1 > 0)."""
    s = np.linalg.svd(S, compute_uv=False)  # (B, min(k, d)), descending
    if S.shape[1] > S.shape[2]:
        return np.zeros(S.shape[0], dtype=bool)  # more than d vectors in R^d
    return (s[:, -1] > rtol * s[:, 0]) & (s[:, 0] > 0)


def _all_subsets_independent(X: np.ndarray, k: int, rtol: float) -> bool:
    it = combinations(range(X.shape[0]), k)
    while True:
        idx = np.array([c for _, c in zip(range(SUBSET_CHUNK), it)], dtype=np.intp)  # (B, k)
        if idx.size == 0:
            return True
        if not independent_rows(X[idx], rtol).all():  # X[idx]: (B, k, d)
            return False


def kruskal_rank(X, *, rtol: float = RTOL, max_subsets: int = MAX_SUBSETS) -> int:
    """Exact Kruskal rank of the rows of X (m, d) (Definition 1), by checking every subset of
    size k = 1, 2, ... up to min(m, d) (independence of all k-subsets implies it for smaller ones).

    Raises ConfigError when sum_{k <= min(m, d)} C(m, k) > max_subsets."""
    X = as_row_vectors(X)
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
    X = as_row_vectors(X)
    m, d = X.shape
    k = min(m, d)
    if comb(m, k) > max_subsets:
        raise ConfigError(f"general position of {m} vectors in R^{d} needs C({m}, {k}) = {comb(m, k):.3g} "
                          f"subset checks, over the limit max_subsets={max_subsets}: raise max_subsets")
    return _all_subsets_independent(X, k, rtol)


@dataclass(frozen=True)
class RandomizedRankTest:
    """The §5.1 test: ``trials`` random n-subsets of the rows, each checked for rank n.

    fraction_full_rank_: share of trials with rank n; holds_: fraction_full_rank_ >= pass_fraction;
    rtol: a subset has rank n iff sigma_n > rtol sigma_1; min_rel_sigma_: the smallest sigma_n / sigma_1
    seen (a lower bound of it where the Gram screen decided, see :func:`randomized_rank_test`).
    """

    n: int
    trials: int
    pass_fraction: float
    fraction_full_rank_: float
    holds_: bool
    rtol: float = RTOL
    min_rel_sigma_: float = float("nan")


def _blas_single_thread() -> AbstractContextManager[Any]:
    """Many small LAPACK calls gain nothing from BLAS threads and lose badly when the cores are
    shared (measured: 80x slower under load); limit BLAS to one thread where threadpoolctl exists."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only a speed matter
        return nullcontext()
    return threadpool_limits(1, user_api="blas")


def row_space_coordinates(X: np.ndarray, rtol: float = PROJECTION_RTOL) -> np.ndarray:
    """Y = X V_r (m, r): X in an orthonormal basis V_r of its numerical row space, r = #{sigma_i(X) >
    rtol sigma_1(X)}. Every subset keeps its Gram matrix up to a perturbation <= rtol sigma_1(X), so
    subset ranks can be decided on the r <= d columns of Y."""
    _, s, Vt = np.linalg.svd(X, full_matrices=False)  # s: (min(m, d),), Vt: (min(m, d), d)
    r = int((s > rtol * s[0]).sum()) if s.size and s[0] > 0 else 0
    return X @ Vt[:r].T  # (m, r)


def _subset_rel_sigma(Y: np.ndarray, K: np.ndarray, idx: np.ndarray, rtol: float) -> np.ndarray:
    """sigma_k / sigma_1 of every subset Y[idx[b]] (idx: (B, k)), or a certified lower bound of it,
    screening with the Gram matrices K[idx, idx] (:func:`_screened_rel_sigma`)."""
    G = K[idx[:, :, None], idx[:, None, :]]  # (B, k, k)
    return _screened_rel_sigma(G, lambda mask: Y[idx[mask]], rtol)  # Y[idx[mask]]: (B', k, r)


def _screened_rel_sigma(G: np.ndarray, stack: Any, rtol: float) -> np.ndarray:
    """sigma_k / sigma_1 of B stacked (k, r) matrices S_b given their Gram matrices G (B, k, k), or a
    certified lower bound of it; ``stack(mask)`` returns the S_b for which the exact SVD is needed.

    The eigenvalues of G are sigma^2, each within ~1e-13 lambda_max of exact in float64, so
    lambda_min / lambda_max > GRAM_SAFE (sigma ratio > 1e-4, and > 10 rtol) certifies independence
    cheaply (reported as sqrt(0.99 lambda_min / lambda_max), a 1% margin for the Gram error); every
    other matrix gets an exact SVD."""
    lam = np.linalg.eigvalsh(G)  # (B, k), ascending
    top = lam[:, -1]
    ratio2 = np.where(top > 0, lam[:, 0] / np.where(top > 0, top, 1.0), 0.0)
    out = np.sqrt(np.clip(ratio2, 0.0, None) * 0.99)
    unsure = ratio2 <= max(GRAM_SAFE, 100.0 * rtol * rtol)
    if unsure.any():
        S = stack(unsure)  # (B', k, r)
        if S.shape[1] > S.shape[2]:
            out[unsure] = 0.0  # more than r vectors in an r-dimensional space
        else:
            s = np.linalg.svd(S, compute_uv=False)  # (B', k), descending
            out[unsure] = np.where(s[:, 0] > 0, s[:, -1] / np.where(s[:, 0] > 0, s[:, 0], 1.0), 0.0)
    return out


def randomized_rank_test(X, n: int, *, trials: int = PAPER_TRIALS, seed: int = 0,
                         pass_fraction: float = PAPER_PASS_FRACTION, rtol: float = RTOL) -> RandomizedRankTest:
    """The paper's test of "Kruskal rank >= n" (§5.1): sample n distinct rows of X (m, d)
    ``trials`` times (numpy Generator seeded with ``seed``), count the samples of rank n
    (sigma_n > rtol sigma_1), and report whether the fraction reaches ``pass_fraction``
    (paper: 5000 trials, 99%).

    A Kruskal rank >= n makes every trial pass; a pass does not prove it (only sampled subsets
    are seen), which is why the paper allows 1% failures. Speed: subsets are taken in the row-space
    coordinates (:func:`row_space_coordinates`; fewer than n of them means every trial fails) and
    screened with their Gram matrix (:func:`_subset_rel_sigma`); undecided ones get an exact SVD. A
    subset with two equal rows is rank-deficient exactly (sigma_n = 0) and gets no SVD."""
    X = as_row_vectors(X)
    m = X.shape[0]
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= m:
        raise ConfigError(f"n must be an integer in [1, {m}] (the number of rows to sample), got {n!r}")
    if not isinstance(trials, int) or trials < 1:
        raise ConfigError(f"trials must be an integer >= 1 (the paper uses {PAPER_TRIALS}), got {trials!r}")
    if not 0.0 < pass_fraction <= 1.0:
        raise ConfigError(f"pass_fraction must be in (0, 1] (the paper uses {PAPER_PASS_FRACTION}), got {pass_fraction}")
    rng = np.random.default_rng(seed)
    keys = rng.random((trials, m))  # distinct n-subsets: the n smallest of m iid keys
    idx = np.argpartition(keys, n - 1, axis=1)[:, :n]  # (trials, n)
    # a subset holding two equal rows has sigma_n = 0 exactly (token embeddings without positions
    # repeat rows): decided here, not by an SVD per subset
    _, group = np.unique(X, axis=0, return_inverse=True)
    g = np.sort(group.reshape(-1)[idx], axis=1)
    repeat = (np.diff(g, axis=1) == 0).any(axis=1) if n > 1 else np.zeros(trials, dtype=bool)
    rel = np.zeros(trials)
    with _blas_single_thread():
        Y = row_space_coordinates(X)  # (m, r)
        if Y.shape[1] < n:
            return RandomizedRankTest(n, trials, pass_fraction, 0.0, False, rtol, 0.0)
        K = Y @ Y.T  # (m, m) Gram matrix of all rows
        rest = idx[~repeat]
        if len(rest):
            rel[~repeat] = np.concatenate([_subset_rel_sigma(Y, K, rest[i:i + SUBSET_CHUNK], rtol)
                                           for i in range(0, len(rest), SUBSET_CHUNK)])
    frac = float((rel > rtol).mean())
    return RandomizedRankTest(n, trials, pass_fraction, frac, frac >= pass_fraction, rtol, float(rel.min()))


def row_rank_margins(S, *, rtol: float = RTOL) -> np.ndarray:
    """sigma_k / sigma_1 of every matrix of a stack S (B, k, d), k <= d (a certified lower bound
    within 1% where the Gram screen decides, as in :func:`randomized_rank_test`): (B,).

    A matrix has full row rank k iff its margin is > rtol; the Gram screen
    (:func:`_screened_rel_sigma`) sends only the undecided matrices to an exact SVD."""
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 3 or S.shape[1] > S.shape[2]:
        raise ConfigError(f"S must be a (B, k, d) stack with k <= d, got shape {S.shape}")
    with _blas_single_thread():
        return np.concatenate([_screened_rel_sigma(C @ C.transpose(0, 2, 1), lambda mask, C=C: C[mask], rtol)
                               for C in (S[i:i + SUBSET_CHUNK] for i in range(0, S.shape[0], SUBSET_CHUNK))])  # (B,)


@dataclass(frozen=True)
class GeneralPositionTest:
    """Definition 2 on m vectors in R^d: every k = min(m, d)-subset independent.

    method: "exact" (all C(m, k) subsets enumerated: holds_ is a proof either way) or "randomized"
    (``trials`` random k-subsets, holds_ iff fraction_independent_ >= pass_fraction: a failure is
    conclusive, a pass is evidence only); rtol: sigma_k > rtol sigma_1 decides independence."""

    k: int
    method: str
    trials: int
    pass_fraction: float
    rtol: float
    fraction_independent_: float
    holds_: bool


def general_position_test(X, *, trials: int = 200, seed: int = 0, pass_fraction: float = PAPER_PASS_FRACTION,
                          rtol: float = RTOL, max_subsets: int = MAX_SUBSETS) -> GeneralPositionTest:
    """General position of the rows of X (m, d): exactly when C(m, min(m, d)) <= max_subsets,
    otherwise by the §5.1 randomized test with min(m, d)-subsets (the method used is recorded)."""
    X = as_row_vectors(X)
    m, d = X.shape
    k = min(m, d)
    if comb(m, k) <= max_subsets:
        it, n_ok = combinations(range(m), k), 0
        with _blas_single_thread():
            while (idx := np.array([c for _, c in zip(range(SUBSET_CHUNK), it)], dtype=np.intp)).size:  # (B, k)
                n_ok += int(independent_rows(X[idx], rtol).sum())  # X[idx]: (B, k, d)
        frac = n_ok / comb(m, k)
        return GeneralPositionTest(k, "exact", comb(m, k), 1.0, rtol, frac, frac == 1.0)
    r = randomized_rank_test(X, k, trials=trials, seed=seed, pass_fraction=pass_fraction, rtol=rtol)
    return GeneralPositionTest(k, "randomized", trials, pass_fraction, rtol, r.fraction_full_rank_, r.holds_)


@dataclass(frozen=True)
class KruskalEstimate:
    """estimate_: the largest k such that every SAMPLED k-subset is independent, an UPPER estimate of
    the Kruskal rank (unsampled subsets may be dependent); per_trial_: the longest independent prefix
    of each random ordering; rtol: a prefix is independent iff sigma_k > rtol sigma_1."""

    estimate_: int
    trials: int
    rtol: float
    per_trial_: tuple[int, ...]


def kruskal_rank_estimate(X, *, trials: int = 100, seed: int = 0, rtol: float = RTOL) -> KruskalEstimate:
    """Randomized upper estimate of the Kruskal rank of the rows of X (m, d) (Figure 1).

    Each trial orders the rows at random; the k-prefixes of one ordering are nested random k-subsets,
    and sigma_k / sigma_1 of a prefix only decreases as it grows (interlacing), so the prefixes are
    independent up to some length and dependent after it. A QR factorisation of the first
    min(m, r + 1) rows finds a candidate length (the first pivot |R_jj| <= rtol max_i ||x_i||, which
    implies sigma_j <= rtol sigma_1); an SVD confirms it, and a bisection with SVDs lowers it if not.
    The estimate is the minimum over trials of the longest independent prefix."""
    X = as_row_vectors(X)
    m, _ = X.shape
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 1:
        raise ConfigError(f"trials must be an integer >= 1, got {trials!r}")
    rng = np.random.default_rng(seed)
    with _blas_single_thread():
        Y = row_space_coordinates(X)  # (m, r)
        K = min(m, Y.shape[1] + 1)
        longest = [_longest_independent_prefix(Y[rng.permutation(m)[:K]], rtol) for _ in range(trials)]
    return KruskalEstimate(min(longest), trials, rtol, tuple(longest))


def _longest_independent_prefix(P: np.ndarray, rtol: float) -> int:
    """The largest k with P[:k] (k, r) independent (sigma_k > rtol sigma_1); P: (K, r)."""
    R = np.linalg.qr(P.T, mode="r")  # (min(r, K), K)
    piv = np.abs(np.diagonal(R))  # distance of row j from the span of rows < j
    norms = np.maximum.accumulate(np.linalg.norm(P, axis=1))[:piv.size]  # max ||x_i||, i <= j
    bad = np.flatnonzero(~(piv > rtol * norms))
    k = int(bad[0]) if bad.size else piv.size

    def independent(j: int) -> bool:
        s = np.linalg.svd(P[:j], compute_uv=False)  # (j,)
        return bool(s[0] > 0 and s[-1] > rtol * s[0])

    if k == 0 or independent(k):
        return k
    lo, hi = 0, k  # independent(lo) (the empty set), not independent(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if independent(mid) else (lo, mid)
    return lo
