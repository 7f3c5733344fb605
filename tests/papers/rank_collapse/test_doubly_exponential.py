"""The fit of log10 r_l against 3^l and against l (rank-collapse.bound's rate rows)."""

import pytest

from attnlab.papers.rank_collapse.doubly_exponential import FLOOR, fit_doubly_exponential, slope_r2
from tolerances import FLOAT64, FLOAT64_LONG


def test_fit_recovers_doubly_exponential_and_exponential_decay():
    f = fit_doubly_exponential([10.0 ** (-0.5 * 3**l) for l in range(4)])
    assert f.triple_slope == pytest.approx(-0.5, rel=FLOAT64_LONG)
    assert f.triple_r2 == pytest.approx(1, abs=FLOAT64)
    assert f.linear_r2 < 0.95
    g = fit_doubly_exponential([10.0 ** (-2 * l) for l in range(5)])
    assert g.linear_slope == pytest.approx(-2, rel=FLOAT64_LONG) and g.linear_r2 > g.triple_r2
    assert fit_doubly_exponential([1.0, 1e-20, 1e-30]).points == 1  # rounding-level points are dropped
    assert FLOOR == 1e-13


def test_slope_r2_needs_three_points_and_reads_a_flat_line_as_a_perfect_fit():
    assert slope_r2([0.0, 1.0], [1.0, 2.0]) == (None, None)
    assert slope_r2([0.0, 1.0, 2.0], [1.0, 3.0, 5.0]) == pytest.approx((2.0, 1.0), abs=FLOAT64)
    assert slope_r2([0.0, 1.0, 2.0], [4.0, 4.0, 4.0]) == pytest.approx((0.0, 1.0), abs=FLOAT64)  # R^2 0/0 -> 1
    f = fit_doubly_exponential([1.0, 1.0, 1.0]).to_dict()
    assert f["points"] == 3 and f["triple_r2"] == f["linear_r2"] == 1.0
