"""The memorization paper's Assumptions 1-3 (papers/memorization/assumptions.py) on hand-built sets:
the exact decisions and the §5.1 randomized tests with their fractions and margins."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.kruskal import kruskal_rank
from attnlab.errors import ConfigError
from attnlab.papers.memorization.assumptions import (
    assumption1_holds,
    assumption1_test,
    assumption2_holds,
    assumption2_test,
    assumption3_holds,
    assumption3_test,
    assumption3_vectors,
)
from tolerances import SVD_RATIO


def test_vectors_in_a_subspace_meet_assumption1_up_to_their_kruskal_rank():
    # 8 generic vectors in a 3-dimensional subspace of R^6: Kruskal rank 3 < d = 6
    rng = np.random.default_rng(1)
    X = rng.standard_normal((8, 3)) @ rng.standard_normal((3, 6))
    assert kruskal_rank(X) == 3
    assert assumption1_holds(X, 3) and not assumption1_holds(X, 4)


def test_bad_shapes_raise():
    with pytest.raises(ConfigError, match=r"\(n, d\) or \(T, n, d\)"):
        assumption2_holds(np.zeros(5))
    with pytest.raises(ConfigError, match="to fit e"):
        assumption3_vectors(np.zeros((3, 4)), np.zeros((5, 6)))
    with pytest.raises(ConfigError, match=r"e must be a non-empty \(m, d\) array"):
        assumption1_test(np.zeros(5), 2)


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



def test_assumption1_fails_on_identical_queries_and_assumption3_holds():
    # the embedding layer: every query the same [CLS] vector, distinct contexts
    rng = np.random.default_rng(4)
    T, n, d = 40, 5, 11
    e = np.tile(rng.standard_normal(d), (T, 1))
    E = rng.standard_normal((T, n, d))
    a1 = assumption1_test(e, n, trials=500)
    assert a1.fraction_full_rank_ == 0.0 and a1.min_rel_sigma_ == 0.0 and not a1.holds_
    a3 = assumption3_test(E, e, trials=500)
    assert a3.n == n and a3.fraction_full_rank_ == 1.0 and a3.holds_ and a3.min_rel_sigma_ > 1e-3


def test_assumption2_fraction_and_margin():
    E = np.random.default_rng(2).uniform(size=(4, 3, 6))
    r = assumption2_test(E)
    s = np.linalg.svd(E, compute_uv=False)
    assert r.holds_ and r.fraction_full_rank_ == 1.0 and r.T == 4 and r.n == 3
    true_min = (s[:, -1] / s[:, 0]).min()
    assert true_min * 0.99 <= r.min_rel_sigma_ <= true_min * (1 + SVD_RATIO)  # Gram screen: 1% margin, never above
    E[2, 1] = E[2, 0] + E[2, 2]
    r = assumption2_test(E)
    assert r.fraction_full_rank_ == 0.75 and not r.holds_ and r.min_rel_sigma_ < 1e-15
    assert assumption2_test(np.zeros((2, 4, 3))).fraction_full_rank_ == 0.0  # n > d
    with pytest.raises(ConfigError, match="non-empty"):
        assumption2_test(np.zeros((0, 3, 4)))
