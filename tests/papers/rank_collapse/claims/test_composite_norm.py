"""rank-collapse.composite-norm-triangle, -quasi-norm, -properties (§2.2, §2.4 problem 2) and
rank-collapse.two-norm-residual (§2.2, Definition 2.1)."""

import math

from attnlab.registry import select_claims
from tolerances import FLOAT64


def _run(cid, seed=0):
    (c,) = select_claims([cid])
    r = c.run(seed=seed)
    assert r.error is None, r.error
    return r


def test_the_triangle_inequality_fails_as_attnlabs_own_statement_not_a_differs():
    """The notes do not claim the triangle inequality: Definition 2.1 uses Dong et al.'s name
    'composite norm' and §2.4 problem 2 asks whether such a 'norm' can represent distance. So
    the failure is attnlab's own statement (holds, with its witness), never a differs against
    the text, and no errata record is evidenced by it (issue 33)."""
    r = _run("rank-collapse.composite-norm-triangle")
    (c,) = select_claims(["rank-collapse.composite-norm-triangle"])
    assert c.anchor == "" and r.check.anchor == "" and r.check.erratum == ""
    assert (r.check.role, r.check.group, r.verdict) == ("own", "own", "holds")
    assert r.check.relation == ">" and r.check.threshold == 1.0  # holds iff ||A + B|| > ||A|| + ||B||
    assert "violates" in c.statement and "problem 2" in c.where
    s = 1 / math.sqrt(2)
    hand = math.sqrt((1 + s) * (1 + 2 * s)) / 2  # ||[1+s, s]|| / (1 + 1), by hand
    assert abs(r.check.measured - hand) < 1e-14
    v = r.check.values
    assert v["one_by_one_max_ratio"] <= 1 + FLOAT64
    assert all(1.0 < x for x in v["largest_ratio"].values())  # every size >= 1x2 has one
    assert "Dong et al." in r.check.where


def test_quasi_norm_constant_is_a_sanity_row_and_the_order_is_sharp():
    r = _run("rank-collapse.composite-quasi-norm")
    assert r.verdict == "sanity" and r.check.measured <= 1
    v = r.check.values
    assert abs(v["K"]["2x2"] - math.sqrt((1 + 2) / 2)) < 1e-15 and v["K"]["3x3"] < v["nd_quarter"]["3x3"]
    for n, ratio in v["column_plus_row_ratio"].items():
        assert abs(ratio - (n + 1) / (2 * math.sqrt(n))) < FLOAT64


def test_properties_are_sanity_not_reproductions():
    r = _run("rank-collapse.composite-norm-properties", seed=1)
    m = r.check
    assert r.verdict == "sanity" and m.threshold == 1e-12 and m.measured == max(m.values.values())
    assert m.values["definite"] == 0.0


def test_two_norm_residual_attains_the_minimum_and_its_minimiser_is_not_unique():
    """A sanity row: it tests attnlab's residual (the row mean) against a brute-force search; the
    notes only define res (Definition 2.1), they state nothing this row could reproduce (issue 33)."""
    r = _run("rank-collapse.two-norm-residual")
    assert r.verdict == "sanity" and r.check.role == "sanity" and not r.check.anchor and r.check.measured <= 1e-9
    v = r.check.values
    assert min(v["composite_spread_factors"]) > 1.01  # every random 2-norm problem has several minimisers
    assert abs(v["hand_example_range"][0] - math.sqrt(2)) < 1e-14 and abs(v["hand_example_range"][1] - 2) < 1e-14
