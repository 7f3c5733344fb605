"""transformer-math.softmax-jacobian (§1.2.3, eq. 8) and softmax-jacobian-vanishes (eq. 9)."""

import math

import pytest

from attnlab.registry import select_claims
from tolerances import FLOAT64


@pytest.mark.parametrize("seed", [0, 1])
def test_jacobian_formula(seed):
    (c,) = select_claims(["transformer-math.softmax-jacobian"])
    m = c.run(seed).check
    assert m.verdict == "reproduced" and m.threshold == 1e-14
    assert m.anchor == "transformer-math.softmax-jacobian" and m.falsifier
    assert m.values["max_error"] == m.measured <= 1e-14
    assert m.values["n_values"] == [2, 5, 13]


@pytest.mark.parametrize("seed", [0, 1])
def test_jacobian_vanishes(seed):
    (c,) = select_claims(["transformer-math.softmax-jacobian-vanishes"])
    m = c.run(seed).check
    assert m.verdict == "reproduced" and m.threshold == 1.0
    assert m.anchor == "transformer-math.jacobian-zero-one-hot" and m.falsifier
    v = m.values
    assert v["one_hot_norm"] == 0.0 and v["gap"] > 0
    assert v["scales"] == pytest.approx([1.0, 10.0, 100.0, 1000.0], rel=FLOAT64)
    for t, norm in zip(v["scales"], v["jacobian_norms"]):  # ||J(tz)||_F <= 4 (n-1) e^{-t gap}
        assert norm <= 4 * (v["n"] - 1) * math.exp(-t * v["gap"])
    assert v["max_ratio_to_bound"] == m.measured <= 1.0
