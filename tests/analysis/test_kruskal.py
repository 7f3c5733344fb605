"""Kruskal rank, general position and the assumption checks on hand-built sets."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.kruskal import (
    assumption1_holds,
    assumption2_holds,
    assumption3_holds,
    assumption3_vectors,
    in_general_position,
    kruskal_rank,
    randomized_rank_test,
)
from attnlab.errors import ConfigError


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
    assert assumption1_holds(X, 3) and not assumption1_holds(X, 4)


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
    with pytest.raises(ConfigError, match=r"\(n, d\) or \(T, n, d\)"):
        assumption2_holds(np.zeros(5))
    with pytest.raises(ConfigError, match="to fit e"):
        assumption3_vectors(np.zeros((3, 4)), np.zeros((5, 6)))


def test_assumption2_per_example_contexts():
    E = np.random.default_rng(2).uniform(size=(4, 3, 6))
    assert assumption2_holds(E)
    E[2, 1] = E[2, 0] + E[2, 2]
    assert not assumption2_holds(E)


def test_assumption3_with_identical_queries():
    # ViT-like: every query the same [CLS] vector (Assumption 1 fails), contexts distinct
    rng = np.random.default_rng(4)
    T, n, d = 8, 3, 6
    e = np.tile(rng.standard_normal(d), (T, 1))
    E = rng.uniform(size=(T, n, d))
    assert kruskal_rank(e) == 1 and not assumption1_holds(e, n)
    np.testing.assert_allclose(assumption3_vectors(E, e), e + E.mean(axis=1), rtol=0, atol=1e-15)
    assert assumption3_holds(E, e)
    assert not assumption3_holds(np.broadcast_to(E[0], (T, n, d)), e)  # shared context: all e~ equal
