"""Theorem 2.2's bound beside the measured residual (rank-collapse.bound's measurements), by hand."""

import math

import pytest
import torch

from attnlab.papers.rank_collapse.bound_measure import bound_point, log10_bound, nonvacuous, san_residuals
from attnlab.papers.rank_collapse.single_head_san import layer_beta, layer_constant
from tolerances import FLOAT64


def test_log10_bound_matches_the_formula():
    beta, d, r = 0.3, 4, 0.5
    for L in (1, 2, 3):
        direct = (4 * beta / math.sqrt(d)) ** ((3**L - 1) / 2) * r ** (3**L)
        assert log10_bound(L, beta, d, r) == pytest.approx(math.log10(direct), rel=FLOAT64)
    assert log10_bound(1, beta, d, r, heads=12) == pytest.approx(math.log10(4 * 12 * beta / 2 * r**3), rel=FLOAT64)


def test_layer_beta_by_hand():
    """W_Q = W_K = sqrt2 I (d = d_qk = 2): W_QK = 2 I, ||2I||_1 = 2; W_V = 3 I: ||3I||_{1,inf} = 3; beta = 6."""
    I = torch.eye(2, dtype=torch.float64)
    assert layer_beta(math.sqrt(2) * I, math.sqrt(2) * I, 3 * I).item() == pytest.approx(6.0, rel=FLOAT64)
    assert layer_constant(math.sqrt(2) * I, math.sqrt(2) * I, 3 * I).item() == pytest.approx(4 * 6 / math.sqrt(2),
                                                                                         rel=FLOAT64)


def test_san_residuals_draws_the_asked_input_residual_and_stays_under_the_bound():
    g = torch.Generator().manual_seed(0)
    o = san_residuals(3, 5, 3, 7, 0.5, 0.2, g)
    assert len(o.res) == len(o.resolved) == 3 and o.beta > 0
    # the exact composite residual of X is at most the token-mean one, which is r_0 by construction
    assert 0 < o.res0 <= 0.2 + FLOAT64
    p = bound_point(0.5, 0.2, o, d_qk=3)
    assert p.kappa == pytest.approx(4 * o.beta * o.res0**2 / math.sqrt(3), rel=FLOAT64)
    assert p.log10_bound == [log10_bound(L, o.beta, 3, o.res0) for L in (1, 2, 3)]
    assert all(m <= b + 1e-9 for m, b, ok in zip(p.log10_measured, p.log10_bound, p.resolved) if ok)
    assert p.fit.points >= 1 and p.to_dict()["fit"] == p.fit.to_dict()
    # the same generator state gives the same SAN and input
    again = san_residuals(3, 5, 3, 7, 0.5, 0.2, torch.Generator().manual_seed(0))
    assert again == o


def test_san_residuals_on_an_input_of_equal_rows_keeps_them_equal():
    o = san_residuals(2, 4, 2, 5, 1.0, 0.0, torch.Generator().manual_seed(1))
    assert o.res0 == 0.0 and all(r <= FLOAT64 for r in o.res) and not any(o.resolved)


def test_nonvacuous_keeps_the_points_whose_first_bound_is_below_the_input_residual():
    small = bound_point(1.0, 0.1, san_residuals(2, 4, 2, 5, 0.25, 0.01, torch.Generator().manual_seed(2)), 2)
    large = bound_point(1.0, 4.0, san_residuals(2, 4, 2, 5, 4.0, 4.0, torch.Generator().manual_seed(2)), 2)
    assert small.kappa < 1 < large.kappa
    assert nonvacuous([small, large]) == [small]
    # kappa < 1 is exactly the regime where the bound at L = 1 is below ||res X||: c res0^3 < res0
    assert (small.log10_bound[0] < math.log10(small.res0)) and not (large.log10_bound[0] < math.log10(large.res0))
