"""Kruskal rank, general position and the randomized rank tests on hand-built sets."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.kruskal import (
    general_position_test,
    in_general_position,
    independent_rows,
    kruskal_rank,
    kruskal_rank_estimate,
    randomized_rank_test,
    row_rank_margins,
)
from attnlab.errors import ConfigError
from tolerances import RANK_RTOL, SVD_RATIO


def _generic(m, d, seed=0):
    return np.random.default_rng(seed).standard_normal((m, d))


def test_generic_set_has_full_kruskal_rank():
    X = _generic(7, 5)
    assert kruskal_rank(X) == 5
    assert in_general_position(X)
    assert kruskal_rank(_generic(3, 5)) == 3  # fewer vectors than dimensions


def test_repeated_direction_gives_kruskal_rank_one():
    X = _generic(7, 5)
    X[4] = -2.5 * X[1]  # a repeated direction: {x_1, x_4} is dependent
    assert kruskal_rank(X) == 1
    assert not in_general_position(X)


def test_zero_vector_gives_kruskal_rank_zero():
    X = _generic(6, 5)
    X[3] = 0.0
    assert kruskal_rank(X) == 0


def test_three_in_a_plane_gives_kruskal_rank_two():
    X = _generic(7, 5)
    X[6] = X[0] + 3.0 * X[2]  # {x_0, x_2, x_6} dependent, every pair independent
    assert kruskal_rank(X) == 2


def test_vectors_in_a_subspace_cap_kruskal_rank():
    # 8 generic vectors in a 3-dimensional subspace of R^6: Kruskal rank 3 < d = 6
    rng = np.random.default_rng(1)
    X = rng.standard_normal((8, 3)) @ rng.standard_normal((3, 6))
    assert kruskal_rank(X) == 3
    assert not in_general_position(X)


def test_relative_tolerance_decides_near_dependence():
    X = _generic(4, 4)
    X[3] = X[0] + 1e-13 * _generic(1, 4, seed=5)[0]  # {x_0, x_3} dependent to ~1e-13 relative
    assert kruskal_rank(X) == 1  # the default rtol = 1e-10
    assert kruskal_rank(X, rtol=1e-15) == 4


def test_too_many_subsets_raises_with_the_limit():
    with pytest.raises(ConfigError, match="max_subsets=200000"):
        kruskal_rank(_generic(40, 20))
    with pytest.raises(ConfigError, match="max_subsets=10"):
        in_general_position(_generic(8, 4), max_subsets=10)


def test_randomized_test_fraction_matches_a_known_count():
    # 10 vectors in R^5, rows 0 and 1 parallel: a 2-subset fails iff it is {0, 1},
    # probability 1 / C(10, 2) = 1/45 = 0.0222
    X = _generic(10, 5)
    X[1] = 3.0 * X[0]
    r = randomized_rank_test(X, 2, trials=5000, seed=3)
    assert abs((1 - r.fraction_full_rank_) - 1 / 45) < 4 * np.sqrt((1 / 45) * (44 / 45) / 5000)
    assert not r.holds_  # 97.8% < 99%
    r = randomized_rank_test(_generic(10, 5), 5, trials=5000, seed=3)
    assert r.fraction_full_rank_ == 1.0 and r.holds_


def test_randomized_test_is_seeded():
    X = _generic(12, 3)
    X[5] = X[7]
    a = randomized_rank_test(X, 3, trials=500, seed=9).fraction_full_rank_
    assert a == randomized_rank_test(X, 3, trials=500, seed=9).fraction_full_rank_
    assert a < 1.0


@pytest.mark.parametrize("kw", [dict(n=0), dict(n=13), dict(n=2, trials=0), dict(n=2, pass_fraction=1.5)])
def test_randomized_test_rejects_bad_arguments(kw):
    with pytest.raises(ConfigError):
        randomized_rank_test(_generic(12, 3), **kw)


def test_bad_shapes_raise():
    with pytest.raises(ConfigError, match=r"\(m, d\)"):
        kruskal_rank(np.zeros(5))
    with pytest.raises(ConfigError, match=r"\(B, k, d\) stack with k <= d"):
        row_rank_margins(np.zeros((2, 4, 3)))


# --------------------------------------------------------------------------------------
# the randomized tests of Tables 1 and 3: fractions, margins and tolerances
# --------------------------------------------------------------------------------------
def _subsets(m, n, trials, seed):
    """The subsets randomized_rank_test draws (same generator recipe), to recompute them by SVD."""
    keys = np.random.default_rng(seed).random((trials, m))
    return np.argpartition(keys, n - 1, axis=1)[:, :n]


def test_randomized_margin_matches_a_direct_svd():
    # every subset passes the Gram screen here, so the reported margin is sqrt(0.99) x the true one
    X = _generic(30, 12, seed=6)
    r = randomized_rank_test(X, 6, trials=400, seed=2)
    s = np.linalg.svd(X[_subsets(30, 6, 400, 2)], compute_uv=False)  # (400, 6)
    true_min = float((s[:, -1] / s[:, 0]).min())
    assert r.rtol == 1e-10 and r.fraction_full_rank_ == 1.0
    assert true_min * 0.99 <= r.min_rel_sigma_ <= true_min * (1 + SVD_RATIO)


def test_near_dependence_goes_to_the_exact_svd_and_obeys_rtol():
    # x_1 = x_0 + 1e-7 noise: {x_0, x_1} has sigma_2 / sigma_1 ~ 1e-8, below the Gram screen
    X = _generic(6, 5, seed=7)
    X[1] = X[0] + 1e-7 * _generic(1, 5, seed=8)[0]
    s = np.linalg.svd(X[[0, 1]], compute_uv=False)
    r = randomized_rank_test(X, 2, trials=3000, seed=1)  # 2-subsets, {0,1} in 1/15 of them
    assert r.fraction_full_rank_ == 1.0  # independent at rtol 1e-10
    assert abs(r.min_rel_sigma_ - s[-1] / s[0]) <= 1e-6 * s[-1] / s[0]  # the exact SVD value
    strict = randomized_rank_test(X, 2, trials=3000, seed=1, rtol=1e-5)
    assert abs((1 - strict.fraction_full_rank_) - 1 / 15) < 4 * np.sqrt((1 / 15) * (14 / 15) / 3000)
    assert strict.rtol == 1e-5 and not strict.holds_


def test_stacked_row_rank_decisions_and_margins():
    S = np.random.default_rng(2).uniform(size=(4, 3, 6))
    S[2, 1] = S[2, 0] + S[2, 2]  # matrix 2 has rank 2 < 3 rows
    assert independent_rows(S).tolist() == [True, True, False, True]
    s = np.linalg.svd(S, compute_uv=False)  # (4, 3)
    true = s[:, -1] / s[:, 0]
    rel = row_rank_margins(S)
    ok = np.arange(4) != 2
    assert (true[ok] * 0.99 <= rel[ok]).all() and (rel[ok] <= true[ok] * (1 + SVD_RATIO)).all()  # Gram screen: 1%
    assert rel[2] < 1e-15


def test_too_small_row_space_fails_every_trial():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, 3)) @ rng.standard_normal((3, 9))  # rank 3 in R^9
    assert randomized_rank_test(X, 4, trials=100).fraction_full_rank_ == 0.0
    assert randomized_rank_test(X, 3, trials=100).fraction_full_rank_ == 1.0


def test_general_position_exact_counts_subsets():
    X = _generic(7, 5)
    assert general_position_test(X).fraction_independent_ == 1.0
    X[3] = X[1]  # a 5-subset fails iff it holds rows 1 and 3: C(5, 3) = 10 of C(7, 5) = 21
    r = general_position_test(X)
    assert (r.method, r.k, r.trials) == ("exact", 5, 21)
    assert abs(r.fraction_independent_ - 11 / 21) < 1e-15 and not r.holds_


def test_general_position_randomized_when_enumeration_is_too_big():
    # 40 vectors in R^3, rows 0 and 1 parallel: a 3-subset fails iff it holds both, 38 / C(40, 3)
    X = _generic(40, 3, seed=9)
    X[1] = -X[0]
    r = general_position_test(X, trials=4000, seed=5, max_subsets=1000)
    p = 38 / 9880
    assert (r.method, r.k, r.trials, r.pass_fraction) == ("randomized", 3, 4000, 0.99)
    assert abs((1 - r.fraction_independent_) - p) < 4 * np.sqrt(p * (1 - p) / 4000)
    assert r.holds_  # 99.6% >= 99%: the randomized test misses rare dependences, as the paper allows


def test_kruskal_estimate_of_a_known_kruskal_rank():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 4)) @ rng.standard_normal((4, 7))  # generic in a 4-dim subspace
    assert kruskal_rank(X) == 4
    est = kruskal_rank_estimate(X, trials=20, seed=0)
    assert est.estimate_ == 4 and set(est.per_trial_) == {4} and est.rtol == 1e-10
    assert kruskal_rank_estimate(_generic(30, 8), trials=10).estimate_ == 8
    Z = _generic(9, 5)
    Z[4] = 0.0
    assert kruskal_rank_estimate(Z, trials=30, seed=1).estimate_ == 0


def test_kruskal_estimate_is_an_upper_estimate():
    # 14 vectors in R^4 with one parallel pair: Kruskal rank 1, found only when the pair comes early
    X = _generic(14, 4, seed=11)
    X[9] = 2.0 * X[2]
    assert kruskal_rank(X) == 1
    few = kruskal_rank_estimate(X, trials=2, seed=0)
    many = kruskal_rank_estimate(X, trials=400, seed=0)
    assert few.estimate_ == 4 and many.estimate_ == 1  # never below the truth, reaches it with trials
    with pytest.raises(ConfigError, match="trials"):
        kruskal_rank_estimate(X, trials=0)


def test_kruskal_estimate_matches_brute_force_prefixes_on_nearly_parallel_rows():
    # rows v + 1e-3 u_i: QR pivots ~1e-3 pass rtol = 1e-3 x max norm for a while, but sigma_1 grows like
    # sqrt(k) while sigma_k shrinks, so the SVD criterion stops earlier: the bisection must find it
    rng = np.random.default_rng(12)
    m, d, rtol = 60, 40, 1e-3
    X = rng.standard_normal(d) + 1e-3 * rng.standard_normal((m, d))
    est = kruskal_rank_estimate(X, trials=5, seed=4, rtol=rtol)
    order = np.random.default_rng(4)
    pivot_only = []
    for got in est.per_trial_:
        P = X[order.permutation(m)[:d + 1]]  # (41, 40)
        svals = [np.linalg.svd(P[:k], compute_uv=False) for k in range(1, d + 1)]
        lengths = [k for k, s in zip(range(1, d + 1), svals) if s[-1] > rtol * s[0]]
        expect = max([k for k in lengths if all(j in lengths for j in range(1, k + 1))], default=0)
        assert got == expect
        piv = np.abs(np.diagonal(np.linalg.qr(P.T, mode="r")))
        pivot_only.append(int(np.argmax(~(piv > rtol * np.linalg.norm(P, axis=1).max()))))
    assert max(p - g for p, g in zip(pivot_only, est.per_trial_)) > 0  # the SVD check changed something


def test_randomized_rank_test_decides_equal_rows_without_an_svd_as_the_svd_would():
    # 30 rows drawn from 12 distinct ones (token embeddings without positions): a subset with a
    # repeated row has sigma_n = 0 exactly; the others are decided as before
    rng = np.random.default_rng(5)
    X = rng.standard_normal((12, 20))[rng.integers(0, 12, 30)]
    r = randomized_rank_test(X, 4, trials=300, seed=7)
    idx = np.argpartition(np.random.default_rng(7).random((300, 30)), 3, axis=1)[:, :4]  # the test's subsets
    s = np.linalg.svd(X[idx], compute_uv=False)
    full = s[:, -1] > RANK_RTOL * s[:, 0]
    assert 0.0 < full.mean() < 1.0 and r.fraction_full_rank_ == full.mean() and r.min_rel_sigma_ == 0.0
