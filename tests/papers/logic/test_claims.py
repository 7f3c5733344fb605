"""The logic claims run and pass with their stated tolerances, and measure what they say."""

import pytest

from attnlab.papers.logic.claims.relu_constant import threshold_errors
from attnlab.registry import select_claims


def _run(cid, seed=0):
    (c,) = select_claims([cid])
    r = c.run(seed)
    assert r.error is None, r.error
    return r.measurement


@pytest.mark.parametrize("cid", ["logic.equivalence", "logic.relu-constant", "logic.or-of-ands", "logic.happy-sad",
                                 "logic.gradient-closed-form", "logic.stationary-set"])
@pytest.mark.parametrize("seed", [0, 3])
def test_fast_claims_pass(cid, seed):
    m = _run(cid, seed)
    assert m.passed and m.measured <= m.tolerance == 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("cid", ["logic.solution-1", "logic.solution-1-linear", "logic.solution-2", "logic.solution-3"])
def test_solution_claims_pass(cid):
    m = _run(cid)
    assert m.passed and m.measured <= 1e-12 and len(m.values["per_case"]) == 3


def test_threshold_values_match_the_formula():
    v = threshold_errors(1)
    assert v["c_star"] == pytest.approx(max(0, v["max_q"]) + max(0, -v["min_q"]), abs=0)
    assert v["min_q"] < 0 < v["max_q"]
    for s in "23":
        assert v[f"at_c_star_{s}"] <= 1e-12 and v[f"below_{s}"] >= v["delta"] * (1 - 1e-9)
        assert v[f"text_readout_{s}"] == pytest.approx(-v["min_q"], abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 3])
def test_section3_descent_claims_pass(seed):
    m = _run("logic.softmax-descent", seed)
    assert m.passed and m.measured >= 0.9 and m.values["max_distance"] <= 0.05
    assert m.values["distance_ratio"] == pytest.approx(2 ** 0.5, abs=0.1)
    m = _run("logic.softmax-stationary", seed)
    assert m.passed and m.measured <= 0.05 and m.values["exact_point_gap"] <= 1e-12
    m = _run("logic.category-descent", seed)
    assert m.passed and m.measured >= 0.75 and m.values["delta_Q_true"] > 0.1 and m.values["family_loss"] <= 1e-12
    m = _run("logic.category-degenerate", seed)
    assert m.passed and m.measured <= 0.25 and abs(m.values["delta_Q_true"]) <= 1e-12
    assert m.values["zero_loss_fraction"] >= 0.75


@pytest.mark.parametrize("seed", [0, 3])
def test_category_stationary_claim(seed):
    m = _run("logic.category-stationary", seed)
    assert m.passed and m.measured <= 1e-12 and m.values["control"] > 1e-2
