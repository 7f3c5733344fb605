import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from attnlab.analysis.regression import linear_fit

finite = st.floats(-1e3, 1e3, allow_nan=False)


def test_exact_line_is_recovered():
    fit = linear_fit([0, 1, 2, 3], [1.0, 3.0, 5.0, 7.0])
    assert fit.slope == pytest.approx(2.0, abs=1e-15)
    assert fit.intercept == pytest.approx(1.0, abs=1e-15)
    assert fit.r2 == pytest.approx(1.0, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=3, max_size=30))
def test_matches_numpy_polyfit(pts):
    x, y = zip(*pts)
    assume(np.ptp(x) > 0.1 * max(1.0, float(np.abs(x).max())))  # well-conditioned x: polyfit is a fair reference
    a, b = np.polyfit(x, y, 1)
    fit = linear_fit(x, y)
    scale = max(1.0, float(np.abs(y).max()))
    assert fit.slope == pytest.approx(a, rel=1e-7, abs=1e-9 * scale / np.ptp(x))
    assert fit.intercept == pytest.approx(b, rel=1e-7, abs=1e-7 * scale)


def test_result_is_independent_of_point_order():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    perm = rng.permutation(50)
    assert linear_fit(x, y) == linear_fit(x[perm], y[perm])  # fsum: bitwise equal


def test_constant_y_has_nan_r2():
    fit = linear_fit([1, 2, 3], [4, 4, 4])
    assert fit.slope == 0 and fit.intercept == 4 and math.isnan(fit.r2)


@pytest.mark.parametrize("x, y, match", [([1, 2], [1], "equal lengths"), ([1], [1], "at least 2"),
                                         ([2, 2, 2], [1, 2, 3], "distinct x")])
def test_bad_input(x, y, match):
    with pytest.raises(ValueError, match=match):
        linear_fit(x, y)
