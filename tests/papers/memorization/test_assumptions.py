"""The memorization paper's Assumptions 1-3 (papers/memorization/assumptions.py) on hand-built sets:
the exact decisions and the §5.1 randomized tests with their fractions and margins."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.analysis.kruskal import kruskal_rank
from attnlab.errors import ConfigError
from attnlab.papers.memorization.assumptions import (
    RandomizedRank,
    assumption1_holds,
    assumption1_test,
    assumption2_holds,
    assumption2_test,
    assumption3_holds,
    assumption3_test,
    assumption3_vectors,
    assumption_tests,
    layer_tests_estimate,
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


# --------------------------------------------------------------------------------------
# every test on one layer output (the rows of Tables 1 and 3) and its memory estimate
# --------------------------------------------------------------------------------------
LAYER_KW = dict(trials=300, gp_trials=10, estimate_trials=10, pass_fraction=0.99, rtol=1e-10)


def test_assumption_tests_on_hand_built_data():
    # 30 examples, n = 5, d = 10: queries in a 4-dimensional subspace (Kruskal rank 4 < n), contexts
    # of rank n except one, e~ generic
    rng = np.random.default_rng(0)
    e = rng.standard_normal((30, 4)) @ rng.standard_normal((4, 10))
    E = rng.standard_normal((30, 5, 10))
    E[7, 4] = E[7, 0] - 2 * E[7, 1]
    r = assumption_tests(E, e, seed=0, **LAYER_KW)
    assert r.assumption1.fraction == 0.0 and not r.assumption1.holds
    assert r.assumption2.fraction == 29 / 30 and not r.assumption2.holds
    assert r.assumption3.fraction == 1.0
    assert r.kruskal_estimate.estimate == 4
    assert r.general_position.method == "randomized" and r.general_position.fraction == 0.0
    assert r.shape == [30, 5, 10] and r.tokens is None
    # the stored records carry the settings they were decided with
    assert (r.assumption1.k, r.assumption1.trials, r.assumption1.pass_fraction) == (5, 300, 0.99)
    assert (r.assumption2.contexts, r.general_position.k, r.kruskal_estimate.trials) == (30, 10, 10)
    assert list(r.to_dict()) == ["general_position", "assumption1", "assumption2", "assumption3",
                                 "kruskal_estimate", "shape"]
    assert r.checks == (r.general_position, r.assumption1, r.assumption2, r.assumption3)


def test_randomized_rank_record_of_a_test():
    # 12 generic vectors in R^6, 4-subsets: every one independent
    X = np.random.default_rng(2).standard_normal((12, 6))
    t = assumption1_test(X, 4, trials=50, seed=1)
    rec = RandomizedRank.from_test(t)
    assert (rec.holds, rec.fraction, rec.k, rec.trials) == (True, 1.0, 4, 50)
    assert rec.min_rel_sigma == t.min_rel_sigma_ > 1e-3 and rec.rtol == t.rtol


def test_layer_tests_estimate_by_hand():
    # T = 10, n = 3, D = 4: r = k = 4, C = 7, C_gp = 2
    est = layer_tests_estimate(10, 3, 4, 7, 2, 5)
    assert est.peak_bytes == 8 * (4 * 10 * 3 * 4 + 2 * 7 * 10 + 100 + 2 * 7 * (9 + 12) + 2 * 2 * (16 + 16))
    assert est.gemm == 2.0 * 100 * 4 and est.calls == 10 + 5 + 4
    assert est.traffic == 8.0 * (2 * 7 * (9 + 12) + 2 * (16 + 16))
    assert "width-4 layer (7 subsets of 3 of its 10 queries" in est.what


def test_layer_estimate_bounds_the_tests_measured_peak():
    """The randomized tests' peak (numpy, traced by tracemalloc) on contexts whose every n-subset is
    undecided by the Gram screen (rank n - 1 plus 1e-9 noise): every subset gets its SVD, the case the
    estimate counts. Measured 118 MiB against 230 MiB estimated for T = 300, n = 24, D = 96."""
    import tracemalloc

    T, n, D = 300, 24, 96
    rng = np.random.default_rng(0)
    E = rng.standard_normal((T, n, n - 1)) @ rng.standard_normal((n - 1, D))
    E += 1e-9 * rng.standard_normal(E.shape)
    kw = dict(trials=5000, gp_trials=20, estimate_trials=4, pass_fraction=0.99, rtol=1e-10)
    est = layer_tests_estimate(T, n, D, kw["trials"], kw["gp_trials"], kw["estimate_trials"]).peak_bytes
    tracemalloc.start()
    try:
        assumption_tests(E, E[:, 0].copy(), seed=0, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= est <= 3 * peak, (peak, est)
