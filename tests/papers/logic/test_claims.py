"""The logic claims: the verdict each gives (the text's statement as written), and the numbers behind it."""

import numpy as np
import pytest

from attnlab.papers.logic.claims.gradients import init_terms
from attnlab.papers.logic.claims.relu_constant import text_threshold_errors, threshold_errors
from attnlab.registry import select_claims
from tolerances import FLOAT64


def _run(cid, seed=0):
    (c,) = select_claims([cid])
    r = c.run(seed)
    assert r.error is None, r.error
    return r.check


@pytest.mark.parametrize("cid", ["logic.equivalence", "logic.relu-constant", "logic.or-of-ands", "logic.happy-sad",
                                 "logic.stationary-set"])
@pytest.mark.parametrize("seed", [0, 3])
def test_fast_claims_reproduce(cid, seed):
    c = _run(cid, seed)
    assert c.verdict == "reproduced" and c.measured <= c.threshold == 1e-12 and c.relation == "<="
    assert c.where.startswith("§")


@pytest.mark.parametrize("seed", [0, 3])
def test_printed_gradient_is_minus_half_the_gradient(seed):
    """eq. 3.6-3.8, 3.18 as printed differ from the gradient by the factor -2 (relative gap 1.5 = |1 - (-1/2)|)."""
    c = _run("logic.gradient-closed-form", seed)
    assert c.verdict == "differs" and c.measured == pytest.approx(1.5, abs=1e-9)
    assert max(c.values["minus_two_times_printed"].values()) <= FLOAT64


def test_init_scale_differs_at_one_over_n():
    """sigma = 1/N is an order below 1/sqrt N, yet Tr(v)/N is smaller than Tr(v^t v)/N by sqrt(2/pi)/sqrt(N)."""
    c = _run("logic.init-scale")
    assert c.verdict == "differs" and c.relation == ">" and c.threshold == 1
    assert c.measured == pytest.approx(np.sqrt(2 / np.pi) / 10, rel=0.05)
    assert c.values["ratio_at_N_minus_2"] > 5  # sigma << N^(-3/2): the blue term dominates
    blue, red = init_terms(25, 25 ** -1.5, 4000, np.random.default_rng(1))
    assert blue / red == pytest.approx(np.sqrt(2 / np.pi), rel=0.05)  # the crossover sits at sigma ~ N^(-3/2)


def test_threshold_values_match_the_formula():
    v = threshold_errors(1)
    assert v.c_star == pytest.approx(max(0, v.max_q) + max(0, -v.min_q), abs=0)
    assert v.min_q < 0 < v.max_q
    for at_c_star, below, text_readout in ((v.at_c_star_2, v.below_2, v.text_readout_2),
                                           (v.at_c_star_3, v.below_3, v.text_readout_3)):
        assert at_c_star <= FLOAT64 and below >= v.delta * (1 - 1e-9)
        assert text_readout == pytest.approx(-v.min_q, abs=FLOAT64)
    t = text_threshold_errors(1)  # q_true >= 0: the text's condition c >= max q_true is exact and tight
    for at_max_q, below in ((t.at_max_q_2, t.below_2), (t.at_max_q_3, t.below_3)):
        assert at_max_q <= FLOAT64 and below >= t.delta * (1 - 1e-9)


@pytest.mark.slow
def test_solution_claims():
    c = _run("logic.solution-1")  # eq. 2.11's C fails on repeated pairs; the corrected C is exact
    assert c.verdict == "differs" and c.measured > 1 and c.values["corrected_C"] <= FLOAT64
    c = _run("logic.solution-1-linear")
    assert c.verdict == "reproduced" and c.measured <= FLOAT64 and c.values["per_case"]["Y_1"] > 0.5
    for cid in ("logic.solution-2", "logic.solution-3"):  # the text's read-out clips negative targets
        c = _run(cid)
        assert c.verdict == "differs" and c.measured == pytest.approx(-c.values["min_q_true"], abs=FLOAT64)
        assert c.values["nonnegative_table"] <= FLOAT64 and c.values["with_offset"] <= FLOAT64


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 3])
def test_section3_descent_claims(seed):
    c = _run("logic.softmax-descent", seed)
    assert c.verdict == "reproduced" and c.measured >= 0.9 and c.values["max_distance"] <= 0.05
    assert c.values["distance_ratio"] == pytest.approx(2 ** 0.5, abs=0.1)
    c = _run("logic.softmax-stationary", seed)
    assert c.verdict == "reproduced" and c.measured <= 0.05 and c.values["exact_point_gap"] <= FLOAT64
    c = _run("logic.category-descent", seed)  # the text's family q = q_true + a(t) is exact
    assert c.verdict == "reproduced" and c.measured >= 0.75 and c.values["delta_Q_true"] > 0.1
    assert c.values["text_family_loss"] <= FLOAT64 and c.values["swapped_reading_loss"] > 1e-2
    c = _run("logic.category-degenerate", seed)
    assert c.verdict == "reproduced" and c.measured <= 0.25 and abs(c.values["delta_Q_true"]) <= FLOAT64
    assert c.values["zero_loss_fraction"] >= 0.75 and c.values["generic_point_loss"] > 1e-2


@pytest.mark.parametrize("seed", [0, 3])
def test_category_stationary_claim_differs(seed):
    """§3.3.1's 'only the trivial zero' fails: v = 0 with q != 0 in a codimension-3 subspace is a zero."""
    c = _run("logic.category-stationary", seed)
    assert c.verdict == "differs" and c.measured > 0.1
    assert max(c.values["gradient"]) <= FLOAT64 and c.values["control"] > 1e-2
