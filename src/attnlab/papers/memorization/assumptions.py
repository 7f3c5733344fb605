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
:func:`assumption_tests` runs all of them, General Position and a Kruskal-rank estimate on one layer
output (the rows of Tables 1 and 3), into the stored records :class:`LayerTests`;
:func:`layer_tests_estimate` is their memory and work.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from attnlab.analysis.kruskal import (
    MAX_SUBSETS,
    RTOL,
    SUBSET_CHUNK,
    RandomizedRankTest,
    as_row_vectors,
    general_position_test,
    independent_rows,
    kruskal_rank,
    kruskal_rank_estimate,
    randomized_rank_test,
    row_rank_margins,
)
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, qr_flops, svd_flops
from attnlab.papers.memorization.decoder_states import TokenCounts


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


# --------------------------------------------------------------------------------------
# every test on one layer output, as stored (Tables 1 and 3, Figure 1's estimate)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GeneralPosition:
    """General Position of the T queries e^(t): the fraction of sampled min(T, d)-subsets that are
    linearly independent (sigma_k > rtol sigma_1)."""

    holds: bool  # every tested subset independent (the test's pass fraction)
    fraction: float  # independent subsets / tested subsets
    k: int  # subset size min(T, d)
    method: str  # "exact" (one rank test of all T) or "randomized" (sampled subsets)
    trials: int  # subsets tested
    rtol: float  # independence: sigma_k > rtol sigma_1

    def to_dict(self) -> dict:
        """The stored test: the fields in order, by name."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RandomizedRank:
    """A randomized Kruskal-rank test (Assumption 1 on the queries e^(t), Assumption 3 on
    e~^(t) = e^(t) + (1/n) sum_i e_i^(t)): ``trials`` random k-subsets, rank k where
    sigma_k > rtol sigma_1."""

    holds: bool  # fraction >= pass_fraction
    fraction: float  # subsets of full rank k / trials
    min_rel_sigma: float  # min over subsets of sigma_k / sigma_1
    k: int  # subset size n
    trials: int  # subsets tested
    pass_fraction: float  # fraction of full-rank subsets at which the assumption holds
    rtol: float  # full rank: sigma_k > rtol sigma_1

    def to_dict(self) -> dict:
        """The stored test: the fields in order, by name."""
        return dataclasses.asdict(self)

    @classmethod
    def from_test(cls, r: RandomizedRankTest) -> RandomizedRank:
        """The stored record of a :class:`attnlab.analysis.kruskal.RandomizedRankTest`."""
        return cls(holds=r.holds_, fraction=r.fraction_full_rank_, min_rel_sigma=r.min_rel_sigma_, k=r.n,
                   trials=r.trials, pass_fraction=r.pass_fraction, rtol=r.rtol)


@dataclass(frozen=True)
class ContextRank:
    """Assumption 2: every context E^(t) (n, d) has rank n (sigma_n > rtol sigma_1)."""

    holds: bool  # every context of rank n
    fraction: float  # contexts of rank n / T
    min_rel_sigma: float  # min_t sigma_n(E^(t)) / sigma_1(E^(t))
    contexts: int  # T contexts tested
    rtol: float  # rank n: sigma_n > rtol sigma_1

    def to_dict(self) -> dict:
        """The stored test: the fields in order, by name."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class KruskalEstimate:
    """Kruskal rank of the queries, estimated from random orderings: the largest k for which every
    sampled k-subset is independent (an upper estimate: only sampled subsets are seen)."""

    estimate: int  # estimated Kruskal rank
    trials: int  # random orderings
    rtol: float  # independence: sigma_k > rtol sigma_1
    upper_estimate: bool  # True: the estimate bounds the Kruskal rank from above

    def to_dict(self) -> dict:
        """The stored estimate: the fields in order, by name."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class LayerTests:
    """GP, Assumptions 1-3 and the Kruskal-rank estimate on one layer output (contexts E (T, n, d),
    queries e (T, d))."""

    general_position: GeneralPosition  # of the queries e^(t)
    assumption1: RandomizedRank  # Kruskal rank of the queries >= n
    assumption2: ContextRank  # every E^(t) of rank n
    assumption3: RandomizedRank  # Kruskal rank of e~^(t) = e^(t) + mean_i e_i^(t) >= n
    kruskal_estimate: KruskalEstimate  # of the queries
    shape: list[int]  # [T, n, d] of E
    tokens: TokenCounts | None = None  # the decoder's token counts (SmolLM2 rows), else None

    @property
    def checks(self) -> tuple[GeneralPosition, RandomizedRank, ContextRank, RandomizedRank]:
        """The four tests in the order GP, Assumptions 1, 2, 3."""
        return self.general_position, self.assumption1, self.assumption2, self.assumption3

    def to_dict(self) -> dict:
        """The stored tests: the four checks, the estimate, shape, then tokens where counted."""
        out = {"general_position": self.general_position.to_dict(), "assumption1": self.assumption1.to_dict(),
               "assumption2": self.assumption2.to_dict(), "assumption3": self.assumption3.to_dict(),
               "kruskal_estimate": self.kruskal_estimate.to_dict(), "shape": self.shape}
        if self.tokens is not None:
            out["tokens"] = self.tokens.to_dict()
        return out


def assumption_tests(E: np.ndarray, e: np.ndarray, *, trials: int, gp_trials: int, estimate_trials: int,
                     pass_fraction: float, rtol: float, seed: int) -> LayerTests:
    """GP, Assumptions 1-3 and a Kruskal-rank estimate of the queries for contexts E (T, n, d), queries e (T, d).

    Assumptions 1 and 3: ``trials`` random n-subsets each (seed ``seed``), holding at ``pass_fraction``;
    General Position: ``gp_trials`` min(T, d)-subsets (seed + 1); the estimate: ``estimate_trials``
    random orderings (seed + 2); independence everywhere sigma_k > rtol sigma_1."""
    n = E.shape[1]
    kw = dict(trials=trials, seed=seed, pass_fraction=pass_fraction, rtol=rtol)
    gp = general_position_test(e, trials=gp_trials, seed=seed + 1, pass_fraction=pass_fraction, rtol=rtol)
    a1 = assumption1_test(e, n, **kw)
    a2 = assumption2_test(E, rtol=rtol)
    a3 = assumption3_test(E, e, **kw)
    est = kruskal_rank_estimate(e, trials=estimate_trials, seed=seed + 2, rtol=rtol)
    return LayerTests(
        general_position=GeneralPosition(holds=gp.holds_, fraction=gp.fraction_independent_, k=gp.k,
                                         method=gp.method, trials=gp.trials, rtol=gp.rtol),
        assumption1=RandomizedRank.from_test(a1),
        assumption2=ContextRank(holds=a2.holds_, fraction=a2.fraction_full_rank_, min_rel_sigma=a2.min_rel_sigma_,
                                contexts=a2.T, rtol=a2.rtol),
        assumption3=RandomizedRank.from_test(a3),
        kruskal_estimate=KruskalEstimate(estimate=est.estimate_, trials=est.trials, rtol=est.rtol,
                                         upper_estimate=True),
        shape=list(E.shape),
    )


def layer_tests_estimate(T: int, n: int, D: int, trials: int, gp_trials: int, estimate_trials: int) -> Estimate:
    """The memory and work of :func:`assumption_tests` on one layer of width D (float64).

    With r = min(T, D) the rank of the row-space coordinates Y (T x r), C = min(trials, 4096) subsets
    per chunk and k = min(T, D) General Position's subset size, the peak is

        8 (4 T n D                 the hidden states L0 and L1, as batches and concatenated
           + 2 trials T + T^2      the subsets' random keys and indices; the Gram matrix Y Y^T
           + 2 C (n^2 + n r)       a chunk's Gram blocks (C, n, n) with eigvalsh, and the
                                   undecided subsets (C, n, r) with their SVD
           + 2 C_gp (k^2 + k r))   the same for General Position's C_gp = min(gp_trials, 4096)

    bytes; the work: the SVD of Y (four times: GP, A1, A3, the estimate), the Gram matrix 2 T^2 r,
    eigvalsh of every subset's Gram block (A1, A3: trials of n x n; GP: gp_trials of k x k), A2's T SVDs
    of n x D, and the estimate's estimate_trials QRs of r x (r + 1)."""
    r = k = min(T, D)
    C, C_gp = min(trials, SUBSET_CHUNK), min(gp_trials, SUBSET_CHUNK)
    peak = 8 * (4 * T * n * D + 2 * trials * T + T * T + 2 * C * (n * n + n * r) + 2 * C_gp * (k * k + k * r))
    return Estimate(peak, f"the tests of a width-{D} layer ({trials} subsets of {n} of its {T} queries, "
                          f"float64)",
                    gemm=2.0 * T * T * r,
                    lapack=4 * svd_flops(T, D, vectors=True) + 2 * trials * svd_flops(n, n)
                    + gp_trials * svd_flops(k, k) + T * svd_flops(n, D) + estimate_trials * qr_flops(r, r + 1),
                    traffic=8.0 * (2 * trials * (n * n + n * r) + gp_trials * (k * k + k * r)),
                    calls=T + estimate_trials + 4)
