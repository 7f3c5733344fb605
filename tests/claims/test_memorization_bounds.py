"""The rank upper bounds (Propositions 2, 5) survive the adversarial search, and the skip layer
of Proposition 4 turns Assumption 3 into Assumption 1; numbers asserted, tolerances stated."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnlab.analysis.kruskal import kruskal_rank
from attnlab.registry import select_claims
from attnlab.papers.memorization.claims.rank_bounds import adversarial_rank_search, skip_layer_outputs


def _run(cid, seed):
    (c,) = select_claims([cid])
    r = c.run(seed)
    assert r.error is None, r.error
    return r


def _number(pattern, text):
    return float(re.search(pattern, text).group(1))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("cid, bound, control", [
    ("memorization.proposition2-shared-upper", 7, 12),  # H(n-1)+1 = 7; per-example contexts reach T = 12
    ("memorization.proposition5-constant-rowsum", 7, 8),  # H(d-1)+1 = 7; without the row sum: H d = 8
])
def test_upper_bound_holds_and_is_reached(cid, bound, control, seed):
    r = _run(cid, seed)
    m = r.measurement
    assert r.status == "pass" and m.relation == "<=" and m.tolerance == 0
    assert m.measured == 0  # the search reaches the bound exactly: it is tight, never exceeded
    assert f"bound {bound}, max rank {bound} " in m.detail
    # no attempt came near a (bound+1)-th singular value: float64 round-off only
    assert _number(r"max sigma_\(bound\+1\)/sigma_1 ([0-9.e+-]+)", m.detail) < 1e-13
    assert f"max rank {control}" in m.detail.split("control")[1]  # the hypothesis matters


@pytest.mark.parametrize("seed", [0, 1])
def test_proposition4_skip_layer(seed):
    r = _run("memorization.proposition4-skip", seed)
    m = r.measurement
    assert r.status == "pass" and m.relation == ">=" and m.tolerance == 0
    assert m.measured == 0  # min rank E' = n = 3 exactly (Assumption 2 is preserved, not exceeded)
    assert "Kruskal rank of queries 1 before, 7 after (need 3)" in m.detail
    assert "Assumption 3 True" in m.detail
    assert _number(r"max \|e' - e~\| ([0-9.e+-]+)", m.detail) < 1e-14


def test_skip_layer_adds_the_context_mean():
    rng = np.random.default_rng(7)
    E, e = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 5))
    E_out, e_out = skip_layer_outputs(E, e)
    np.testing.assert_allclose(e_out, e + E.mean(axis=1), rtol=0, atol=1e-14)
    np.testing.assert_allclose(E_out, E + E.mean(axis=1, keepdims=True), rtol=0, atol=1e-14)


def test_skip_layer_fails_without_assumption3():
    # a shared context and identical queries: e~ identical, so Assumption 1 still fails after the layer
    rng = np.random.default_rng(8)
    E = np.broadcast_to(rng.uniform(size=(3, 6)), (8, 3, 6)).copy()
    e = np.tile(E[0, 0], (8, 1))
    _, e_out = skip_layer_outputs(E, e)
    assert kruskal_rank(e) == 1 and kruskal_rank(e_out) == 1


def test_search_finds_violations_of_a_false_bound():
    # the search is not toothless: claimed bound H(n-1) (one less than the truth) is broken
    rng = np.random.default_rng(3)
    E, e = rng.uniform(size=(3, 7)), rng.uniform(size=(12, 7))
    found = adversarial_rank_search(E, e, 3, 7, 6, seed=0)
    assert found["max_rank"] == 7 and found["max_ratio_above_bound"] > 1e-6
