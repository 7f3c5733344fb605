"""Measurements behind 1/sqrt(d_k): hand-derived values, a float64 reference, properties."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.analysis.logit_scaling import (
    attention_logit_sweep,
    dot_product_variance,
    dot_products,
    gradient_norm_through_softmax,
    jacobian_frobenius_norm,
    loglog_slope,
    one_hot_limit,
    saturation_sweep,
    softmax_entropy,
    uniform_jacobian_norm,
    variance_relative_standard_error,
)
from attnlab.analysis.softmax_jacobian import softmax_jacobian
from tolerances import FLOAT64

F64 = torch.float64


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_uniform_softmax_by_hand():
    # s = 1/n: J = I/n - 11^T/n^2; ||J||_F^2 = n (1/n - 1/n^2)^2 + n(n-1)/n^4 = (n-1)/n^2
    for n in (3, 5, 7, 11, 13):
        z = torch.full((n,), 2.5, dtype=F64)
        assert jacobian_frobenius_norm(z).item() == pytest.approx(math.sqrt(n - 1) / n, abs=1e-15)
        assert uniform_jacobian_norm(n) == pytest.approx(math.sqrt(n - 1) / n, abs=0)
        assert softmax_entropy(z).item() == pytest.approx(math.log(n), abs=1e-14)


def test_two_way_softmax_by_hand():
    # n = 2, s = (p, 1-p): J = p(1-p) [[1, -1], [-1, 1]], ||J||_F = 2 p (1 - p)
    for gap in (0.0, 0.3, 2.0, 20.0, 60.0):
        p = 1 / (1 + math.exp(-gap))
        z = torch.tensor([gap, 0.0], dtype=F64)
        assert jacobian_frobenius_norm(z).item() == pytest.approx(2 * p * (1 - p) if gap < 30 else
                                                                 2 * math.exp(-gap), rel=FLOAT64)


def test_frobenius_norm_matches_the_jacobian_where_it_is_accurate():
    z = torch.randn(3, 5, 7, generator=_gen(), dtype=F64) * 2
    ref = torch.linalg.matrix_norm(softmax_jacobian(z))  # (3, 5)
    assert (jacobian_frobenius_norm(z) - ref).abs().max().item() < 1e-15


def test_frobenius_norm_keeps_the_argmax_diagonal_when_saturated():
    # s = (1 - 2e, e, e) with e = exp(-60) ~ 8.8e-27: ||J||_F^2 -> (2e)^2 + 4 e^2 + 2 e^2 = 10 e^2
    z = torch.tensor([60.0, 0.0, 0.0], dtype=F64)
    e = math.exp(-60)
    assert jacobian_frobenius_norm(z).item() == pytest.approx(math.sqrt(10) * e, rel=FLOAT64)
    naive = torch.linalg.matrix_norm(softmax_jacobian(z)).item()
    assert naive == pytest.approx(math.sqrt(6) * e, rel=FLOAT64)  # diag(s) - ss^T drops J_11


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-20, 20), min_size=2, max_size=13))
def test_gradient_norm_is_the_jacobian_applied_to_g(zs):
    z = torch.tensor(zs, dtype=F64)
    g = torch.linspace(-1, 1, len(zs), dtype=F64)
    expected = (softmax_jacobian(z).T @ g).norm().item()
    assert gradient_norm_through_softmax(z, g).item() == pytest.approx(expected, abs=1e-14)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-30, 30), min_size=2, max_size=11), st.floats(-5, 5))
def test_shift_invariance(zs, c):
    z = torch.tensor(zs, dtype=F64)
    assert jacobian_frobenius_norm(z + c).item() == pytest.approx(jacobian_frobenius_norm(z).item(), abs=1e-13)
    assert softmax_entropy(z + c).item() == pytest.approx(softmax_entropy(z).item(), abs=FLOAT64)


def test_one_hot_limit_is_exact_at_large_scale():
    z = torch.randn(37, 11, generator=_gen(1), dtype=F64)
    t = torch.tensor([300.0, 1000.0], dtype=F64)
    exact = torch.stack([jacobian_frobenius_norm(s * z).mean() for s in t])
    assert torch.allclose(one_hot_limit(z, t), exact, rtol=1e-9, atol=0)


def test_one_hot_limit_is_exact_for_two_logits():
    z = torch.randn(13, 2, generator=_gen(2), dtype=F64)
    t = torch.logspace(-2, 3, 7, dtype=F64)
    exact = torch.stack([jacobian_frobenius_norm(s * z).mean() for s in t])
    assert torch.allclose(one_hot_limit(z, t), exact, rtol=FLOAT64, atol=0)


def test_saturation_sweep_shapes_and_limits():
    z = torch.randn(23, 5, generator=_gen(3), dtype=F64)
    g = torch.randn(23, 5, generator=_gen(4), dtype=F64)
    t = torch.tensor([1e-4, 1.0, 1e3], dtype=F64)
    r = saturation_sweep(z, g, t)
    assert all(len(r[k]) == 3 for k in ("jacobian_norm", "gradient_norm", "max_prob", "entropy", "one_hot_limit"))
    assert r["jacobian_norm"][0] == pytest.approx(uniform_jacobian_norm(5), rel=1e-6)
    assert r["entropy"][0] == pytest.approx(math.log(5), rel=1e-6)
    assert r["max_prob"][2] > 0.99 and r["entropy"][2] < 0.05


def test_dot_products_have_variance_d():
    x = dot_products(7, 20_000, generator=_gen(5))
    assert x.shape == (20_000,) and x.dtype == F64
    se = variance_relative_standard_error(7, 20_000)  # sqrt((2 + 6/7)/20000) = 0.01195
    assert se == pytest.approx(math.sqrt((2 + 6 / 7) / 20_000), rel=1e-15)
    assert x.var().item() / 7 == pytest.approx(1.0, abs=4 * se)
    assert x.mean().item() == pytest.approx(0.0, abs=4 * math.sqrt(7 / 20_000))


def test_dot_product_variance_chunks_consistently():
    r = dot_product_variance([3, 13], 5000, generator=_gen(6))
    assert r["dims"] == [3, 13]
    for d, raw, sc in zip(r["dims"], r["var_raw"], r["var_scaled"]):
        assert sc == pytest.approx(raw / d, rel=FLOAT64)


def test_loglog_slope_by_hand():
    xs = [3.0, 5.0, 11.0, 13.0]
    assert loglog_slope(xs, [2.0 * x ** 1.5 for x in xs]) == pytest.approx(1.5, abs=1e-13)
    assert loglog_slope(xs, [7.0] * 4) == pytest.approx(0.0, abs=1e-15)


def test_attention_logit_sweep_scaled_vs_unscaled():
    r = attention_logit_sweep([3, 300], n_keys=11, n_samples=50, generator=_gen(7))
    assert r["dims"] == [3, 300] and len(r["entropy_raw"]) == 2
    assert r["max_prob_raw"][1] > r["max_prob_scaled"][1]
    assert r["entropy_raw"][1] < r["entropy_scaled"][1] <= math.log(11)
