"""rank-collapse.composite-norm-triangle and -properties (§2.2, §2.4 problem 2)."""

import math

from attnlab.registry import select_claims


def test_triangle_counterexample_and_quasi_norm_constant():
    (c,) = select_claims(["rank-collapse.composite-norm-triangle"])
    r = c.run(seed=0)
    assert r.status == "pass", r.error
    s = 1 / math.sqrt(2)
    hand = math.sqrt((1 + s) * (1 + 2 * s)) / 2  # ||[1+s, s]|| / (1 + 1), by hand
    assert abs(r.measurement.measured - hand) < 1e-14 and r.measurement.tolerance == 1 + 1e-3
    v = r.measurement.values
    assert v["one_by_one_max_ratio"] <= 1 + 1e-12 and v["max_excess_over_constant"] < 0
    assert all(1.0 < x for x in v["largest_ratio"].values())  # every size >= 1x2 has one
    assert v["smallest_counterexample"] == "1x2"


def test_properties_hold_to_1e_12():
    (c,) = select_claims(["rank-collapse.composite-norm-properties"])
    m = c.run(seed=1).measurement
    assert m.passed and m.tolerance == 1e-12 and m.measured == max(m.values.values())
    assert m.values["definite"] == 0.0
